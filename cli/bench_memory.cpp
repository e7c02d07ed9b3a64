// `segrank bench --memory [--json]`: peak RSS and speed of Graph Segment Training and
// streaming inference on synthetic layout graphs packed into HDF5 stores.
//
// Cases (each measured in its own child process, so VmHWM is per case):
//   nodes_1e4, nodes_1e5, nodes_1e6   layout graphs of 10^4 / 10^5 / 10^6 nodes, 1000 configs, one
//                                     configurable node per 100 nodes; phases train and inference
//   configs_1e5                       10^4 nodes, 10^5 configs x 350 configurable nodes (2.5 GB of
//                                     config features as float32, 630 MB as the store's int8);
//                                     train
// Training runs the real Trainer (Dataset over the store, config holdout with streamed dedupe
// groups, normalizer fitted chunk by chunk, GST steps with segments.max_nodes = 1000, K = 32, H =
// 128); inference runs Trainer::evaluate (prepare_graph + score_graph) on the 20% held-out configs
// at the memory budget --memory-mb (eval.memory_mb: the cache and every chunk size derive from it,
// docs/gst.md#memory-budget). segments.history_init = "zero" (see bench_run_config). Graphs
// come from a seeded random DAG builder (write_bench_store below): node v reads v-1 and sometimes
// one of v-2..v-9, 12 varying feature columns, configs drawn uniformly in -1..5, runtime a linear
// function of six config slots (so training has a signal). Stores are cached in --work-dir under a
// directory named by the case's parameters and seed.
//
// Row fields: case, nodes, configs, config_nodes, phase (train | inference), memory_mb (the
// inference budget), peak_rss_mb (VmHWM of
// the child), steps_per_s (train: optimizer steps per second after one warmup step; inference: full
// evaluation passes per second), configs_per_s (inference: configs scored per second), seconds.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/bench_memory_child.h"
#include "cli/bench_memory_options.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "data/graph_store.h"
#include "gnn/core/address_space.h"
#include "gnn/core/check.h"
#include "gnn/core/parallel.h"
#include "gnn/core/rng.h"
#include "gst/inference_budget.h"
#include "hwmodel/synth/synth.h"
#include "trainer/comm.h"
#include "trainer/config.h"
#include "trainer/trainer.h"
#include "util/atomic_file.h"
#include "util/exit_status.h"
#include "util/json.h"
#include "util/rss.h"
#include "util/signal_cleanup.h"

namespace segrank::cli {

int run_bench_memory(int argc, char** argv);

namespace {

using namespace memory_bench;

// The seeded random layout DAG of the file comment, written as one-graph store `path`
// (collection layout:xla:random, split train).
void write_bench_store(const std::filesystem::path& path, const MemCase& c, uint64_t seed) {
    Rng rng = Rng::derive(seed, static_cast<uint64_t>(c.nodes), static_cast<uint64_t>(c.configs),
                          "bench_memory");
    LayoutGraph g;
    g.name = c.name;
    g.source = path;
    const int64_t n = c.nodes;
    g.node_feat = Tensor(n, kNodeFeatDim);
    for (int64_t v = 0; v < n; ++v)
        for (int64_t f = 0; f < 12; ++f)
            g.node_feat.at(v, f) = static_cast<float>(rng.normal() * (1.0 + f));
    static const int32_t kOps[] = {26, 10, 41, 63, 95, 99, 5, 7};
    g.node_opcode.resize(static_cast<size_t>(n));
    for (auto& op : g.node_opcode) op = kOps[rng.uniform_int(8)];
    for (int64_t u = 1; u < n; ++u) {
        g.edge_index.push_back(u);
        g.edge_index.push_back(u - 1);
        if (u >= 9 && rng.uniform() < 0.5) {
            g.edge_index.push_back(u);
            g.edge_index.push_back(u - 2 - static_cast<int64_t>(rng.uniform_int(8)));
        }
    }
    const int64_t nc = c.config_nodes;
    for (int64_t j = 0; j < nc; ++j) g.node_config_ids.push_back((2 * j + 1) * n / (2 * nc));
    g.node_config_feat.resize(static_cast<size_t>(c.configs * nc * kLayoutConfigDim));
    for (auto& x : g.node_config_feat)
        x = static_cast<int8_t>(static_cast<int>(rng.uniform_int(7)) - 1);
    static const double kW[6] = {3, -2, 2, -1, 1, -3};
    for (int64_t i = 0; i < c.configs; ++i) {
        double rt = 1e6;
        for (int64_t j = 0; j < nc; ++j)
            for (int64_t d = 0; d < 6; ++d)
                rt +=
                    1000.0 * kW[d] *
                    (g.node_config_feat[static_cast<size_t>((i * nc + j) * kLayoutConfigDim + d)] +
                     1);
        g.config_runtime.push_back(static_cast<int64_t>(std::max(1e3, rt)));
    }
    g.node_splits = {0, n};
    std::filesystem::create_directories(path.parent_path());
    CollectionId id = CollectionId::parse("layout:xla:random");
    id.split = Split::kTrain;
    GraphStoreOptions opt;
    opt.deflate_level = 1;
    GraphStoreWriter w(path, id, path.parent_path(), opt);
    w.add(g);
    w.finish();
}

// Bytes the graph of case `c` holds in memory while write_bench_store builds it: node features
// (140 float32), opcodes and about 1.5 edges (2 int64) per node, config features (18 int8 per
// configurable node) and runtimes per config.
double bench_store_bytes(const MemCase& c) {
    const double n = static_cast<double>(c.nodes), k = static_cast<double>(c.configs);
    return n * (kNodeFeatDim * 4.0 + 4.0 + 24.0) +
           k * (static_cast<double>(c.config_nodes) * kLayoutConfigDim + 8.0);
}

// write_bench_store(path, c, seed) that leaves nothing behind when it fails or a signal
// (SIGINT, SIGTERM, SIGHUP) ends it: the folders it created for `path`, or else the writer's
// temporary file "<path>.tmp-<pid>", are removed (the store itself is committed only when
// complete), the latter also when an earlier, killed process left one. Out of memory throws
// segrank::Error naming `what` (the option or case that sets the size), the sizes and about how
// much memory the graph needs.
void write_bench_store_or_clean(const std::filesystem::path& path, const MemCase& c, uint64_t seed,
                                const std::string& what) {
    namespace fs = std::filesystem;
    fs::path top = path.parent_path();  // the outermost folder of `path` that does not exist yet
    std::error_code ec;  // symlink_status: a dangling link is the user's, never "made" here
    while (!top.parent_path().empty() && top.parent_path() != top &&
           !fs::exists(fs::symlink_status(top.parent_path(), ec)))
        top = top.parent_path();
    const bool made_top = !fs::exists(fs::symlink_status(top, ec));
    if (!made_top) remove_stale_temp_files(path.parent_path(), path.filename().string() + ".tmp-");
    const fs::path partial =
        made_top ? top : fs::path(path.string() + ".tmp-" + std::to_string(::getpid()));
    const RemoveOnTermination on_signal(
        partial, str(what, ": interrupted while generating ", path.string(), "; removed ",
                     partial.string(), "\n"));
    try {
        try {
            write_bench_store(path, c, seed);
        } catch (const std::bad_alloc&) {
            const std::string generic = out_of_memory_message();
            throw Error(str(
                what, ": out of memory building the graph of ", c.nodes, " nodes and ", c.configs,
                " configs (it needs about ", static_cast<int64_t>(bench_store_bytes(c) / (1 << 20)),
                " MiB in memory) ", generic.substr(std::min(generic.find('('), generic.size()))));
        }
    } catch (...) {
        if (made_top) fs::remove_all(top, ec);
        throw;
    }
}

RunConfig bench_run_config(const std::filesystem::path& store_dir,
                           const std::filesystem::path& run_dir, int64_t steps, uint64_t seed,
                           int64_t memory_mb) {
    RunConfig cfg;
    cfg.data.root = store_dir.string();
    cfg.data.store = StoreFormat::kHdf5;
    cfg.data.holdout = cfg::Holdout::kConfigs;
    cfg.data.holdout_fraction = 0.2;
    cfg.model.hidden = 128;
    cfg.segments.max_nodes = 1000;
    // Absent stale entries read as 0 instead of being recomputed forward-only: with fresh init
    // every newly sampled config costs a forward pass over every segment, which at 10^6 nodes would
    // make a step take minutes on 2 cores. Forward-only passes keep no saved state, so they do not
    // raise the peak; the fresh segments' forward + backward does.
    cfg.segments.history_init = HistoryInit::kZero;
    cfg.sampling.configs = 32;
    cfg.sampling.batch_graphs = 1;
    cfg.sampling.seed = static_cast<int64_t>(seed);
    cfg.train.steps = steps + 1;
    cfg.train.eval_every = 0;
    cfg.train.progress = false;
    cfg.train.log_every = 0;
    cfg.train.run_dir = run_dir.string();
    // Inference: every chunk size and the cache come from eval.memory_mb (--memory-mb), as in
    // `segrank evaluate` (docs/gst.md#memory-budget).
    cfg.eval.memory_mb = static_cast<int>(memory_mb);
    return cfg;
}

// A new folder work/run_<case>_<phase>[-K] this child creates (never an existing one, which may be
// a user's or another run's). Throws segrank::Error naming the folder when none can be created.
std::filesystem::path make_run_dir(const std::filesystem::path& work, const std::string& base) {
    std::error_code ec;
    for (int k = 1; k <= 1000; ++k) {
        const std::filesystem::path p = work / (k == 1 ? base : str(base, "-", k));
        if (std::filesystem::create_directory(p, ec)) return p;
    }
    throw Error(str("bench --memory: cannot create a new run folder ", (work / base).string(),
                    "[-K] (", ec ? ec.message() : "1000 of them exist", ")"));
}

// Child: one (case, phase) measurement in `run_dir` (made, and removed, by the parent
// run_case_child); prints one JSON row on stdout. With `parent_pid` > 0 it asks for SIGKILL when
// the parent ends (PR_SET_PDEATHSIG) and ends at once if that has already happened.
int run_child(const MemCase& c, const std::string& phase, const std::filesystem::path& work,
              const std::filesystem::path& run_dir, int64_t steps, int64_t passes, uint64_t seed,
              int64_t memory_mb, int64_t parent_pid) {
    if (parent_pid > 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (static_cast<int64_t>(::getppid()) != parent_pid) return 128 + SIGKILL;  // parent gone
    }
    SEGRANK_CHECK(!run_dir.empty() && std::filesystem::is_directory(run_dir),
                  "bench --memory --child: --run-dir: expected the run folder bench made, got '",
                  run_dir.string(), "'");
    const std::filesystem::path store_dir = work / store_dir_name(c, seed);
    RunConfig cfg = bench_run_config(store_dir, run_dir, steps, seed, memory_mb);
    LocalCommunicator comm;
    const auto t0 = std::chrono::steady_clock::now();
    Trainer trainer(cfg, comm);
    double steps_per_s = 0.0, configs_per_s = 0.0;
    if (phase == "train") {
        trainer.step();  // warmup: prepares the graph (structure, partition, dedupe groups)
        const auto t1 = std::chrono::steady_clock::now();
        for (int64_t s = 0; s < steps; ++s) trainer.step();
        const double dt =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        steps_per_s = static_cast<double>(steps) / dt;
    } else {
        const auto t1 = std::chrono::steady_clock::now();
        int64_t scored = 0;
        for (int64_t s = 0; s < passes; ++s) {
            trainer.evaluate();
            for (const auto& e : trainer.dataset().eval())
                scored += static_cast<int64_t>(e.configs.size());
        }
        const double dt =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        steps_per_s = static_cast<double>(passes) / dt;
        configs_per_s = static_cast<double>(scored) / dt;
    }
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Json row = {{"case", c.name},
                      {"nodes", c.nodes},
                      {"configs", c.configs},
                      {"config_nodes", c.config_nodes},
                      {"phase", phase},
                      {"memory_mb", memory_mb},
                      {"peak_rss_mb", peak_rss_mb()},
                      {"steps_per_s", steps_per_s},
                      {"configs_per_s", configs_per_s},
                      {"seconds", total}};
    std::cout << dump_json(row) << std::endl;
    return 0;
}

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q + "'";
}

// --make-store DIR: writes the store of case `name` (--nodes / --configs overriding its sizes,
// within synth's bounds) to DIR/<case>/<case>.h5. Throws segrank::Error naming the option.
void make_store(const cxxopts::ParseResult& a, const std::string& name, uint64_t seed) {
    MemCase c = find_case(name);
    if (a.count("nodes")) c.nodes = a["nodes"].as<int64_t>();
    if (a.count("configs")) c.configs = a["configs"].as<int64_t>();
    // The bounds of `segrank synth` (hwmodel/synth/synth.h), before anything is allocated.
    SEGRANK_CHECK(c.nodes <= synth::kMaxNodes, "bench --memory --make-store: --nodes: expected ",
                  2 * c.config_nodes, " to ", synth::kMaxNodes, ", got ", c.nodes);
    SEGRANK_CHECK(c.configs <= synth::kMaxConfigs,
                  "bench --memory --make-store: --configs: expected 2 to ", synth::kMaxConfigs,
                  ", got ", c.configs);
    SEGRANK_CHECK(c.nodes >= 2 * c.config_nodes && c.configs >= 2,
                  "bench --memory --make-store: need nodes >= ", 2 * c.config_nodes,
                  " and configs >= 2");
    const std::string given = a["make-store"].as<std::string>();
    refuse_long_path("--make-store", given);
    // What it writes in DIR: <case>/<case>.h5 and the writer's temporary file beside it.
    refuse_long_path("--make-store", std::filesystem::absolute(given).native(),
                     str("/", c.name, "/", c.name, ".h5.tmp-4294967295"));
    refuse_dangling_link("--make-store", given);
    const std::filesystem::path dir = std::filesystem::absolute(given) / c.name;
    refuse_foreign_store(dir / (c.name + ".h5"), "--make-store", given, "replaces");
    write_bench_store_or_clean(dir / (c.name + ".h5"), c, seed,
                               str("bench --memory --make-store: --nodes ", c.nodes, " --configs ",
                                   c.configs, " (case ", c.name, ")"));
    std::cerr << "wrote " << (dir / (c.name + ".h5")).string() << " (" << c.nodes << " nodes, "
              << c.configs << " configs)\n";
}

// What every child of one benchmark run is given.
struct ChildSettings {
    std::string exe;  ///< this binary (/proc/self/exe)
    int64_t steps = 0, passes = 0, memory_mb = 0;
    int threads = 0;
    uint64_t seed = 0;
    std::filesystem::path work;
};

// How a child ended, from its wait status `status`: "exit code N" or "killed by signal S".
std::string child_end_text(int status) {
    if (WIFEXITED(status)) return str("exit code ", WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return str("killed by signal ", WTERMSIG(status));
    return str("wait status ", status);
}

// Runs case `c`, phase `phase` in a child process (its own VmHWM) and prints its row: the child's
// JSON line with `json`, else a table row. Throws segrank::Error naming the case, the phase and the
// command when the child fails or prints nothing.
void run_case_phase(const MemCase& c, const std::string& phase, const ChildSettings& s, bool json) {
    const std::filesystem::path run_dir = make_run_dir(s.work, "run_" + c.name + "_" + phase);
    const std::vector<std::string> argv = {s.exe,
                                           "bench",
                                           "--memory",
                                           "--child",
                                           c.name,
                                           "--phase",
                                           phase,
                                           "--run-dir",
                                           run_dir.string(),
                                           "--parent-pid",
                                           std::to_string(static_cast<long long>(::getpid())),
                                           "--steps",
                                           std::to_string(s.steps),
                                           "--eval-passes",
                                           std::to_string(s.passes),
                                           "--memory-mb",
                                           std::to_string(s.memory_mb),
                                           "--threads",
                                           std::to_string(s.threads),
                                           "--seed",
                                           std::to_string(s.seed),
                                           "--work-dir",
                                           s.work.string()};
    std::string cmd;  // as a shell would take it, for the messages
    for (const std::string& a : argv) {
        if (!cmd.empty()) cmd += ' ';
        cmd += shell_quote(a);
    }
    std::cerr << "bench --memory: " << c.name << " " << phase << "\n";
    const ChildResult child = run_case_child(
        argv, run_dir,
        str("bench --memory: case ", c.name, " phase ", phase,
            ": interrupted by a signal; stopped its child and removed its run folder ",
            run_dir.string(), "\n"));
    const std::string& out = child.out;
    const int status = child.status;
    SEGRANK_CHECK(status == 0, "bench --memory: case ", c.name, " phase ", phase, " failed (",
                  child_end_text(status), "); command: ", cmd);
    SEGRANK_CHECK(!out.empty(), "bench --memory: case ", c.name, " phase ", phase,
                  " printed nothing (exit code 0); command: ", cmd);
    const std::string row = out.substr(0, out.find('\n'));
    if (json) {
        std::cout << row << std::endl;
    } else {
        const Json j = read_json(row, str("bench --memory: the output of case ", c.name));
        std::printf("%-12s %9lld %8lld %-10s %9lld %12.4g %12.4g %13.4g\n", c.name.c_str(),
                    static_cast<long long>(c.nodes), static_cast<long long>(c.configs),
                    phase.c_str(), static_cast<long long>(s.memory_mb),
                    json_number_or_nan(j, "peak_rss_mb"), json_number_or_nan(j, "steps_per_s"),
                    json_number_or_nan(j, "configs_per_s"));
        std::fflush(stdout);
    }
}

}  // namespace

/// `segrank bench --memory`: see the file comment. Called by run_bench when --memory is given.
int run_bench_memory(int argc, char** argv) {
    cxxopts::Options opts = bench_memory_options();
    const auto parsed = parse_or_help(opts, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& a = *parsed;
    if (!a.count("child")) check_option_combinations(a);
    const int64_t steps = a["steps"].as<int64_t>();
    SEGRANK_CHECK(steps >= 1 && steps <= kMaxBenchSteps, "bench --memory: --steps: expected 1 to ",
                  kMaxBenchSteps, ", got ", steps);
    const int threads = thread_option(a, "threads", false);
    set_num_threads(threads);
    check_address_space_for_matmuls("bench");
    const uint64_t seed = a["seed"].as<uint64_t>();
    const std::filesystem::path work = std::filesystem::absolute(a["work-dir"].as<std::string>());
    const int64_t passes = a["eval-passes"].as<int64_t>();
    SEGRANK_CHECK(passes >= 1 && passes <= kMaxBenchSteps,
                  "bench --memory: --eval-passes: expected 1 to ", kMaxBenchSteps, ", got ",
                  passes);
    const int64_t memory_mb = a["memory-mb"].as<int64_t>();
    (void)inference_budget(memory_mb, -1, "bench --memory: --memory-mb");  // in range
    if (a.count("child"))
        return run_child(find_case(a["child"].as<std::string>()), a["phase"].as<std::string>(),
                         work, a["run-dir"].as<std::string>(), steps, passes, seed, memory_mb,
                         a["parent-pid"].as<int64_t>());

    const std::vector<std::string> names = case_names(a);
    if (a.count("make-store")) {
        make_store(a, names.front(), seed);
        return 0;
    }
    const std::vector<std::string> phases = split_names(a["phases"].as<std::string>());
    for (const auto& p : phases)
        SEGRANK_CHECK(p == "train" || p == "inference", "bench --memory: unknown phase '", p,
                      "' (train, inference)");
    const bool json = a.count("json") > 0;
    const ChildSettings settings{std::filesystem::read_symlink("/proc/self/exe").string(),
                                 steps,
                                 passes,
                                 memory_mb,
                                 threads,
                                 seed,
                                 work};
    std::vector<MemCase> cases;  // every name checked before the table header is printed
    for (const auto& name : names) cases.push_back(find_case(name));
    // A store path of a marked folder holding a user's file is refused before any work, as in an
    // unmarked one (prepare_work_dir).
    for (const MemCase& c : cases)
        refuse_foreign_store(work / store_dir_name(c, seed) / (c.name + ".h5"), "--work-dir",
                             a["work-dir"].as<std::string>(), "reads");
    prepare_work_dir(a["work-dir"].as<std::string>(), work);
    if (!json)
        std::printf("%-12s %9s %8s %-10s %9s %12s %12s %13s\n", "case", "nodes", "configs", "phase",
                    "memory_mb", "peak_rss_mb", "steps_per_s", "configs_per_s");
    for (const MemCase& c : cases) {
        const std::filesystem::path store = work / store_dir_name(c, seed) / (c.name + ".h5");
        if (!std::filesystem::exists(store)) {
            std::cerr << "bench --memory: generating " << store.string() << "\n";
            write_bench_store_or_clean(store, c, seed, str("bench --memory: case ", c.name));
        }
        for (const auto& phase : c.phases)
            if (std::find(phases.begin(), phases.end(), phase) != phases.end())
                run_case_phase(c, phase, settings, json);
    }
    return 0;
}

}  // namespace segrank::cli
