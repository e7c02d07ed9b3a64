// Signal handlers off the compute threads (util/signal_relay.h).
#include "util/signal_relay.h"

#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "gnn/core/check.h"

namespace segrank {

namespace {

constexpr int kRelayed[] = {SIGINT, SIGTERM, SIGHUP};

sigset_t g_inherited;
bool g_inherited_set = false;
bool g_started = false;

sigset_t relayed_set() {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : kRelayed) sigaddset(&s, sig);
    return s;
}

// The one thread with the relayed signals unblocked: the kernel delivers every process-directed
// SIGINT/SIGTERM/SIGHUP to it, and its handler runs here, at once, on this thread's stack.
[[noreturn]] void relay_loop() {
    const sigset_t relayed = relayed_set();
    pthread_sigmask(SIG_UNBLOCK, &relayed, nullptr);
    for (;;) ::pause();
}

}  // namespace

void start_signal_relay() {
    if (g_started) return;
    const sigset_t blocked = relayed_set();
    sigset_t before;
    SEGRANK_CHECK(pthread_sigmask(SIG_BLOCK, &blocked, &before) == 0,
                  "cannot block SIGINT/SIGTERM/SIGHUP for the signal relay");
    g_inherited = before;
    g_inherited_set = true;
    try {
        std::thread(relay_loop).detach();
    } catch (const std::system_error& e) {
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
        throw Error(str("cannot start the signal relay thread: ", e.what()));
    }
    g_started = true;
}

void end_by_signal(int sig) noexcept {
    ::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ::sigprocmask(SIG_UNBLOCK, &one, nullptr);  // in a handler the signal is blocked: not now
    ::raise(sig);
    ::_exit(128 + sig);
}

void settle_relayed_signals() {
    if (!g_started) return;
    // A signal sent before now is pending until the relay thread takes it; give it up to a second.
    for (int i = 0; i < 5000; ++i) {
        sigset_t pending;
        if (sigpending(&pending) != 0) return;
        bool any = false;
        for (int sig : kRelayed) any = any || sigismember(&pending, sig) == 1;
        if (!any) return;
        ::usleep(200);
    }
}

const sigset_t& inherited_signal_mask() {
    if (!g_inherited_set) {
        pthread_sigmask(SIG_SETMASK, nullptr, &g_inherited);
        g_inherited_set = true;
    }
    return g_inherited;
}

InheritedSignalMask::InheritedSignalMask() {
    pthread_sigmask(SIG_SETMASK, &inherited_signal_mask(), &previous_);
}

InheritedSignalMask::~InheritedSignalMask() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

}  // namespace segrank
