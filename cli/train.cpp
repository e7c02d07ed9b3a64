// `segrank train`: trains a model from a TOML config, in one process or under mpirun
// (docs/architecture.md#pipeline, docs/architecture.md#distribution).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <thread>

#include "cli/commands.h"
#include "cli/ingest.h"
#include "cli/options.h"
#include "cli/train_balance.h"
#include "cli/train_interrupt.h"
#include "gnn/core/address_space.h"
#include "gnn/core/check.h"
#include "gnn/core/parallel.h"
#include "report/report.h"
#include "trainer/comm.h"
#include "trainer/config.h"
#include "trainer/config_task.h"
#include "trainer/dataset.h"
#include "trainer/evaluation.h"
#include "trainer/run_dir.h"
#include "trainer/trainer.h"
#include "util/atomic_file.h"
#include "util/user_input.h"

namespace segrank::cli {

namespace {

// Files of a finished or interrupted run that a new run must not silently replace.
constexpr const char* kRunOutputs[] = {"last.ckpt.h5", "best.ckpt.h5"};

// data.ingest: raw tuning .pb files ingested into data.root (split train) before training, by rank
// 0, at the npz root that collection discovery reads (data.root may be the folder holding npz/ or
// npz/ itself). What it added is recorded in `written` as it goes, so a run that fails before
// training removes it.
void ingest_inputs(const RunConfig& cfg, Communicator& comm, IngestWritten& written) {
    if (cfg.data.ingest.empty()) return;
    if (comm.rank() == 0) {
        for (const auto& pb : cfg.data.ingest) {
            SEGRANK_CHECK(std::filesystem::is_regular_file(pb), "data.ingest: '", pb,
                          "' is not a file");
            IngestRequest req;
            req.input = pb;
            req.npz_root = npz_root_of(cfg.data.root);
            req.split = cfg.data.train_split;
            req.force = true;
            try {
                ingest_tuning_file(req, &written);
            } catch (const Error& e) {
                throw Error(str("data.ingest: ingesting '", pb, "' failed: ", e.what()));
            }
        }
    }
    comm.barrier();
}

// Seconds the ranks wait for each other at start-up (SEGRANK_STARTUP_TIMEOUT_S, default 120): a
// rank of the job that runs another program (an MPMD launch `train : evaluate`) never joins.
double startup_timeout_seconds() {
    constexpr double kDefault = 120.0;
    const char* env = std::getenv("SEGRANK_STARTUP_TIMEOUT_S");
    if (!env || !*env) return kDefault;
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    SEGRANK_CHECK(end != env && *end == '\0' && std::isfinite(v) && v > 0,
                  "SEGRANK_STARTUP_TIMEOUT_S=", echo_value(env),
                  ": expected a number of seconds > 0");
    return v;
}

// A fresh run refuses a run directory holding checkpoints unless --overwrite.
void check_no_earlier_run(const std::filesystem::path& dir, bool overwrite) {
    for (const char* f : kRunOutputs) {
        if (!std::filesystem::exists(dir / f) || overwrite) continue;
        throw Error(str(dir.string(), ": run directory already holds ", f,
                        " from an earlier run; use --resume ", dir.string(),
                        " to continue it, --overwrite to start over, or another train.run_dir"));
    }
}

// A fresh run's own files, recognized by their first bytes: train replaces these only.
bool is_run_config_head(std::string_view h) { return h.starts_with("# segrank run configuration"); }
bool is_run_metrics_head(std::string_view h) { return h.starts_with(R"({"phase":)"); }
bool is_run_report_json_head(std::string_view h) { return h.starts_with(R"({"steps":)"); }

// Whether `entry` is `path` or a folder above it (both resolved: links, "..").
bool holds_path(const std::filesystem::path& entry, const std::filesystem::path& path) {
    std::error_code ec;
    const auto e = std::filesystem::weakly_canonical(entry, ec);
    if (ec) return false;
    const auto p = std::filesystem::weakly_canonical(path, ec);
    if (ec) return false;
    const auto mismatch = std::mismatch(e.begin(), e.end(), p.begin(), p.end());
    return mismatch.first == e.end();
}

// What a fresh run may replace in an existing run directory (docs/files.md#run-directory): never
// the --config file itself, in a folder that is not a segrank run directory (no run's
// config.toml or metrics.jsonl, no checkpoint; a .lock alone does not count) nothing but the names
// a run writes (and the --config file, and data.root or a folder holding it), and config.toml,
// metrics.jsonl, report.json, report.html only when they are a run's own (a user's notes named
// config.toml are refused). A segrank tune directory (tune.json or measurements.jsonl) is refused.
void check_fresh_run_dir(const std::filesystem::path& dir, const std::string& config,
                         const std::filesystem::path& data_root) {
    namespace fs = std::filesystem;
    SEGRANK_CHECK(!same_file(config, dir / "config.toml"), "--config ", config,
                  " is the file the run writes its effective config to (",
                  (dir / "config.toml").string(),
                  "); keep the config outside the run directory, e.g. copy it beside it");
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(dir, ec)) && !fs::exists(fs::status(dir, ec))) {
        const fs::path target = fs::read_symlink(dir, ec);
        throw Error(str("train.run_dir ", dir.string(), ": is a dangling symbolic link to '",
                        target.string(),
                        "' (which does not exist): remove the link, create that folder or give "
                        "another train.run_dir"));
    }
    if (!fs::is_directory(dir, ec)) return;
    // A segrank tune's --out (it holds a .lock too): its files and a run's would mix.
    for (const char* f : {"tune.json", "measurements.jsonl"})
        SEGRANK_CHECK(!fs::exists(fs::symlink_status(dir / f, ec)), "train.run_dir ", dir.string(),
                      ": is a segrank tune directory (it holds ", f,
                      "), not a run directory; give a new or empty folder as train.run_dir");
    static constexpr std::string_view kRunNames[] = {".lock",        "config.toml", "metrics.jsonl",
                                                     "report.json",  "report.html", "best.ckpt.h5",
                                                     "last.ckpt.h5", "partitions"};
    // A run directory holds what train writes (a run's own config.toml or metrics.jsonl, or a
    // checkpoint); a stray .lock alone makes no folder one (it is the lock of any segrank writer).
    const auto starts_as = [&](const char* name, bool (*is_kind)(std::string_view)) {
        if (!fs::is_regular_file(dir / name, ec)) return false;  // never open a FIFO
        std::ifstream in(dir / name, std::ios::binary);
        std::string head(64, '\0');
        in.read(head.data(), static_cast<std::streamsize>(head.size()));
        head.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
        return is_kind(head);
    };
    const bool prior_run = fs::exists(dir / "best.ckpt.h5", ec) ||
                           fs::exists(dir / "last.ckpt.h5", ec) ||
                           starts_as("config.toml", is_run_config_head) ||
                           starts_as("metrics.jsonl", is_run_metrics_head);
    if (!prior_run) {
        std::vector<std::string> foreign;
        for (const auto& e : fs::directory_iterator(dir, ec)) {
            const std::string name = e.path().filename().string();
            if (name.find(".tmp-") != std::string::npos) continue;  // swept temporaries
            if (same_file(e.path(), config)) continue;      // the --config file kept beside the run
            if (holds_path(e.path(), data_root)) continue;  // data.root inside the run dir
            if (std::find(std::begin(kRunNames), std::end(kRunNames), name) == std::end(kRunNames))
                foreign.push_back(name);
        }
        std::sort(foreign.begin(), foreign.end());
        SEGRANK_CHECK(
            foreign.empty(), "train.run_dir ", dir.string(),
            ": not empty and not a segrank run directory (no config.toml, metrics.jsonl or "
            "checkpoint of a run), and ",
            (dir / (foreign.empty() ? "" : foreign.front())).string(),
            " is no file a run writes; give a new or empty folder as train.run_dir");
    }
    const auto own = [&](const char* name, bool (*is_kind)(std::string_view), const char* kind) {
        refuse_replacing_other_file("train.run_dir", (dir / name).string(), is_kind, kind,
                                    "segrank train");
    };
    own("config.toml", is_run_config_head, "the config.toml of a segrank run");
    own("metrics.jsonl", is_run_metrics_head, "the metrics.jsonl of a segrank run");
    own("report.json", is_run_report_json_head, "the report.json of a segrank run");
    own("report.html", is_segrank_report_page, "a page segrank report wrote");
}

// The files a run writes into its directory must be writable outputs (util/atomic_file.h): a FIFO,
// folder or socket in the place of one (which would hang or fail the run later) is refused before
// anything is written.
void check_run_files(const std::filesystem::path& dir) {
    std::error_code ec;
    const auto st = std::filesystem::status(dir, ec);
    SEGRANK_CHECK(!std::filesystem::exists(st) || std::filesystem::is_directory(st),
                  "train.run_dir ", dir.string(),
                  ": exists and is not a directory (expected a run directory to create or reuse)");
    for (const char* f :
         {"config.toml", "metrics.jsonl", "report.json", "best.ckpt.h5", "last.ckpt.h5"}) {
        std::error_code ec;
        if (std::filesystem::exists(std::filesystem::symlink_status(dir / f, ec)))
            check_output_option("train.run_dir", (dir / f).string());
    }
}

// --resume DIR must name an existing run directory: a missing path, a symbolic link to nothing or
// a file are named as such (not as a directory without config.toml).
void check_resume_dir(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto link = fs::symlink_status(dir, ec);
    constexpr const char* kExpected = " (expected the run directory of an earlier segrank train)";
    SEGRANK_CHECK(!dir.empty(), "--resume: the path is empty", kExpected);
    SEGRANK_CHECK(fs::exists(link), "--resume ", dir.string(), ": no such run directory",
                  kExpected);
    const auto target = fs::status(dir, ec);
    if (fs::is_symlink(link) && !fs::exists(target))
        throw Error(str("--resume ", dir.string(), ": broken symbolic link (to '",
                        fs::read_symlink(dir, ec).string(), "', which does not exist)", kExpected));
    SEGRANK_CHECK(fs::is_directory(target), "--resume ", dir.string(), ": not a directory",
                  kExpected);
}

// The options of `segrank train`.
cxxopts::Options train_options() {
    cxxopts::Options options(
        "segrank train",
        "Train a ranking GNN with Graph Segment Training (one process, or N ranks under mpirun).\n"
        "Writes <run_dir>/{config.toml, metrics.jsonl, best.ckpt.h5, last.ckpt.h5, report.json}; a "
        "run_dir\n"
        "that already holds checkpoints is refused unless --resume (continue) or --overwrite.");
    options.add_options()("c,config", "TOML config file (configs/default.toml documents every key)",
                          cxxopts::value<std::string>())(
        "set",
        "override a key: --set section.key=value (repeatable; the value is TOML, commas included: "
        "--set 'data.collections=[\"tile:xla\", \"layout:xla:random\"]')",
        cxxopts::value<std::vector<std::string>>())(
        "resume", "continue the run in RUN_DIR from its last checkpoint",
        cxxopts::value<std::string>())("run-dir", "shortcut for --set train.run_dir=DIR",
                                       cxxopts::value<std::string>())(
        "overwrite",
        "start over in a run directory that already holds checkpoints (deletes them first)")(
        "check",
        "only check the config (file and --set overrides, every key and cross-key rule), the run "
        "directory and the task of data.root's collections (a folder listing: no graph is read), "
        "and exit: nothing is written")(
        "data-later",
        "with --check: data.root need not exist yet (a script that checks its --set before it "
        "makes the data), nor a missing eval.indices file; the OK line says what was not read")(
        "balance-model",
        "print the step-cost model's efficiency per dist.ownership mode for these world sizes "
        "(e.g. 2,4,8,16,64) as JSON and exit: reads graph sizes only, writes nothing",
        cxxopts::value<std::string>())(
        "balance-from", "first step the --balance-model sums over (default 0)",
        cxxopts::value<int64_t>()->default_value("0"))("h,help", "show this help");
    return options;
}

// What the command line asks for: the effective config (--config, or the config.toml stored in
// the --resume run directory, with the --set / --run-dir overrides) and where the run goes.
struct TrainRequest {
    RunConfig cfg;
    std::optional<std::filesystem::path> resume;  ///< --resume RUN_DIR
    bool overwrite = false;                       ///< --overwrite
    bool data_later = false;                      ///< --data-later (with --check)
    std::filesystem::path dir;                    ///< the run directory
    std::string config;                           ///< --config as given (empty with --resume)
};

// The --set keys given twice, and --run-dir (`run_dir`, "" when absent) with a --set
// train.run_dir, are refused naming both: the last one silently winning hid typos.
void check_override_keys(const std::vector<std::string>& overrides, const std::string& run_dir) {
    std::map<std::string, std::string> first_of;  // key -> its first --set
    for (const auto& ov : overrides) {
        std::string_view key = std::string_view(ov).substr(0, ov.find('='));
        key.remove_prefix(std::min(key.size(), key.find_first_not_of(" \t")));
        key = key.substr(0, key.find_last_not_of(" \t") + 1);
        // A line break as \n; a 100 kB value cut (its key is shown whole).
        const std::string shown = echo_value(ov, std::max<size_t>(200, key.size() + 40));
        const auto [it, fresh] = first_of.try_emplace(std::string(key), shown);
        SEGRANK_CHECK(fresh, "--set ", shown, ": ", echo_value(key, key.size()),
                      " is set twice, by --set ", it->second, " and --set ", shown,
                      " (give each key once)");
        SEGRANK_CHECK(run_dir.empty() || key != "train.run_dir", "--run-dir ", run_dir,
                      " and --set ", shown, " both set the run directory: give one of them");
    }
}

TrainRequest train_request(const cxxopts::ParseResult& result) {
    std::vector<std::string> overrides;
    if (result.count("set")) overrides = result["set"].as<std::vector<std::string>>();
    check_override_keys(
        overrides, result.count("run-dir") ? result["run-dir"].as<std::string>() : std::string());
    if (result.count("run-dir"))
        overrides.push_back("train.run_dir=" + result["run-dir"].as<std::string>());
    TrainRequest t;
    if (result.count("resume")) {
        t.resume = result["resume"].as<std::string>();
        check_resume_dir(*t.resume);
        const auto stored = *t.resume / "config.toml";
        SEGRANK_CHECK(std::filesystem::is_regular_file(stored), "--resume ", t.resume->string(),
                      ": no config.toml in it");
        SEGRANK_CHECK(!result.count("config"),
                      "--resume takes the config stored in the run directory; drop --config");
        t.cfg = load_config(stored.string(), overrides);
        if (std::none_of(overrides.begin(), overrides.end(),  // else check_resume_start names it
                         [](const std::string& o) { return o.starts_with("data.root="); }))
            check_resume_data_root(t.cfg.data, *t.resume);
    } else {
        SEGRANK_CHECK(result.count("config"), "missing --config FILE (see configs/default.toml)");
        t.config = result["config"].as<std::string>();
        SEGRANK_CHECK(!t.config.empty(),
                      "--config: the path is empty (expected a TOML config file)");
        t.cfg = load_config(t.config, overrides);
    }
    t.overwrite = result.count("overwrite") > 0;
    t.data_later = result.count("data-later") > 0;
    SEGRANK_CHECK(!t.data_later || result.count("check"),
                  "--data-later applies to --check only (a run reads its data at once)");
    SEGRANK_CHECK(!(t.overwrite && t.resume), "--overwrite and --resume exclude each other");
    SEGRANK_CHECK(!result.count("balance-from") || result.count("balance-model"),
                  "--balance-from applies to --balance-model only (the first step the model sums "
                  "over); give --balance-model WORLDS too, or drop --balance-from to train");
    for (const char* opt : {"resume", "overwrite", "run-dir"})
        SEGRANK_CHECK(!(result.count(opt) && result.count("balance-model")), "--", opt,
                      " and --balance-model exclude each other (--balance-model only prints the "
                      "step-cost model of the config's data and trains nothing)");
    SEGRANK_CHECK(!(result.count("check") && result.count("balance-model")),
                  "--check and --balance-model exclude each other (--check prints only \"config "
                  "OK\", --balance-model prints the JSON model): give one of them");
    t.dir = t.resume ? *t.resume : std::filesystem::path(t.cfg.train.run_dir);
    return t;
}

// --check: the start-up checks that read no data (the run would refuse what they refuse).
int check_only(const TrainRequest& t) {
    check_run_dir_creatable(t.dir, t.resume ? "--resume" : "train.run_dir (or --run-dir)");
    check_run_dir_unlocked(t.dir);  // the run's RunDirLock would refuse it
    if (t.resume)
        check_resume_start(t.cfg, t.dir);
    else
        check_no_earlier_run(t.dir, t.overwrite);
    check_run_paths(t.cfg, t.dir);
    check_run_files(t.dir);
    if (!t.resume) check_fresh_run_dir(t.dir, t.config, t.cfg.data.root);
    // The eval.indices file as the run reads it; its graphs are checked when the run starts.
    const bool indices_later = !check_eval_indices_file(t.cfg, t.data_later);
    // data.root must exist unless data.ingest creates it (the run refuses it the same way), or
    // --data-later says it is made after this check.
    std::error_code ec;
    const bool later = t.data_later && !std::filesystem::exists(t.cfg.data.root, ec);
    if (t.cfg.data.ingest.empty() && !later) check_data_root_exists(t.cfg.data);
    // The task mix of data.root's collections: a folder listing, no graph read.
    const auto train = later ? std::nullopt : training_collections(t.cfg);
    if (train && !train->empty()) check_one_task(t.cfg, *train);
    std::printf(
        "segrank train: config OK (%s)%s%s\n",
        t.resume ? (*t.resume / "config.toml").string().c_str() : t.config.c_str(),
        train   ? ""
        : later ? "; data.root was not listed (--data-later: it does not exist yet), so "
                  "the task of its collections is checked when the run starts"
                : "; data.root was not listed (data.ingest adds to it), so the task of "
                  "its collections is checked when the run starts",
        indices_later ? "; eval.indices was not read (--data-later: it does not exist yet)" : "");
    return 0;
}

// Rank 0: everything that can refuse the run happens under the lock and before anything is
// written. A fresh run's folder is checked before the lock creates .lock in it, and gets a
// `cleanup` that undoes what a failure before the first checkpoint leaves.
void take_run_dir(const TrainRequest& t, std::unique_ptr<RunDirLock>& lock,
                  std::unique_ptr<RunDirCleanup>& cleanup) {
    check_run_dir_creatable(t.dir, t.resume ? "--resume" : "train.run_dir (or --run-dir)");
    check_run_paths(t.cfg, t.dir);
    if (!t.resume) {
        check_run_files(t.dir);
        check_fresh_run_dir(t.dir, t.config, t.cfg.data.root);
        cleanup = std::make_unique<RunDirCleanup>(t.dir);
    }
    lock = std::make_unique<RunDirLock>(t.dir);  // the one segrank train of this run directory
    // Temporary files (checkpoints, config) of earlier runs here that were killed.
    remove_stale_temp_files(t.dir);
    check_run_files(t.dir);
    if (t.resume) {
        check_resume_start(t.cfg, t.dir);
    } else {
        check_no_earlier_run(t.dir, t.overwrite);
        // Under MPI a failing rank aborts the job and rank 0 ends by SIGTERM inside a
        // collective: the cleanup then runs from the signal handler.
        cleanup->arm_on_termination();
    }
}

// OpenMP threads per rank, then the first collective of the job: with a deadline, so a rank that
// runs another program fails the job instead of leaving it waiting forever.
void join_ranks(const RunConfig& cfg, Communicator& comm) {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    set_num_threads(resolve_threads(cfg, comm.local_size(), hw));
    check_address_space_for_matmuls("train");
    if (comm.rank() == 0 && comm.size() > 1)
        std::printf("segrank train: %d ranks (%s), %d OpenMP thread(s) per rank\n", comm.size(),
                    std::string(comm.backend()).c_str(), num_threads());
    const double timeout = startup_timeout_seconds();
    SEGRANK_CHECK(comm.barrier_within(timeout),
                  "rank(s) did not join the start-up agreement within ", timeout,
                  " s: are all ranks running the same segrank train command? (", comm.size(),
                  " ranks in the job; SEGRANK_STARTUP_TIMEOUT_S sets the wait)");
}

// report.json and report.html of run `dir`, when they are regular files.
void remove_stale_report(const std::filesystem::path& dir) {
    std::error_code ec;
    for (const char* f : {"report.json", "report.html"})
        if (std::filesystem::is_regular_file(dir / f, ec)) std::filesystem::remove(dir / f, ec);
}

// --overwrite: the old run's checkpoints, and its report.json and page (segrank report), which
// describe a model that is gone.
void remove_old_run(const std::filesystem::path& dir) {
    for (const char* f : kRunOutputs) std::filesystem::remove(dir / f);
    remove_stale_report(dir);  // they describe the old checkpoints
}

// Builds the Trainer and runs it; `training` is set once the start-up checks passed. A Ctrl-C
// stops the loop at its next step (cli/train_interrupt.h): one line says how to continue, and the
// exit status is kInterruptedExit.
int run_training(const TrainRequest& t, Communicator& comm, RunDirCleanup* cleanup,
                 bool& training) {
    InterruptibleCommunicator interruptible(comm);
    // --overwrite: the old checkpoints go once the new run passed its start-up checks (data read,
    // config valid), just before it writes its first file, so a run that is refused leaves the old
    // run whole, and no stale best checkpoint outlives the new run.
    // --resume: the run's report.json and page describe where it ended before; a resume that is
    // interrupted or still running must not leave them as its summary (the resumed run writes a
    // new report.json when it ends).
    Trainer trainer(t.cfg, interruptible, t.resume, [&] {
        if (t.overwrite) remove_old_run(t.dir);
        if (t.resume) remove_stale_report(t.dir);
    });
    training = true;
    SigintStop sigint(comm.size() == 1);
    MpiTerminationNotice notice(t.dir, comm.rank(), comm.size());
    if (comm.rank() == 0 && comm.size() > 1)
        std::printf("%s\n", mpi_resume_hint(t.dir, comm.size()).c_str());
    try {
        trainer.run();
    } catch (const TrainingInterrupted&) {
        const bool removed = cleanup && cleanup->remove_created() > 0;
        std::fflush(stdout);
        std::fprintf(stderr, "%s\n",
                     interrupted_message(t.dir, trainer.current_step(), removed).c_str());
        return kInterruptedExit;
    }
    return 0;
}

// A run that failed before training takes back data.ingest's npz files; a fresh run that fails
// before its first checkpoint leaves no half run directory behind (rank 0 only; a failure on
// another rank aborts the job from run_guarded).
void undo_failed_run(IngestWritten& ingested, bool training, const RunDirCleanup* cleanup,
                     const std::filesystem::path& dir) {
    if (!training && !ingested.files.empty()) {
        const int64_t n = remove_ingested(ingested);
        if (n > 0)
            std::fprintf(stderr,
                         "segrank train: removed the %zu npz file(s) data.ingest wrote "
                         "for the failed run (and the folders it created)\n",
                         ingested.files.size());
    }
    if (cleanup) {
        const int64_t n = cleanup->remove_created();
        if (n > 0)
            std::fprintf(stderr, "segrank train: removed what the failed run created in %s\n",
                         dir.string().c_str());
    }
}

}  // namespace

int run_train(int argc, char** argv) {
    cxxopts::Options options = train_options();
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const TrainRequest t = train_request(*parsed);
    if (parsed->count("check")) return check_only(t);
    if (parsed->count("balance-model"))
        return print_balance_model(t.cfg,
                                   parse_world_sizes((*parsed)["balance-model"].as<std::string>()),
                                   (*parsed)["balance-from"].as<int64_t>());

    std::unique_ptr<Communicator> comm = make_communicator(&argc, &argv);
    std::unique_ptr<RunDirLock> lock;
    std::unique_ptr<RunDirCleanup>
        cleanup;             // fresh runs: undo what a failure before the first checkpoint left
    IngestWritten ingested;  // data.ingest's output, taken back when the run fails before training
    bool training = false;
    return run_guarded(*comm, "train", [&]() {
        if (comm->rank() == 0) take_run_dir(t, lock, cleanup);
        try {
            join_ranks(t.cfg, *comm);
            ingest_inputs(t.cfg, *comm, ingested);
            return run_training(t, *comm, cleanup.get(), training);
        } catch (...) {
            undo_failed_run(ingested, training, cleanup.get(), t.dir);
            throw;
        }
    });
}

}  // namespace segrank::cli
