// Which subcommands run across MPI ranks, and how the others notice that an MPI launcher started
// them as one of several ranks (from the launcher's environment, without initializing MPI).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace segrank::cli {

/// This process's place in a launch: rank in [0, size), size >= 1.
struct LaunchedRank {
    int rank = 0;
    int size = 1;
};

/// The rank and world size an MPI launcher gave this process, read from its environment:
/// OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), else PMI_RANK / PMI_SIZE
/// (MPICH's Hydra, Slurm's PMI). nullopt when neither pair is set or a value is not a
/// non-negative integer (rank < size). Never throws.
std::optional<LaunchedRank> launched_rank_from_environment();

/// True for the subcommands that run across MPI ranks (`train`).
bool runs_across_ranks(std::string_view command);

/// The refusal for a single-process subcommand started as one of several ranks:
/// "segrank CMD runs in one process; only segrank train uses MPI ranks (started as rank R of N)".
std::string single_process_refusal(std::string_view command, const LaunchedRank& at);

}  // namespace segrank::cli
