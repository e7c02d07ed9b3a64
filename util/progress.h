// Progress display of long loops on rank 0: a one-line bar redrawn in place on a
// terminal, or a plain line every ~10 s when stderr is a file or pipe (CI logs stay readable).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace segrank {

class Progress {
public:
    /// total: number of items (steps); enabled: false on ranks other than 0 or with train.progress
    /// off.
    Progress(std::string label, int64_t total, bool enabled);
    /// Reports that `done` items are finished; `extra` is appended (e.g. "loss 0.123").
    void update(int64_t done, const std::string& extra);
    /// Ends the line (terminal) so later output starts on a fresh line.
    void finish();
    /// Items per second since construction (over the items done since then).
    double rate() const;

private:
    std::string label_;
    int64_t total_;
    int64_t first_ = -1;
    int64_t done_ = 0;
    bool enabled_;
    bool tty_;
    std::chrono::steady_clock::time_point start_, last_print_;
};

}  // namespace segrank
