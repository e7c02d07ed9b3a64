// Streaming inference (docs/gst.md#inference): every segment computed fresh, one at a time and
// without saved state, in chunks of configs, with the per-graph inference cache
// (docs/gst.md#inference-cache) and test-time averaging over config orders.
#include <algorithm>
#include <cstdint>
#include <utility>

#include "gnn/core/check.h"
#include "gst/aggregation.h"
#include "gst/gst.h"

namespace segrank {

std::vector<Tensor> segment_readouts(Model& model, const PreparedGraph& g,
                                     std::span<const int64_t> configs, const GstOptions& opt) {
    std::vector<Tensor> out;
    SegmentInputBuffers buf;
    const ConfigBatch batch = load_config_batch(g, configs);
    for (int32_t s : active_segments(g, opt, aggregation_for(opt.aggregate, model)))
        out.push_back(readout_forward_only(model, g, s, batch, configs, buf, opt.dedupe_rows));
    return out;
}

namespace {

// Seed of the config orders of test-time averaging (fixed: the same orders in every run).
constexpr uint64_t kTtaSeed = 0x7474615f6f726472ULL;

// What score_graph keeps of one segment across its chunks (docs/gst.md#inference-cache): the
// readout [1, W] of a config-independent segment, or the rebuilt segment (when g keeps none) and
// its config-independent rows (Model::encode_base) of a dependent one.
struct CachedSegment {
    bool filled = false;
    Tensor readout;      // independent: [1, W]
    BuiltSegment built;  // dependent, g keeps no segments
    EncodeBase base;     // dependent
};

// The per-graph inference cache: one entry per segment, filled on the segment's first chunk while
// the bytes held stay within the bound.
class InferenceCache {
public:
    InferenceCache(const PreparedGraph& g, int64_t bound_bytes, bool dedupe)
        : g_(g),
          left_(bound_bytes),
          dedupe_(dedupe),
          entries_(static_cast<size_t>(g.num_segments())) {}

    // Readout [K, W] of segment s for cfgs (rows in batch), equal bit for bit to
    // readout_forward_only with the same dedupe choice.
    Tensor readout(Model& model, int32_t s, const ConfigBatch& batch, std::span<const int64_t> cfgs,
                   SegmentInputBuffers& buf) {
        CachedSegment& c = entries_[static_cast<size_t>(s)];
        const auto k = static_cast<int64_t>(cfgs.size());
        const bool dependent = g_.segment_dependent[static_cast<size_t>(s)] != 0;
        if (!dependent) {
            if (c.filled) return broadcast_row(c.readout, k);
            SegmentInput in = make_segment_input(g_, s, batch, cfgs.subspan(0, 1), buf);
            Tensor r1 = model.encode(in, nullptr);
            if (keep(r1.size() * static_cast<int64_t>(sizeof(float)))) {
                c.readout = r1.clone();
                c.filled = true;
            }
            if (k > 1) return broadcast_row(r1, k);
            return r1;
        }
        const bool kept = !g_.kept_segments.empty();
        if (c.filled) {
            const BuiltSegment& built = kept ? g_.kept_segments[static_cast<size_t>(s)] : c.built;
            SegmentInput in = make_segment_input(g_, built, batch, cfgs, buf);
            return dedupe_ ? encode_dedupe(model, in, &c.base)
                           : model.encode(in, nullptr, false, nullptr, &c.base);
        }
        const BuiltSegment& built = built_segment(g_, s, buf.segment);
        SegmentInput in = make_segment_input(g_, built, batch, cfgs, buf);
        // Upper bound of what the entry would hold: the EncodeBase (P, L + 1 base layers,
        // plan) and the rebuilt segment.
        const int64_t bound =
            model.encode_base_bytes(in.num_nodes()) + (kept ? 0 : built.memory_bytes());
        if (bound > left_)  // not kept: computed per chunk
            return dedupe_ ? encode_dedupe(model, in, nullptr) : model.encode(in, nullptr);
        EncodeBase base = model.encode_base(in);
        Tensor r = dedupe_ ? encode_dedupe(model, in, &base)
                           : model.encode(in, nullptr, false, nullptr, &base);
        SEGRANK_ASSERT(keep(base.memory_bytes() + (kept ? 0 : built.memory_bytes())));
        if (!kept) c.built = std::move(buf.segment);  // `built` is buf.segment
        c.base = std::move(base);
        c.filled = true;
        return r;
    }

    /// The most dep rows per config (sum over layers 0..L of m_l) of any deduplicated encode so
    /// far: what the per-chunk class tables scale with (0 before the first one).
    int64_t max_dep_rows_per_config() const { return max_dep_rows_; }
    /// The most distinct rows per config of one layer of any deduplicated encode so far (0 before
    /// the first one): what the layer rows of a chunk scale with.
    double max_unique_rows_per_config() const { return max_unique_rows_; }

private:
    Tensor encode_dedupe(Model& model, const SegmentInput& in, const EncodeBase* base) {
        DedupeStats st;
        Tensor r = model.encode_dedupe(in, base, &st);
        int64_t rows = 0;
        for (int64_t d : st.dense_rows) rows += d;
        max_dep_rows_ = std::max(max_dep_rows_, rows / std::max<int64_t>(1, in.k));
        for (int64_t u : st.unique_rows)
            max_unique_rows_ =
                std::max(max_unique_rows_,
                         static_cast<double>(u) / static_cast<double>(std::max<int64_t>(1, in.k)));
        return r;
    }
    bool keep(int64_t bytes) {
        if (bytes > left_) return false;
        left_ -= bytes;
        return true;
    }

    const PreparedGraph& g_;
    int64_t left_;
    int64_t max_dep_rows_ = 0;
    double max_unique_rows_ = 0.0;
    bool dedupe_;
    std::vector<CachedSegment> entries_;
};

// Consecutive segments active[begin, end) whose config rows are read together: `columns` is the
// union of their configurable nodes' positions on the nc axis (strictly increasing).
struct ColumnBlock {
    size_t begin = 0, end = 0;
    std::vector<int32_t> columns;
};

// The column blocks of one chunk of k configs of layout graph g: consecutive segments of `active`
// are grouped while the sum of their configurable nodes x k x 18 bytes stays within max_bytes (a
// segment needing more alone is a block of its own), so the rows held at once are
// O(max(max_bytes, k x the largest segment's configurable nodes x 18)), not O(k x nc x 18).
std::vector<ColumnBlock> column_blocks(const PreparedGraph& g, std::span<const int32_t> active,
                                       int64_t k, int64_t max_bytes) {
    std::vector<ColumnBlock> blocks;
    const int64_t per_column = std::max<int64_t>(1, k) * kLayoutConfigDim;
    int64_t held = 0;  // columns of the open block, counted per segment (an upper bound)
    for (size_t i = 0; i < active.size(); ++i) {
        const std::span<const int32_t> idx = g.segment_table.config_index(active[i]);
        const auto w = static_cast<int64_t>(idx.size());
        if (blocks.empty() || (held > 0 && (held + w) * per_column > max_bytes)) {
            blocks.push_back({i, i, {}});
            held = 0;
        }
        ColumnBlock& b = blocks.back();
        b.end = i + 1;
        b.columns.insert(b.columns.end(), idx.begin(), idx.end());
        held += w;
    }
    for (ColumnBlock& b : blocks) {
        std::sort(b.columns.begin(), b.columns.end());
        b.columns.erase(std::unique(b.columns.begin(), b.columns.end()), b.columns.end());
    }
    return blocks;
}

}  // namespace

InferenceChunk inference_chunk(const Model& model, const GstOptions& opt, int64_t chunk_configs,
                               int64_t dedupe_chunk_configs, const InferenceBudget& budget) {
    if (opt.dedupe_rows && model.config().task == Task::kLayout && !model.config().config_attention)
        return {dedupe_chunk_configs, budget.dedupe_rows_bytes, budget.state_bytes,
                budget.probe_configs, budget.config_block_bytes};
    return {chunk_configs, budget.dense_rows_bytes, budget.state_bytes, budget.probe_configs,
            budget.config_block_bytes};
}

int64_t dedupe_chunk_after_probe(int64_t chunk, int64_t dep_rows_per_config) {
    return dedupe_chunk_after_probe(chunk, dep_rows_per_config, 0.0, 0, kDedupeStateBytes,
                                    kDedupeProbeConfigs);
}

int64_t dedupe_chunk_after_probe(int64_t chunk, int64_t dep_rows_per_config,
                                 double unique_rows_per_config, int64_t hidden, int64_t state_bytes,
                                 int64_t probe_configs) {
    const int64_t lo = std::min(chunk, probe_configs);
    if (dep_rows_per_config <= 0) return chunk;
    const double per_config =
        static_cast<double>(kDedupeBytesPerDepRow * dep_rows_per_config) +
        static_cast<double>(kDedupeBytesPerUniqueUnit * hidden) * unique_rows_per_config;
    const auto k = static_cast<int64_t>(static_cast<double>(state_bytes) / per_config);
    return std::clamp<int64_t>(k, lo, std::max(lo, chunk));
}

std::vector<float> score_graph(Model& model, const PreparedGraph& g,
                               std::span<const int64_t> configs, int64_t chunk,
                               const GstOptions& opt, int64_t max_chunk_bytes,
                               int64_t cache_bytes) {
    InferenceChunk ch;
    ch.configs = chunk;
    ch.max_bytes = max_chunk_bytes;
    return score_graph(model, g, configs, ch, opt, cache_bytes);
}

std::vector<float> score_graph(Model& model, const PreparedGraph& g,
                               std::span<const int64_t> configs, const InferenceChunk& ic,
                               const GstOptions& opt, int64_t cache_bytes, InferenceStats* stats) {
    std::vector<float> scores(configs.size(), 0.0f);
    const Aggregation agg = aggregation_for(opt.aggregate, model);
    const std::vector<int32_t> active = active_segments(g, opt, agg);
    // The analytical prior, added once to each graph score after the segments (docs/model.md).
    const std::vector<float> prior = prior_values(model, g, configs);
    if (active.empty()) {
        model.add_prior(scores, prior);
        return scores;
    }
    const float w = agg.all_weight(active.size());
    const int64_t row_bytes = g.task == Task::kLayout
                                  ? g.num_config_nodes * kLayoutConfigDim
                                  : kTileConfigDim * static_cast<int64_t>(sizeof(float));
    const int64_t chunk = std::clamp<int64_t>(ic.max_bytes / std::max<int64_t>(1, row_bytes), 1,
                                              std::max<int64_t>(1, ic.configs));
    // With deduplicated rows the class tables and layer rows of a chunk grow with K x (dep rows and
    // distinct rows per config), which the first chunk measures: it has at most ic.probe_configs
    // configs, and the later chunks as many as keep that state within ic.state_bytes
    // (docs/model.md#row-deduplication).
    const bool dedupe_layout = opt.dedupe_rows && g.task == Task::kLayout;
    const int64_t first = dedupe_layout ? std::min(chunk, ic.probe_configs) : chunk;
    const int32_t orders = model.config().config_attention ? std::max(1, opt.tta_orders) : 1;
    // The cache serves a segment's later chunks: with one chunk in all it would only add to the
    // peak (docs/gst.md#inference-cache).
    const bool one_chunk = orders == 1 && static_cast<int64_t>(configs.size()) <= first;
    SegmentInputBuffers buf;
    ConfigBatch batch;
    InferenceCache cache(g, one_chunk ? 0 : std::max<int64_t>(0, cache_bytes), opt.dedupe_rows);
    // Scores of the configs `list` into out, in chunks of consecutive configs.
    auto score_list = [&](std::span<const int64_t> list, std::span<float> out) {
        int64_t step = first;
        for (size_t b = 0; b < list.size(); b += static_cast<size_t>(step)) {
            if (dedupe_layout && b > 0)
                step = dedupe_chunk_after_probe(
                    chunk, cache.max_dep_rows_per_config(), cache.max_unique_rows_per_config(),
                    model.config().hidden, ic.state_bytes, ic.probe_configs);
            const size_t e = std::min(list.size(), b + static_cast<size_t>(step));
            auto cfgs = list.subspan(b, e - b);
            const auto k = static_cast<int64_t>(cfgs.size());
            // Layout rows are read one column block at a time (the configurable nodes of a few
            // segments), tile rows one chunk at a time; both into the one reused buffer.
            std::vector<ColumnBlock> blocks;
            if (g.task == Task::kLayout)
                blocks = column_blocks(g, active, k, ic.block_bytes);
            else
                load_config_batch(g, cfgs, batch);
            Tensor tile_tmp, cost_tmp;
            const TileView tile_cfg = tile_view(g, batch, cfgs, tile_tmp, cost_tmp);
            Tensor acc(k, agg.width);  // sum over segments of w * value
            size_t next = 0;           // next column block to read
            for (size_t a = 0; a < active.size(); ++a) {
                if (next < blocks.size() && blocks[next].begin == a)
                    load_config_columns(g, cfgs, blocks[next++].columns, batch);
                if (stats)
                    stats->max_config_row_bytes =
                        std::max(stats->max_config_row_bytes,
                                 static_cast<int64_t>(batch.layout.capacity()) +
                                     batch.tile.size() * static_cast<int64_t>(sizeof(float)));
                // Streamed: each segment's state is freed before the next one is encoded.
                const Tensor v = agg.value(model, cache.readout(model, active[a], batch, cfgs, buf),
                                           tile_cfg, nullptr);
                for (int64_t i = 0; i < v.size(); ++i) acc[i] += w * v[i];
            }
            if (stats) {
                ++stats->chunks;
                stats->column_blocks += static_cast<int64_t>(blocks.size());
            }
            const Tensor sc = agg.scores(model, acc.cview(), tile_cfg, nullptr);
            for (int64_t i = 0; i < k; ++i) out[b + static_cast<size_t>(i)] = sc[i];
        }
    };
    if (orders == 1) {
        score_list(configs, scores);
    } else {  // test-time averaging over config orders (docs/model.md#test-time-averaging)
        const size_t n = configs.size();
        std::vector<double> sum(n, 0.0);
        std::vector<size_t> perm(n);
        std::vector<int64_t> list(n);
        std::vector<float> part(n);
        for (int32_t t = 0; t < orders; ++t) {
            for (size_t i = 0; i < n; ++i) perm[i] = i;
            Rng rng = Rng::derive(kTtaSeed, static_cast<uint64_t>(t), n, "tta_order");
            for (size_t i = n; t > 0 && i > 1; --i)  // order 0: as given
                std::swap(perm[i - 1], perm[rng.uniform_int(i)]);
            for (size_t i = 0; i < n; ++i) list[i] = configs[perm[i]];
            score_list(list, part);
            for (size_t i = 0; i < n; ++i) sum[perm[i]] += part[i];
        }
        for (size_t i = 0; i < n; ++i) scores[i] = static_cast<float>(sum[i] / orders);
    }
    model.add_prior(scores, prior);
    return scores;
}

}  // namespace segrank
