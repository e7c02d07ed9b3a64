// util/rss: the peak resident set grows with touched memory and restarts at reset_peak_rss.
#include "util/rss.h"

#include <doctest/doctest.h>

#include <cstring>
#include <memory>

using namespace segrank;

TEST_CASE("peak_rss_mb covers memory the process touched, also after reset_peak_rss") {
    const double before = peak_rss_mb();
    CHECK(before > 1.0);
    reset_peak_rss();
    constexpr size_t kBytes = size_t{96} << 20;
    auto block = std::make_unique<char[]>(kBytes);
    std::memset(block.get(), 1, kBytes);  // touched: resident
    const double after = peak_rss_mb();
    CHECK(block[kBytes / 2] == 1);
    CHECK(after >= 96.0);
    CHECK(peak_rss_mb() >= after);  // a peak never decreases by itself
}
