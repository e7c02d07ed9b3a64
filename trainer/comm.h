// Communicator: the one wrapper over the distributed engine (docs/architecture.md#distribution).
// LocalCommunicator (one process) is always built; the MPI one lives in trainer/comm_mpi.cpp, the
// only <mpi.h> includer, compiled with SEGRANK_WITH_MPI. Code below trainer/ takes plain
// (rank, world_size) integers instead of a Communicator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace segrank {

/// Collective operations over the ranks of one job. Every collective must be called by every
/// rank in the same order (MPI semantics); a rank that throws instead must end the job through
/// abort() (see run_guarded), or the others wait forever. Failed MPI calls throw segrank::Error
/// naming the call, the rank and MPI's message.
class Communicator {
public:
    virtual ~Communicator() = default;

    /// This process's rank in [0, size()).
    virtual int rank() const = 0;
    /// Number of ranks in the job.
    virtual int size() const = 0;
    /// Rank among the ranks on this machine (shared-memory node), in [0, local_size()).
    virtual int local_rank() const = 0;
    /// Number of ranks on this machine (used to split the cores into OpenMP threads).
    virtual int local_size() const = 0;
    /// "local" or "mpi".
    virtual std::string_view backend() const = 0;

    /// In place: data[i] = sum over ranks of data[i]. Every rank passes the same length.
    /// One call per step over the whole flat gradient arena [num_params].
    virtual void allreduce_sum(std::span<float> data) = 0;
    /// In place, double precision (metric sums, counts).
    virtual void allreduce_sum(std::span<double> data) = 0;
    /// In place: data[i] = max over ranks of data[i].
    virtual void allreduce_max(std::span<double> data) = 0;
    /// Sum of one scalar over ranks.
    double allreduce_sum(double value);
    /// Max of one scalar over ranks (e.g. peak RSS, a "some rank saw NaN" flag).
    double allreduce_max(double value);

    /// Copies root's data into every rank's buffer (same length everywhere), e.g. the parameters
    /// at start. Throws segrank::Error when root is not in [0, size()).
    virtual void broadcast(std::span<float> data, int root) = 0;
    /// Byte version of broadcast (same length on every rank).
    virtual void broadcast(std::span<std::byte> data, int root) = 0;
    /// Returns root's string on every rank (lengths may differ before the call), e.g. the config
    /// text.
    std::string broadcast(const std::string& text, int root);

    /// Rank `root` receives every rank's vector (lengths may differ), indexed by rank; the other
    /// ranks receive an empty result. For small vectors (per-rank metrics, shard sizes).
    virtual std::vector<std::vector<double>> gather(std::span<const double> local, int root) = 0;

    /// Blocks until every rank has called it.
    virtual void barrier() = 0;
    /// barrier() with a deadline: true once every rank has called it, false when `seconds` of wall
    /// time pass first (a rank that runs another program, or never got here). After false the
    /// barrier is still pending: the caller must end the job (throw, so run_guarded calls abort()).
    /// True at once with one rank.
    virtual bool barrier_within(double seconds) = 0;

    /// Ends the whole job now with `code` (MPI_Abort for MPI, _Exit locally): the way out when
    /// one rank fails, so no rank is left waiting in a collective. Called only by a program's
    /// top level (run_guarded), never by library code (docs/style.md#errors).
    [[noreturn]] virtual void abort(int code) = 0;
};

/// One process: rank 0 of 1. Collectives are identities; a root other than 0 is an error.
class LocalCommunicator final : public Communicator {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    int local_rank() const override { return 0; }
    int local_size() const override { return 1; }
    std::string_view backend() const override { return "local"; }
    void allreduce_sum(std::span<float>) override {}
    void allreduce_sum(std::span<double>) override {}
    void allreduce_max(std::span<double>) override {}
    using Communicator::allreduce_max;
    using Communicator::allreduce_sum;
    void broadcast(std::span<float> data, int root) override;
    void broadcast(std::span<std::byte> data, int root) override;
    using Communicator::broadcast;
    std::vector<std::vector<double>> gather(std::span<const double> local, int root) override;
    void barrier() override {}
    bool barrier_within(double) override { return true; }
    [[noreturn]] void abort(int code) override;
};

/// True when this process was started by an MPI launcher (Open MPI's mpirun/mpiexec set
/// OMPI_COMM_WORLD_SIZE; PMI_SIZE / PMIX_RANK for other launchers).
bool launched_by_mpi();

/// The MPI communicator when built with SEGRANK_WITH_MPI and launched_by_mpi(), else a
/// LocalCommunicator. Initializes MPI (MPI_THREAD_FUNNELED, MPI_ERRORS_RETURN on the world
/// communicator); the returned object finalizes it when destroyed. Call once per process, before
/// parsing arguments (MPI may consume its own). Throws segrank::Error if MPI fails to start or
/// was already finalized.
std::unique_ptr<Communicator> make_communicator(int* argc, char*** argv);

#ifdef SEGRANK_WITH_MPI
/// Defined in trainer/comm_mpi.cpp. Prefer make_communicator.
std::unique_ptr<Communicator> make_mpi_communicator(int* argc, char*** argv);
#endif

/// Top-level guard for programs that use a Communicator: runs body(); on an exception prints
/// `segrank <command> [rank R/N]: error: <message>` to stderr (`segrank <command>: error: ...`
/// with one rank, as every other subcommand's errors; an empty `command` gives `segrank`) and, when
/// size() > 1, ends the whole job with comm.abort(code) (code 1 for segrank::Error, 3 for other
/// exceptions); with one rank it returns that code. Returns body's exit code otherwise.
int run_guarded(Communicator& comm, std::string_view command, const std::function<int()>& body);

/// Test hook (docs/architecture.md#distribution): throws segrank::Error("injected failure ...")
/// when `rank == fail_rank` and `step == fail_step` (dist.fail_rank, dist.fail_step; fail_rank -1 =
/// off).
void inject_failure_if_requested(int fail_rank, int64_t fail_step, int rank, int64_t step);

}  // namespace segrank
