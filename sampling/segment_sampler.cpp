// Fresh-segment choice and Stale Embedding Dropout (docs/gst.md#stale-embedding-dropout).
#include "sampling/segment_sampler.h"

#include <algorithm>
#include <numeric>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

namespace segrank {

namespace {
constexpr EnumName<SegmentAggregate> kAggregateNames[] = {
    {SegmentAggregate::kScoreSum, "score_sum"},
    {SegmentAggregate::kEmbeddingMean, "embedding_mean"}};
constexpr EnumName<HistoryInit> kHistoryInitNames[] = {{HistoryInit::kFresh, "fresh"},
                                                       {HistoryInit::kZero, "zero"}};
}  // namespace

std::span<const EnumName<SegmentAggregate>> enum_names(SegmentAggregate) { return kAggregateNames; }
SegmentAggregate parse_segment_aggregate(std::string_view name) {
    return parse_enum<SegmentAggregate>("aggregate", name);
}
std::string_view to_string(SegmentAggregate aggregate) { return enum_name(aggregate); }

SegmentChoice choose_segments(uint64_t seed, int64_t step, int64_t graph_id, int32_t num_segments,
                              int32_t num_fresh, double keep_prob) {
    SEGRANK_CHECK(num_segments >= 1, "choose_segments: graph ", graph_id, " has ", num_segments,
                  " segments, expected >= 1");
    SEGRANK_CHECK(num_fresh >= 1, "segments.fresh: expected >= 1, got ", num_fresh);
    SEGRANK_CHECK(keep_prob >= 0.0 && keep_prob <= 1.0,
                  "segments.keep_prob: expected a value in [0, 1], got ", keep_prob);
    SegmentChoice c;
    c.num_segments = num_segments;
    c.keep_prob = keep_prob;
    const int32_t k = std::min(num_fresh, num_segments);

    Rng pick =
        Rng::derive(seed, static_cast<uint64_t>(step), static_cast<uint64_t>(graph_id), "segments");
    std::vector<int32_t> ids(static_cast<size_t>(num_segments));
    std::iota(ids.begin(), ids.end(), 0);
    for (int32_t i = 0; i < k; ++i) {
        const auto j =
            i + static_cast<int32_t>(pick.uniform_int(static_cast<uint64_t>(num_segments - i)));
        std::swap(ids[i], ids[j]);
    }
    c.fresh.assign(ids.begin(), ids.begin() + k);
    std::sort(c.fresh.begin(), c.fresh.end());

    Rng sed =
        Rng::derive(seed, static_cast<uint64_t>(step), static_cast<uint64_t>(graph_id), "sed");
    size_t f = 0;
    for (int32_t s = 0; s < num_segments; ++s) {
        const bool keep = sed.uniform() < keep_prob;  // drawn for every s, so s always uses draw s
        if (f < c.fresh.size() && c.fresh[f] == s) {
            ++f;
            continue;
        }
        (keep ? c.stale_kept : c.stale_dropped).push_back(s);
    }
    c.alpha = (num_segments * (1.0 - keep_prob) + keep_prob * k) / k;
    return c;
}

std::span<const EnumName<HistoryInit>> enum_names(HistoryInit) { return kHistoryInitNames; }
HistoryInit parse_history_init(std::string_view name) {
    return parse_enum<HistoryInit>("history init", name);
}
std::string_view to_string(HistoryInit init) { return enum_name(init); }

}  // namespace segrank
