// Ctrl-C (SIGINT) during `segrank train`: in one process the training loop stops at its next step
// and the run says where it stopped and how to continue; under mpirun, which ends every rank by a
// signal, rank 0 says where the run can continue from (docs/config.md#interrupting-a-run).
#pragma once

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <string>

#include "trainer/comm.h"

namespace segrank::cli {

/// Thrown by InterruptibleCommunicator out of the training loop after a SIGINT; caught by
/// run_train, which prints interrupted_message. Not a segrank::Error: an interrupt is no failure.
struct TrainingInterrupted {};

/// A Communicator that forwards every call to `inner` unchanged and, once a SIGINT was seen
/// (SigintStop::requested()), throws TrainingInterrupted from the gradient allreduce
/// (allreduce_sum over floats, one call per training step): the step that notices it ends before
/// its parameter update and nothing is written after it, so the run directory keeps the last
/// checkpoint as it was. Evaluations and checkpoint writes in progress finish first (they sum no
/// float gradients).
class InterruptibleCommunicator final : public Communicator {
public:
    /// `inner` must outlive this object.
    explicit InterruptibleCommunicator(Communicator& inner) : inner_(inner) {}
    int rank() const override { return inner_.rank(); }
    int size() const override { return inner_.size(); }
    int local_rank() const override { return inner_.local_rank(); }
    int local_size() const override { return inner_.local_size(); }
    std::string_view backend() const override { return inner_.backend(); }
    /// Throws TrainingInterrupted when SigintStop::requested(); else inner's allreduce_sum.
    void allreduce_sum(std::span<float> data) override;
    void allreduce_sum(std::span<double> data) override { inner_.allreduce_sum(data); }
    void allreduce_max(std::span<double> data) override { inner_.allreduce_max(data); }
    using Communicator::allreduce_max;
    using Communicator::allreduce_sum;
    void broadcast(std::span<float> data, int root) override { inner_.broadcast(data, root); }
    void broadcast(std::span<std::byte> data, int root) override { inner_.broadcast(data, root); }
    using Communicator::broadcast;
    std::vector<std::vector<double>> gather(std::span<const double> local, int root) override {
        return inner_.gather(local, root);
    }
    void barrier() override { inner_.barrier(); }
    bool barrier_within(double seconds) override { return inner_.barrier_within(seconds); }
    [[noreturn]] void abort(int code) override;

private:
    Communicator& inner_;
};

/// While alive: the first SIGINT only sets a flag (the handler does nothing else); a second one
/// restores the handler that was installed before and raises SIGINT again, so it ends the process
/// at once as it did without this object (a fresh run's termination cleanup included). Nothing is
/// installed when SIGINT was ignored (a background job of a shell) or when `enable` is false
/// (under mpirun, where one rank stopping alone would leave the others in a collective). The
/// destructor restores the previous handler. One object at a time.
class SigintStop {
public:
    explicit SigintStop(bool enable);
    ~SigintStop();
    SigintStop(const SigintStop&) = delete;
    SigintStop& operator=(const SigintStop&) = delete;
    /// True once a SIGINT arrived while an enabled object was alive.
    static bool requested();

private:
    bool installed_ = false;
};

/// Under mpirun (rank 0 of a job with several ranks): Ctrl-C reaches mpirun, which ends every rank
/// by a signal (SIGINT or SIGTERM), so the training loop cannot stop at a step boundary. While
/// alive, rank 0's SIGINT, SIGTERM and SIGHUP first write one line on stderr (best effort: mpirun
/// may exit before it forwards the line; mpi_resume_hint says the same at the start), prepared here
/// (the handler only calls access(2) and write(2)): with `dir`/last.ckpt.h5 present, that the job
/// was ended, the last checkpoint and `mpirun -np N segrank train --resume DIR`; without one, that
/// nothing is left to resume. Then the handler installed before (e.g. RunDirCleanup's) or the
/// default action runs, so the process still ends by the signal. The other ranks end by the signal
/// 0.3 s after it arrives (mpirun kills the rest once one rank is gone: rank 0's cleanup first).
/// Nothing is installed for one rank or when the signal was ignored. The destructor restores the
/// handlers.
class MpiTerminationNotice {
public:
    MpiTerminationNotice(const std::filesystem::path& dir, int rank, int world_size);
    ~MpiTerminationNotice();
    MpiTerminationNotice(const MpiTerminationNotice&) = delete;
    MpiTerminationNotice& operator=(const MpiTerminationNotice&) = delete;

private:
    bool installed_ = false;
};

/// The line rank 0 of a job with several ranks prints when training starts, since mpirun may end
/// the job before the line of MpiTerminationNotice reaches the terminal: "segrank train: Ctrl-C
/// ends the whole job under mpirun; continue it from its last checkpoint with: mpirun -np N
/// segrank train --resume DIR".
std::string mpi_resume_hint(const std::filesystem::path& dir, int world_size);

/// The two lines MpiTerminationNotice prints for run directory `dir` of a `world_size`-rank job:
/// `with_checkpoint` = "segrank train: the job was ended by a signal (Ctrl-C under mpirun); last
/// checkpoint DIR/last.ckpt.h5; continue with: mpirun -np N segrank train --resume DIR".
std::string mpi_ended_message(const std::filesystem::path& dir, int world_size,
                              bool with_checkpoint);

/// The one line run_train prints on stderr when training stopped on SIGINT at `step` (steps
/// completed): with `dir`/last.ckpt.h5 present, its step and the command that continues the run,
/// `segrank train --resume DIR` (DIR shell-quoted when needed); without one, that nothing is left
/// to resume (`removed`: the fresh run's files were removed).
std::string interrupted_message(const std::filesystem::path& dir, int64_t step, bool removed);

/// Exit status of a run stopped by SIGINT (128 + SIGINT, as a shell reports a process it ended).
inline constexpr int kInterruptedExit = 128 + SIGINT;

}  // namespace segrank::cli
