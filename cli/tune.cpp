// `segrank tune`: which configurations of one graph to measure next, measured and fed back into
// the cost model round by round (docs/tune.md). The rounds, files and resume are in
// cli/tune_rounds.*; this file parses the options, chooses the measurement backend and turns
// SIGINT/SIGTERM into a clean stop.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "api/cost_model_internal.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/tune_rounds.h"
#include "gnn/core/check.h"
#include "gnn/core/parallel.h"
#include "gst/prepared_graph.h"

namespace segrank::cli {

namespace {

std::atomic<int> g_stop{0};

extern "C" void on_stop_signal(int sig) { g_stop.store(sig); }

// Restores the previous SIGINT/SIGTERM handlers on scope exit.
class StopSignals {
public:
    StopSignals() {
        struct sigaction sa {};
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int_);
        sigaction(SIGTERM, &sa, &old_term_);
    }
    ~StopSignals() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

private:
    struct sigaction old_int_ {};
    struct sigaction old_term_ {};
};

// The measurement seam: the backend --measure names, as a function of config indices.
// `recorded` replays the graph's config_runtime (ns; tile: not divided by the normalizer);
// `hwmodel` is the analytical TPU model's estimate of each config (gst/prepared_graph.h
// hwmodel_estimates, noise-free).
MeasureFn make_measure(const std::string& spec, const Graph& g) {
    if (spec == "recorded") {
        std::vector<int64_t> rt = g.runtimes_ns();
        bool any = false;
        for (int64_t r : rt) any = any || r > 0;
        SEGRANK_CHECK(any, "--measure recorded: ", g.where(),
                      " has no recorded runtimes (all 0: a test split); use --measure hwmodel or "
                      "exec:CMD");
        return [rt = std::move(rt)](std::span<const int64_t> configs) {
            std::vector<Measured> out;
            for (int64_t c : configs) {
                Measured m;
                m.config = c;
                if (rt[static_cast<size_t>(c)] > 0)
                    m.runtime_ns = static_cast<double>(rt[static_cast<size_t>(c)]);
                else
                    m.error = "no recorded runtime";
                out.push_back(std::move(m));
            }
            return out;
        };
    }
    if (spec == "hwmodel") {
        std::vector<double> est;
        {
            std::lock_guard<std::recursive_mutex> lock(cost_model_mutex());
            const Graph::Impl& gi = *g.impl();
            est = hwmodel_estimates(*gi.entry.source, gi.entry.index);
        }
        return [est = std::move(est)](std::span<const int64_t> configs) {
            std::vector<Measured> out;
            for (int64_t c : configs) {
                Measured m;
                m.config = c;
                const double e = est[static_cast<size_t>(c)];
                if (std::isfinite(e) && e > 0)
                    m.runtime_ns = e;
                else
                    m.error = "the timing model cannot cost this config";
                out.push_back(std::move(m));
            }
            return out;
        };
    }
    SEGRANK_CHECK(spec.rfind("exec:", 0) != 0,
                  "--measure exec:CMD is not available in this build (recorded and hwmodel are)");
    SEGRANK_CHECK(false, "--measure '", spec, "': expected recorded, hwmodel or exec:CMD");
    return {};
}

}  // namespace

int run_tune(int argc, char** argv) {
    cxxopts::Options options(
        "segrank tune",
        "Choose, round by round, which configurations of one graph to measure next: the default\n"
        "first, then the cost model's best unmeasured configs plus exploration, refitting the\n"
        "model on the measured runtimes (docs/tune.md).");
    options.add_options()("checkpoint", "run directory or .ckpt.h5 file (repeat to ensemble)",
                          cxxopts::value<std::vector<std::string>>())(
        "graph", "the graph: FILE.npz, STORE.h5:NAME or FILE.pb[:MODULE]",
        cxxopts::value<std::string>())("budget", "total measurements (the default's included)",
                                       cxxopts::value<int64_t>())(
        "batch", "configs measured per round", cxxopts::value<int64_t>()->default_value("8"))(
        "candidates", "where candidates come from: recorded (the graph's configs)",
        cxxopts::value<std::string>()->default_value("recorded"))(
        "measure", "recorded | hwmodel | exec:CMD",
        cxxopts::value<std::string>()->default_value("recorded"))(
        "refit", "between rounds: none | head | full",
        cxxopts::value<std::string>()->default_value("none"))(
        "refit-steps", "AdamW steps per refit", cxxopts::value<int>()->default_value("200"))(
        "refit-lr", "refit learning rate", cxxopts::value<double>()->default_value("0.001"))(
        "seed", "exploration seed", cxxopts::value<int64_t>()->default_value("0"))(
        "out", "output directory (measurements.jsonl, best.json, tune.json)",
        cxxopts::value<std::string>())("resume", "continue the run in --out")(
        "threads", "OpenMP threads (default: all cores)",
        cxxopts::value<int>()->default_value("0"))("quiet", "no progress lines")("h,help",
                                                                                 "show this help");
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("checkpoint"), "missing --checkpoint RUN_DIR");
    SEGRANK_CHECK(args.count("graph"), "missing --graph FILE.npz | STORE.h5:NAME | FILE.pb");
    SEGRANK_CHECK(args.count("budget"), "missing --budget N");
    SEGRANK_CHECK(args.count("out"), "missing --out DIR");
    TuneOptions o;
    o.budget = args["budget"].as<int64_t>();
    SEGRANK_CHECK(o.budget >= 1, "--budget: expected >= 1, got ", o.budget);
    o.batch = args["batch"].as<int64_t>();
    SEGRANK_CHECK(o.batch >= 1, "--batch: expected >= 1, got ", o.batch);
    const std::string candidates = args["candidates"].as<std::string>();
    SEGRANK_CHECK(candidates == "recorded" || candidates == "search",
                  "--candidates: expected recorded or search, got '", candidates, "'");
    SEGRANK_CHECK(candidates == "recorded",
                  "--candidates search is not available in this build (recorded is)");
    o.refit = parse_refit(args["refit"].as<std::string>());
    o.refit_steps = args["refit-steps"].as<int>();
    SEGRANK_CHECK(o.refit_steps >= 1 && o.refit_steps <= 100000,
                  "--refit-steps: expected 1..100000, got ", o.refit_steps);
    o.refit_lr = args["refit-lr"].as<double>();
    SEGRANK_CHECK(std::isfinite(o.refit_lr) && o.refit_lr > 0 && o.refit_lr <= 1,
                  "--refit-lr: expected a number in (0, 1], got ", o.refit_lr);
    const int64_t seed = args["seed"].as<int64_t>();
    SEGRANK_CHECK(seed >= 0, "--seed: expected >= 0, got ", seed);
    o.seed = static_cast<uint64_t>(seed);
    o.out = args["out"].as<std::string>();
    o.resume = args.count("resume") > 0;
    o.measure = args["measure"].as<std::string>();
    o.progress = args.count("quiet") == 0;
    set_num_threads(thread_option(args));

    CostModel model(args["checkpoint"].as<std::vector<std::string>>());
    const Graph g = Graph::open(args["graph"].as<std::string>());
    const MeasureFn measure = make_measure(o.measure, g);
    g_stop.store(0);
    StopSignals signals;
    o.stop = &g_stop;
    const TuneResult r = tune_rounds(model, g, measure, o);
    if (r.interrupted_by) {
        std::fprintf(stderr,
                     "segrank tune: interrupted by signal %d after %lld measurements; every "
                     "measurement is in %s (continue with --resume)\n",
                     r.interrupted_by, static_cast<long long>(r.measured), o.out.c_str());
        return 128 + r.interrupted_by;
    }
    std::printf("segrank tune: %lld measurements (%lld now) -> %s/best.json: ",
                static_cast<long long>(r.measured), static_cast<long long>(r.measured_now),
                o.out.c_str());
    if (r.best_ns) {
        std::printf("config %lld, %.0f ns", static_cast<long long>(r.best_config), *r.best_ns);
        if (r.default_ns)
            std::printf(", %.3fx the default (config %lld, %.0f ns)", *r.default_ns / *r.best_ns,
                        static_cast<long long>(r.default_config), *r.default_ns);
        std::printf("\n");
    } else {
        std::printf("no successful measurement\n");
    }
    return 0;
}

}  // namespace segrank::cli
