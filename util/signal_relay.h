// Signal handlers off the compute threads: oneDNN's JIT f32 GEMM kernels (AVX-512) point the
// stack pointer into heap memory while they run, so a handler run on such a thread writes the
// kernel's signal frame over the heap ("corrupted size vs. prev_size" after a Ctrl-C; oneDNN issue
// 4845). The relay blocks the signals segrank handles in every thread and runs their handlers on
// one thread of its own, whose stack is a stack.
#pragma once
#include <signal.h>

namespace segrank {

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, so in every thread created after it
/// (OpenMP's, MPI's), and starts one thread with them unblocked that only waits (pause): the kernel
/// delivers each such signal sent to the process to that thread, where the disposition in force (a
/// segrank handler, the default action that ends the process, or SIG_IGN) applies as usual, on the
/// relay thread's stack. Call first in main(), before any other thread exists; later calls do
/// nothing. Throws segrank::Error when the thread cannot be started.
void start_signal_relay();

/// Waits (at most about a second) until no SIGINT, SIGTERM or SIGHUP sent to the process is still
/// pending, i.e. the relay thread has run its handler: for a check of a stop flag that must see a
/// signal sent before the check (e.g. by a measuring harness just before its reply). Returns at
/// once when the relay is not running.
void settle_relayed_signals();

/// Ends the process by `sig` at once, from a signal handler: its default action restored and the
/// signal unblocked in the calling thread before it is raised, so no other thread runs on (and
/// writes) after the handler's cleanup. Async-signal-safe; _exit(128 + sig) if the process
/// somehow survives.
[[noreturn]] void end_by_signal(int sig) noexcept;

/// The signal mask the process had before start_signal_relay (its own mask when the relay is not
/// running): what a child process should start with (posix_spawnattr_setsigmask, or
/// pthread_sigmask after fork).
const sigset_t& inherited_signal_mask();

/// While alive, the calling thread has inherited_signal_mask(), so that a child process started
/// by popen() or fork() in the meantime does not inherit the relay's blocked signals; restores
/// the previous mask on destruction.
class InheritedSignalMask {
public:
    InheritedSignalMask();
    ~InheritedSignalMask();
    InheritedSignalMask(const InheritedSignalMask&) = delete;
    InheritedSignalMask& operator=(const InheritedSignalMask&) = delete;

private:
    sigset_t previous_;
};

}  // namespace segrank
