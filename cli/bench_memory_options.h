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

/// Refuses anything at `store` but a store bench --memory wrote: a path that exists and is not a
/// regular file holding a segrank graph store (a user's text file, a folder, a checkpoint). The
/// message starts with `option` and `given` (the option naming the folder and its value as typed)
/// and says bench `use`s ("replaces", "reads") only stores it wrote. Throws segrank::Error naming
/// `store` and its kind (describe_file_kind); nothing when `store` does not exist.
void refuse_foreign_store(const std::filesystem::path& store, const std::string& option,
                          const std::string& given, const std::string& use);

/// --work-dir `given` (absolute: `work`) must be new, empty, marked with kWorkMarker or hold only
/// what bench --memory writes there (a folder of an earlier version): store folders named by
/// store_dir_name holding nothing but their graph store `<case>.h5`. It is then created and marked.
/// Throws segrank::Error naming the folder and the first entry bench did not write (in name
/// order), or a file of another kind at a store path (refuse_foreign_store), before any work.
void prepare_work_dir(const std::string& given, const std::filesystem::path& work);

/// Refuses options that do not apply together, naming both: --make-store with an empty path or
/// with an option of a run (--steps, --eval-passes, --memory-mb, --phases, --work-dir, --json),
/// and --nodes / --configs without --make-store. Throws segrank::Error.
void check_option_combinations(const cxxopts::ParseResult& a);

/// The names of --cases in order. Throws segrank::Error when the list is empty or names a case
/// twice (naming it).
std::vector<std::string> case_names(const cxxopts::ParseResult& a);

}  // namespace segrank::cli::memory_bench
