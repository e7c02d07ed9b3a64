// The cases, options and --work-dir rules of `segrank bench --memory` (cli/bench_memory.cpp): what
// a run measures and which folders it may write into, checked before any work.
#pragma once
#include <cstdint>
#include <cxxopts.hpp>
#include <filesystem>
#include <string>
#include <vector>

namespace segrank::cli::memory_bench {

/// One case: a synthetic layout graph of `nodes` nodes, `configs` configs and `config_nodes`
/// configurable nodes, measured in `phases` (train, inference).
struct MemCase {
    std::string name;
    int64_t nodes = 0, configs = 0, config_nodes = 0;
    std::vector<std::string> phases;
};

/// nodes_1e4, nodes_1e5, nodes_1e6 (train, inference) and configs_1e5 (train).
std::vector<MemCase> all_cases();

/// The case of all_cases() named `name`. Throws segrank::Error listing the cases.
MemCase find_case(const std::string& name);

/// Comma list -> its non-empty items.
std::vector<std::string> split_names(const std::string& s);

/// The folder of --work-dir holding case `c`'s store for `seed`:
/// "<case>-n<nodes>-c<configs>-nc<config_nodes>-s<seed>".
std::string store_dir_name(const MemCase& c, uint64_t seed);

/// The options and help text of `segrank bench --memory`.
cxxopts::Options bench_memory_options();

/// The marker of a --work-dir bench --memory made or uses (the rule of scripts/bench_mpi.sh).
constexpr const char* kWorkMarker = ".bench_memory_made";

/// --work-dir `given` (absolute: `work`) must be new, empty, marked with kWorkMarker or hold only
/// stores of this benchmark (a folder of an earlier version); it is then created and marked.
/// Throws segrank::Error naming the folder and an entry bench did not write, before any work.
void prepare_work_dir(const std::string& given, const std::filesystem::path& work);

}  // namespace segrank::cli::memory_bench
