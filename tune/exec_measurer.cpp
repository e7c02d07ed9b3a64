// The exec:CMD backend: a child process spoken to in JSON lines over two pipes, with per-request
// deadlines (poll), kills and restarts (docs/tune.md#the-exec-protocol).
#include "tune/exec_measurer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include "gnn/core/check.h"
#include "util/json.h"
#include "util/user_input.h"

extern char** environ;

namespace segrank::tune {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxReplyBytes = 1 << 20;  // a longer line is garbage

// Bytes of a harness's reply line or "error" text kept in a failure's reason (the terminal line
// and measurements.jsonl): echo_value's cut, control characters escaped.
constexpr size_t kReplyEchoBytes = 200;

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", s);
    return buf;
}

int remaining_ms(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

/// Blocks SIGPIPE on this thread while alive; a SIGPIPE raised meanwhile (a write to a closed
/// pipe, which then fails with EPIPE) is consumed before the old mask comes back.
class SigpipeGuard {
public:
    SigpipeGuard() {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        sigset_t pending;
        sigpending(&pending);
        was_pending_ = sigismember(&pending, SIGPIPE) == 1;
        pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    }
    ~SigpipeGuard() {
        if (!was_pending_) {
            const timespec zero{0, 0};
            while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    SigpipeGuard(const SigpipeGuard&) = delete;
    SigpipeGuard& operator=(const SigpipeGuard&) = delete;

private:
    sigset_t pipe_, old_;
    bool was_pending_ = false;
};

enum class Io { kOk, kClosed, kTimeout, kTooLong, kInterrupted };

// The longest single wait, so a stop flag set by a signal delivered to another thread is seen.
constexpr int kStopCheckMs = 100;

bool stop_requested(const std::atomic<int>* stop) { return stop && stop->load() != 0; }

Io write_all(int fd, const std::string& data, Clock::time_point deadline,
             const std::atomic<int>* stop) {
    SigpipeGuard guard;
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
        if (w > 0) {
            done += static_cast<size_t>(w);
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (stop_requested(stop)) return Io::kInterrupted;
            pollfd p{fd, POLLOUT, 0};
            const int wait = remaining_ms(deadline);
            const int r = ::poll(&p, 1, stop ? std::min(wait, kStopCheckMs) : wait);
            if (r == 0 && remaining_ms(deadline) == 0) return Io::kTimeout;
            if (r == 0) continue;
            if (r < 0 && errno != EINTR) return Io::kClosed;
            if (r > 0 && (p.revents & (POLLERR | POLLHUP)) && !(p.revents & POLLOUT))
                return Io::kClosed;
            continue;
        }
        return Io::kClosed;  // EPIPE: the reader is gone
    }
    return Io::kOk;
}

// Reads up to the next '\n' (the line without it goes to `line`), keeping what follows in `buffer`.
Io read_line(int fd, std::string& buffer, std::string& line, Clock::time_point deadline,
             const std::atomic<int>* stop) {
    for (;;) {
        const size_t nl = buffer.find('\n');
        if (nl != std::string::npos) {
            line = buffer.substr(0, nl);
            buffer.erase(0, nl + 1);
            return Io::kOk;
        }
        if (buffer.size() > kMaxReplyBytes) return Io::kTooLong;
        char chunk[65536];
        const ssize_t r = ::read(fd, chunk, sizeof chunk);
        if (r > 0) {
            buffer.append(chunk, static_cast<size_t>(r));
            continue;
        }
        if (r == 0) return Io::kClosed;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return Io::kClosed;
        if (stop_requested(stop)) return Io::kInterrupted;
        pollfd p{fd, POLLIN, 0};
        const int wait = remaining_ms(deadline);
        const int n = ::poll(&p, 1, stop ? std::min(wait, kStopCheckMs) : wait);
        if (n == 0 && remaining_ms(deadline) == 0) return Io::kTimeout;
        if (n == 0) continue;
        if (n < 0 && errno != EINTR) return Io::kClosed;
    }
}

Json config_json(const Config& c) {
    Json rows = Json::array();
    if (c.task() == Task::kTile) {
        for (float v : c.tile) {
            if (v == std::floor(v) && std::abs(v) < 9.0e15)
                rows.push_back(static_cast<int64_t>(v));
            else
                rows.push_back(static_cast<double>(v));
        }
        return rows;
    }
    for (size_t k = 0; k + kLayoutConfigDim <= c.layout.size(); k += kLayoutConfigDim) {
        Json row = Json::array();
        for (size_t i = 0; i < size_t{kLayoutConfigDim}; ++i)
            row.push_back(static_cast<int>(c.layout[k + i]));
        rows.push_back(std::move(row));
    }
    return rows;
}

Json bounds_json(const float* block) {
    Json out = Json::array();
    for (int d = 0; d < 6 && block[d] != 0.0f; ++d) out.push_back(static_cast<int64_t>(block[d]));
    return out;
}

}  // namespace

std::string shell_command_line(const std::string& command) {
    // Anything that makes it more than one simple command (lists, pipes, redirections, groups,
    // substitutions, line breaks) keeps it as given.
    if (command.find_first_of(";&|<>(){}`\n") != std::string::npos) return command;
    const size_t start = command.find_first_not_of(" \t");
    if (start == std::string::npos) return command;
    const size_t end = command.find_first_of(" \t", start);
    const std::string first = command.substr(start, end == std::string::npos ? end : end - start);
    // A leading assignment (FOO=1 cmd), a reserved word or a builtin is not a program to exec.
    if (first.find('=') != std::string::npos) return command;
    for (const char* word : {"exec", "if", "while", "until", "for", "case", "!", "cd", "export",
                             "set", ".", "eval", "trap", "ulimit", "umask", "unset", "exit"})
        if (first == word) return command;
    return "exec " + command;
}

std::string exec_request(int64_t id, const TuneGraph& graph, const Config& config) {
    Json req;
    req["id"] = id;
    req["task"] = std::string(to_string(graph.task));
    // Absolute (resolved against tune's working directory, symbolic links kept), so a harness that
    // changes directory (`cd dir && exec ...`) still finds the file.
    std::string where = graph.name;
    if (!graph.path.empty()) {
        std::error_code ec;
        const std::filesystem::path abs = std::filesystem::absolute(graph.path, ec);
        where = (ec ? graph.path : abs.lexically_normal()).string();
    }
    req["graph"] = where;
    req["name"] = graph.name;
    req["config"] = config_json(config);
    if (config.task() == Task::kTile && config.tile.size() == size_t{kTileConfigDim}) {
        Json b;
        b["kernel_bounds"] = bounds_json(config.tile.data());
        b["output_bounds"] = bounds_json(config.tile.data() + 8);
        b["input_bounds"] = bounds_json(config.tile.data() + 16);
        req["tile"] = std::move(b);
    }
    return dump_json(req);
}

Measurement parse_exec_reply(const std::string& line, int64_t id) {
    const auto garbage = [&](const std::string& why) {
        return Measurement::failure("garbage reply to request " + std::to_string(id) + " (" + why +
                                    "): " + echo_value(line, kReplyEchoBytes));
    };
    Json doc;
    try {
        doc = read_json(line, "exec reply");
    } catch (const std::exception& e) {
        return garbage("not JSON");
    }
    if (!doc.is_object()) return garbage("not a JSON object");
    const auto it = doc.find("id");
    if (it == doc.end() || !it->is_number_integer()) return garbage("no integer \"id\"");
    if (it->get<int64_t>() != id) return garbage("id " + std::to_string(it->get<int64_t>()));
    const bool has_runtime = doc.contains("runtime_ns"), has_error = doc.contains("error");
    if (has_runtime == has_error) return garbage("expected exactly one of runtime_ns and error");
    if (has_error) {
        if (!doc["error"].is_string()) return garbage("\"error\" is not a string");
        return Measurement::failure("exec: " +
                                    echo_value(doc["error"].get<std::string>(), kReplyEchoBytes));
    }
    if (!doc["runtime_ns"].is_number()) return garbage("\"runtime_ns\" is not a number");
    const double ns = doc["runtime_ns"].get<double>();
    if (!std::isfinite(ns) || ns <= 0) return garbage("runtime_ns must be finite and > 0");
    if (ns > kMaxExecRuntimeNs)
        return garbage("runtime_ns " + format_number(ns) + " is above the plausible maximum " +
                       format_number(kMaxExecRuntimeNs) + " ns (about 11.6 days)");
    if (ns < kMinExecRuntimeNs)
        return garbage("runtime_ns " + format_number(ns) + " is below the plausible minimum " +
                       format_number(kMinExecRuntimeNs) + " ns (one clock cycle)");
    return Measurement::success(ns);
}

ExecMeasurer::ExecMeasurer(const TuneGraph& graph, std::string command,
                           const MeasureOptions& options)
    : graph_(graph), command_(std::move(command)), opt_(options) {}

ExecMeasurer::~ExecMeasurer() { stop(false); }

void ExecMeasurer::log(const std::string& msg) const {
    if (opt_.log) opt_.log(msg);
}

bool ExecMeasurer::start() {
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
        last_error_ = std::string("cannot create pipes: ") + std::strerror(errno);
        for (int fd : {in[0], in[1], out[0], out[1]})
            if (fd >= 0) ::close(fd);
        return false;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    // The harness gets stdin, stdout and stderr only, not descriptors other libraries left open.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills the whole pipeline
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::string sh = "sh", dash_c = "-c", line = shell_command_line(command_);
    char* argv[] = {sh.data(), dash_c.data(), line.data(), nullptr};
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
        ::close(in[1]);
        ::close(out[0]);
        last_error_ = std::string("cannot start /bin/sh: ") + std::strerror(rc);
        return false;
    }
    pid_ = pid;
    to_child_ = in[1];
    from_child_ = out[0];
    ::fcntl(to_child_, F_SETFL, ::fcntl(to_child_, F_GETFL) | O_NONBLOCK);
    ::fcntl(from_child_, F_SETFL, ::fcntl(from_child_, F_GETFL) | O_NONBLOCK);
    buffer_.clear();
    served_ = 0;
    ++starts_;
    return true;
}

void ExecMeasurer::stop(bool kill_now) {
    if (to_child_ >= 0) ::close(to_child_);
    if (from_child_ >= 0) ::close(from_child_);
    to_child_ = from_child_ = -1;
    buffer_.clear();
    if (pid_ < 0) return;
    int status = 0;
    bool reaped = false;
    if (!kill_now) {
        // Its stdin is closed now: a well-behaved harness exits; give it 1 s.
        const auto until = Clock::now() + std::chrono::seconds(1);
        while (!reaped && Clock::now() < until) {
            const pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_ || (r < 0 && errno != EINTR))
                reaped = true;
            else
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    ::kill(-pid_, SIGKILL);  // the group: the shell and anything it started
    while (!reaped) {
        const pid_t r = ::waitpid(pid_, &status, 0);
        if (r == pid_ || (r < 0 && errno != EINTR)) reaped = true;
    }
    last_status_ = status;
    pid_ = -1;
}

std::string ExecMeasurer::reap_reason(bool killed) const {
    if (killed) return "killed";
    if (WIFEXITED(last_status_))
        return "exited with status " + std::to_string(WEXITSTATUS(last_status_));
    if (WIFSIGNALED(last_status_)) {
        const int sig = WTERMSIG(last_status_);
        const char* name = ::strsignal(sig);
        return "killed by signal " + std::to_string(sig) +
               (name ? std::string(" (") + name + ")" : "");
    }
    return "ended";
}

Measurement ExecMeasurer::measure_one(const Config& c) {
    const std::string who = "exec '" + echo_value(command_, std::string_view::npos) + "'";
    if (pid_ < 0) {
        if (starts_ > 0) {
            if (restarts_ >= opt_.max_restarts)
                return Measurement::failure(who + ": gave up after " + std::to_string(restarts_) +
                                            " restarts; last failure: " + last_error_);
            ++restarts_;
            log(who + ": restarting (" + std::to_string(restarts_) + " of " +
                std::to_string(opt_.max_restarts) + ") after: " + last_error_);
        }
        if (!start()) {
            ++starts_;  // a failed start counts, so a broken command cannot loop forever
            return Measurement::failure(who + ": " + last_error_);
        }
    }
    const int64_t id = next_id_++;
    const double wait_s = opt_.timeout_s + (served_++ == 0 ? opt_.start_timeout_s : 0.0);
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(wait_s));
    int64_t unlogged_late = 0;
    Measurement m = await_reply(id, c, who, wait_s, deadline, unlogged_late);
    // A harness that floods late replies gets one line per request, not one per reply.
    if (unlogged_late > 0)
        log(who + ": skipped " + std::to_string(unlogged_late) +
            " more late replies to earlier requests while waiting for request " +
            std::to_string(id) + " (only the first " + std::to_string(kLoggedLateReplies) +
            " of the run are shown one by one)");
    return m;
}

Measurement ExecMeasurer::await_reply(int64_t id, const Config& c, const std::string& who,
                                      double wait_s, Clock::time_point deadline,
                                      int64_t& unlogged_late) {
    const auto fail = [&](const std::string& what, bool kill_now) {
        stop(kill_now);
        last_error_ = "request " + std::to_string(id) + ": " + what +
                      (kill_now ? "" : " (process " + reap_reason(false) + ")");
        log(who + ": " + last_error_);
        return Measurement::failure(who + ": " + last_error_);
    };
    const auto interrupted = [&] {
        stop(true);
        last_error_ = "request " + std::to_string(id) + ": interrupted; the process was killed";
        log(who + ": " + last_error_);
        throw MeasurementInterrupted(who + ": " + last_error_);
    };
    const Io w = write_all(to_child_, exec_request(id, graph_, c) + "\n", deadline, opt_.stop);
    if (w == Io::kInterrupted) interrupted();
    if (w == Io::kTimeout)
        return fail("timed out after " + seconds_text(wait_s) +
                        " (the process did not read the request); killed",
                    true);
    if (w == Io::kClosed) return fail("the process closed its stdin", false);
    for (;;) {
        std::string line;
        const Io r = read_line(from_child_, buffer_, line, deadline, opt_.stop);
        if (r == Io::kInterrupted) interrupted();
        if (r == Io::kTimeout)
            return fail("no reply within " + seconds_text(wait_s) + "; killed", true);
        if (r == Io::kClosed)
            return fail("the process closed its stdout or ended before replying", false);
        if (r == Io::kTooLong)
            return fail(
                "a reply line longer than " + std::to_string(kMaxReplyBytes) + " bytes; killed",
                true);
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        // A reply to an earlier request (one that already failed, e.g. as garbage) is stale: skip
        // it. Only ids this backend sent before are late; any other id (negative, 0, this one's
        // successors) is garbage, as docs/tune.md says.
        try {
            const Json doc = read_json(line, "exec reply");
            if (doc.is_object() && doc.contains("id") && doc["id"].is_number_integer()) {
                const int64_t got = doc["id"].is_number_unsigned() &&
                                            doc["id"].get<uint64_t>() > uint64_t{INT64_MAX}
                                        ? -1
                                        : doc["id"].get<int64_t>();
                if (got >= kFirstId && got < id) {
                    if (late_replies_++ < kLoggedLateReplies)
                        log(who + ": skipped a late reply to request " + std::to_string(got));
                    else
                        ++unlogged_late;
                    continue;
                }
            }
        } catch (const std::exception&) {
        }
        Measurement m = parse_exec_reply(line, id);
        if (!m.ok() && m.error.rfind("garbage", 0) == 0) log(who + ": " + m.error);
        return m;
    }
}

std::vector<Measurement> ExecMeasurer::measure(std::span<const Config> configs) {
    for (const Config& c : configs) check_config_shape(graph_, c);
    std::vector<Measurement> out;
    out.reserve(configs.size());
    for (const Config& c : configs) out.push_back(measure_one(c));
    return out;
}

}  // namespace segrank::tune
