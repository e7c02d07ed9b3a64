#include "util/median.h"

#include <doctest/doctest.h>

using segrank::median;

TEST_CASE(
    "median is the middle value of an odd count and the mean of the two middle values of an "
    "even count, as numpy.median") {
    CHECK(median({}) == 0.0);
    CHECK(median({3.0}) == 3.0);
    CHECK(median({5.0, 1.0}) == 3.0);
    CHECK(median({3.0, 1.0, 2.0}) == 2.0);
    CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);  // numpy.median([4, 1, 3, 2]) = 2.5
    CHECK(median({1.0, 1.0, 9.0, 9.0, 9.0, 9.0}) == 9.0);
}
