// Ctrl-C during `segrank train`: in one process a flag set by the handler, noticed by the training
// loop at its next gradient allreduce; under mpirun a prepared line written by rank 0's handler;
// and the messages that say how to continue.
#include "cli/train_interrupt.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "gnn/core/check.h"
#include "trainer/checkpoint.h"
#include "util/signal_cleanup.h"
#include "util/signal_relay.h"

namespace segrank::cli {

namespace {

// Set by the handler (possibly on an OpenMP worker thread), read by the training thread.
std::atomic<int> g_sigint_seen{0};
static_assert(std::atomic<int>::is_always_lock_free,
              "the handler may only touch lock-free atomics");
struct sigaction g_previous {};

extern "C" void on_sigint(int sig) {
    if (g_sigint_seen.load() != 0) {  // the second Ctrl-C: end now, as before
        ::sigaction(sig, &g_previous, nullptr);
        ::raise(sig);
        return;
    }
    g_sigint_seen.store(1);
}

// `s` as one shell word: unchanged when it holds only characters no shell interprets.
std::string shell_word(const std::string& s) {
    const bool plain = !s.empty() && s.find_first_not_of(
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                                         "qrstuvwxyz0123456789_./-+:=@%,") == std::string::npos;
    if (plain) return s;
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// MpiTerminationNotice's state, prepared outside the handler (fixed buffers only).
constexpr size_t kNoticeMax = 8192;
constexpr int kNoticeSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct TerminationNotice {
    volatile sig_atomic_t printed = 0;
    char last_checkpoint[kNoticeMax] = {};  // DIR/last.ckpt.h5
    char with_checkpoint[kNoticeMax] = {};  // the line when it exists
    char without_checkpoint[kNoticeMax] = {};
    struct sigaction previous[3]{};
};
TerminationNotice g_notice;

bool copy_text(char (&dst)[kNoticeMax], const std::string& s) {
    if (s.size() + 1 > kNoticeMax) return false;
    std::memcpy(dst, s.c_str(), s.size() + 1);
    return true;
}

void write_all(const char* text) { write_stderr_signal_safe(text, std::strlen(text)); }

extern "C" void on_mpi_termination(int sig) {
    if (!g_notice.printed) {
        g_notice.printed = 1;
        write_all(::access(g_notice.last_checkpoint, F_OK) == 0 ? g_notice.with_checkpoint
                                                                : g_notice.without_checkpoint);
    }
    int k = 0;
    while (k < 2 && kNoticeSignals[k] != sig) ++k;
    const struct sigaction& before = g_notice.previous[k];
    if ((before.sa_flags & SA_SIGINFO) == 0 && before.sa_handler != SIG_DFL &&
        before.sa_handler != SIG_IGN) {
        before.sa_handler(sig);  // e.g. the fresh run's cleanup, which ends by the signal
        return;
    }
    end_by_signal(sig);
}

// Ranks other than 0: end by the signal a moment later (kOtherRankGraceNs), so rank 0, which got
// the same signal from mpirun, writes its line and removes a fresh run's files before mpirun sees
// a rank gone and kills the rest with SIGKILL (it did, in about 1 of 5 early signals).
constexpr long kOtherRankGraceNs = 300'000'000;

extern "C" void on_mpi_termination_other_rank(int sig) {
    struct timespec left {
        0, kOtherRankGraceNs
    };
    while (::nanosleep(&left, &left) != 0) {
    }
    end_by_signal(sig);
}

// Installs `handler` for kNoticeSignals, keeping the handlers before in g_notice.previous; a
// signal that was ignored stays ignored. True when one was installed.
bool install_notice_handler(void (*handler)(int)) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    for (int sig : kNoticeSignals) sigaddset(&sa.sa_mask, sig);
    bool installed = false;
    for (int k = 0; k < 3; ++k) {
        ::sigaction(kNoticeSignals[k], nullptr, &g_notice.previous[k]);
        if (g_notice.previous[k].sa_handler == SIG_IGN) continue;
        ::sigaction(kNoticeSignals[k], &sa, nullptr);
        installed = true;
    }
    return installed;
}

}  // namespace

void InterruptibleCommunicator::allreduce_sum(std::span<float> data) {
    if (SigintStop::requested()) throw TrainingInterrupted{};
    inner_.allreduce_sum(data);
}

void InterruptibleCommunicator::abort(int code) {
    inner_.abort(code);
    std::_Exit(code);  // not reached: the attribute of a virtual call is not seen by the compiler
}

SigintStop::SigintStop(bool enable) {
    g_sigint_seen.store(0);
    if (!enable) return;
    struct sigaction previous {};
    ::sigaction(SIGINT, nullptr, &previous);
    if (previous.sa_handler == SIG_IGN) return;
    g_previous = previous;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    installed_ = ::sigaction(SIGINT, &sa, nullptr) == 0;
}

SigintStop::~SigintStop() {
    if (installed_) ::sigaction(SIGINT, &g_previous, nullptr);
}

bool SigintStop::requested() { return g_sigint_seen.load() != 0; }

std::string mpi_ended_message(const std::filesystem::path& dir, int world_size,
                              bool with_checkpoint) {
    if (!with_checkpoint)
        return "segrank train: the job was ended by a signal (Ctrl-C under mpirun) before the "
               "first checkpoint; nothing to resume";
    return str(
        "segrank train: the job was ended by a signal (Ctrl-C under mpirun); last "
        "checkpoint ",
        (dir / "last.ckpt.h5").string(), "; continue with: mpirun -np ", world_size,
        " segrank train --resume ", shell_word(dir.string()));
}

std::string mpi_resume_hint(const std::filesystem::path& dir, int world_size) {
    return str(
        "segrank train: Ctrl-C ends the whole job under mpirun; continue it from its last "
        "checkpoint with: mpirun -np ",
        world_size, " segrank train --resume ", shell_word(dir.string()));
}

MpiTerminationNotice::MpiTerminationNotice(const std::filesystem::path& dir, int rank,
                                           int world_size) {
    if (world_size < 2) return;
    if (rank != 0) {
        installed_ = install_notice_handler(on_mpi_termination_other_rank);
        return;
    }
    g_notice.printed = 0;
    if (!copy_text(g_notice.last_checkpoint, (dir / "last.ckpt.h5").string()) ||
        !copy_text(g_notice.with_checkpoint, mpi_ended_message(dir, world_size, true) + "\n") ||
        !copy_text(g_notice.without_checkpoint, mpi_ended_message(dir, world_size, false) + "\n"))
        return;  // a path too long for the fixed buffers: no notice
    installed_ = install_notice_handler(on_mpi_termination);
}

MpiTerminationNotice::~MpiTerminationNotice() {
    if (!installed_) return;
    for (int k = 0; k < 3; ++k)
        if (g_notice.previous[k].sa_handler != SIG_IGN)
            ::sigaction(kNoticeSignals[k], &g_notice.previous[k], nullptr);
}

std::string interrupted_message(const std::filesystem::path& dir, int64_t step, bool removed) {
    const std::filesystem::path last = dir / "last.ckpt.h5";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(last, ec))
        return str("segrank train: interrupted at step ", step, " before the first checkpoint",
                   removed ? str("; removed what the run created in ", dir.string()) : "",
                   "; nothing to resume");
    std::string at;
    try {
        at = str(" (step ", CheckpointReader(last).step(), ")");
    } catch (const Error&) {  // named by the resume itself; the line stays one line
    }
    return str("segrank train: interrupted at step ", step, "; last checkpoint ", last.string(), at,
               "; continue with: segrank train --resume ", shell_word(dir.string()));
}

}  // namespace segrank::cli
