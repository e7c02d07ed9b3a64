// The exploration order of a round with one cost model (tune/explore.h): one-knob changes of the
// incumbent, over the kinds of knob by their measured sensitivity (when given) and the model's
// score, then uniform draws.
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
constexpr size_t kTileBlock = 8;   // config_feat columns of one of kernel, output, input bounds
constexpr size_t kTileBounds = 6;  // of them the bounds; the last two are their sum and product

void check_comparable(const Config& a, const Config& b) {
    SEGRANK_CHECK(a.task() == b.task() && a.layout.size() == b.layout.size() &&
                      a.tile.size() == b.tile.size(),
                  "tune: cannot compare a config of ", a.layout.size(), " layout / ", a.tile.size(),
                  " tile entries with one of ", b.layout.size(), " / ", b.tile.size());
    SEGRANK_CHECK(a.task() == Task::kTile || a.layout.size() % kLayoutSlot == 0,
                  "tune: a layout config of ", a.layout.size(), " entries, expected a multiple of ",
                  kLayoutSlot);
}

// Calls on_knob(kind) for each knob a and b set differently until it returns false.
template <class F>
void for_each_changed_knob(const Config& a, const Config& b, F on_knob) {
    if (a.task() == Task::kTile) {
        // A knob is one bound; the sum and product columns follow from the bounds.
        for (size_t i = 0; i < a.tile.size(); ++i)
            if (i % kTileBlock < kTileBounds && a.tile[i] != b.tile[i] &&  // -0 == 0
                !on_knob(static_cast<int>(i / kTileBlock)))
                return;
        return;
    }
    for (size_t s = 0; s < a.layout.size(); s += kLayoutSlot)
        if (!std::equal(a.layout.begin() + static_cast<std::ptrdiff_t>(s),
                        a.layout.begin() + static_cast<std::ptrdiff_t>(s + kLayoutSlot),
                        b.layout.begin() + static_cast<std::ptrdiff_t>(s)) &&
            !on_knob(static_cast<int>((s / kLayoutSlot) % kKnobKinds)))
            return;
}
}  // namespace

int64_t knobs_apart(const Config& a, const Config& b) {
    check_comparable(a, b);
    int64_t apart = 0;
    for_each_changed_knob(a, b, [&](int) {
        ++apart;
        return true;
    });
    return apart;
}

int one_knob_kind(const Config& a, const Config& b) {
    check_comparable(a, b);
    int kind = -1, n = 0;
    for_each_changed_knob(a, b, [&](int k) {
        kind = k;
        return ++n < 2;  // a second changed knob ends the scan
    });
    return n == 1 ? kind : -1;
}

double KnobSensitivity::weight(int kind) const {
    SEGRANK_ASSERT(kind >= 0 && kind < kKnobKinds);
    const auto k = static_cast<size_t>(kind);
    return static_cast<double>(moved[k] + 1) / static_cast<double>(pairs[k] + 2);
}

KnobSensitivity knob_sensitivity(std::span<const Config> configs,
                                 std::span<const double> runtimes_ns) {
    SEGRANK_CHECK(configs.size() == runtimes_ns.size(), "tune: knob sensitivity of ",
                  configs.size(), " configs with ", runtimes_ns.size(), " runtimes");
    KnobSensitivity s;
    for (size_t i = 0; i < configs.size(); ++i)
        for (size_t j = i + 1; j < configs.size(); ++j) {
            const int kind = one_knob_kind(configs[i], configs[j]);
            if (kind < 0) continue;
            const double a = runtimes_ns[i], b = runtimes_ns[j];
            ++s.pairs[static_cast<size_t>(kind)];
            s.moved[static_cast<size_t>(kind)] +=
                std::abs(a - b) > kSameRuntime * std::max(std::abs(a), std::abs(b));
        }
    return s;
}

bool last_round_improved(std::span<const int64_t> rounds,
                         std::span<const std::optional<double>> runtimes_ns) {
    SEGRANK_CHECK(rounds.size() == runtimes_ns.size(), "tune: ", rounds.size(), " rounds with ",
                  runtimes_ns.size(), " runtimes");
    if (rounds.empty()) return true;
    SEGRANK_CHECK(std::is_sorted(rounds.begin(), rounds.end()),
                  "tune: the rounds of the measurements decrease");
    const int64_t last = rounds.back();
    double before = std::numeric_limits<double>::infinity(), in_last = before;
    for (size_t i = 0; i < rounds.size(); ++i) {
        if (!runtimes_ns[i]) continue;
        double& best = rounds[i] == last ? in_last : before;
        best = std::min(best, *runtimes_ns[i]);
    }
    return in_last < before;
}

std::vector<int64_t> exploration_order(std::span<const Config> open, std::span<const double> score,
                                       std::span<const char> taken, const Config* incumbent,
                                       uint64_t seed, int64_t round, const KnobSensitivity* kinds) {
    SEGRANK_CHECK(open.size() == score.size() && open.size() == taken.size(),
                  "tune: exploration of ", open.size(), " configs with ", score.size(),
                  " scores and ", taken.size(), " taken flags (expected the same)");
    std::array<std::vector<int64_t>, kKnobKinds> near;
    std::vector<int64_t> rest;
    for (size_t i = 0; i < open.size(); ++i) {
        if (taken[i]) continue;
        const int kind = incumbent ? one_knob_kind(open[i], *incumbent) : -1;
        // Without `kinds` every one-knob config is of one list, ordered by score alone.
        (kind < 0 ? rest : near[kinds ? static_cast<size_t>(kind) : 0])
            .push_back(static_cast<int64_t>(i));
    }
    // A score that is NaN ranks last (an ordering of NaNs would not be one).
    const auto key = [&](int64_t i) {
        const double s = score[static_cast<size_t>(i)];
        return std::isnan(s) ? std::numeric_limits<double>::infinity() : s;
    };
    for (auto& n : near)
        std::stable_sort(n.begin(), n.end(), [&](int64_t a, int64_t b) { return key(a) < key(b); });
    std::vector<int64_t> out;
    std::array<size_t, kKnobKinds> next{};
    for (;;) {  // stride scheduling over the kinds (one list without `kinds`)
        int best = -1;
        double best_pass = 0.0;
        for (int k = 0; k < kKnobKinds; ++k) {
            const auto kk = static_cast<size_t>(k);
            if (next[kk] >= near[kk].size()) continue;
            const double pass =
                static_cast<double>(next[kk] + 1) / (kinds ? kinds->weight(k) : 1.0);
            if (best < 0 || pass < best_pass) best = k, best_pass = pass;
        }
        if (best < 0) break;
        const auto b = static_cast<size_t>(best);
        out.push_back(near[b][next[b]++]);
    }
    Rng rng = Rng::derive(seed, static_cast<uint64_t>(round), 0, "tune_explore");
    for (size_t i = rest.size(); i > 1; --i)
        std::swap(rest[i - 1],
                  rest[static_cast<size_t>(rng.uniform() * static_cast<double>(i)) % i]);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

}  // namespace segrank::tune
