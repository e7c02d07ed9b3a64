// Streaming config groups (hash per row, chunk by chunk) and dedupe from groups.
#include "sampling/dedupe_stream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

namespace segrank {
namespace {

struct Hash128 {
    uint64_t a = 0, b = 0;
    bool operator==(const Hash128& o) const { return a == o.a && b == o.b; }
};
struct Hash128Hasher {
    size_t operator()(const Hash128& h) const {
        return static_cast<size_t>(h.a ^ (h.b * 0x9e3779b97f4a7c15ULL));
    }
};

// Two independent 64-bit hashes of a byte string (8-byte words; the tail zero-padded; length mixed
// in).
Hash128 hash_bytes(const int8_t* p, int64_t n) {
    uint64_t a = mix64(static_cast<uint64_t>(n) ^ 0x51ed270b27c3a5e1ULL);
    uint64_t b = mix64(static_cast<uint64_t>(n) ^ 0x2545f4914f6cdd1dULL);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        a = mix64(a ^ w) + 0x9e3779b97f4a7c15ULL;
        b = mix64(b + (w * 0xff51afd7ed558ccdULL)) ^ 0xc4ceb9fe1a85ec53ULL;
    }
    if (i < n) {
        uint64_t w = 0;
        std::memcpy(&w, p + i, static_cast<size_t>(n - i));
        a = mix64(a ^ w) + 0x9e3779b97f4a7c15ULL;
        b = mix64(b + (w * 0xff51afd7ed558ccdULL)) ^ 0xc4ceb9fe1a85ec53ULL;
    }
    return {a, b};
}

}  // namespace

std::vector<int64_t> config_groups_streamed(const GraphSource& source, int64_t i,
                                            int64_t num_configs, int64_t chunk_bytes) {
    SEGRANK_CHECK(chunk_bytes >= 1, "config_groups_streamed: chunk_bytes must be >= 1, got ",
                  chunk_bytes);
    const int64_t row_bytes =
        source.task() == Task::kLayout
            ? std::max<int64_t>(1, source.info(i).num_config_nodes * kLayoutConfigDim)
            : kTileConfigDim * static_cast<int64_t>(sizeof(float));
    const int64_t chunk_rows = std::max<int64_t>(1, chunk_bytes / row_bytes);
    const int64_t c = num_configs;
    std::vector<int64_t> group(static_cast<size_t>(c));
    std::unordered_map<Hash128, int64_t, Hash128Hasher> first_of;
    first_of.reserve(static_cast<size_t>(c));
    const int64_t chunk = source.partial_reads() ? chunk_rows : std::max<int64_t>(1, c);
    std::vector<int8_t> canon;
    for (int64_t b = 0; b < c; b += chunk) {
        const int64_t e = std::min(c, b + chunk);
        std::vector<int64_t> rows(static_cast<size_t>(e - b));
        for (int64_t r = b; r < e; ++r) rows[static_cast<size_t>(r - b)] = r;
        ConfigTensors t = source.load_configs(i, ConfigRows::only(std::move(rows)));
        SEGRANK_CHECK(t.num_configs() == e - b, "config_groups_streamed: source returned ",
                      t.num_configs(), " rows for ", e - b, " requested");
        for (int64_t r = 0; r < e - b; ++r) {
            Hash128 h;
            if (source.task() == Task::kLayout) {
                const auto row = static_cast<int64_t>(t.layout_feat.size()) / (e - b);
                h = hash_bytes(t.layout_feat.data() + r * row, row);
            } else {
                const int64_t d = t.tile_feat.cols();
                canon.resize(static_cast<size_t>(d * 4));
                for (int64_t j = 0; j < d; ++j) {
                    float v = t.tile_feat.at(r, j);
                    SEGRANK_CHECK(!std::isnan(v), "dedupe: config row ", b + r, " column ", j,
                                  " is NaN");
                    if (v == 0.0f) v = 0.0f;
                    std::memcpy(canon.data() + j * 4, &v, 4);
                }
                h = hash_bytes(canon.data(), d * 4);
            }
            group[static_cast<size_t>(b + r)] = first_of.try_emplace(h, b + r).first->second;
        }
    }
    return group;
}

ConfigSet dedupe_by_groups(std::span<const int64_t> group_of, std::span<const int64_t> subset,
                           std::span<const double> targets, DedupeMode mode) {
    const auto c = static_cast<int64_t>(group_of.size());
    SEGRANK_CHECK(static_cast<int64_t>(targets.size()) == c, "dedupe: ", c, " groups but ",
                  targets.size(), " targets");
    ConfigSet out;
    std::unordered_map<int64_t, int64_t> slot;
    std::vector<int64_t> count;
    for (size_t j = 0; j < subset.size(); ++j) {
        const int64_t idx = subset[j];
        SEGRANK_CHECK(idx >= 0 && idx < c, "dedupe: config index ", idx, " (subset position ", j,
                      ") out of range [0, ", c, ")");
        const double t = targets[static_cast<size_t>(idx)];
        if (mode == DedupeMode::kKeep) {
            out.indices.push_back(idx);
            out.targets.push_back(t);
            continue;
        }
        auto [it, added] = slot.try_emplace(group_of[static_cast<size_t>(idx)], out.size());
        if (added) {
            out.indices.push_back(idx);
            out.targets.push_back(t);
            count.push_back(1);
            continue;
        }
        const auto g = static_cast<size_t>(it->second);
        if (mode == DedupeMode::kMin) {
            out.targets[g] = std::min(out.targets[g], t);
        } else {
            out.targets[g] += t;
            ++count[g];
        }
    }
    if (mode == DedupeMode::kMean)
        for (size_t g = 0; g < out.targets.size(); ++g)
            out.targets[g] /= static_cast<double>(count[g]);
    return out;
}

}  // namespace segrank
