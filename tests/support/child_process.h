// Runs a function in a forked child process and reports how it ended and the child's peak memory,
// for tests that must show an input fails before a large allocation (a crash or a 1.6 GB buffer
// stays in the child).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace segrank::test {

/// How run_in_child()'s function ended.
struct ChildResult {
    int exit_code = 0;  ///< 0 returned, 1 threw std::exception (what() in `error`), 128+N signal N
    std::string error;  ///< what() of the exception thrown, if any
    int64_t peak_rss_kb = 0;  ///< the child's peak resident set size (wait4's ru_maxrss), KiB
};

/// Forks, runs `fn` in the child (which never returns to the caller's code) and waits for it. Call
/// it from a single-threaded part of a test: only the calling thread exists in the child.
ChildResult run_in_child(const std::function<void()>& fn);

}  // namespace segrank::test
