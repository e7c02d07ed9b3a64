// `segrank hwmodel`: the analytical TPU timing model as a baseline (docs/hwmodel.md#uses): a
// submission over every collection of a split (`--scores` adds every configuration's estimate in
// ns), and the `explain` / `validate` subcommands (hwmodel_explain.cpp).
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/hwmodel_explain.h"
#include "cli/options.h"
#include "data/collection.h"
#include "data/graph.h"
#include "eval/submission.h"
#include "gnn/core/check.h"
#include "hwmodel/graph_estimates.h"
#include "hwmodel/hardware.h"
#include "util/atomic_file.h"

namespace segrank::cli {
namespace {

// Estimated runtime (ns) of every configuration of one graph; +inf for invalid tile configs. A
// graph that loads but cannot be costed is fatal with `strict`; otherwise a warning names it and
// `costed` is false: the scores are then the config indices (the default order 0;1;2;...).
std::vector<double> score_graph(const Collection& c, const std::filesystem::path& file,
                                const hw::HwParams& hw, bool strict, bool& costed) {
    std::vector<double> scores;
    const LabelPolicy labels = label_policy(c.id.split);
    int64_t configs = -1;  // set once the file has loaded
    costed = true;
    try {
        if (c.id.task == Task::kTile) {
            const TileGraph g = load_tile_npz(file, labels);
            configs = g.num_configs();
            scores = hw::tile_estimates_ns(g, hw);
        } else {
            const LayoutGraph g = load_layout_npz(file, labels);
            configs = g.num_configs();
            scores = hw::layout_estimates_ns(g, hw);
        }
    } catch (const Error& e) {
        if (strict || configs < 0) throw;  // --strict, or the file itself is bad (not loaded)
        std::fprintf(
            stderr,
            "hwmodel: warning: %s: cannot be costed (%s); its %lld configurations are listed in "
            "the "
            "default order 0;1;2;... and left out of --scores (--strict makes this an error)\n",
            file.string().c_str(), e.what(), static_cast<long long>(configs));
        scores.clear();
        for (int64_t j = 0; j < configs; ++j) scores.push_back(static_cast<double>(j));
        costed = false;
    } catch (const std::bad_alloc&) {
        // Reading names the file itself; the estimates (per-config hwmodel state) may not fit.
        throw Error(str(file.string(), ": out of memory while ",
                        configs < 0 ? std::string("reading this graph file")
                                    : str("estimating this graph's ", configs, " configurations"),
                        " (an allocation failed: the graph and its estimates need more memory "
                        "than this process can get)"));
    }
    return scores;
}

int run_baseline(int argc, char** argv) {
    cxxopts::Options options(
        "segrank hwmodel",
        "Analytical TPU timing-model baseline (docs/hwmodel.md#uses): ranks every configuration of "
        "every "
        "graph of one split by predicted runtime and writes a submission CSV.\n"
        "  segrank hwmodel --data DIR --split S --out sub.csv [--scores scores.csv] [--hardware "
        "NAME] [--strict]\n"
        "  segrank hwmodel explain <file.pb|file.npz> [--config i]   (see 'explain --help')\n"
        "  segrank hwmodel validate [--data DIR]                     (fixture validation table)");
    options.add_options()("data", "TpuGraphs npz root (or a folder of npz files)",
                          cxxopts::value<std::string>())("split", "train | valid | test",
                                                         cxxopts::value<std::string>())(
        "out", "submission CSV to write (ID,TopConfigs)", cxxopts::value<std::string>())(
        "scores", "also write every configuration's estimate (ID,config,score; score = ns)",
        cxxopts::value<std::string>())(
        "hardware",
        "hardware table: tpu_v3_core (default), tpu_v3_core_jax, tpu_v2_core, tpu_v4_megacore",
        cxxopts::value<std::string>()->default_value("tpu_v3_core"))(
        "strict", "a graph the model cannot cost is an error (default: a warning, default order)")(
        "h,help", "show help");
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("data") && args.count("split") && args.count("out"),
                  "segrank hwmodel: --data, --split and --out are required (see --help)");
    // Before the work: a directory or FIFO is refused, and an existing file that is no earlier
    // submission (scores) file.
    refuse_replacing_other_file("--out", args["out"].as<std::string>(), is_submission_head,
                                "a submission CSV (ID,TopConfigs)", "segrank hwmodel");
    if (args.count("scores")) {
        const std::string out = args["out"].as<std::string>();
        const std::string scores = args["scores"].as<std::string>();
        refuse_replacing_other_file("--scores", scores, is_scores_head,
                                    "a scores CSV (ID,config,score)", "segrank hwmodel");
        refuse_same_output("--out", out, "--scores", scores);
    }
    const hw::HwParams hw = hw::hardware_by_name(args["hardware"].as<std::string>());
    const Split split = parse_split(split_option(args));
    std::vector<SubmissionRow> rows;
    std::vector<ScoreRow> score_rows;
    int64_t graphs = 0;
    OneSourcePerSplit one;
    for (const auto& c : discover_collections(args["data"].as<std::string>())) {
        one.add(c.id, c.dir.string());
        if (c.id.split != split) continue;
        std::fprintf(stderr, "hwmodel: %s (%zu graphs)\n", c.id.full_name().c_str(),
                     c.files.size());
        for (const auto& file : c.files) {
            bool costed = true;
            const std::vector<double> scores =
                score_graph(c, file, hw, args.count("strict") > 0, costed);
            const std::string id = submission_id(c.id, file.stem().string());
            rows.push_back({id, top_configs(scores, c.id.task), ""});
            for (size_t j = 0; costed && j < scores.size(); ++j)
                score_rows.push_back({id, static_cast<int64_t>(j), scores[j], ""});
            ++graphs;
        }
    }
    SEGRANK_CHECK(graphs > 0, "segrank hwmodel: no collection with split '", to_string(split),
                  "' under ", args["data"].as<std::string>());
    // Both files or neither: a failure writing one leaves the other as it was.
    write_submission_and_scores(args["out"].as<std::string>(), rows,
                                args.count("scores") ? args["scores"].as<std::string>() : "",
                                score_rows);
    std::fprintf(stderr, "hwmodel: wrote %lld rows to %s\n", static_cast<long long>(rows.size()),
                 args["out"].as<std::string>().c_str());
    return 0;
}

}  // namespace

int run_hwmodel(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "explain")
        return run_hwmodel_explain(argc - 1, argv + 1);
    if (argc > 1 && std::string(argv[1]) == "validate")
        return run_hwmodel_validate(argc - 1, argv + 1);
    return run_baseline(argc, argv);
}

}  // namespace segrank::cli
