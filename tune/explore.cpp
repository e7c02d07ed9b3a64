// The exploration order of a round with one cost model (tune/explore.h): one-knob changes of the
// incumbent by the model's score (when given), then uniform draws.
#include "tune/explore.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

namespace segrank::tune {

namespace {
constexpr size_t kLayoutSlot = 6;  // entries of one tensor's minor_to_major dims
}  // namespace

int64_t knobs_apart(const Config& a, const Config& b) {
    SEGRANK_CHECK(a.task() == b.task() && a.layout.size() == b.layout.size() &&
                      a.tile.size() == b.tile.size(),
                  "tune: cannot compare a config of ", a.layout.size(), " layout / ", a.tile.size(),
                  " tile entries with one of ", b.layout.size(), " / ", b.tile.size());
    int64_t apart = 0;
    if (a.task() == Task::kTile) {
        for (size_t i = 0; i < a.tile.size(); ++i) apart += a.tile[i] != b.tile[i];  // -0 == 0
        return apart;
    }
    SEGRANK_CHECK(a.layout.size() % kLayoutSlot == 0, "tune: a layout config of ", a.layout.size(),
                  " entries, expected a multiple of ", kLayoutSlot);
    for (size_t s = 0; s < a.layout.size(); s += kLayoutSlot)
        apart += !std::equal(a.layout.begin() + static_cast<std::ptrdiff_t>(s),
                             a.layout.begin() + static_cast<std::ptrdiff_t>(s + kLayoutSlot),
                             b.layout.begin() + static_cast<std::ptrdiff_t>(s));
    return apart;
}

std::vector<int64_t> exploration_order(std::span<const Config> open, std::span<const double> score,
                                       std::span<const char> taken, const Config* incumbent,
                                       uint64_t seed, int64_t round) {
    SEGRANK_CHECK(open.size() == score.size() && open.size() == taken.size(),
                  "tune: exploration of ", open.size(), " configs with ", score.size(),
                  " scores and ", taken.size(), " taken flags (expected the same)");
    std::vector<int64_t> near, rest;
    for (size_t i = 0; i < open.size(); ++i) {
        if (taken[i]) continue;
        (incumbent && knobs_apart(open[i], *incumbent) == 1 ? near : rest)
            .push_back(static_cast<int64_t>(i));
    }
    // A score that is NaN ranks last (an ordering of NaNs would not be one).
    const auto key = [&](int64_t i) {
        const double s = score[static_cast<size_t>(i)];
        return std::isnan(s) ? std::numeric_limits<double>::infinity() : s;
    };
    std::stable_sort(near.begin(), near.end(),
                     [&](int64_t a, int64_t b) { return key(a) < key(b); });
    Rng rng = Rng::derive(seed, static_cast<uint64_t>(round), 0, "tune_explore");
    for (size_t i = rest.size(); i > 1; --i)
        std::swap(rest[i - 1],
                  rest[static_cast<size_t>(rng.uniform() * static_cast<double>(i)) % i]);
    near.insert(near.end(), rest.begin(), rest.end());
    return near;
}

}  // namespace segrank::tune
