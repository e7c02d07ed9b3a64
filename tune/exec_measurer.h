// The `exec:CMD` measurement backend (docs/tune.md#the-exec-protocol): a long-running user process
// answering JSON-lines requests, with a per-request timeout, restarts after death or timeout, and
// every failure reported as a failed measurement.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "tune/measure.h"

namespace segrank::tune {

/// One request as the exec protocol sends it (one line, no newline): {"id": N, "task": ..,
/// "graph": .., "name": .., "config": ..} (docs/tune.md#the-exec-protocol).
std::string exec_request(int64_t id, const TuneGraph& graph, const Config& config);

/// The largest runtime_ns an exec reply may give: 1e15 ns (about 11.6 days). A measured kernel or
/// module runs far below it; a larger value is a harness bug (wrong unit, uninitialized value).
inline constexpr double kMaxExecRuntimeNs = 1e15;
/// The smallest runtime_ns an exec reply may give: 1 ns, one clock cycle of a 1 GHz core. No
/// compiled kernel or module, timed end to end, finishes within a cycle (a TPU launch alone takes
/// microseconds); a smaller value is a harness bug such as a wrong unit (seconds or ms sent as ns).
inline constexpr double kMinExecRuntimeNs = 1.0;

/// The outcome a reply line gives for request `id` (docs/tune.md#the-exec-protocol): success with
/// runtime_ns, failure with the harness's error, or failure "garbage reply ..." for a line that is
/// not a JSON object with this id and exactly one of a finite runtime_ns in [kMinExecRuntimeNs,
/// kMaxExecRuntimeNs] / a string error. The reply line and the error text in the reason show at
/// most their first 200 bytes, control characters escaped (echo_value, util/user_input.h), so a
/// harness cannot drive the terminal or flood it. Never throws.
Measurement parse_exec_reply(const std::string& line, int64_t id);

/// The line `/bin/sh -c` runs for CMD: "exec CMD" when CMD is one simple command (no ; & | < > ( )
/// { } ` or newline, not starting with an assignment, reserved word or builtin), so the harness
/// replaces the shell and closing its stdout is seen as end of file at once; CMD unchanged
/// otherwise (the shell then holds the pipe until the command list ends).
std::string shell_command_line(const std::string& command);

/// Runs CMD (shell_command_line) with /bin/sh -c in its own process group, stdin and stdout as
/// pipes (stderr inherited), started on the first request. Requests go one at a time; each waits at
/// most options.timeout_s for its reply line (the first one to a new process
/// options.start_timeout_s longer). A timeout kills the process group; a death or a timeout counts
/// a restart (the next request starts a new process); after options.max_restarts restarts every
/// further request fails with the last reason. Pipe ends are close-on-exec, SIGPIPE is never
/// raised, and the destructor closes stdin, waits up to 1 s, then kills the group and reaps the
/// child.
class ExecMeasurer : public Measurer {
public:
    ExecMeasurer(const TuneGraph& graph, std::string command, const MeasureOptions& options);
    ~ExecMeasurer() override;
    ExecMeasurer(const ExecMeasurer&) = delete;
    ExecMeasurer& operator=(const ExecMeasurer&) = delete;

    std::vector<Measurement> measure(std::span<const Config> configs) override;
    std::string name() const override { return "exec:" + command_; }

    /// Processes started so far (1 after the first request, + 1 per restart).
    int starts() const { return starts_; }
    /// The pid of the running process (-1 when none), for tests.
    pid_t pid() const { return pid_; }

private:
    Measurement measure_one(const Config& c);
    // Reads lines until the reply to request `id` (late replies skipped; see measure_one).
    Measurement await_reply(int64_t id, const Config& c, const std::string& who, double wait_s,
                            std::chrono::steady_clock::time_point deadline, int64_t& unlogged_late);
    bool start();                                // false: could not spawn (reason in last_error_)
    void stop(bool kill_now);                    // reaps the child; sets last_exit_
    std::string reap_reason(bool killed) const;  // "exited with status 3", ...
    void log(const std::string& msg) const;

    const TuneGraph& graph_;
    std::string command_;
    MeasureOptions opt_;
    pid_t pid_ = -1;
    int to_child_ = -1;    // the child's stdin (write end, non-blocking)
    int from_child_ = -1;  // the child's stdout (read end, non-blocking)
    std::string buffer_;   // bytes read past the last complete line
    int starts_ = 0;
    int64_t served_ = 0;  // requests sent to the current process
    int restarts_ = 0;
    int last_status_ = 0;  // waitpid status of the last reaped child
    std::string last_error_;
    static constexpr int64_t kFirstId = 1;            // the id of the first request
    static constexpr int64_t kLoggedLateReplies = 3;  // late replies logged one by one
    int64_t next_id_ = kFirstId;
    int64_t late_replies_ = 0;  // late replies skipped so far (the first few are logged)
};

}  // namespace segrank::tune
