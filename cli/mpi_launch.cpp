// See cli/mpi_launch.h.
#include "cli/mpi_launch.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace segrank::cli {

namespace {

// The value of environment variable `name` as a non-negative int; nullopt when unset or not one.
std::optional<int> env_int(const char* name) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return std::nullopt;
    int value = -1;
    const char* end = text + std::strlen(text);
    const auto [p, ec] = std::from_chars(text, end, value);
    if (ec != std::errc{} || p != end || value < 0) return std::nullopt;
    return value;
}

std::optional<LaunchedRank> rank_pair(const char* rank_name, const char* size_name) {
    const std::optional<int> rank = env_int(rank_name);
    const std::optional<int> size = env_int(size_name);
    if (!rank || !size || *size < 1 || *rank >= *size) return std::nullopt;
    return LaunchedRank{*rank, *size};
}

}  // namespace

std::optional<LaunchedRank> launched_rank_from_environment() {
    if (auto r = rank_pair("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")) return r;
    return rank_pair("PMI_RANK", "PMI_SIZE");
}

bool runs_across_ranks(std::string_view command) { return command == "train"; }

std::string single_process_refusal(std::string_view command, const LaunchedRank& at) {
    return "segrank " + std::string(command) +
           " runs in one process; only segrank train uses MPI ranks (started as rank " +
           std::to_string(at.rank) + " of " + std::to_string(at.size) + ")";
}

}  // namespace segrank::cli
