// The median of a sample, as numpy.median computes it.
#pragma once
#include <algorithm>
#include <vector>

namespace segrank {

/// The median of `v` (taken by value and sorted): the middle value for an odd count, the mean of
/// the two middle values for an even count (numpy.median), 0 for an empty vector. NaN values are
/// not expected (benchmark timings); they would sort unpredictably.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace segrank
