// The cases, options and --work-dir rules of `segrank bench --memory` (the measurement itself is
// cli/bench_memory.cpp).
#include "cli/bench_memory_options.h"

#include <algorithm>
#include <sstream>

#include "cli/options.h"
#include "gnn/core/check.h"
#include "gst/inference_budget.h"
#include "util/atomic_file.h"

namespace segrank::cli::memory_bench {

std::vector<MemCase> all_cases() {
    // One configurable node per 100 nodes: every 1000-node segment looks alike (about 10
    // configurable nodes), so the cases differ in graph size only.
    return {{"nodes_1e4", 10000, 1000, 100, {"train", "inference"}},
            {"nodes_1e5", 100000, 1000, 1000, {"train", "inference"}},
            {"nodes_1e6", 1000000, 1000, 10000, {"train", "inference"}},
            {"configs_1e5", 10000, 100000, 350, {"train"}}};
}

MemCase find_case(const std::string& name) {
    for (const auto& c : all_cases())
        if (c.name == name) return c;
    throw Error(str("bench --memory: unknown case '", name,
                    "' (nodes_1e4, nodes_1e5, nodes_1e6, configs_1e5)"));
}

std::vector<std::string> split_names(const std::string& s) {
    std::vector<std::string> v;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');)
        if (!x.empty()) v.push_back(x);
    return v;
}

std::string store_dir_name(const MemCase& c, uint64_t seed) {
    return str(c.name, "-n", c.nodes, "-c", c.configs, "-nc", c.config_nodes, "-s", seed);
}

cxxopts::Options bench_memory_options() {
    cxxopts::Options opts("segrank bench --memory",
                          "Peak RSS and speed of GST training and streaming inference on synthetic "
                          "layout graphs in HDF5 stores");
    opts.add_options()("memory", "select the memory benchmark")(
        "json",
        "print one JSON object per line (case, nodes, configs, phase, peak_rss_mb, steps_per_s, "
        "...)")(
        "cases", "comma list of cases: nodes_1e4, nodes_1e5, nodes_1e6, configs_1e5",
        cxxopts::value<std::string>()->default_value("nodes_1e4,nodes_1e5,nodes_1e6,configs_1e5"))(
        "phases", "comma list of phases: train, inference",
        cxxopts::value<std::string>()->default_value("train,inference"))(
        "steps", "timed training steps (after one warmup step) / evaluation passes",
        cxxopts::value<int64_t>()->default_value("5"))(
        "eval-passes", "inference: evaluation passes over the held-out configs",
        cxxopts::value<int64_t>()->default_value("1"))(
        "memory-mb",
        "inference: the memory budget eval.memory_mb (MiB) every case is scored at (the default "
        "is eval.memory_mb's)",
        cxxopts::value<int64_t>()->default_value(std::to_string(kDefaultInferenceMemoryMb)))(
        "threads", "OpenMP threads", cxxopts::value<int>()->default_value("2"))(
        "work-dir", "where stores are generated (kept and reused) and runs written",
        cxxopts::value<std::string>()->default_value("runs/bench_memory"))(
        "seed", "generator and sampling seed", cxxopts::value<uint64_t>()->default_value("0"))(
        "make-store",
        "only write the synthetic store of --cases' first case to DIR/<case>/<case>.h5 and exit",
        cxxopts::value<std::string>())("nodes", "with --make-store: override the node count",
                                       cxxopts::value<int64_t>())(
        "configs", "with --make-store: override the config count", cxxopts::value<int64_t>())(
        "child", "internal: run one case in this process", cxxopts::value<std::string>())(
        "phase", "internal: phase of --child",
        cxxopts::value<std::string>()->default_value("train"))("h,help", "show help");
    return opts;
}

void prepare_work_dir(const std::string& given, const std::filesystem::path& work) {
    namespace fs = std::filesystem;
    refuse_dangling_link("--work-dir", given);
    std::error_code ec;
    if (fs::exists(fs::symlink_status(work, ec))) {
        SEGRANK_CHECK(fs::is_directory(work, ec), "bench --memory: --work-dir ", given, ": is ",
                      describe_file_kind(work), ", not a folder");
        if (!fs::exists(fs::symlink_status(work / kWorkMarker, ec)))
            for (const auto& e : fs::directory_iterator(work, ec)) {
                const std::string name = e.path().filename().string();
                const auto& cases = all_cases();
                if (std::any_of(cases.begin(), cases.end(), [&](const MemCase& c) {
                        return name.starts_with(c.name + "-n");  // store_dir_name
                    }))
                    continue;
                throw Error(str("bench --memory: --work-dir ", given,
                                ": the folder exists, is not empty and is not a work folder of "
                                "bench --memory (no ",
                                kWorkMarker, "; it holds ", name,
                                "); bench writes stores and run_* folders there: give a new or "
                                "empty folder, or one an earlier bench --memory made"));
            }
    }
    fs::create_directories(work);
    if (!fs::exists(fs::symlink_status(work / kWorkMarker, ec)))
        write_file_atomically(work / kWorkMarker, "segrank bench --memory work folder\n");
}

}  // namespace segrank::cli::memory_bench
