// Ctrl-C during a one-process `segrank train`: a flag set by the handler, noticed by the training
// loop at its next gradient allreduce, and the message that says how to continue.
#include "cli/train_interrupt.h"

#include <signal.h>

#include <atomic>
#include <cstdlib>

#include "gnn/core/check.h"
#include "trainer/checkpoint.h"

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
