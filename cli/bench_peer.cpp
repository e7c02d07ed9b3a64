// Running the PyTorch peer of `segrank bench` as a child process and reading its JSON result.
#include "cli/bench_peer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "gnn/core/check.h"
#include "util/json.h"
#include "util/signal_relay.h"

namespace segrank::cli {

// Whether `python` names an executable file: a path (with '/') directly, else looked up in PATH.
bool executable_found(const std::string& python) {
    namespace fs = std::filesystem;
    auto ok = [](const fs::path& p) {
        std::error_code ec;
        return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
    };
    if (python.find('/') != std::string::npos) return ok(python);
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "");
    for (std::string d; std::getline(dirs, d, ':');)
        if (!d.empty() && ok(fs::path(d) / python)) return true;
    return false;
}

namespace {

// What run_command_with_timeout saw: stdout, the wait status (-1: not started) and whether the
// deadline killed it.
struct PeerProcess {
    std::string out;
    int status = -1;
    bool timed_out = false;
};

// Runs `sh -c "exec CMD"` with stderr to `err_path`, in its own process group, and reads its
// stdout until it exits or `timeout_s` seconds have passed; then the whole group (the shell and
// anything the peer started) is killed with SIGKILL. The child also dies with this process
// (PR_SET_PDEATHSIG), since a signal to our group no longer reaches it.
PeerProcess run_command_with_timeout(const std::string& cmd, const std::string& err_path,
                                     int64_t timeout_s) {
    PeerProcess r;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return r;
    const std::string shell = "exec " + cmd;
    const pid_t parent = ::getpid();
    const sigset_t child_mask = inherited_signal_mask();  // not the relay's blocked signals
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]), ::close(fds[1]);
        return r;
    }
    if (pid == 0) {  // child: only async-signal-safe calls until exec
        ::setpgid(0, 0);
        ::sigprocmask(SIG_SETMASK, &child_mask, nullptr);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);
        ::dup2(fds[1], STDOUT_FILENO);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (err >= 0) ::dup2(err, STDERR_FILENO);
        ::execl("/bin/sh", "sh", "-c", shell.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::setpgid(pid, pid);  // also here: no race with the kill below
    ::close(fds[1]);
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    auto left_ms = [&] {
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
    };
    bool open = true;
    while (!r.timed_out) {
        if (open) {
            pollfd p{fds[0], POLLIN, 0};
            const int n = ::poll(&p, 1, left_ms());
            if (n > 0) {
                char buf[4096];
                const ssize_t got = ::read(fds[0], buf, sizeof buf);
                if (got > 0) r.out.append(buf, static_cast<size_t>(got));
                if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) open = false;
            }
        } else {  // stdout closed: wait for the exit
            const pid_t w = ::waitpid(pid, &r.status, WNOHANG);
            if (w == pid) break;
            ::usleep(20000);
        }
        if (Clock::now() >= deadline) r.timed_out = true;
    }
    ::close(fds[0]);
    if (r.timed_out) {
        ::kill(-pid, SIGKILL);
        while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
        }
    }
    return r;
}

}  // namespace

// Runs the peer with the benchmark's model and step settings and returns the numeric members of
// its JSON line. Throws segrank::Error naming the command, its exit status and the end of its
// stderr when it fails, prints no result or runs longer than `timeout_s` seconds.
std::map<std::string, double> run_peer(const std::string& python, const std::string& script,
                                       const std::string& args, int64_t timeout_s) {
    namespace fs = std::filesystem;
    const fs::path err_path = fs::temp_directory_path() /
                              ("segrank_bench_peer_" + std::to_string(::getpid()) + ".stderr");
    std::ostringstream cmd;
    cmd << python << " " << script << " " << args;
    std::cerr << "  peer: " << cmd.str() << "\n";
    const PeerProcess proc = run_command_with_timeout(cmd.str(), err_path.string(), timeout_s);
    const std::string& text = proc.out;
    const int rc = proc.status;
    std::string err_tail;
    {
        std::ifstream f(err_path);
        std::vector<std::string> lines;
        for (std::string line; std::getline(f, line);) lines.push_back(line);
        const size_t from = lines.size() > 12 ? lines.size() - 12 : 0;
        for (size_t i = from; i < lines.size(); ++i) err_tail += "\n    " + lines[i];
    }
    std::error_code ec;
    fs::remove(err_path, ec);
    SEGRANK_CHECK(!proc.timed_out, "the PyTorch peer ", script, " did not finish within ",
                  "--peer-timeout ", timeout_s, " s and was killed: ", cmd.str(),
                  err_tail.empty() ? std::string() : "\n  its stderr ends:" + err_tail,
                  "\n  (a longer --peer-timeout, fewer --peer-steps, or --no-peer)");
    if (rc != 0) {
        std::string status = "could not be started";
        if (rc != -1 && WIFEXITED(rc))
            status = "exited with code " + std::to_string(WEXITSTATUS(rc));
        else if (rc != -1 && WIFSIGNALED(rc))
            status = "was killed by signal " + std::to_string(WTERMSIG(rc));
        throw Error(str("the PyTorch peer ", status, ": ", cmd.str(),
                        err_tail.empty() ? std::string() : "\n  its stderr ends:" + err_tail,
                        "\n  (--no-peer skips the peer; --python and --peer-script choose it)"));
    }
    // The peer prints one JSON object with a "peer" member as its last such line.
    std::istringstream lines(text);
    Json result;
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.front() != '{') continue;
        try {
            Json j = read_json(line, "peer output");
            if (j.is_object() && j.contains("peer")) result = std::move(j);
        } catch (const Error&) {
            // a line of other output that happens to start with '{'
        }
    }
    SEGRANK_CHECK(result.is_object(),
                  "the PyTorch peer printed no JSON line with a \"peer\" member: ", cmd.str());
    std::map<std::string, double> out;
    for (const auto& [key, value] : result.items())
        if (value.is_number()) out[key] = value.get<double>();
    SEGRANK_CHECK(out.count("median_step_s") && out.at("median_step_s") > 0,
                  "the PyTorch peer's result has no positive median_step_s: ", cmd.str());
    return out;
}

}  // namespace segrank::cli
