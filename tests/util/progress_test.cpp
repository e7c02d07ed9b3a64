// The rate Progress reports (util/progress.h): the first item's warm-up left out when there are
// more, and a run of one item (a resume for one step) still has a rate.
#include "util/progress.h"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

namespace segrank {

TEST_CASE(
    "Progress::rate is 0 before any report and leaves the first item out when there are more") {
    Progress p("train", 100, false);
    CHECK(p.rate() == 0.0);
    p.update(1, "");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    p.update(2, "");
    p.update(3, "");
    const double r = p.rate();
    // 2 items after the first in at least 50 ms: at most 40 per second, and well above 0.
    CHECK(r > 0.0);
    CHECK(r <= 40.0);
}

TEST_CASE(
    "Progress::rate of a single reported item is that item over the time since construction") {
    // A resumed run that trains one step: 5 done before, step 6 finished in about 50 ms.
    Progress p("train", 6, false, 5);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    p.update(6, "");
    const double r = p.rate();
    CHECK(r > 0.0);
    CHECK(r <= 20.0);  // 1 item in >= 50 ms
}

}  // namespace segrank
