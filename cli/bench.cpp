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

#include "cli/bench_workload.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "gnn/core/parallel.h"
#include "gnn/ops/matmul.h"
#include "util/json.h"
#include "util/median.h"
#include "util/rss.h"

namespace segrank::cli {

namespace {

using bench::StepTimes;

struct ModeResult {
    double median_step_s = 0, median_fresh_s = 0, median_stale_s = 0, median_optimizer_s = 0;
    double peak_rss_mb = 0, final_loss = 0;
    int64_t stale_forwards = 0, skipped_segments = 0;
    double median_page_faults = 0;   ///< minor faults per timed step (getrusage)
    double median_matmul_flops = 0;  ///< matmul FLOPs per timed step (gnn/ops/matmul.h counter)
};

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

long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

ModeResult run_mode(const bench::BenchGraph& g, const ModelConfig& mc, bool segments, int64_t k,
                    int warmup, int steps, uint64_t seed) {
    release_cached_tensor_memory();  // each mode starts without the previous mode's cached blocks
    reset_peak_rss();
    Model model(mc);
    model.params().initialize(seed);
    AdamW opt(model.params(), AdamWConfig{});
    Rng rng = Rng::derive(seed, 0, 0, "bench");
    std::vector<double> total, fresh, stale, optim, faults, flops;
    ModeResult r;
    for (int s = 0; s < warmup + steps; ++s) {
        const long f0 = minor_faults();
        reset_matmul_flops();
        const StepTimes t = segments ? bench::segment_step(model, opt, g, k, rng)
                                     : bench::full_graph_step(model, opt, g, k, rng);
        std::cerr << "  " << (segments ? "segments" : "full")
                  << (mc.exploit_independence ? "" : " naive") << " step " << s
                  << (s < warmup ? " (warmup)" : "") << ": " << t.total_s << " s, loss " << t.loss
                  << ", " << minor_faults() - f0 << " page faults\n";
        if (s < warmup) continue;
        faults.push_back(static_cast<double>(minor_faults() - f0));
        flops.push_back(static_cast<double>(matmul_flops()));
        total.push_back(t.total_s);
        fresh.push_back(t.fresh_s);
        stale.push_back(t.stale_s);
        optim.push_back(t.optimizer_s);
        r.stale_forwards = t.stale_forwards;
        r.skipped_segments = t.skipped_segments;
        r.final_loss = t.loss;
    }
    r.median_step_s = median(total);
    r.median_fresh_s = median(fresh);
    r.median_stale_s = median(stale);
    r.median_optimizer_s = median(optim);
    r.median_page_faults = median(faults);
    r.median_matmul_flops = median(flops);
    r.peak_rss_mb = peak_rss_mb();
    return r;
}

// Whether `python` names an executable file: a path (with '/') directly, else looked up in PATH.
bool executable_found(const std::string& python) {
    namespace fs = std::filesystem;
    auto ok = [](const fs::path& p) {
        std::error_code ec;
        return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
    };
    if (python.find('/') != std::string::npos) return ok(python);
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "");
    for (std::string d; std::getline(dirs, d, ':');)
        if (!d.empty() && ok(fs::path(d) / python)) return true;
    return false;
}

// Runs the peer with the benchmark's model and step settings and returns the numeric members of
// its JSON line. Throws segrank::Error naming the command, its exit status and the end of its
// stderr when it fails or prints no result.
std::map<std::string, double> run_peer(const std::string& python, const std::string& script,
                                       const std::string& args) {
    namespace fs = std::filesystem;
    const fs::path err_path = fs::temp_directory_path() /
                              ("segrank_bench_peer_" + std::to_string(::getpid()) + ".stderr");
    std::ostringstream cmd;
    cmd << python << " " << script << " " << args;
    std::cerr << "  peer: " << cmd.str() << "\n";
    const std::string full = cmd.str() + " 2>'" + err_path.string() + "'";
    std::string text;
    int rc = -1;
    if (FILE* p = popen(full.c_str(), "r")) {
        char buf[4096];
        while (fgets(buf, sizeof buf, p)) text += buf;
        rc = pclose(p);
    }
    std::string err_tail;
    {
        std::ifstream f(err_path);
        std::vector<std::string> lines;
        for (std::string line; std::getline(f, line);) lines.push_back(line);
        const size_t from = lines.size() > 12 ? lines.size() - 12 : 0;
        for (size_t i = from; i < lines.size(); ++i) err_tail += "\n    " + lines[i];
    }
    std::error_code ec;
    fs::remove(err_path, ec);
    if (rc != 0) {
        std::string status = "could not be started";
        if (rc != -1 && WIFEXITED(rc))
            status = "exited with code " + std::to_string(WEXITSTATUS(rc));
        else if (rc != -1 && WIFSIGNALED(rc))
            status = "was killed by signal " + std::to_string(WTERMSIG(rc));
        throw Error(str("the PyTorch peer ", status, ": ", cmd.str(),
                        err_tail.empty() ? std::string() : "\n  its stderr ends:" + err_tail,
                        "\n  (--no-peer skips the peer; --python and --peer-script choose it)"));
    }
    // The peer prints one JSON object with a "peer" member as its last such line.
    std::istringstream lines(text);
    Json result;
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.front() != '{') continue;
        try {
            Json j = read_json(line, "peer output");
            if (j.is_object() && j.contains("peer")) result = std::move(j);
        } catch (const Error&) {
            // a line of other output that happens to start with '{'
        }
    }
    SEGRANK_CHECK(result.is_object(),
                  "the PyTorch peer printed no JSON line with a \"peer\" member: ", cmd.str());
    std::map<std::string, double> out;
    for (const auto& [key, value] : result.items())
        if (value.is_number()) out[key] = value.get<double>();
    SEGRANK_CHECK(out.count("median_step_s") && out.at("median_step_s") > 0,
                  "the PyTorch peer's result has no positive median_step_s: ", cmd.str());
    return out;
}

}  // namespace

int run_bench(int argc, char** argv) {
    int run_bench_memory(int argc, char** argv);  // cli/bench_memory.cpp
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--memory") return run_bench_memory(argc, argv);
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
        "natively; docs/model.md#precision)")("no-peer", "do not run the PyTorch peer")(
        "peer-steps", "peer timed steps", cxxopts::value<int64_t>()->default_value("5"))(
        "peer-warmup", "peer warmup steps", cxxopts::value<int64_t>()->default_value("1"))(
        "python", "interpreter with torch",
        cxxopts::value<std::string>()->default_value("/usr/bin/python3"))(
        "peer-script", "peer script",
        cxxopts::value<std::string>()->default_value("../shared/peers/torch_reference.py"))(
        "memory", "run the GST memory benchmark instead (see `segrank bench --memory --help`)")(
        "json", "print one JSON object on stdout")("h,help", "show help");
    const auto parsed = parse_or_help(opts, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& a = *parsed;
    // No allocator tuning here: the benchmark runs the engine exactly as `segrank train` does
    // (large tensors are huge-page mappings, gnn/core/tensor.cpp).
    // Step counts are bounded (kMaxBenchSteps) so that a typo fails here, not after hours.
    auto count = [&](const char* flag, int64_t lo) {
        const int64_t v = a[flag].as<int64_t>();
        SEGRANK_CHECK(v >= lo && v <= kMaxBenchSteps, "--", flag, ": expected ", lo, " to ",
                      kMaxBenchSteps, ", got ", v);
        return static_cast<int>(v);
    };
    const int steps = count("steps", 1), warmup = count("warmup", 0);
    const int64_t k = a["configs"].as<int64_t>();
    const bool with_peer = !a.count("no-peer");
    const std::string python = a["python"].as<std::string>(),
                      peer_script = a["peer-script"].as<std::string>();
    int peer_steps = 0, peer_warmup = 0;
    if (with_peer) {  // checked before anything is timed (--no-peer skips the peer)
        peer_steps = count("peer-steps", 1);
        peer_warmup = count("peer-warmup", 0);
        std::error_code ec;
        SEGRANK_CHECK(std::filesystem::is_regular_file(peer_script, ec),
                      "--peer-script: no such file '", peer_script,
                      "' (the PyTorch peer; --no-peer skips it)");
        SEGRANK_CHECK(executable_found(python), "--python: '", python,
                      "' is not an executable file (the interpreter with torch that runs the "
                      "peer; --no-peer skips it)");
    }
    set_num_threads(thread_option(a, "threads", false));
    const std::string npz = a["npz"].as<std::string>();
    SEGRANK_CHECK(!npz.empty(), "--npz: expected the path of a layout npz file, got ''");
    SEGRANK_CHECK(a["hidden"].as<int64_t>() >= 1 && a["hidden"].as<int64_t>() <= 4096,
                  "--hidden: expected 1 to 4096 (as model.hidden), got ",
                  a["hidden"].as<int64_t>());
    SEGRANK_CHECK(a["layers"].as<int64_t>() >= 1 && a["layers"].as<int64_t>() <= 64,
                  "--layers: expected 1 to 64 (as model.layers), got ", a["layers"].as<int64_t>());
    const int64_t max_nodes = a["max-nodes"].as<int64_t>();
    std::set<std::string> modes;
    {
        std::stringstream ss(a["modes"].as<std::string>());
        for (std::string m; std::getline(ss, m, ',');) {
            SEGRANK_CHECK(
                m == "full" || m == "segments" || m == "full_naive" || m == "segments_naive",
                "--modes: unknown mode '", m,
                "' (expected full, segments, full_naive, segments_naive)");
            modes.insert(m);
        }
        if (a.count("no-naive")) modes.erase("full_naive"), modes.erase("segments_naive");
        SEGRANK_CHECK(!modes.empty(),
                      "--modes selects no mode (expected a comma list of full, segments, "
                      "full_naive, segments_naive)");
    }
    bench::BenchGraph g = bench::load_bench_graph(npz, max_nodes);
    SEGRANK_CHECK(k >= 1 && k <= g.num_configs, "--configs ", k, " outside [1, ", g.num_configs,
                  "]");

    ModelConfig mc;
    mc.task = Task::kLayout;
    mc.feat_dim = g.full.feat.cols();
    mc.hidden = a["hidden"].as<int64_t>();
    mc.layers = a["layers"].as<int64_t>();
    const uint64_t seed = a["seed"].as<uint64_t>();
    // Dependent-node fraction at the last layer (what config independence cannot skip).
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
    const double dep_frac =
        static_cast<double>(plan.nodes.back().size()) / static_cast<double>(g.full.feat.rows());
    Json dep_per_layer = Json::array();
    for (const auto& nodes : plan.nodes) dep_per_layer.push_back(nodes.size());

    const bench::GemmRate gemm =
        bench::measure_gemm(g.full.feat.rows() * 4, mc.hidden, mc.hidden, 5);
    const double gemm_peak = std::max(gemm.forward_gflops, gemm.weight_grad_gflops);
    const double spmm_gbps = bench::measure_spmm_gbps(g.full.graph.operands, k * mc.hidden, 5);

    const double load_before = load_average();
    std::cerr << "" << npz << " n=" << g.full.feat.rows() << " F'=" << mc.feat_dim << " K=" << k
              << " segments=" << g.segments.size() << "\n";
    ModelConfig nc = mc;
    nc.exploit_independence = false;
    ModeResult full, seg, full_naive, seg_naive;
    if (modes.count("full")) full = run_mode(g, mc, false, k, warmup, steps, seed);
    if (modes.count("segments")) seg = run_mode(g, mc, true, k, warmup, steps, seed);
    if (modes.count("full_naive")) full_naive = run_mode(g, nc, false, k, warmup, steps, seed);
    if (modes.count("segments_naive")) seg_naive = run_mode(g, nc, true, k, warmup, steps, seed);
    // bf16 rows: the same modes with bf16 operands (fp32 rows above are unchanged).
    Json bf16_json = nullptr;
    if (a.count("bf16")) {
        bf16_json = Json{{"supported", bf16_supported()}};
        if (bf16_supported()) {
            set_matmul_precision(MatmulPrecision::kBf16);
            ModeResult bf, bs;
            if (modes.count("full")) bf = run_mode(g, mc, false, k, warmup, steps, seed);
            if (modes.count("segments")) bs = run_mode(g, mc, true, k, warmup, steps, seed);
            set_matmul_precision(MatmulPrecision::kFp32);
            auto row = [&](const ModeResult& r, const ModeResult& fp32) {
                return Json{{"steps_per_s", r.median_step_s > 0 ? 1.0 / r.median_step_s : 0.0},
                            {"median_step_s", r.median_step_s},
                            {"peak_rss_mb", r.peak_rss_mb},
                            {"final_loss", r.final_loss},
                            {"speedup_vs_fp32", r.median_step_s > 0 && fp32.median_step_s > 0
                                                    ? fp32.median_step_s / r.median_step_s
                                                    : 0.0}};
            };
            bf16_json["full_graph"] = row(bf, full);
            bf16_json["segments"] = row(bs, seg);
        } else {
            bf16_json["note"] =
                "this CPU has no native bf16 products (needs avx512_core_bf16): model.precision = "
                "bf16 runs as fp32 here, so no bf16 rows";
        }
    }
    // The peer runs the same graph, model size, K, seed and threads, for the selected modes only.
    std::map<std::string, double> peer_full, peer_seg;
    const bool any_full = modes.count("full") || modes.count("full_naive");
    const bool any_seg = modes.count("segments") || modes.count("segments_naive");
    if (with_peer) {
        std::ostringstream common;
        common << "--npz " << npz << " --configs " << k << " --hidden " << mc.hidden << " --layers "
               << mc.layers << " --seed " << seed << " --steps " << peer_steps << " --warmup "
               << peer_warmup << " --threads " << a["threads"].as<int>();
        if (any_full) peer_full = run_peer(python, peer_script, common.str() + " --full-graph");
        if (any_seg)
            peer_seg = run_peer(python, peer_script,
                                common.str() + " --max-nodes " + std::to_string(max_nodes));
    }
    auto speedup_text = [&](const std::map<std::string, double>& peer, double ours) {
        if (peer.empty() || ours <= 0) return std::string("n/a");
        std::ostringstream o;
        o.precision(3);
        o << peer.at("median_step_s") / ours << "x";
        return o.str();
    };
    auto speedup = [](const std::map<std::string, double>& peer, double ours) {
        auto it = peer.find("median_step_s");
        return it == peer.end() || ours <= 0 ? 0.0 : it->second / ours;
    };

    auto rate = [](double step_s) { return step_s > 0 ? 1.0 / step_s : 0.0; };
    // A mode's object: null when neither it nor its naive variant ran; the optimized path's
    // members are null when only the naive one ran, the naive_* members present when it ran.
    auto mode_json = [&](const ModeResult& r, bool ran, const std::map<std::string, double>& peer,
                         bool has_naive, const ModeResult& nv) {
        if (!ran && !has_naive) return Json(nullptr);
        Json m = {{"steps_per_s", rate(r.median_step_s)},
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
                  {"fraction_of_gemm_peak",
                   r.median_step_s > 0 && gemm_peak > 0
                       ? r.median_matmul_flops * 1e-9 / r.median_step_s / gemm_peak
                       : 0.0},
                  {"final_loss", r.final_loss}};
        if (!ran)
            for (auto& [key, value] : m.items()) value = nullptr;
        if (has_naive) {
            m["naive_matmul_gflop_per_step"] = nv.median_matmul_flops * 1e-9;
            m["naive_steps_per_s"] = rate(nv.median_step_s);
            m["naive_median_step_s"] = nv.median_step_s;
            m["naive_peak_rss_mb"] = nv.peak_rss_mb;
        }
        if (!peer.empty()) {
            m["peer_steps_per_s"] =
                peer.count("median_step_s") ? 1.0 / peer.at("median_step_s") : 0.0;
            m["peer_median_step_s"] = peer.count("median_step_s") ? peer.at("median_step_s") : 0.0;
            m["peer_peak_rss_mb"] = peer.count("peak_rss_mb") ? peer.at("peak_rss_mb") : 0.0;
            m["speedup_vs_peer"] = ran ? Json(speedup(peer, r.median_step_s)) : Json(nullptr);
            if (has_naive) m["speedup_vs_peer_naive"] = speedup(peer, nv.median_step_s);
        }
        return m;
    };
    const Json doc = {
        {"bench", "layout_training_step"},
        {"cpu", cpu_model()},
        {"nproc", std::thread::hardware_concurrency()},
        {"load_average_before", load_before},
        {"load_average_after", load_average()},
        {"npz", npz},
        {"nodes", g.full.feat.rows()},
        {"edges", g.num_edges},
        {"configurable_nodes", g.num_config_nodes},
        {"feat_dim", mc.feat_dim},
        {"configs_k", k},
        {"hidden", mc.hidden},
        {"layers", mc.layers},
        {"num_segments", g.segments.size()},  // "segments" is the segment mode's object below
        {"max_nodes", max_nodes},
        {"threads", num_threads()},
        {"steps", steps},
        {"warmup", warmup},
        {"config_dependent_node_frac", dep_frac},
        {"dependent_nodes_per_layer", dep_per_layer},
        {"gemm_forward_gflops", gemm.forward_gflops},
        {"gemm_weight_grad_gflops", gemm.weight_grad_gflops},
        {"spmm_gb_per_s", spmm_gbps},
        {"segment_mode_timed",
         "one fresh segment fwd+bwd + forward-only of every other config-dependent segment for the "
         "K configs + AdamW"},
        {"full_graph", mode_json(full, modes.count("full") > 0, peer_full,
                                 modes.count("full_naive") > 0, full_naive)},
        {"segments", mode_json(seg, modes.count("segments") > 0, peer_seg,
                               modes.count("segments_naive") > 0, seg_naive)},
        {"bf16", bf16_json}};
    const std::string js = dump_json(doc);
    if (a.count("json")) {
        std::cout << js << "\n";
    } else {
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
        const Line lines[] = {{"full", "full graph", full, peer_full},
                              {"full_naive", "full graph, naive", full_naive, peer_full},
                              {"segments", "segments", seg, peer_seg},
                              {"segments_naive", "segments, naive", seg_naive, peer_seg}};
        for (const Line& l : lines) {
            if (!modes.count(l.mode)) continue;
            std::cout << l.label << ": " << rate(l.r.median_step_s) << " steps/s (peak RSS "
                      << l.r.peak_rss_mb << " MB)" << peak_text(l.r) << ", speedup vs peer "
                      << speedup_text(l.peer, l.r.median_step_s) << "\n";
        }
        std::cout << js << "\n";
    }
    return 0;
}

}  // namespace segrank::cli
