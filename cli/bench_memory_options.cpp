// The cases, options and --work-dir rules of `segrank bench --memory` (the measurement itself is
// cli/bench_memory.cpp).
#include "cli/bench_memory_options.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>

#include "cli/options.h"
#include "data/graph_store.h"
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

namespace {

// store_dir_name up to the seed.
std::string store_dir_prefix(const MemCase& c) {
    return str(c.name, "-n", c.nodes, "-c", c.configs, "-nc", c.config_nodes, "-s");
}

}  // namespace

std::string store_dir_name(const MemCase& c, uint64_t seed) {
    return str(store_dir_prefix(c), seed);
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
        "only write the synthetic store of --cases' first case to DIR/<case>/<case>.h5 and exit "
        "(with --seed, --nodes, --configs, --threads; the options of a run are refused)",
        cxxopts::value<std::string>())("nodes", "with --make-store: override the node count",
                                       cxxopts::value<int64_t>())(
        "configs", "with --make-store: override the config count", cxxopts::value<int64_t>())(
        "child", "internal: run one case in this process", cxxopts::value<std::string>())(
        "phase", "internal: phase of --child",
        cxxopts::value<std::string>()->default_value("train"))(
        "run-dir", "internal: the run folder of --child (made by the parent)",
        cxxopts::value<std::string>()->default_value(""))(
        "parent-pid", "internal: the process that started --child (it ends with that process)",
        cxxopts::value<int64_t>()->default_value("0"))("h,help", "show help");
    return opts;
}

void refuse_foreign_store(const std::filesystem::path& store, const std::string& option,
                          const std::string& given, const std::string& use) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(store, ec)) &&
        !(std::filesystem::is_regular_file(store, ec) && is_graph_store_file(store)))
        throw Error(str("bench --memory: ", option, " ", given, ": ", store.string(), " is ",
                        describe_file_kind(store), ", not a segrank graph store: bench --memory ",
                        option, " ", use, " only stores it wrote; give another ", option,
                        " or remove the file"));
}

namespace {

// `dir`'s entry names, sorted (so the first foreign one named is the same on every system).
// Throws std::filesystem errors when `dir` cannot be listed.
std::vector<std::string> sorted_entries(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// The case whose store_dir_name (for some seed) is `name`, if any.
std::optional<MemCase> store_dir_case(const std::string& name) {
    for (const MemCase& c : all_cases()) {
        const std::string prefix = store_dir_prefix(c);
        const std::string seed = name.starts_with(prefix) ? name.substr(prefix.size()) : "";
        if (!seed.empty() && seed.size() <= 20 &&
            std::all_of(seed.begin(), seed.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
            return c;
    }
    return std::nullopt;
}

// The first entry of the unmarked folder `work` (relative to it) that bench --memory would not
// have written: anything but store folders of all_cases() holding at most their store file; ""
// when there is none. Throws segrank::Error (refuse_foreign_store) for a file of another kind at
// a store path.
std::string foreign_entry(const std::filesystem::path& work, const std::string& given) {
    namespace fs = std::filesystem;
    for (const std::string& name : sorted_entries(work)) {
        const std::optional<MemCase> c = store_dir_case(name);
        std::error_code ec;
        if (!c || !fs::is_directory(fs::symlink_status(work / name, ec))) return name;
        for (const std::string& inner : sorted_entries(work / name)) {
            if (inner != c->name + ".h5") return name + "/" + inner;
            refuse_foreign_store(work / name / inner, "--work-dir", given, "reads");
        }
    }
    return "";
}

// The longest name bench --memory writes in --work-dir: a store's temporary
// ("<store folder>/<case>.h5.tmp-<pid>", for the longest seed and a pid of 10 digits) or a file of
// a case's run folder ("run_<case>_<phase>-K/last.ckpt.h5.tmp-<pid>", K up to 1000).
std::string longest_work_name() {
    std::string longest;
    for (const MemCase& c : all_cases()) {
        std::vector<std::string> names = {
            str("/", store_dir_name(c, UINT64_MAX), "/", c.name, ".h5.tmp-4294967295")};
        for (const std::string& phase : c.phases)
            names.push_back(str("/run_", c.name, "_", phase, "-1000/last.ckpt.h5.tmp-4294967295"));
        for (const std::string& n : names)
            if (n.size() > longest.size()) longest = n;
    }
    return longest;
}

}  // namespace

void prepare_work_dir(const std::string& given, const std::filesystem::path& work) {
    namespace fs = std::filesystem;
    // Not a raw "File name too long", also for the longest name written in it (under the absolute
    // path bench uses), before any folder is made.
    refuse_long_path("--work-dir", given);
    refuse_long_path("--work-dir", work.native(), longest_work_name());
    refuse_dangling_link("--work-dir", given);
    std::error_code ec;
    if (fs::exists(fs::symlink_status(work, ec))) {
        SEGRANK_CHECK(fs::is_directory(work, ec), "bench --memory: --work-dir ", given, ": is ",
                      describe_file_kind(work), ", not a folder");
        if (!fs::exists(fs::symlink_status(work / kWorkMarker, ec))) {
            const std::string name = foreign_entry(work, given);
            SEGRANK_CHECK(name.empty(), "bench --memory: --work-dir ", given,
                          ": the folder exists, is not empty and is not a work folder of "
                          "bench --memory (no ",
                          kWorkMarker, "; it holds ", name,
                          "); bench writes stores and run_* folders there: give a new or "
                          "empty folder, or one an earlier bench --memory made");
        }
    }
    fs::create_directories(work);
    if (!fs::exists(fs::symlink_status(work / kWorkMarker, ec)))
        write_file_atomically(work / kWorkMarker, "segrank bench --memory work folder\n");
}

void check_option_combinations(const cxxopts::ParseResult& a) {
    for (const char* opt : {"run-dir", "parent-pid"})
        SEGRANK_CHECK(!a.count(opt), "bench --memory: --", opt,
                      " is internal to --child (the process bench starts per case)");
    if (a.count("make-store")) {
        SEGRANK_CHECK(!a["make-store"].as<std::string>().empty(),
                      "bench --memory: --make-store: the path is empty (expected a folder)");
        // The options of a run: --make-store writes one store and runs nothing.
        for (const char* opt : {"steps", "eval-passes", "memory-mb", "phases", "work-dir", "json"})
            SEGRANK_CHECK(!a.count(opt), "bench --memory: --make-store and --", opt,
                          " exclude each other (--make-store DIR only writes a store to "
                          "DIR/<case>/<case>.h5 and runs nothing; --",
                          opt, " applies to a run)");
    } else {
        // --nodes / --configs size only the store --make-store writes; a run's cases have fixed
        // sizes.
        for (const char* opt : {"nodes", "configs"})
            SEGRANK_CHECK(!a.count(opt), "bench --memory: --", opt,
                          " applies to --make-store DIR only (the cases of a run have fixed "
                          "sizes: --cases chooses among them)");
    }
}

std::vector<std::string> case_names(const cxxopts::ParseResult& a) {
    const std::vector<std::string> names = split_names(a["cases"].as<std::string>());
    SEGRANK_CHECK(!names.empty(), "bench --memory: --cases is empty");
    for (size_t i = 0; i < names.size(); ++i)
        SEGRANK_CHECK(std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i),
                                names[i]) == names.begin() + static_cast<std::ptrdiff_t>(i),
                      "bench --memory: --cases: ", names[i],
                      " is named twice (each case runs once)");
    return names;
}

}  // namespace segrank::cli::memory_bench
