// Progress bar / periodic progress lines.
#include "util/progress.h"

#include <unistd.h>

#include <cstdio>

namespace segrank {

Progress::Progress(std::string label, int64_t total, bool enabled, int64_t done_at_start)
    : label_(std::move(label)),
      total_(total),
      origin_(done_at_start),
      enabled_(enabled),
      tty_(::isatty(2) != 0),
      constructed_(std::chrono::steady_clock::now()),
      start_(constructed_),
      last_print_(start_) {}

double Progress::rate() const {
    if (first_ < 0) return 0.0;
    const auto now = std::chrono::steady_clock::now();
    if (done_ > first_) {
        const double s = std::chrono::duration<double>(now - start_).count();
        return s > 0 ? static_cast<double>(done_ - first_) / s : 0.0;
    }
    const double s = std::chrono::duration<double>(now - constructed_).count();
    return s > 0 ? static_cast<double>(done_ - origin_) / s : 0.0;
}

void Progress::update(int64_t done, const std::string& extra) {
    if (first_ < 0) {
        // The rate counts items finished after the first report, over the time since it.
        first_ = done;
        start_ = std::chrono::steady_clock::now();
    }
    done_ = done;
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since = std::chrono::duration<double>(now - last_print_).count();
    if (!tty_ && since < 10.0 && done < total_) return;
    if (tty_ && since < 0.1 && done < total_) return;
    last_print_ = now;
    const double r = rate();
    const double eta = r > 0 ? static_cast<double>(total_ - done) / r : 0.0;
    char eta_s[32];
    std::snprintf(eta_s, sizeof eta_s, "%dm%02ds", static_cast<int>(eta) / 60,
                  static_cast<int>(eta) % 60);
    const int width = 24;
    const int filled = total_ > 0 ? static_cast<int>(width * done / total_) : width;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(static_cast<size_t>(width), '.');
    std::fprintf(stderr, "%s%s [%s] %lld/%lld  %.2f steps/s  %s  ETA %s%s", tty_ ? "\r" : "",
                 label_.c_str(), bar.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), r, extra.c_str(), eta_s, tty_ ? "\033[K" : "\n");
    std::fflush(stderr);
}

void Progress::finish() {
    if (enabled_ && tty_) std::fprintf(stderr, "\n");
}

}  // namespace segrank
