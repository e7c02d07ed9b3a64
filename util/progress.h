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
    /// off; done_at_start: items already finished before this process (the step a resumed run
    /// starts at), so that a run of one item still has a rate.
    Progress(std::string label, int64_t total, bool enabled, int64_t done_at_start = 0);
    /// Reports that `done` items are finished; `extra` is appended (e.g. "loss 0.123").
    void update(int64_t done, const std::string& extra);
    /// Ends the line (terminal) so later output starts on a fresh line.
    void finish();
    /// Items per second: over the items finished after the first report and the time since it (the
    /// first item, with its warm-up, left out); with only one item reported, that item over the
    /// time since construction; 0 before any report.
    double rate() const;

private:
    std::string label_;
    int64_t total_;
    int64_t origin_;
    int64_t first_ = -1;
    int64_t done_ = 0;
    bool enabled_;
    bool tty_;
    std::chrono::steady_clock::time_point constructed_, start_, last_print_;
};

}  // namespace segrank
