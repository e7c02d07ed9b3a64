// `segrank report RUN_DIR [--out report.html] [--eval eval.json] [--leaderboard table.csv|json]`:
// one self-contained HTML page of a run (issue 5 item 4).
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "gnn/core/check.h"
#include "cli/commands.h"
#include "report/report.h"

namespace segrank::cli {

int run_report(int argc, char** argv) {
    cxxopts::Options options(
        "segrank report",
        "Writes one self-contained HTML page (inline SVG, no scripts, no network) for a run directory: "
        "training loss and learning-rate curves, validation metrics per collection over steps, per-graph "
        "Kendall bars (--eval, else report.json), the leaderboard of the run's evaluations, an optional "
        "external leaderboard (`segrank leaderboard --out-csv` or --json output) and the effective config.");
    options.add_options()("run_dir", "run directory (config.toml, metrics.jsonl, report.json)",
                          cxxopts::value<std::string>())(
        "out", "output HTML file (default <run_dir>/report.html)", cxxopts::value<std::string>())(
        "eval", "per-graph metrics from `segrank evaluate --json`", cxxopts::value<std::string>())(
        "leaderboard", "leaderboard table (CSV, or JSON when the name ends in .json)", cxxopts::value<std::string>())(
        "h,help", "show help");
    options.parse_positional({"run_dir"});
    options.positional_help("RUN_DIR");
    // cxxopts errors are reported by main() as "segrank <cmd>: error: ... (see --help)".
    const cxxopts::ParseResult args = options.parse(argc, argv);
    if (args.count("help")) {
        std::printf("%s\n", options.help().c_str());
        return 0;
    }
    SEGRANK_CHECK(args.count("run_dir"), "missing RUN_DIR (see segrank report --help)");
    ReportOptions opt;
    opt.run_dir = args["run_dir"].as<std::string>();
    if (args.count("eval")) opt.eval_json = args["eval"].as<std::string>();
    if (args.count("leaderboard")) opt.leaderboard = args["leaderboard"].as<std::string>();
    const std::filesystem::path out =
        args.count("out") ? std::filesystem::path(args["out"].as<std::string>()) : opt.run_dir / "report.html";

    const std::string html = render_report_html(opt);
    const std::filesystem::path tmp = out.string() + ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f << html;
        f.close();
        if (!f) {
            std::error_code ec;
            std::filesystem::remove(tmp, ec);
            throw Error(str("--out: cannot write '", out.string(), "'"));
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, out, ec);
    SEGRANK_CHECK(!ec, "--out: cannot rename '", tmp.string(), "' to '", out.string(), "': ", ec.message());
    std::printf("segrank report: wrote %s (%zu bytes)\n", out.string().c_str(), html.size());
    return 0;
}

}  // namespace segrank::cli
