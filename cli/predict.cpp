// `segrank predict`: a Kaggle-format submission from one or several checkpoints
// (docs/files.md#submission-csv). Several checkpoints of one task are ensembled by averaging
// per-graph min-max normalized scores; checkpoints of different tasks cover their own collections.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "api/cost_model_internal.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "data/graph_memory.h"
#include "eval/submission.h"
#include "gnn/core/address_space.h"
#include "gnn/core/check.h"
#include "gnn/core/parallel.h"
#include "gnn/core/rng.h"
#include "segrank/cost_model.h"
#include "trainer/dataset.h"
#include "trainer/trainer.h"
#include "util/atomic_file.h"

namespace segrank::cli {

namespace {

// The options of `segrank predict`.
cxxopts::Options predict_options() {
    cxxopts::Options options(
        "segrank predict",
        "Write a submission CSV (ID,TopConfigs; fastest first; min(5,c) configs for tile, all for\n"
        "layout) for every graph of a split, test splits included.");
    options.add_options()("checkpoint", "run directory or .ckpt.h5 file (repeat to ensemble)",
                          cxxopts::value<std::vector<std::string>>())(
        "split", "split to predict", cxxopts::value<std::string>()->default_value("test"))(
        "out", "submission CSV to write", cxxopts::value<std::string>())(
        "scores", "also write every config's score as ID,config,score (higher = slower)",
        cxxopts::value<std::string>())(
        "data", "collection root (default: the first checkpoint's data.root)",
        cxxopts::value<std::string>())(
        "random",
        "no model: uniform random scores from this seed (the random baseline; needs --data)",
        cxxopts::value<int64_t>())("threads", "OpenMP threads (default: all cores)",
                                   cxxopts::value<int>()->default_value("0"))(
        "chunk",
        "configs per forward pass (default: the checkpoint's eval.chunk_configs, or "
        "eval.dedupe_chunk_configs when rows are deduplicated)",
        cxxopts::value<int64_t>())(
        "memory-mb",
        "MiB scoring may hold per graph beside the graph's own arrays: the cache, the chunk state "
        "and the chunk's config rows are derived from it (default: the checkpoint's "
        "eval.memory_mb; docs/gst.md#memory-budget)",
        cxxopts::value<int64_t>())(
        "cache-mb",
        "MiB of config-independent rows kept per graph across chunks, at most half of the budget "
        "(default: a quarter of --memory-mb when given, else the checkpoint's eval.cache_mb; 0 = "
        "none)",
        cxxopts::value<int64_t>())(
        "tta-orders",
        "with model.config_attention: config orders scored and averaged per graph (default: the "
        "checkpoint's eval.tta_orders)",
        cxxopts::value<int64_t>())(
        "dense",
        "compute every (node, config) row instead of each distinct row once (eval.dedupe_rows = "
        "false)")("timing", "print each graph's nodes, configs, seconds and configs/s to stderr")(
        "h,help", "show this help");
    return options;
}

// Before the work: a directory or FIFO is refused, and so is an existing file that is no earlier
// submission (scores) file, e.g. a checkpoint or metrics.jsonl of the run dir.
void check_predict_outputs(const cxxopts::ParseResult& args) {
    refuse_replacing_other_file("--out", args["out"].as<std::string>(), is_submission_head,
                                "a submission CSV (ID,TopConfigs)", "segrank predict");
    if (args.count("scores")) {
        const std::string out = args["out"].as<std::string>();
        const std::string scores = args["scores"].as<std::string>();
        refuse_replacing_other_file("--scores", scores, is_scores_head,
                                    "a scores CSV (ID,config,score)", "segrank predict");
        refuse_same_output("--out", out, "--scores", scores);
    }
}

// --chunk, --cache-mb, --tta-orders and --dense as the library API's scoring options.
ScoreOptions score_options_from(const cxxopts::ParseResult& args) {
    ScoreOptions score_options;
    if (args.count("chunk")) {
        score_options.chunk_configs = args["chunk"].as<int64_t>();
        SEGRANK_CHECK(score_options.chunk_configs >= 1, "--chunk: expected >= 1, got ",
                      score_options.chunk_configs);
    }
    if (args.count("cache-mb")) {
        score_options.cache_mb = args["cache-mb"].as<int64_t>();
        SEGRANK_CHECK(score_options.cache_mb >= 0 && score_options.cache_mb <= (int64_t{1} << 20),
                      "--cache-mb: expected 0..1048576, got ", score_options.cache_mb);
    }
    if (args.count("memory-mb")) {
        score_options.memory_mb = memory_mb_option(args);
        (void)inference_budget(score_options.memory_mb, score_options.cache_mb, "--memory-mb",
                               "--cache-mb");
    }
    if (args.count("tta-orders")) {
        const int64_t t = args["tta-orders"].as<int64_t>();
        SEGRANK_CHECK(t >= 1 && t <= 1024, "--tta-orders: expected 1..1024, got ", t);
        score_options.tta_orders = static_cast<int32_t>(t);
    }
    score_options.dense = args.count("dense") > 0;
    return score_options;
}

// An output path naming a checkpoint of the model would replace it: refused naming both.
void check_outputs_are_not_checkpoints(const cxxopts::ParseResult& args, const CostModel& model) {
    const auto checkpoint_names = args["checkpoint"].as<std::vector<std::string>>();  // as given
    const auto& members = model.impl().members;
    for (size_t m = 0; m < members.size(); ++m)
        for (const char* opt : {"out", "scores"})
            if (args.count(opt))
                SEGRANK_CHECK(!same_file(args[opt].as<std::string>(), members[m].lm.file), "--",
                              opt, " ", args[opt].as<std::string>(),
                              " is the checkpoint file of --checkpoint ", checkpoint_names[m], " (",
                              members[m].lm.file.string(), "): give another output path");
}

// --tta-orders N > 1 averages N config orders, which differ only with model.config_attention (a
// model without it scores each config alone): refused when no checkpoint has it.
void check_tta_applies(const cxxopts::ParseResult& args, const CostModel& model) {
    if (!args.count("tta-orders") || args["tta-orders"].as<int64_t>() <= 1) return;
    const auto& members = model.impl().members;
    for (const CostMember& m : members)
        if (m.lm.cfg.model.config_attention) return;
    throw Error(str("--tta-orders ", args["tta-orders"].as<int64_t>(),
                    ": averages the scores of configs scored in several orders, which differ only "
                    "with model.config_attention; the checkpoint ",
                    members.front().lm.file.string(),
                    members.size() > 1 ? " (and every other given)" : "",
                    " has model.config_attention = false, so each config is scored alone and "
                    "every order gives the same scores: drop --tta-orders"));
}

// The submission rows (and with --scores every config's score) of the graphs a model covers.
struct Predictions {
    std::vector<SubmissionRow> rows;
    std::vector<ScoreRow> score_rows;
    size_t skipped = 0;  ///< graphs of a task no checkpoint covers
};

// What a scored graph's memory grows with (graph_oom_message).
constexpr std::string_view kPredictMemorySettings =
    "its memory grows with the checkpoint's model.hidden and the configs scored per pass; lower "
    "--memory-mb or --chunk or give the process more memory (docs/config.md#out-of-memory)";

Predictions predict_graphs(const Dataset& ds, const std::optional<CostModel>& model,
                           const cxxopts::ParseResult& args) {
    const bool random = args.count("random") > 0;
    const bool timing = args.count("timing") > 0;
    Predictions p;
    for (const GraphEntry& e : ds.eval()) {
        std::vector<double> ensemble;
        int used = 0;
        if (random) {
            Rng rng =
                Rng::derive(seed_option(args, "random"), 0, stream_id(e.name), "random_baseline");
            ensemble.resize(static_cast<size_t>(e.info.num_configs));
            for (auto& x : ensemble) x = rng.uniform();
            used = 1;
        }
        const auto t0 = std::chrono::steady_clock::now();
        if (model &&
            model->covers(e.collection.task == Task::kTile ? CostTask::kTile : CostTask::kLayout)) {
            ensemble = naming_graph_on_oom(e.info, "scoring", kPredictMemorySettings, [&] {
                return model->score(graph_from_entry(e, submission_id(e.collection, e.name)));
            });
            used = 1;
        }
        if (used == 0) {
            ++p.skipped;
            continue;
        }
        for (auto& x : ensemble) x /= used;
        if (timing) {
            const double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::fprintf(stderr, "predict: %s nodes %lld configs %zu seconds %.3f configs/s %.1f\n",
                         e.name.c_str(), static_cast<long long>(e.info.num_nodes), ensemble.size(),
                         secs, static_cast<double>(ensemble.size()) / std::max(secs, 1e-9));
        }
        const std::string id = submission_id(e.collection, e.name);
        p.rows.push_back({id, top_configs(ensemble, e.collection.task), ""});
        if (args.count("scores"))
            for (size_t i = 0; i < ensemble.size(); ++i)
                p.score_rows.push_back({id, static_cast<int64_t>(i), ensemble[i], ""});
    }
    return p;
}

// Both files or neither: a failure writing one leaves the other as it was.
void write_predictions(const cxxopts::ParseResult& args, const Predictions& p) {
    write_submission_and_scores(args["out"].as<std::string>(), p.rows,
                                args.count("scores") ? args["scores"].as<std::string>() : "",
                                p.score_rows);
}

}  // namespace

int run_predict(int argc, char** argv) {
    cxxopts::Options options = predict_options();
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    const bool random = args.count("random") > 0;
    SEGRANK_CHECK(random != (args.count("checkpoint") > 0),
                  random ? "--random and --checkpoint exclude each other"
                         : "missing --checkpoint RUN_DIR (or --random SEED)");
    SEGRANK_CHECK(!random || args.count("data"), "--random needs --data DIR");
    if (random) seed_option(args, "random");  // a negative seed is refused before any work
    SEGRANK_CHECK(args.count("out"), "missing --out sub.csv");
    check_predict_outputs(args);
    set_num_threads(thread_option(args));
    check_address_space_for_matmuls("predict");
    // Scoring goes through the library API (include/segrank/cost_model.h), as a tuner's would.
    const ScoreOptions score_options = score_options_from(args);
    std::optional<CostModel> model;
    if (!random) {
        // The budget is checked against each checkpoint naming the options (--cache-mb alone
        // must fit the checkpoint's eval.memory_mb), then given to the model.
        ScoreOptions load_options = score_options;
        load_options.memory_mb = 0;
        load_options.cache_mb = -1;
        model.emplace(args["checkpoint"].as<std::vector<std::string>>(), load_options);
        for (const CostMember& m : model->impl().members)
            (void)score_budget(score_options, m.lm.cfg, m.name, "--memory-mb", "--cache-mb");
        model->impl().options = score_options;
        check_outputs_are_not_checkpoints(args, *model);
        check_tta_applies(args, *model);
    }
    cfg::DataSection data = random ? cfg::DataSection{} : model->impl().members.front().lm.cfg.data;
    if (args.count("data"))
        data.root = args["data"].as<std::string>();
    else  // --random needs --data: a model is loaded
        check_stored_data_root(data, model->impl().members.front().lm.file.string(),
                               "the checkpoint's config",
                               "give --data DIR, the folder it is in now");
    data.collections.clear();  // every collection of the split; each model scores its own task
    const std::string split = split_option(args);
    Dataset ds = Dataset::for_split(data, split);

    const Predictions p = predict_graphs(ds, model, args);
    SEGRANK_CHECK(!p.rows.empty(), "no graph of split '", split, "' under '", data.root,
                  "' matches the task of the given checkpoint(s)");
    write_predictions(args, p);
    std::printf("segrank predict: %zu graphs of split '%s' -> %s%s\n", p.rows.size(), split.c_str(),
                args["out"].as<std::string>().c_str(),
                p.skipped ? str(" (", p.skipped,
                                " graphs of other tasks skipped: give a checkpoint per task)")
                                .c_str()
                          : "");
    return 0;
}

}  // namespace segrank::cli
