// The config rows of K configs of a graph (ConfigBatch) and the model input of one segment for
// them (make_segment_input), see prepared_graph.h.
#include <algorithm>
#include <cstring>

#include "gnn/core/check.h"
#include "gst/prepared_graph.h"
#include "hwmodel/layout_bytes.h"

namespace segrank {

int64_t ConfigBatch::position(int64_t id) const {
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] == id) return static_cast<int64_t>(i);
    throw Error(str("config ", id, " is not in the loaded config batch (", ids.size(), " rows)"));
}

ConfigBatch load_config_batch(const PreparedGraph& g, std::span<const int64_t> configs) {
    ConfigBatch b;
    load_config_batch(g, configs, b);
    return b;
}

void load_config_batch(const PreparedGraph& g, std::span<const int64_t> configs, ConfigBatch& b) {
    b.ids.assign(configs.begin(), configs.end());
    const auto k = static_cast<int64_t>(configs.size());
    for (int64_t c : configs)
        SEGRANK_CHECK(c >= 0 && c < g.num_configs, "graph '", g.name, "': config index ", c,
                      " out of range [0, ", g.num_configs, ")");
    b.column_block = false;
    b.columns.clear();
    if (g.task == Task::kLayout) {
        const int64_t row = g.num_config_nodes * kLayoutConfigDim;
        b.layout.resize(static_cast<size_t>(k * row));  // keeps the capacity of earlier chunks
        b.tile = Tensor();
        g.source->read_layout_config_rows(g.source_index, b.ids, b.layout);
        return;
    }
    b.layout.clear();
    ConfigTensors t = g.source->load_configs(g.source_index, ConfigRows::only(b.ids));
    SEGRANK_CHECK(t.num_configs() == k && t.tile_feat.rows() == k, "graph '", g.name,
                  "': source returned ", t.tile_feat.rows(), " config rows for ", k, " requested");
    b.tile = std::move(t.tile_feat);
}

void load_config_columns(const PreparedGraph& g, std::span<const int64_t> configs,
                         std::span<const int32_t> columns, ConfigBatch& b) {
    SEGRANK_CHECK(g.task == Task::kLayout, "graph '", g.name,
                  "': config columns are read for layout graphs only");
    for (int64_t c : configs)
        SEGRANK_CHECK(c >= 0 && c < g.num_configs, "graph '", g.name, "': config index ", c,
                      " out of range [0, ", g.num_configs, ")");
    for (size_t j = 0; j < columns.size(); ++j)
        SEGRANK_CHECK(columns[j] >= 0 && columns[j] < g.num_config_nodes &&
                          (j == 0 || columns[j] > columns[j - 1]),
                      "graph '", g.name, "': config column ", columns[j], " (index ", j,
                      ") out of range [0, ", g.num_config_nodes, ") or not increasing");
    b.ids.assign(configs.begin(), configs.end());
    b.column_block = true;
    b.columns.assign(columns.begin(), columns.end());
    b.tile = Tensor();
    const auto k = static_cast<int64_t>(configs.size());
    const auto w = static_cast<int64_t>(columns.size());
    // One buffer for every block: it grows (freed, then allocated exactly) only when a block
    // needs more, so its capacity is the largest block's rows.
    const auto bytes = static_cast<size_t>(k * w * kLayoutConfigDim);
    if (bytes > b.layout.capacity()) {
        std::vector<int8_t>().swap(b.layout);
        b.layout.reserve(bytes);
    }
    b.layout.resize(bytes);
    if (k * w == 0) return;
    g.source->read_layout_config_columns(g.source_index, b.ids, b.columns, b.layout);
}

namespace {

// Position of nc-axis column `j` in `batch`'s rows: j itself for full rows, else its index in
// batch.columns. Throws segrank::Error when the column block does not hold it.
int64_t column_position(const PreparedGraph& g, const ConfigBatch& batch, int32_t j) {
    if (!batch.column_block) return j;
    const auto it = std::lower_bound(batch.columns.begin(), batch.columns.end(), j);
    SEGRANK_CHECK(it != batch.columns.end() && *it == j, "graph '", g.name, "': config column ", j,
                  " is not in the loaded column block (", batch.columns.size(), " columns)");
    return it - batch.columns.begin();
}

// Positions of `configs` in `batch` (identity when they are the batch's ids in order).
std::vector<int64_t> batch_positions(const ConfigBatch& batch, std::span<const int64_t> configs) {
    std::vector<int64_t> pos(configs.size());
    const bool same = configs.size() <= batch.ids.size() &&
                      std::equal(configs.begin(), configs.end(), batch.ids.begin());
    for (size_t i = 0; i < configs.size(); ++i)
        pos[i] = same ? static_cast<int64_t>(i) : batch.position(configs[i]);
    return pos;
}

}  // namespace

Tensor tile_rows(const PreparedGraph& g, const ConfigBatch& batch,
                 std::span<const int64_t> configs) {
    if (g.task != Task::kTile) return {};
    const std::vector<int64_t> pos = batch_positions(batch, configs);
    Tensor t(static_cast<int64_t>(configs.size()), kTileConfigDim);
    for (size_t i = 0; i < pos.size(); ++i)
        std::memcpy(t.data() + static_cast<int64_t>(i) * kTileConfigDim,
                    batch.tile.data() + pos[i] * kTileConfigDim, kTileConfigDim * sizeof(float));
    return t;
}

Tensor tile_cost_rows(const PreparedGraph& g, std::span<const int64_t> configs) {
    if (g.tile_cost.empty()) return {};
    constexpr int64_t m = kTileCostFeatures;
    Tensor t = Tensor::uninit(static_cast<int64_t>(configs.size()), m);
    for (size_t i = 0; i < configs.size(); ++i) {
        SEGRANK_CHECK(configs[i] >= 0 && configs[i] < g.num_configs, "graph '", g.name,
                      "': config index ", configs[i], " out of range [0, ", g.num_configs, ")");
        std::memcpy(t.data() + static_cast<int64_t>(i) * m, g.tile_cost.data() + configs[i] * m,
                    m * sizeof(float));
    }
    return t;
}

SegmentInput make_segment_input(const PreparedGraph& g, int64_t s, const ConfigBatch& batch,
                                std::span<const int64_t> configs, SegmentInputBuffers& buf) {
    return make_segment_input(g, built_segment(g, s, buf.segment), batch, configs, buf);
}

SegmentInput make_segment_input(const PreparedGraph& g, const BuiltSegment& built,
                                const ConfigBatch& batch, std::span<const int64_t> configs,
                                SegmentInputBuffers& buf) {
    const Segment& seg = *built.segment;
    const auto k = static_cast<int64_t>(configs.size());
    const std::vector<int64_t> pos = batch_positions(batch, configs);
    SegmentInput in;
    in.node_feat = built.node_feat.cview();
    in.opcode = built.opcode;
    in.operands = &seg.operands();
    in.users = &seg.users();
    in.num_pooled = seg.num_pooled();
    in.k = k;
    if (g.task == Task::kLayout) {
        auto idx = seg.config_index();
        const auto ncs = static_cast<int64_t>(idx.size());
        // Row width of the batch: nc columns, or those of its column block.
        const int64_t width =
            batch.column_block ? static_cast<int64_t>(batch.columns.size()) : g.num_config_nodes;
        std::vector<int64_t>& at = buf.layout_columns;
        at.resize(static_cast<size_t>(ncs));
        for (int64_t j = 0; j < ncs; ++j)
            at[static_cast<size_t>(j)] = column_position(g, batch, idx[static_cast<size_t>(j)]);
        buf.layout_values.resize(static_cast<size_t>(k * ncs * kLayoutConfigDim));
        for (int64_t c = 0; c < k; ++c) {
            const int8_t* row =
                batch.layout.data() + pos[static_cast<size_t>(c)] * width * kLayoutConfigDim;
            int8_t* dst = buf.layout_values.data() + c * ncs * kLayoutConfigDim;
            for (int64_t j = 0; j < ncs; ++j)
                std::memcpy(dst + j * kLayoutConfigDim,
                            row + at[static_cast<size_t>(j)] * kLayoutConfigDim, kLayoutConfigDim);
        }
        in.config_node_local = seg.config_local();
        in.config_values = buf.layout_values;
        if (g.layout_neighbourhood) {
            static_assert(hw::kLayoutByteFeatures == kLayoutByteFeatures);
            static_assert(hw::kLayoutAccessFeatures == kLayoutAccessFeatures);
            const int64_t bf = g.layout_feature_sets.width();
            buf.layout_features.resize(static_cast<size_t>(k * ncs * bf));
            // A node's features depend on its own row only, and a graph's configs repeat few rows
            // per node (the layout files hold at most about 8 per node): each distinct (node, row)
            // is computed once and copied to the configs that repeat it (the same values). Up to
            // kMemoRows distinct rows per node are remembered; beyond, rows are computed.
            constexpr size_t kMemoRows = 32;
            std::vector<int64_t> seen;  // configs whose row of node j was computed
            for (int64_t j = 0; j < ncs; ++j) {
                seen.clear();
                for (int64_t c = 0; c < k; ++c) {
                    const int8_t* row = buf.layout_values.data() + (c * ncs + j) * kLayoutConfigDim;
                    float* out = buf.layout_features.data() + (c * ncs + j) * bf;
                    const auto same = std::find_if(seen.begin(), seen.end(), [&](int64_t e) {
                        return std::memcmp(
                                   buf.layout_values.data() + (e * ncs + j) * kLayoutConfigDim, row,
                                   kLayoutConfigDim) == 0;
                    });
                    if (same != seen.end()) {
                        std::memcpy(out, buf.layout_features.data() + (*same * ncs + j) * bf,
                                    sizeof(float) * static_cast<size_t>(bf));
                        continue;
                    }
                    hw::layout_features_of_rows(*g.layout_neighbourhood, g.layout_feature_sets,
                                                {row, static_cast<size_t>(kLayoutConfigDim)},
                                                idx.subspan(static_cast<size_t>(j), 1),
                                                {out, static_cast<size_t>(bf)});
                    if (seen.size() < kMemoRows) seen.push_back(c);
                }
            }
            in.layout_features = buf.layout_features;
        }
    } else {
        buf.tile_config = tile_rows(g, batch, configs);
        in.tile_config = buf.tile_config.cview();
        buf.tile_cost = tile_cost_rows(g, configs);
        in.tile_cost = buf.tile_cost.cview();
    }
    return in;
}

}  // namespace segrank
