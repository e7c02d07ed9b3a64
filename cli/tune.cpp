// `segrank tune`: which configurations of one graph to measure next, measured and fed back into
// the cost model round by round (docs/tune.md). The rounds, files and resume are in
// cli/tune_rounds.*; this file parses the options, chooses the measurement backend and turns
// SIGINT/SIGTERM into a clean stop.
#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/cost_model_internal.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/tune_files.h"
#include "cli/tune_rounds.h"
#include "gnn/core/address_space.h"
#include "gnn/core/check.h"
#include "gnn/core/parallel.h"
#include "trainer/run_dir.h"
#include "tune/candidates.h"
#include "tune/config.h"
#include "tune/measure.h"
#include "util/exit_status.h"
#include "util/user_input.h"

namespace segrank::cli {

namespace {

// Bytes of the first failure's reason shown when no measurement succeeded: a reason of this run
// is already short (tune/exec_measurer.h); one read back from an edited measurements.jsonl
// (--resume) is cut here.
constexpr size_t kMaxFailureEchoBytes = 2000;

std::atomic<int> g_stop{0};

extern "C" void on_stop_signal(int sig) { g_stop.store(sig); }

// While alive, SIGINT, SIGTERM and SIGHUP set g_stop (the run stops at its next check) instead of
// ending the process; restores the previous handlers on scope exit.
class StopSignals {
public:
    StopSignals() {
        struct sigaction sa {};
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < 3; ++k) sigaction(kStopSignals[k], &sa, &old_[k]);
    }
    ~StopSignals() {
        for (size_t k = 0; k < 3; ++k) sigaction(kStopSignals[k], &old_[k], nullptr);
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

private:
    static constexpr int kStopSignals[3] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction old_[3]{};
};

// What --out may be (docs/tune.md#files), checked before the lock and any work: a fresh run needs a
// missing or empty folder (a .lock or temporaries of an earlier tune aside; a folder with tune.json
// is refused later with a hint to --resume); a resumed one a tune directory, whose best.json is
// replaced only when it is a tune's (its first member is "graph").
void check_tune_out(const TuneOptions& o) {
    namespace fs = std::filesystem;
    // Not a raw "File name too long", also for the longest name tune writes in --out.
    refuse_long_path("--out", o.out.native(), "/measurements.jsonl.tmp-4294967295");
    refuse_dangling_link("--out", o.out);  // "File exists" otherwise
    std::error_code ec;
    if (o.resume) {
        SEGRANK_CHECK(fs::is_regular_file(o.out / "tune.json", ec), "--resume ", o.out.string(),
                      ": no tune.json (not a segrank tune directory)");
        refuse_replacing_other_file(
            "--out", (o.out / "best.json").string(),
            [](std::string_view h) { return h.starts_with(R"({"graph":)"); },
            "the best.json of a segrank tune", "segrank tune");
        return;
    }
    if (!fs::is_directory(o.out, ec)) return;
    if (fs::exists(o.out / "tune.json", ec) || fs::exists(o.out / "measurements.jsonl", ec))
        return;  // open_tune_dir: "already holds a tuning run ... continue it with --resume"
    std::vector<std::string> foreign;
    for (const auto& e : fs::directory_iterator(o.out, ec)) {
        const std::string name = e.path().filename().string();
        if (name != ".lock" && name.find(".tmp-") == std::string::npos) foreign.push_back(name);
    }
    std::sort(foreign.begin(), foreign.end());
    SEGRANK_CHECK(foreign.empty(), "--out ", o.out.string(),
                  ": not empty and not a tune directory (no tune.json), and ",
                  (o.out / (foreign.empty() ? "" : foreign.front())).string(),
                  " is no file a tune writes; give a new or empty folder as --out");
}

// A fresh run that ends before its first measurement is taken (a failure in the first scoring, a
// signal) leaves no folder behind: the tune.json and the empty measurements.jsonl it wrote and the
// .lock go (while the lock is still held) and CreatedDirectories removes the folders it made; once
// a measurement is in measurements.jsonl the folder is kept. A --resume run never removes anything:
// DIR and its measurements are the user's.
class KeepOnlyTuneDir {
public:
    KeepOnlyTuneDir(std::filesystem::path dir, CreatedDirectories& made, bool resume)
        : dir_(std::move(dir)), made_(made), resume_(resume) {
        // A fresh run on a DIR that already holds a run is refused (open_tune_dir): those files
        // are an earlier run's, never this one's to remove.
        std::error_code ec;
        earlier_ = std::filesystem::exists(dir_ / "tune.json", ec) ||
                   std::filesystem::exists(dir_ / "measurements.jsonl", ec);
    }
    ~KeepOnlyTuneDir() {
        namespace fs = std::filesystem;
        std::error_code ec;
        if (resume_ || earlier_ || !nothing_measured()) {
            made_.keep();
            return;
        }
        // This fresh run wrote tune.json (a DIR that held one was refused before any work).
        fs::remove(dir_ / "measurements.jsonl", ec);
        fs::remove(dir_ / "tune.json", ec);
        bool only_lock = true;
        for (const auto& e : fs::directory_iterator(dir_, ec))
            only_lock = only_lock && e.path().filename() == ".lock";
        if (only_lock && !ec) fs::remove(dir_ / ".lock", ec);
    }
    KeepOnlyTuneDir(const KeepOnlyTuneDir&) = delete;
    KeepOnlyTuneDir& operator=(const KeepOnlyTuneDir&) = delete;

    /// True when DIR holds no measurement: no measurements.jsonl, or an empty one, and no
    /// best.json.
    bool nothing_measured() const {
        namespace fs = std::filesystem;
        std::error_code ec;
        if (fs::exists(dir_ / "best.json", ec)) return false;
        const auto meas = dir_ / "measurements.jsonl";
        if (!fs::exists(meas, ec)) return true;
        const auto size = fs::file_size(meas, ec);
        return !ec && size == 0;
    }

private:
    std::filesystem::path dir_;
    CreatedDirectories& made_;
    bool resume_ = false;
    bool earlier_ = false;  // DIR held tune.json or measurements.jsonl before this run
};

// g's record (structure, recorded rows and runtimes) as the tune/ parts take it.
tune::TuneGraph tune_record(const Graph& g) {
    std::lock_guard<std::recursive_mutex> lock(cost_model_mutex());
    const Graph::Impl& gi = *g.impl();
    if (g.task() == CostTask::kTile)
        return tune::tune_graph(gi.entry.source->load_tile(gi.entry.index, ConfigRows::all()));
    return tune::tune_graph(gi.entry.source->load_layout(gi.entry.index, ConfigRows::all()));
}

// The measurement seam: the backend --measure names (tune/measure.h: recorded, hwmodel[:NAME],
// exec:CMD) for the graph `record` (which must outlive the result).
MeasureFn make_measure(const std::string& spec, const tune::TuneGraph& record,
                       const tune::MeasureOptions& options) {
    std::shared_ptr<tune::Measurer> m =
        tune::make_measurer(tune::parse_measure_spec(spec), record, options);
    return [m](std::span<const tune::Config> configs) {
        const std::vector<tune::Measurement> r = m->measure(configs);
        SEGRANK_CHECK(r.size() == configs.size(), "--measure ", m->name(), ": ", r.size(),
                      " results for ", configs.size(), " configs");
        std::vector<Measured> out;
        for (const auto& x : r) out.push_back({x.runtime_ns, x.error});
        return out;
    };
}

// Refuses an option given for a mode it does nothing in, instead of ignoring it: --noise is the
// hwmodel simulator's, --timeout/--start-timeout/--max-restarts the exec process's, --pool the
// cost model's proposals of --candidates search.
void check_options_apply(const cxxopts::ParseResult& args, const TuneOptions& o,
                         const std::string& candidates) {
    const tune::MeasureKind kind = tune::parse_measure_spec(o.measure).kind;
    SEGRANK_CHECK(!args.count("noise") || kind == tune::MeasureKind::kHwmodel,
                  "--noise: applies to --measure hwmodel or hwmodel:FAMILY only (the simulator's "
                  "log-normal noise), not to --measure ",
                  o.measure, "; leave --noise out");
    for (const char* exec_only : {"timeout", "start-timeout", "max-restarts"})
        SEGRANK_CHECK(!args.count(exec_only) || kind == tune::MeasureKind::kExec, "--", exec_only,
                      ": applies to --measure exec:CMD only (the harness process), not to "
                      "--measure ",
                      o.measure, "; leave --", exec_only, " out");
    SEGRANK_CHECK(!args.count("pool") || (candidates == "search" && o.strategy == Strategy::kModel),
                  "--pool: applies to --strategy model with --candidates search only (the "
                  "proposals the cost model scores per round), not to ",
                  o.strategy == Strategy::kModel ? "--candidates " + candidates
                                                 : str("--strategy ", strategy_name(o.strategy)),
                  "; leave --pool out");
}

// The run's settings from the command line; `candidates` gets --candidates. Throws
// segrank::Error naming the option that is out of range.
TuneOptions tune_options(const cxxopts::ParseResult& args, std::string& candidates) {
    TuneOptions o;
    o.budget = args["budget"].as<int64_t>();
    SEGRANK_CHECK(o.budget >= 1, "--budget: expected >= 1, got ", o.budget);
    o.batch = tune::parse_round_schedule(args["batch"].as<std::string>(), "--batch");
    candidates = args["candidates"].as<std::string>();
    SEGRANK_CHECK(candidates == "recorded" || candidates == "search",
                  "--candidates: expected recorded or search, got '", candidates, "'");
    o.pool = args["pool"].as<int64_t>();
    SEGRANK_CHECK(o.pool >= 0 && o.pool <= kMaxPool, "--pool: expected 0..", kMaxPool,
                  " proposals per round (every round scores all of them with the cost model and "
                  "holds their config rows in memory), got ",
                  o.pool);
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
    o.memory_mb = memory_mb_option(args);  // as predict's --memory-mb
    o.resume = args.count("resume") > 0;
    o.measure = args["measure"].as<std::string>();
    o.noise = args["noise"].as<double>();
    o.progress = args.count("quiet") == 0;
    o.strategy = parse_strategy(args["strategy"].as<std::string>());
    if (o.strategy != Strategy::kModel) {
        const char* name = strategy_name(o.strategy);
        SEGRANK_CHECK(args.count("checkpoint") == 0, "--strategy ", name,
                      ": a model-free search takes no --checkpoint");
        SEGRANK_CHECK(!args.count("candidates") || candidates == "search", "--strategy ", name,
                      ": searches the module's configurations; --candidates ", candidates,
                      " does not apply (use --candidates search or leave it out)");
        SEGRANK_CHECK(o.refit == RefitMode::kNone, "--strategy ", name,
                      ": --refit applies to --strategy model only");
        for (const char* refit_only : {"refit-steps", "refit-lr"})
            SEGRANK_CHECK(!args.count(refit_only), "--strategy ", name, ": --", refit_only,
                          " applies to --strategy model only (its --refit)");
        SEGRANK_CHECK(!args.count("memory-mb"), "--strategy ", name,
                      ": --memory-mb applies to --strategy model only (the cost model's scoring)");
        SEGRANK_CHECK(!o.resume, "--resume: --strategy ", name,
                      " does not resume (its search state is not in DIR); start a new --out");
        candidates = "search";
    }
    SEGRANK_CHECK(o.strategy != Strategy::kModel || args.count("checkpoint"),
                  "missing --checkpoint RUN_DIR");
    check_options_apply(args, o, candidates);
    return o;
}

// The closing line on stdout: the measurements in DIR (how many of them failed, when any did: a
// harness failing most requests must not look like a clean run), the best config found and its
// speedup over the default.
void print_result(const TuneResult& r, const TuneOptions& o) {
    std::printf("segrank tune: %lld measurements (%lld now)", static_cast<long long>(r.measured),
                static_cast<long long>(r.measured_now));
    if (r.failed > 0)
        std::printf(", %lld succeeded, %lld failed (see %s)",
                    static_cast<long long>(r.measured - r.failed), static_cast<long long>(r.failed),
                    (o.out / "measurements.jsonl").c_str());
    std::printf(" -> %s/best.json: ", o.out.c_str());
    if (r.best_ns) {
        if (r.best_config >= 0)
            std::printf("config %lld, %s ns", static_cast<long long>(r.best_config),
                        runtime_text(*r.best_ns).c_str());
        else
            std::printf("%s (not a row of the file), %s ns", tune::describe(*r.best).c_str(),
                        runtime_text(*r.best_ns).c_str());
        if (r.default_ns)
            std::printf(", %.3fx the default (config %lld, %s ns)", *r.default_ns / *r.best_ns,
                        static_cast<long long>(r.default_config),
                        runtime_text(*r.default_ns).c_str());
        else
            std::printf(", no speedup: the default (config %lld) has no successful measurement",
                        static_cast<long long>(r.default_config));
        std::printf("\n");
    } else {
        std::printf("no successful measurement\n");
    }
}

// Refuses a --checkpoint of the other task beside those of g's: tune would score and refit with
// the members of g's task only and ignore it. None of g's task is tune_rounds' error.
void check_members_of_task(const CostModel& model, const Graph& g) {
    if (!model.covers(g.task())) return;
    std::string same;  // the --checkpoint paths of g's task, for the message
    for (size_t m = 0; m < model.num_members(); ++m)
        if (model.task(m) == g.task())
            same += (same.empty() ? "" : ", ") + echo_value(model.checkpoint(m), PATH_MAX);
    for (size_t m = 0; m < model.num_members(); ++m)
        SEGRANK_CHECK(model.task(m) == g.task(), "--checkpoint ",
                      echo_value(model.checkpoint(m), PATH_MAX), " was trained on the ",
                      cost_task_name(model.task(m)), " task, but ", g.where(), " is a ",
                      cost_task_name(g.task()), " graph (its ", cost_task_name(g.task()),
                      " --checkpoint: ", same,
                      "); tune ranks with checkpoints of the graph's task only: leave it out");
}

// The measurement backends' knobs from the options (--noise, --seed, --timeout, --start-timeout,
// --max-restarts); what they skip or restart is logged to stderr.
tune::MeasureOptions measure_options(const cxxopts::ParseResult& args, const TuneOptions& o) {
    tune::MeasureOptions mo;
    mo.noise_sigma = o.noise;
    mo.seed = o.seed;
    mo.timeout_s = args["timeout"].as<double>();
    mo.start_timeout_s = args["start-timeout"].as<double>();
    mo.max_restarts = args["max-restarts"].as<int>();
    mo.stop = o.stop;  // a signal gives up a request being waited for (exec)
    mo.log = [](const std::string& line) {
        std::fprintf(stderr, "segrank tune: %s\n",
                     echo_value(line, std::string_view::npos).c_str());
    };
    return mo;
}

// The exit of a run stopped by SIGINT/SIGTERM (128 + the signal) and its line on stderr; `nothing`:
// a fresh run that measured nothing, whose directory KeepOnlyTuneDir removes.
int interrupted(const TuneResult& r, const TuneOptions& o, bool model, bool nothing) {
    if (nothing) {
        std::fprintf(stderr,
                     "segrank tune: interrupted by signal %d before the first measurement; nothing "
                     "written to %s\n",
                     r.interrupted_by, o.out.c_str());
        return 128 + r.interrupted_by;
    }
    // The model-free searches keep their state in memory only: they do not resume.
    std::fprintf(stderr,
                 "segrank tune: interrupted by signal %d after %lld measurements; every "
                 "measurement is in %s (%s)\n",
                 r.interrupted_by, static_cast<long long>(r.measured), o.out.c_str(),
                 model ? "continue with --resume"
                       : "--strategy anneal and random do not resume: start a new --out");
    return 128 + r.interrupted_by;
}

// "<graph>: out of memory while <doing> (an allocation failed; the address-space limit ...)":
// the generic text's parenthesis (util/exit_status.h) after the graph and the step.
Error graph_oom_error(const std::string& graph, const std::string& doing) {
    const std::string generic = out_of_memory_message();
    return Error(str(graph, ": out of memory while ", doing, " ",
                     generic.substr(std::min(generic.find('('), generic.size()))));
}

// Runs `step`, a part of tune's start-up on the graph `graph` (as --graph names it); a
// std::bad_alloc becomes graph_oom_error(graph, doing).
template <typename F>
auto naming_graph_on_oom(const std::string& graph, const std::string& doing, F&& step)
    -> decltype(step()) {
    try {
        return step();
    } catch (const std::bad_alloc&) {
        throw graph_oom_error(graph, doing);
    }
}

// tune_rounds (a model) or tune_model_free (`space`); out of memory outside what the rounds name
// (round, pool) names the graph (as --graph gives it) and whether anything was measured.
TuneResult run_rounds_naming_oom(CostModel* model, const Graph& g, const tune::TuneGraph& record,
                                 const MeasureFn& measure, const TuneOptions& o,
                                 const tune::SearchSpace* space, const std::string& graph,
                                 const KeepOnlyTuneDir& keep_only) {
    try {
        return model ? tune_rounds(*model, g, record, measure, o)
                     : tune_model_free(g, record, measure, o, *space);
    } catch (const std::bad_alloc&) {
        throw graph_oom_error(
            graph, keep_only.nothing_measured()
                       ? str("scoring and measuring the default config (round 0, --measure ",
                             o.measure, "); nothing was measured")
                       : str("tuning (--measure ", o.measure, "); the measurements so far are in ",
                             (o.out / "measurements.jsonl").string(),
                             model ? " (continue with --resume)" : ""));
    }
}

// The options of segrank tune (docs/tune.md).
cxxopts::Options tune_cli_options() {
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
        "batch", "B or grow[:CAP] per round", cxxopts::value<std::string>()->default_value("8"))(
        "candidates",
        "recorded (the graph's own configs) | search (new configs of the module's search space)",
        cxxopts::value<std::string>()->default_value("recorded"))(
        "pool", "search: proposals scored per round (default max(2048, 8 x B or CAP), <= 65536)",
        cxxopts::value<int64_t>()->default_value("0"))(
        "measure", "recorded | hwmodel | hwmodel:NAME | exec:CMD (docs/tune.md)",
        cxxopts::value<std::string>()->default_value("recorded"))(
        "noise", "hwmodel: log-normal noise sigma of each measurement (0..5)",
        cxxopts::value<double>()->default_value("0"))(
        "timeout", "exec: seconds per measurement request",
        cxxopts::value<double>()->default_value("60"))(
        "start-timeout",
        "exec: extra seconds for the first request of a newly started process (its startup)",
        cxxopts::value<double>()->default_value("30"))(
        "max-restarts", "exec: restarts of the process after it dies or times out",
        cxxopts::value<int>()->default_value("3"))(
        "refit", "between rounds: none | head | full",
        cxxopts::value<std::string>()->default_value("none"))(
        "refit-steps", "AdamW steps per refit", cxxopts::value<int>()->default_value("200"))(
        "refit-lr", "refit learning rate", cxxopts::value<double>()->default_value("0.001"))(
        "seed", "exploration seed", cxxopts::value<int64_t>()->default_value("0"))(
        "strategy",
        "model (the cost model's rounds) | anneal | random (model-free searches, no checkpoint)",
        cxxopts::value<std::string>()->default_value("model"))(
        "out", "output directory (measurements.jsonl, best.json, tune.json)",
        cxxopts::value<std::string>())("resume", "continue the run in --out")(
        "memory-mb",
        "MiB the cost model's scoring may hold per graph beside the graph's own arrays, 16 to "
        "1048576 (default: the checkpoint's eval.memory_mb; docs/gst.md#memory-budget)",
        cxxopts::value<int64_t>())("threads", "OpenMP threads (default: all cores)",
                                   cxxopts::value<int>()->default_value("0"))(
        "quiet", "no progress lines")("h,help", "show this help");
    return options;
}

}  // namespace

int run_tune(int argc, char** argv) {
    cxxopts::Options options = tune_cli_options();
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("graph"), "missing --graph FILE.npz | STORE.h5:NAME | FILE.pb");
    SEGRANK_CHECK(args.count("budget"), "missing --budget N");
    SEGRANK_CHECK(args.count("out"), "missing --out DIR");
    std::string candidates;
    TuneOptions o = tune_options(args, candidates);
    set_num_threads(thread_option(args));
    check_address_space_for_matmuls("tune");
    // One segrank tune per --out (the .lock of segrank train's run directories), taken before any
    // work: a second tune, or a --resume while the first runs, is refused.
    check_tune_out(o);
    // From before DIR is made: a signal during the set-up (loading the checkpoints, reading the
    // graph) stops the run at the next check, so KeepOnlyTuneDir still removes what it made.
    g_stop.store(0);
    StopSignals signals;
    o.stop = &g_stop;
    std::unique_ptr<CreatedDirectories> made = create_out_dir(o.out);
    const RunDirLock lock(o.out, "tune directory", "segrank tune");
    const KeepOnlyTuneDir keep_only(o.out, *made, o.resume);
    // The exit of a signal during the set-up (128 + the signal), or 0 to go on.
    const auto stopped_in_setup = [&](bool has_model) {
        if (g_stop.load() == 0) return 0;
        TuneResult r;
        r.interrupted_by = g_stop.load();
        return interrupted(r, o, has_model, !o.resume && keep_only.nothing_measured());
    };

    std::optional<CostModel> model;
    if (o.strategy == Strategy::kModel)
        model.emplace(args["checkpoint"].as<std::vector<std::string>>(),
                      ScoreOptions{.memory_mb = o.memory_mb});
    // Out of memory in a step the rounds do not name: the graph and the step.
    const std::string graph = args["graph"].as<std::string>();
    const Graph g =
        naming_graph_on_oom(graph, "reading this graph file", [&] { return Graph::open(graph); });
    if (model) check_members_of_task(*model, g);
    if (const int code = stopped_in_setup(model.has_value())) return code;
    const tune::MeasureOptions mo = measure_options(args, o);
    const tune::TuneGraph record = naming_graph_on_oom(
        graph, "reading this graph file's recorded configs", [&] { return tune_record(g); });
    const MeasureFn measure = naming_graph_on_oom(graph, "setting up --measure " + o.measure, [&] {
        return make_measure(o.measure, record, mo);
    });
    std::optional<tune::CandidateGenerator> generator;
    if (candidates == "search") {
        naming_graph_on_oom(graph, "building the search space of --candidates search",
                            [&] { generator.emplace(tune::SearchSpace::build(record), o.seed); });
        o.generator = &*generator;
    }
    if (const int code = stopped_in_setup(model.has_value())) return code;
    const TuneResult r =
        run_rounds_naming_oom(model ? &*model : nullptr, g, record, measure, o,
                              generator ? &generator->space() : nullptr, graph, keep_only);
    if (r.interrupted_by)
        return interrupted(r, o, model.has_value(), !o.resume && keep_only.nothing_measured());
    // Every measurement failed (the default's included): there is no result, and a harness that
    // cannot measure anything must not look like a finished run.
    SEGRANK_CHECK(r.best_ns.has_value(), "--measure ", o.measure, ": no measurement succeeded (",
                  r.failed, " of ", r.measured, " failed; each one with its reason is in ",
                  (o.out / "measurements.jsonl").string(),
                  "); the first failure: ", echo_value(r.first_error, kMaxFailureEchoBytes));
    print_result(r, o);
    return 0;
}

}  // namespace segrank::cli
