// run_case_child (see bench_memory_child.h): posix_spawn, a pipe for stdout, and a termination
// handler that stops the child before it removes the child's run folder. Removing first would race
// the child's writes (a file or folder made after the removal stayed behind).
#include "cli/bench_memory_child.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gnn/core/check.h"
#include "util/signal_cleanup.h"
#include "util/signal_relay.h"

extern char** environ;

namespace segrank::cli::memory_bench {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

// What the handler needs, written by the main thread before it is armed (and the pid right after
// the spawn), read by the handler only.
volatile sig_atomic_t g_armed = 0;
volatile sig_atomic_t g_stopping = 0;  // the handler has begun: it ends the process
volatile sig_atomic_t g_child = -1;
char g_run_dir[kSignalSafeMaxPath];
char g_message[1024];
size_t g_message_size = 0;
struct sigaction g_previous[3];

extern "C" void case_child_termination_handler(int sig) {
    if (g_armed) {
        g_armed = 0;
        g_stopping = 1;
        const pid_t child = static_cast<pid_t>(g_child);
        if (child > 0) {
            ::kill(child, SIGKILL);
            int status = 0;  // ECHILD when the main thread reaped it first: it has ended either way
            while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
            }
        }
        if (g_run_dir[0] != '\0') remove_tree_signal_safe(g_run_dir);
        write_stderr_signal_safe(g_message, g_message_size);
    }
    end_by_signal(sig);
}

// Arms the handler for `run_dir` (a path too long for the buffer is not removed) and `message`.
void arm(const std::filesystem::path& run_dir, const std::string& message) {
    const std::string dir = std::filesystem::absolute(run_dir).string();
    g_run_dir[0] = '\0';
    if (dir.size() < sizeof(g_run_dir)) std::memcpy(g_run_dir, dir.c_str(), dir.size() + 1);
    g_message_size = std::min(message.size(), sizeof(g_message));
    std::memcpy(g_message, message.data(), g_message_size);
    g_child = -1;
    struct sigaction sa {};
    sa.sa_handler = case_child_termination_handler;
    sigemptyset(&sa.sa_mask);
    for (int sig : kSignals) sigaddset(&sa.sa_mask, sig);
    g_armed = 1;
    for (size_t k = 0; k < 3; ++k) ::sigaction(kSignals[k], &sa, &g_previous[k]);
}

void disarm() {
    g_armed = 0;
    for (size_t k = 0; k < 3; ++k) ::sigaction(kSignals[k], &g_previous[k], nullptr);
}

// Removes the run folder (whatever is left of it) on every way out of run_case_child, while the
// handler is still armed (destroyed before `Armed`).
struct RemoveDir {
    std::filesystem::path dir;
    ~RemoveDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

// Disarms on every way out of run_case_child.
struct Armed {
    Armed(const std::filesystem::path& run_dir, const std::string& message) {
        arm(run_dir, message);
    }
    ~Armed() { disarm(); }
    Armed(const Armed&) = delete;
    Armed& operator=(const Armed&) = delete;
};

}  // namespace

ChildResult run_case_child(const std::vector<std::string>& argv,
                           const std::filesystem::path& run_dir, const std::string& interrupted) {
    SEGRANK_CHECK(!argv.empty(), "bench --memory: no child command");
    int fds[2];
    SEGRANK_CHECK(::pipe2(fds, O_CLOEXEC) == 0, "bench --memory: cannot make a pipe for ", argv[0],
                  " (", std::strerror(errno), ")");
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &inherited_signal_mask());  // not the relay's blocked set
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ChildResult r;
    const Armed armed(run_dir, interrupted);
    const RemoveDir remove{run_dir};
    pid_t pid = -1;
    const int spawned = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
    if (spawned == 0) g_child = pid;
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(fds[1]);
    if (spawned != 0) {
        ::close(fds[0]);
        throw Error(str("bench --memory: cannot start the child process ", argv[0], " (",
                        std::strerror(spawned), ")"));
    }
    char buf[4096];
    for (;;) {
        const ssize_t got = ::read(fds[0], buf, sizeof buf);
        if (got > 0) {
            r.out.append(buf, static_cast<size_t>(got));
        } else if (got == 0 || errno != EINTR) {
            break;
        }
    }
    ::close(fds[0]);
    while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
    }
    // The handler may have reaped the child (ECHILD here, no status): it is removing the run folder
    // and ends the process; reporting the child as failed meanwhile would race it.
    while (g_stopping) ::pause();
    return r;
}

}  // namespace segrank::cli::memory_bench
