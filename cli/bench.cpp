// `segrank bench [--json]`: times one layout training step on a graph, full-graph and
// with contiguous segments, with and without exact config independence, measures GEMM GFLOP/s and
// SpMM GB/s, and runs the PyTorch peer (../shared/peers/torch_reference.py) on the same npz in the
// same run. Every reported time is a median (util/median.h: numpy.median) over --steps steps after
// --warmup steps. `--memory` switches to the GST memory benchmark (cli/bench_memory.cpp), which has
// its own options.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench_modes.h"
#include "cli/bench_peer.h"
#include "cli/bench_workload.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "gnn/core/address_space.h"
#include "gnn/core/parallel.h"
#include "gnn/ops/matmul.h"
#include "util/json.h"
#include "util/median.h"
#include "util/rss.h"

namespace segrank::cli {

namespace {

using bench::ModeResult;
using bench::run_mode;

// "model name" of /proc/cpuinfo and the 1-minute load average (machine facts for the JSON; "" / -1
// if absent).
std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);)
        if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
            std::string v = line.substr(line.find(':') + 1);
            v.erase(0, v.find_first_not_of(' '));
            return v;
        }
    return "";
}
double load_average() {
    std::ifstream f("/proc/loadavg");
    double v = -1;
    f >> v;
    return v;
}

// The options and help text of `segrank bench` (the training-step benchmark).
cxxopts::Options bench_options() {
    cxxopts::Options opts("segrank bench",
                          "Training-step benchmark of the layout model against the PyTorch peer");
    opts.add_options()(
        "npz", "layout npz",
        cxxopts::value<std::string>()->default_value("../shared/peers/synthetic_10k.npz"))(
        "configs", "K configs per step", cxxopts::value<int64_t>()->default_value("32"))(
        "hidden", "H", cxxopts::value<int64_t>()->default_value("128"))(
        "layers", "L", cxxopts::value<int64_t>()->default_value("3"))(
        "max-nodes", "segment size bound", cxxopts::value<int64_t>()->default_value("1000"))(
        "steps",
        "timed steps per mode (times are medians; an even count averages the two middle steps)",
        cxxopts::value<int64_t>()->default_value("5"))(
        "warmup", "untimed steps per mode", cxxopts::value<int64_t>()->default_value("1"))(
        "threads", "OpenMP threads", cxxopts::value<int>()->default_value("2"))(
        "seed", "seed", cxxopts::value<uint64_t>()->default_value("0"))(
        "no-naive", "skip the naive (config independence off) modes")(
        "modes", "comma list of modes to time: full, segments, full_naive, segments_naive",
        cxxopts::value<std::string>()->default_value("full,segments,full_naive,segments_naive"))(
        "bf16",
        "also time full and segments with model.precision = bf16 (where the CPU runs bf16 "
        "natively; docs/model.md#precision)")(
        "no-peer", "do not run the PyTorch peer (its options are then refused)")(
        "peer-steps", "peer timed steps", cxxopts::value<int64_t>()->default_value("5"))(
        "peer-warmup", "peer warmup steps", cxxopts::value<int64_t>()->default_value("1"))(
        "peer-timeout", "seconds each peer run may take before it is killed (1 to 86400)",
        cxxopts::value<int64_t>()->default_value("600"))(
        "python", "interpreter with torch",
        cxxopts::value<std::string>()->default_value("/usr/bin/python3"))(
        "peer-script", "peer script",
        cxxopts::value<std::string>()->default_value("../shared/peers/torch_reference.py"))(
        "memory", "run the GST memory benchmark instead (see `segrank bench --memory --help`)")(
        "json", "print one JSON object on stdout")("h,help", "show help");
    return opts;
}

// The checked options of one benchmark run.
struct BenchSettings {
    int steps = 0, warmup = 0;  ///< timed and untimed steps per mode
    int64_t k = 0;              ///< configs per step (checked against the graph once it is loaded)
    bool with_peer = false;
    std::string python, peer_script;
    int peer_steps = 0, peer_warmup = 0;
    int64_t peer_timeout_s = 0;  ///< --peer-timeout: a peer run is killed after this many seconds
    std::string npz;
    int64_t max_nodes = 0;
    std::set<std::string> modes;  ///< of full, segments, full_naive, segments_naive
};

// --modes (minus the naive ones with --no-naive). Throws segrank::Error naming an unknown mode or
// an empty selection.
std::set<std::string> parse_modes(const cxxopts::ParseResult& a) {
    std::set<std::string> modes;
    std::stringstream ss(a["modes"].as<std::string>());
    for (std::string m; std::getline(ss, m, ',');) {
        SEGRANK_CHECK(m == "full" || m == "segments" || m == "full_naive" || m == "segments_naive",
                      "--modes: unknown mode '", m,
                      "' (expected full, segments, full_naive, segments_naive)");
        modes.insert(m);
    }
    if (a.count("no-naive")) modes.erase("full_naive"), modes.erase("segments_naive");
    SEGRANK_CHECK(!modes.empty(),
                  "--modes selects no mode (expected a comma list of full, segments, "
                  "full_naive, segments_naive)");
    return modes;
}

// Checks every option before anything is timed (the peer's only when it runs; with --no-peer a peer
// option given is refused) and sets the OpenMP thread count. Throws segrank::Error naming the
// option and the expected range, or "--no-peer and --peer-steps exclude each other ...".
BenchSettings parse_bench_settings(const cxxopts::ParseResult& a) {
    // Step counts are bounded (kMaxBenchSteps) so that a typo fails here, not after hours.
    auto count = [&](const char* flag, int64_t lo) {
        const int64_t v = a[flag].as<int64_t>();
        SEGRANK_CHECK(v >= lo && v <= kMaxBenchSteps, "--", flag, ": expected ", lo, " to ",
                      kMaxBenchSteps, ", got ", v);
        return static_cast<int>(v);
    };
    BenchSettings s;
    s.steps = count("steps", 1);
    s.warmup = count("warmup", 0);
    s.k = a["configs"].as<int64_t>();
    s.with_peer = !a.count("no-peer");
    s.python = a["python"].as<std::string>();
    s.peer_script = a["peer-script"].as<std::string>();
    if (s.with_peer) {  // checked before anything is timed (--no-peer skips the peer)
        s.peer_steps = count("peer-steps", 1);
        s.peer_warmup = count("peer-warmup", 0);
        s.peer_timeout_s = a["peer-timeout"].as<int64_t>();
        SEGRANK_CHECK(s.peer_timeout_s >= 1 && s.peer_timeout_s <= 86400,
                      "--peer-timeout: expected 1 to 86400 seconds, got ", s.peer_timeout_s);
        std::error_code ec;
        SEGRANK_CHECK(std::filesystem::is_regular_file(s.peer_script, ec),
                      "--peer-script: no such file '", s.peer_script,
                      "' (the PyTorch peer; --no-peer skips it)");
        SEGRANK_CHECK(executable_found(s.python), "--python: '", s.python,
                      "' is not an executable file (the interpreter with torch that runs the "
                      "peer; --no-peer skips it)");
    } else {
        // The peer's options would be ignored (even invalid values): refuse them, as bench
        // --memory refuses options that do not apply.
        for (const char* opt :
             {"peer-steps", "peer-warmup", "peer-timeout", "python", "peer-script"})
            SEGRANK_CHECK(!a.count(opt), "--no-peer and --", opt,
                          " exclude each other (--no-peer skips the PyTorch peer; --", opt,
                          " applies to the peer only): drop one of them");
    }
    set_num_threads(thread_option(a, "threads", false));
    check_address_space_for_matmuls("bench");
    s.npz = a["npz"].as<std::string>();
    SEGRANK_CHECK(!s.npz.empty(), "--npz: expected the path of a layout npz file, got ''");
    SEGRANK_CHECK(a["hidden"].as<int64_t>() >= 1 && a["hidden"].as<int64_t>() <= 4096,
                  "--hidden: expected 1 to 4096 (as model.hidden), got ",
                  a["hidden"].as<int64_t>());
    SEGRANK_CHECK(a["layers"].as<int64_t>() >= 1 && a["layers"].as<int64_t>() <= 64,
                  "--layers: expected 1 to 64 (as model.layers), got ", a["layers"].as<int64_t>());
    s.max_nodes = a["max-nodes"].as<int64_t>();
    s.modes = parse_modes(a);
    return s;
}

// Config-dependent nodes per layer of the model `mc` on graph g (what config independence cannot
// skip), and their fraction of all nodes at the last layer.
struct Dependence {
    double last_layer_fraction = 0;
    Json per_layer = Json::array();
};

Dependence config_dependence(const bench::BenchGraph& g, const ModelConfig& mc) {
    SegmentInput probe;
    std::vector<int8_t> probe_values(static_cast<size_t>(g.full.config_local.size() * 18), 0);
    probe.node_feat = g.full.feat.cview();
    probe.opcode = g.full.opcode;
    probe.operands = &g.full.graph.operands;
    probe.users = &g.full.graph.users;
    probe.num_pooled = g.full.feat.rows();
    probe.config_node_local = g.full.config_local;
    probe.config_values = probe_values;
    const DependencePlan plan = Model(mc).plan(probe);
    Dependence d;
    d.last_layer_fraction =
        static_cast<double>(plan.nodes.back().size()) / static_cast<double>(g.full.feat.rows());
    for (const auto& nodes : plan.nodes) d.per_layer.push_back(nodes.size());
    return d;
}

// The four timed modes (a mode not selected stays all zeros).
struct ModeRuns {
    ModeResult full, seg, full_naive, seg_naive;
};

ModeRuns run_modes(const bench::BenchGraph& g, const ModelConfig& mc, const BenchSettings& s,
                   uint64_t seed) {
    ModelConfig nc = mc;
    nc.exploit_independence = false;
    const int64_t k = s.k;
    const int warmup = s.warmup, steps = s.steps;
    ModeRuns r;
    if (s.modes.count("full")) r.full = run_mode(g, mc, false, k, warmup, steps, seed);
    if (s.modes.count("segments")) r.seg = run_mode(g, mc, true, k, warmup, steps, seed);
    if (s.modes.count("full_naive")) r.full_naive = run_mode(g, nc, false, k, warmup, steps, seed);
    if (s.modes.count("segments_naive"))
        r.seg_naive = run_mode(g, nc, true, k, warmup, steps, seed);
    return r;
}

// --bf16: the full and segments modes again with bf16 operands (the fp32 rows of `runs` are
// unchanged), or a note when the CPU has no native bf16 products.
Json bf16_rows(const bench::BenchGraph& g, const ModelConfig& mc, const BenchSettings& s,
               uint64_t seed, const ModeRuns& runs) {
    Json bf16_json = Json{{"supported", bf16_supported()}};
    if (bf16_supported()) {
        set_matmul_precision(MatmulPrecision::kBf16);
        ModeResult bf, bs;
        if (s.modes.count("full")) bf = run_mode(g, mc, false, s.k, s.warmup, s.steps, seed);
        if (s.modes.count("segments")) bs = run_mode(g, mc, true, s.k, s.warmup, s.steps, seed);
        set_matmul_precision(MatmulPrecision::kFp32);
        auto row = [&](const ModeResult& r, const ModeResult& fp32) {
            return Json{{"steps_per_s", r.median_step_s > 0 ? 1.0 / r.median_step_s : 0.0},
                        {"median_step_s", r.median_step_s},
                        {"peak_rss_mb", r.peak_rss_mb},
                        {"final_loss", r.final_loss},
                        {"time_split", bench::time_split_json(r)},
                        {"speedup_vs_fp32", r.median_step_s > 0 && fp32.median_step_s > 0
                                                ? fp32.median_step_s / r.median_step_s
                                                : 0.0}};
        };
        bf16_json["full_graph"] = row(bf, runs.full);
        bf16_json["segments"] = row(bs, runs.seg);
    } else {
        bf16_json["note"] =
            "this CPU has no native bf16 products (needs avx512_core_bf16): model.precision = "
            "bf16 runs as fp32 here, so no bf16 rows";
    }
    return bf16_json;
}

// The peer's results for the full-graph and segment modes (each empty when not run).
struct PeerRuns {
    std::map<std::string, double> full, seg;
};

// The peer on the same graph, model size, K, seed and threads, for the selected modes only.
PeerRuns run_peers(const BenchSettings& s, const ModelConfig& mc, uint64_t seed, int threads) {
    PeerRuns p;
    const bool any_full = s.modes.count("full") || s.modes.count("full_naive");
    const bool any_seg = s.modes.count("segments") || s.modes.count("segments_naive");
    if (!s.with_peer) return p;
    std::ostringstream common;
    common << "--npz " << s.npz << " --configs " << s.k << " --hidden " << mc.hidden << " --layers "
           << mc.layers << " --seed " << seed << " --steps " << s.peer_steps << " --warmup "
           << s.peer_warmup << " --threads " << threads;
    if (any_full)
        p.full =
            run_peer(s.python, s.peer_script, common.str() + " --full-graph", s.peer_timeout_s);
    if (any_seg)
        p.seg = run_peer(s.python, s.peer_script,
                         common.str() + " --max-nodes " + std::to_string(s.max_nodes),
                         s.peer_timeout_s);
    return p;
}

// Steps per second of a median step time (0 when it did not run).
double rate(double step_s) { return step_s > 0 ? 1.0 / step_s : 0.0; }

// The peer's median step time over ours (0 when either is missing).
double speedup(const std::map<std::string, double>& peer, double ours) {
    auto it = peer.find("median_step_s");
    return it == peer.end() || ours <= 0 ? 0.0 : it->second / ours;
}

// speedup() as text for the table ("2.5x", "n/a").
std::string speedup_text(const std::map<std::string, double>& peer, double ours) {
    if (peer.empty() || ours <= 0) return std::string("n/a");
    std::ostringstream o;
    o.precision(3);
    o << peer.at("median_step_s") / ours << "x";
    return o.str();
}

// A mode's object: null when neither it nor its naive variant ran; the optimized path's members
// are null when only the naive one ran, the naive_* members present when it ran. `gemm_peak` is
// the best GEMM rate measured (GFLOP/s).
Json mode_json(const ModeResult& r, bool ran, const std::map<std::string, double>& peer,
               bool has_naive, const ModeResult& nv, double gemm_peak) {
    if (!ran && !has_naive) return Json(nullptr);
    Json m = {
        {"steps_per_s", rate(r.median_step_s)},
        {"median_step_s", r.median_step_s},
        {"median_fresh_fwd_bwd_s", r.median_fresh_s},
        {"median_stale_forward_s", r.median_stale_s},
        {"median_optimizer_s", r.median_optimizer_s},
        {"stale_forwards_per_step", r.stale_forwards},
        {"skipped_independent_segments_per_step", r.skipped_segments},
        {"peak_rss_mb", r.peak_rss_mb},
        {"page_faults_per_step", r.median_page_faults},
        {"matmul_gflop_per_step", r.median_matmul_flops * 1e-9},
        // Matmul FLOPs over the whole step time, against the best GEMM rate measured
        // above: what fraction of the chip's matmul peak the step achieves.
        {"matmul_gflops_achieved",
         r.median_step_s > 0 ? r.median_matmul_flops * 1e-9 / r.median_step_s : 0.0},
        {"fraction_of_gemm_peak", r.median_step_s > 0 && gemm_peak > 0
                                      ? r.median_matmul_flops * 1e-9 / r.median_step_s / gemm_peak
                                      : 0.0},
        {"final_loss", r.final_loss},
        {"time_split", bench::time_split_json(r)}};
    if (!ran)
        for (auto& [key, value] : m.items()) value = nullptr;
    if (has_naive) {
        m["naive_matmul_gflop_per_step"] = nv.median_matmul_flops * 1e-9;
        m["naive_steps_per_s"] = rate(nv.median_step_s);
        m["naive_median_step_s"] = nv.median_step_s;
        m["naive_peak_rss_mb"] = nv.peak_rss_mb;
        m["naive_time_split"] = bench::time_split_json(nv);
    }
    if (!peer.empty()) {
        m["peer_steps_per_s"] = peer.count("median_step_s") ? 1.0 / peer.at("median_step_s") : 0.0;
        m["peer_median_step_s"] = peer.count("median_step_s") ? peer.at("median_step_s") : 0.0;
        m["peer_peak_rss_mb"] = peer.count("peak_rss_mb") ? peer.at("peak_rss_mb") : 0.0;
        m["speedup_vs_peer"] = ran ? Json(speedup(peer, r.median_step_s)) : Json(nullptr);
        if (has_naive) m["speedup_vs_peer_naive"] = speedup(peer, nv.median_step_s);
    }
    return m;
}

// Everything a run measured besides the timed modes.
struct BenchFacts {
    double load_before = 0;
    Dependence dependence;
    bench::GemmRate gemm;
    double gemm_peak = 0;  ///< GFLOP/s, the better of the two GEMM rates
    double spmm_gbps = 0;
};

// The JSON document of one run (docs/benchmarks.md).
Json bench_doc(const bench::BenchGraph& g, const ModelConfig& mc, const BenchSettings& s,
               const BenchFacts& f, const ModeRuns& runs, const PeerRuns& peer, Json bf16_json) {
    const std::set<std::string>& modes = s.modes;
    return {{"bench", "layout_training_step"},
            {"cpu", cpu_model()},
            {"nproc", std::thread::hardware_concurrency()},
            {"load_average_before", f.load_before},
            {"load_average_after", load_average()},
            {"npz", s.npz},
            {"nodes", g.full.feat.rows()},
            {"edges", g.num_edges},
            {"configurable_nodes", g.num_config_nodes},
            {"feat_dim", mc.feat_dim},
            {"configs_k", s.k},
            {"hidden", mc.hidden},
            {"layers", mc.layers},
            {"num_segments", g.segments.size()},  // "segments" is the segment mode's object below
            {"max_nodes", s.max_nodes},
            {"threads", num_threads()},
            {"steps", s.steps},
            {"warmup", s.warmup},
            {"config_dependent_node_frac", f.dependence.last_layer_fraction},
            {"dependent_nodes_per_layer", f.dependence.per_layer},
            {"gemm_forward_gflops", f.gemm.forward_gflops},
            {"gemm_weight_grad_gflops", f.gemm.weight_grad_gflops},
            {"spmm_gb_per_s", f.spmm_gbps},
            {"segment_mode_timed",
             "one fresh segment fwd+bwd + forward-only of every other config-dependent segment for "
             "the K configs + AdamW"},
            {"full_graph", mode_json(runs.full, modes.count("full") > 0, peer.full,
                                     modes.count("full_naive") > 0, runs.full_naive, f.gemm_peak)},
            {"segments", mode_json(runs.seg, modes.count("segments") > 0, peer.seg,
                                   modes.count("segments_naive") > 0, runs.seg_naive, f.gemm_peak)},
            {"bf16", std::move(bf16_json)}};
}

// Without --json: one line per selected mode (steps/s, peak RSS, matmul work against the GEMM
// peak, speedup against the peer) and one of its time split before the JSON document.
void print_mode_lines(const BenchSettings& s, const ModeRuns& runs, const PeerRuns& peer,
                      double gemm_peak) {
    auto peak_text = [&](const ModeResult& r) {
        std::ostringstream o;
        o.precision(3);
        o << ", matmul " << r.median_matmul_flops * 1e-9 << " GFLOP/step";
        if (r.median_step_s > 0 && gemm_peak > 0)
            o << " (" << 100.0 * r.median_matmul_flops * 1e-9 / r.median_step_s / gemm_peak
              << "% of the GEMM peak)";
        return o.str();
    };
    struct Line {
        const char* mode;
        const char* label;
        const ModeResult& r;
        const std::map<std::string, double>& peer;
    };
    const Line lines[] = {{"full", "full graph", runs.full, peer.full},
                          {"full_naive", "full graph, naive", runs.full_naive, peer.full},
                          {"segments", "segments", runs.seg, peer.seg},
                          {"segments_naive", "segments, naive", runs.seg_naive, peer.seg}};
    for (const Line& l : lines) {
        if (!s.modes.count(l.mode)) continue;
        std::cout << l.label << ": " << rate(l.r.median_step_s) << " steps/s (peak RSS "
                  << l.r.peak_rss_mb << " MB)" << peak_text(l.r) << ", speedup vs peer "
                  << speedup_text(l.peer, l.r.median_step_s)
                  << "\n  time split: " << bench::time_split_text(l.r) << "\n";
    }
}

}  // namespace

int run_bench(int argc, char** argv) {
    int run_bench_memory(int argc, char** argv);  // cli/bench_memory.cpp
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--memory") return run_bench_memory(argc, argv);
    cxxopts::Options opts = bench_options();
    const auto parsed = parse_or_help(opts, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& a = *parsed;
    // No allocator tuning here: the benchmark runs the engine exactly as `segrank train` does
    // (large tensors are huge-page mappings, gnn/core/tensor.cpp).
    const BenchSettings s = parse_bench_settings(a);
    bench::BenchGraph g = bench::load_bench_graph(s.npz, s.max_nodes);
    SEGRANK_CHECK(s.k >= 1 && s.k <= g.num_configs, "--configs ", s.k, " outside [1, ",
                  g.num_configs, "]");

    ModelConfig mc;
    mc.task = Task::kLayout;
    mc.feat_dim = g.full.feat.cols();
    mc.hidden = a["hidden"].as<int64_t>();
    mc.layers = a["layers"].as<int64_t>();
    check_model_fits_memory(mc, str("--hidden ", mc.hidden, " and --layers ", mc.layers));
    const uint64_t seed = a["seed"].as<uint64_t>();
    BenchFacts f;
    f.dependence = config_dependence(g, mc);
    f.gemm = bench::measure_gemm(g.full.feat.rows() * 4, mc.hidden, mc.hidden, 5);
    f.gemm_peak = std::max(f.gemm.forward_gflops, f.gemm.weight_grad_gflops);
    f.spmm_gbps = bench::measure_spmm_gbps(g.full.graph.operands, s.k * mc.hidden, 5);

    f.load_before = load_average();
    std::cerr << "" << s.npz << " n=" << g.full.feat.rows() << " F'=" << mc.feat_dim << " K=" << s.k
              << " segments=" << g.segments.size() << "\n";
    const ModeRuns runs = run_modes(g, mc, s, seed);
    // bf16 rows: the same modes with bf16 operands (fp32 rows above are unchanged).
    Json bf16_json = nullptr;
    if (a.count("bf16")) bf16_json = bf16_rows(g, mc, s, seed, runs);
    const PeerRuns peer = run_peers(s, mc, seed, a["threads"].as<int>());
    const std::string js = dump_json(bench_doc(g, mc, s, f, runs, peer, std::move(bf16_json)));
    if (!a.count("json")) print_mode_lines(s, runs, peer, f.gemm_peak);
    std::cout << js << "\n";
    return 0;
}

}  // namespace segrank::cli
