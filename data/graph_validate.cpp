// validate() of the typed graph records (docs/files.md#keys-and-dtypes): every message names the
// source, the key, the offending index and value.
#include <cmath>
#include <span>
#include <string>

#include "data/graph.h"
#include "gnn/core/check.h"

namespace segrank {
namespace {

std::string at_key(const std::string& where, const char* key) {
    return where + ": key '" + key + "'";
}

// Node features, opcodes and edges of `g`, whose nodes are first_node.. of the whole graph
// (messages give whole-graph indices); edge ends must be < first_node + g.num_nodes().
void validate_structure(const GraphStructure& g, int64_t first_node, const std::string& where) {
    const int64_t n = g.num_nodes();
    const int64_t end = first_node + n;
    SEGRANK_CHECK(n > 0, at_key(where, "node_opcode"), ": empty graph (0 nodes)");
    SEGRANK_CHECK(g.node_feat.rows() == n && g.node_feat.cols() == kNodeFeatDim,
                  at_key(where, "node_feat"), ": shape (", g.node_feat.rows(), ", ",
                  g.node_feat.cols(), ") disagrees with node_opcode (", n, ",): expected (", n,
                  ", ", kNodeFeatDim, ")");
    const float* f = g.node_feat.data();
    for (int64_t i = 0; i < g.node_feat.size(); ++i) {
        SEGRANK_CHECK(std::isfinite(f[i]), at_key(where, "node_feat"), ": non-finite value ", f[i],
                      " at [", first_node + i / kNodeFeatDim, ", ", i % kNodeFeatDim, "]");
    }
    for (int64_t i = 0; i < n; ++i) {
        const int32_t op = g.node_opcode[static_cast<size_t>(i)];
        SEGRANK_CHECK(op >= 0 && op < kNumOpcodes, at_key(where, "node_opcode"), ": index ",
                      first_node + i, " value ", op, " out of range [0, ", kNumOpcodes - 1, "]");
    }
    SEGRANK_CHECK(g.edge_index.size() % 2 == 0, at_key(where, "edge_index"),
                  ": expected shape (m, 2), got ", g.edge_index.size(), " values");
    for (size_t i = 0; i < g.edge_index.size(); ++i) {
        const int64_t v = g.edge_index[i];
        SEGRANK_CHECK(v >= 0 && v < end, at_key(where, "edge_index"), ": row ", i / 2, " column ",
                      i % 2, " value ", v, " out of range [0, ", end, ")");
    }
}

void validate_runtimes(const std::vector<int64_t>& rt, LabelPolicy labels, const std::string& where,
                       const char* key) {
    for (size_t i = 0; i < rt.size(); ++i) {
        if (labels == LabelPolicy::kRequirePositive) {
            SEGRANK_CHECK(rt[i] > 0, at_key(where, key), ": index ", i, " value ", rt[i],
                          " must be > 0 ns (zeros are only allowed in test splits)");
        } else {
            SEGRANK_CHECK(rt[i] >= 0, at_key(where, key), ": index ", i, " value ", rt[i],
                          " is negative");
        }
    }
}

}  // namespace

void validate_runtime_rows(std::span<const int64_t> runtime, std::span<const int64_t> normalizers,
                           LabelPolicy labels, const std::string& where,
                           std::span<const int64_t> rows) {
    SEGRANK_CHECK(normalizers.empty() || normalizers.size() == runtime.size(),
                  at_key(where, "config_runtime_normalizers"), ": ", normalizers.size(),
                  " entries, config_runtime ", runtime.size());
    SEGRANK_CHECK(rows.empty() || rows.size() == runtime.size(), where, ": ", runtime.size(),
                  " runtimes for ", rows.size(), " selected rows");
    for (size_t k = 0; k < runtime.size(); ++k) {
        const int64_t config = rows.empty() ? static_cast<int64_t>(k) : rows[k];
        if (labels == LabelPolicy::kRequirePositive) {
            SEGRANK_CHECK(runtime[k] > 0, at_key(where, "config_runtime"), ": config ", config,
                          " runtime ", runtime[k],
                          " ns: a labelled (train / valid) split needs runtimes > 0 ns (zeros are "
                          "only allowed in test splits)");
        } else {
            SEGRANK_CHECK(runtime[k] >= 0, at_key(where, "config_runtime"), ": config ", config,
                          " runtime ", runtime[k], " ns is negative");
        }
        if (!normalizers.empty())
            SEGRANK_CHECK(normalizers[k] > 0, at_key(where, "config_runtime_normalizers"),
                          ": config ", config, " value ", normalizers[k], " must be > 0 ns");
    }
}

void validate_part(const GraphStructure& part, int64_t first_node, const std::string& where) {
    SEGRANK_CHECK(first_node >= 0, where, ": part starts at node ", first_node, " (< 0)");
    validate_structure(part, first_node, where);
}

void validate(const TileGraph& g, LabelPolicy labels, const std::string& where) {
    validate_structure(g, 0, where);
    const int64_t c = g.num_configs();
    SEGRANK_CHECK(g.config_feat.rows() == c && (c == 0 || g.config_feat.cols() == kTileConfigDim),
                  at_key(where, "config_feat"), ": shape (", g.config_feat.rows(), ", ",
                  g.config_feat.cols(), ") disagrees with config_runtime (", c, ",): expected (", c,
                  ", ", kTileConfigDim, ")");
    SEGRANK_CHECK(static_cast<int64_t>(g.config_runtime_normalizers.size()) == c,
                  at_key(where, "config_runtime_normalizers"), ": length ",
                  g.config_runtime_normalizers.size(), " disagrees with config_runtime (", c, ")");
    const float* f = g.config_feat.data();
    for (int64_t i = 0; i < g.config_feat.size(); ++i) {
        SEGRANK_CHECK(std::isfinite(f[i]), at_key(where, "config_feat"), ": non-finite value ",
                      f[i], " at [", i / kTileConfigDim, ", ", i % kTileConfigDim, "]");
    }
    validate_runtimes(g.config_runtime, labels, where, "config_runtime");
    for (size_t i = 0; i < g.config_runtime_normalizers.size(); ++i) {
        SEGRANK_CHECK(g.config_runtime_normalizers[i] > 0,
                      at_key(where, "config_runtime_normalizers"), ": index ", i, " value ",
                      g.config_runtime_normalizers[i], " must be > 0 ns");
    }
}

void validate_loop_trips(std::span<const float> trips, int64_t n, const std::string& where) {
    if (trips.empty()) return;  // optional member
    SEGRANK_CHECK(static_cast<int64_t>(trips.size()) == n * kLoopTripCols,
                  at_key(where, "node_loop_trips"), ": has ", trips.size(),
                  " values, expected n*2 = ", n, "*", kLoopTripCols);
    for (int64_t v = 0; v < n; ++v) {
        const float log2_trips = trips[static_cast<size_t>(v * kLoopTripCols)];
        const float unknown = trips[static_cast<size_t>(v * kLoopTripCols + 1)];
        SEGRANK_CHECK(std::isfinite(log2_trips) && log2_trips >= 0 && log2_trips <= 64,
                      at_key(where, "node_loop_trips"), ": node ", v, " has log2 trip count ",
                      log2_trips, ", expected a finite value in [0, 64]");
        SEGRANK_CHECK(unknown == 0.0f || unknown == 1.0f, at_key(where, "node_loop_trips"),
                      ": node ", v, " has unknown flag ", unknown, ", expected 0 or 1");
    }
}

void validate(const LayoutGraph& g, LabelPolicy labels, const std::string& where) {
    validate_structure(g, 0, where);
    validate_layout_configs(g, g.num_nodes(), labels, where);
}

void validate_layout_configs(const LayoutGraph& g, int64_t n, LabelPolicy labels,
                             const std::string& where) {
    const int64_t nc = g.num_config_nodes();
    const int64_t c = g.num_configs();
    SEGRANK_CHECK(nc > 0, at_key(where, "node_config_ids"), ": no configurable nodes");
    for (int64_t k = 0; k < nc; ++k) {
        const int64_t id = g.node_config_ids[static_cast<size_t>(k)];
        SEGRANK_CHECK(id >= 0 && id < n, at_key(where, "node_config_ids"), ": index ", k, " value ",
                      id, " out of range [0, ", n, ")");
        SEGRANK_CHECK(k == 0 || id > g.node_config_ids[static_cast<size_t>(k - 1)],
                      at_key(where, "node_config_ids"), ": index ", k, " value ", id,
                      " is not strictly greater than the previous ",
                      g.node_config_ids[static_cast<size_t>(k - 1)]);
    }
    SEGRANK_CHECK(static_cast<int64_t>(g.node_config_feat.size()) == c * nc * kLayoutConfigDim,
                  at_key(where, "node_config_feat"), ": has ", g.node_config_feat.size(),
                  " values, expected c*nc*18 = ", c, "*", nc, "*", kLayoutConfigDim);
    for (size_t i = 0; i < g.node_config_feat.size(); ++i) {
        const int v = g.node_config_feat[i];
        SEGRANK_CHECK(v >= -1 && v <= 5, at_key(where, "node_config_feat"), ": index [",
                      i / static_cast<size_t>(nc * kLayoutConfigDim), ", ",
                      i / kLayoutConfigDim % static_cast<size_t>(nc), ", ", i % kLayoutConfigDim,
                      "] value ", v, " out of range [-1, 5]");
    }
    validate_runtimes(g.config_runtime, labels, where, "config_runtime");
    validate_loop_trips(g.node_loop_trips, n, where);
    const auto& s = g.node_splits;
    SEGRANK_CHECK(!s.empty() && s.front() == 0 && s.back() == n, at_key(where, "node_splits"),
                  ": must start at 0 and end at n = ", n, " (got ", s.size(), " values, first ",
                  s.empty() ? -1 : s.front(), ", last ", s.empty() ? -1 : s.back(), ")");
    for (size_t i = 1; i < s.size(); ++i) {
        SEGRANK_CHECK(s[i] >= s[i - 1], at_key(where, "node_splits"), ": index ", i, " value ",
                      s[i], " is smaller than the previous ", s[i - 1]);
    }
}

}  // namespace segrank
