// `segrank evaluate`: metrics of a trained checkpoint per graph and per collection
// (docs/metrics.md), with streaming inference (segments one at a time, docs/gst.md#inference).
#include <cmath>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "eval/metrics.h"
#include "gnn/core/address_space.h"
#include "gnn/core/check.h"
#include "gnn/core/parallel.h"
#include "gst/inference_budget.h"
#include "trainer/comm.h"
#include "trainer/dataset.h"
#include "trainer/trainer.h"
#include "util/atomic_file.h"
#include "util/json.h"
#include "util/text_table.h"

namespace segrank::cli {

namespace {

// The first member of the --json document: what wrote it.
constexpr std::string_view kEvaluateKind = R"({"kind":"segrank evaluate")";

// An earlier --json output: it starts with kEvaluateKind, or (written before that member existed)
// {"checkpoint":"...","graphs":[...]. Any other JSON (metrics.jsonl, report.json, a tune's
// tune.json, a user's package.json) is not replaced.
bool is_evaluate_json_head(std::string_view head) {
    const size_t b = head.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return false;
    head.remove_prefix(b);
    return head.starts_with(kEvaluateKind) ||
           (head.starts_with(R"({"checkpoint":")") &&
            head.find(R"(","graphs":[)") != std::string_view::npos);
}

// An evaluation in which no graph is informative (every graph has fewer than 2 scored configs or
// one runtime for all of them) scored nothing: Kendall tau, OPA and the Kaggle score are undefined
// (docs/metrics.md#kaggle-scores). That is an error naming the data, before anything is printed or
// written. `collections` are identical on every rank, so every rank throws alike.
void check_some_graph_scored(const EvalResult& r, const std::string& what,
                             const std::string& root) {
    int64_t graphs = 0, uninformative = 0;
    for (const auto& c : r.collections) {
        graphs += c.num_graphs;
        uninformative += c.num_uninformative;
    }
    SEGRANK_CHECK(
        uninformative < graphs, "no graph could be scored: none of the ", graphs, " graph(s) of ",
        what, " under '", root,
        "' has two scored configs with distinct runtimes (each has fewer than 2 configs "
        "or the same runtime for every config), so Kendall tau, OPA and the score are "
        "undefined; evaluate data with distinct runtimes (docs/metrics.md#kaggle-scores)");
}

// The options of `segrank evaluate`.
cxxopts::Options evaluate_options() {
    cxxopts::Options options(
        "segrank evaluate",
        "Score a checkpoint on a labelled split: Kendall tau-b, OPA, slowdown@{1,5,10} and the\n"
        "Kaggle score per graph and per collection. Test splits without runtimes are refused.\n"
        "Metrics are computed on the predicted order (score ties broken by config index, as in a\n"
        "`segrank predict` submission), so `segrank leaderboard` on that submission agrees; the\n"
        "JSON also carries kendall_raw, tau-b of the raw scores (score ties counted as ties).\n"
        "Tile models trained with an mse term also get mape and medape, the mean and median\n"
        "absolute percentage error of the predicted kernel runtimes (docs/metrics.md#runtime-\n"
        "regression).");
    options.add_options()("checkpoint",
                          "run directory (best.ckpt.h5, else last.ckpt.h5) or a .ckpt.h5 file",
                          cxxopts::value<std::string>())(
        "split", "split to score (default: the run's eval.split)", cxxopts::value<std::string>())(
        "heldout", "score the run's own held-out set (config or fold holdout) instead of a split")(
        "data", "collection root (default: the run's data.root)", cxxopts::value<std::string>())(
        "json", "also write the metrics as JSON to this file", cxxopts::value<std::string>())(
        "memory-mb",
        "MiB scoring may hold per graph beside the graph's own arrays, as in segrank predict "
        "(default: the checkpoint's eval.memory_mb and eval.cache_mb; when given, the cache takes "
        "a quarter of it; docs/gst.md#memory-budget)",
        cxxopts::value<int64_t>())("threads", "OpenMP threads (default: all cores)",
                                   cxxopts::value<int>()->default_value("0"))("h,help",
                                                                              "show this help");
    return options;
}

// --memory-mb (0 when not given), checked before any work. Throws segrank::Error naming it.
int64_t memory_option(const cxxopts::ParseResult& args) {
    if (!args.count("memory-mb")) return 0;
    const int64_t mb = args["memory-mb"].as<int64_t>();
    SEGRANK_CHECK(mb >= kMinInferenceMemoryMb && mb <= kMaxInferenceMemoryMb,
                  "--memory-mb: expected ", kMinInferenceMemoryMb, " to ", kMaxInferenceMemoryMb,
                  ", got ", mb);
    (void)inference_budget(mb, -1, "--memory-mb", "--cache-mb");
    return mb;
}

// What an evaluated graph's memory grows with (graph_oom_message): the options evaluate has.
std::string evaluate_memory_settings(const RunConfig& cfg) {
    return str("its memory grows with the checkpoint's model.hidden = ", cfg.model.hidden,
               " and segments.max_nodes = ", cfg.segments.max_nodes,
               " (0: the whole graph at once) and the configs scored per pass, which --memory-mb "
               "bounds (now ",
               cfg.eval.memory_mb, "); lower --memory-mb (at least ", kMinInferenceMemoryMb,
               ") or give the process more memory (docs/config.md#out-of-memory)");
}

// The graphs to score: the checkpoint's task in the run's held-out set (--heldout) or in a split,
// ids 0..n-1. `ds` holds the sources the entries read from.
struct EvaluatedGraphs {
    std::unique_ptr<Dataset> ds;
    std::vector<GraphEntry> mine;
    std::string what;  ///< "the run's held-out set" or "split 'NAME'", for messages
};

EvaluatedGraphs graphs_to_evaluate(const cxxopts::ParseResult& args, const LoadedModel& lm) {
    EvaluatedGraphs g;
    std::vector<GraphEntry> entries;
    if (args.count("heldout")) {
        SEGRANK_CHECK(!args.count("split"), "--heldout and --split exclude each other");
        g.ds = std::make_unique<Dataset>(lm.cfg.data, static_cast<uint64_t>(lm.cfg.sampling.seed));
        entries = g.ds->eval();
        g.what = "the run's held-out set";
    } else {
        const std::string split = args.count("split") ? split_option(args) : lm.cfg.eval.split;
        try {
            g.ds = std::make_unique<Dataset>(Dataset::for_split(lm.cfg.data, split));
        } catch (const Error& e) {
            const bool own_heldout =
                lm.cfg.data.holdout == cfg::Holdout::kConfigs || lm.cfg.data.holdout_folds != 0;
            if (!own_heldout || args.count("split")) throw;
            throw Error(str(e.what(),
                            "; this run held out part of its training data (data.holdout = \"",
                            to_string(lm.cfg.data.holdout), "\"): score it with --heldout"));
        }
        entries = g.ds->eval();
        g.what = "split '" + split + "'";
    }
    for (auto& e : entries)
        if (e.collection.task == lm.task) g.mine.push_back(e);
    SEGRANK_CHECK(!g.mine.empty(), "no ", to_string(lm.task), " graphs in ", g.what, " under '",
                  lm.cfg.data.root, "' (the checkpoint is a ", to_string(lm.task), " model)");
    for (size_t i = 0; i < g.mine.size(); ++i) g.mine[i].id = static_cast<int64_t>(i);
    return g;
}

// The per-graph and per-collection tables and the overall score on stdout (rank 0). The runtime
// regression columns appear when some graph has them (tile, mse term).
void print_evaluation(const EvalResult& r) {
    const auto f4 = [](double v) { return format_fixed(v, 4, "nan"); };
    bool regression = false;
    for (const auto& c : r.collections) regression = regression || !std::isnan(c.mape);
    TextTable per_graph;
    per_graph.header = {"graph", "configs", "kendall", "opa", "slowdown1", "slowdown5", "slowdn10"};
    if (regression) per_graph.header.insert(per_graph.header.end(), {"mape", "medape"});
    for (const auto& g : r.graphs) {
        per_graph.rows.push_back({g.name, std::to_string(g.num_configs), f4(g.kendall_tau),
                                  f4(g.opa), f4(g.slowdown_1), f4(g.slowdown_5),
                                  f4(g.slowdown_10)});
        if (regression)
            per_graph.rows.back().insert(per_graph.rows.back().end(),
                                         {f4(g.mape), f4(g.median_ape)});
    }
    TextTable per_collection;
    per_collection.header = {"collection", "graphs",    "kendall",  "opa",
                             "slowdown1",  "slowdown5", "slowdn10", "score"};
    if (regression) per_collection.header.insert(per_collection.header.end(), {"mape", "medape"});
    for (const auto& c : r.collections) {
        per_collection.rows.push_back({c.collection, std::to_string(c.num_graphs),
                                       f4(c.kendall_tau), f4(c.opa), f4(c.slowdown_1),
                                       f4(c.slowdown_5), f4(c.slowdown_10), f4(c.score)});
        if (regression)
            per_collection.rows.back().insert(per_collection.rows.back().end(),
                                              {f4(c.mape), f4(c.median_ape)});
    }
    std::fputs(format_text(per_graph, 2, "  ").c_str(), stdout);
    std::fputs(format_text(per_collection, 2, "  ").c_str(), stdout);
    std::printf("  overall %.6f\n", r.overall);
    std::printf(
        "  (metrics of the predicted order: score ties broken by config index, as `segrank "
        "predict`\n"
        "   writes them; `segrank leaderboard` on its output gives these numbers; "
        "docs/metrics.md)\n");
}

// The --json document: {"kind":"segrank evaluate","checkpoint","checkpoint_id","evaluated",
// "data_root","graphs","metrics"} (checkpoint_id: the model's identity, so a run moved or renamed
// still knows its evaluation; evaluated: which graphs, e.g. "split 'valid'"; data_root: from
// where, as an absolute path: a relative one would mean another folder to report run elsewhere).
void write_evaluate_json(const std::string& path, const LoadedModel& lm, const EvalResult& r,
                         const std::string& evaluated) {
    Json graphs = Json::array();
    for (const auto& g : r.graphs) graphs.push_back(to_json(g));
    const Json doc = {
        {"kind", "segrank evaluate"},
        {"checkpoint", lm.file.string()},
        {"checkpoint_id", lm.parameters_id},
        {"evaluated", evaluated},
        {"data_root", std::filesystem::absolute(lm.cfg.data.root).lexically_normal().string()},
        {"graphs", std::move(graphs)},
        {"metrics", r.to_json()}};
    write_file_atomically(path, dump_json(doc) + "\n");
}

}  // namespace

int run_evaluate(int argc, char** argv) {
    cxxopts::Options options = evaluate_options();
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("checkpoint"), "missing --checkpoint RUN_DIR");
    if (args.count("json"))  // a directory, FIFO or other file is refused before the work
        refuse_replacing_other_file("--json", args["json"].as<std::string>(), is_evaluate_json_head,
                                    "a segrank evaluate --json output", "segrank evaluate");
    const int64_t memory_mb = memory_option(args);
    set_num_threads(thread_option(args));
    check_address_space_for_matmuls("evaluate");
    LoadedModel lm = load_model(args["checkpoint"].as<std::string>());
    if (memory_mb > 0) {  // the cache takes a quarter, as with predict's default --cache-mb
        lm.cfg.eval.memory_mb = static_cast<int>(memory_mb);
        lm.cfg.eval.cache_mb = -1;
    }
    if (args.count("data"))
        lm.cfg.data.root = args["data"].as<std::string>();
    else
        check_stored_data_root(lm.cfg.data, lm.file.string(), "the checkpoint's config",
                               "give --data DIR, the folder it is in now");

    std::unique_ptr<Communicator> comm = make_communicator(&argc, &argv);
    return run_guarded(*comm, "evaluate", [&]() {
        const EvaluatedGraphs g = graphs_to_evaluate(args, lm);
        EvalResult r;
        try {
            r = evaluate_graphs(*lm.model, lm.normalizer, lm.cfg, g.mine, *comm, nullptr, -1,
                                evaluate_memory_settings(lm.cfg));
        } catch (const NonFiniteScore& e) {
            // Its parameters are finite (checked on load): they overflow on this graph.
            throw Error(str(lm.file.string(),
                            ": the checkpoint's model gives a non-finite score: ", e.what(),
                            " (its parameters are finite but overflow); nothing written"));
        }
        check_some_graph_scored(r, g.what, lm.cfg.data.root);
        if (comm->rank() == 0) {
            std::printf("segrank evaluate: %s on %s (%zu graphs)\n", lm.file.string().c_str(),
                        g.what.c_str(), g.mine.size());
            print_evaluation(r);
            if (args.count("json"))
                write_evaluate_json(args["json"].as<std::string>(), lm, r, g.what);
        }
        return 0;
    });
}

}  // namespace segrank::cli
