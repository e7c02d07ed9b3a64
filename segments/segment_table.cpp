// SegmentTable (see segment_table.h); the streaming range-segment builder is in range_segments.cpp.
#include "segments/segment_table.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "gnn/core/check.h"

namespace segrank {

namespace {

bool is_range(std::span<const int64_t> nodes) {
    for (size_t i = 1; i < nodes.size(); ++i)
        if (nodes[i] != nodes[i - 1] + 1) return false;
    return true;
}

}  // namespace

void check_opcodes(std::span<const int32_t> opcode, const std::string& where, int64_t base) {
    for (size_t i = 0; i < opcode.size(); ++i)
        SEGRANK_CHECK(opcode[i] >= 0 && opcode[i] < 256, where, ": opcode[",
                      base + static_cast<int64_t>(i), "] = ", opcode[i], " outside [0, 256)");
}

void SegmentTable::check_index(int32_t s) const {
    SEGRANK_CHECK(s >= 0 && s < num_segments(), "segment id ", s, " outside [0, ", num_segments(),
                  ") of graph ", graph_id_);
}

int32_t SegmentTable::num_nodes(int32_t s) const {
    check_index(s);
    return static_cast<int32_t>(node_off_[static_cast<size_t>(s) + 1] -
                                node_off_[static_cast<size_t>(s)]);
}

void SegmentTable::widen() {
    std::vector<uint32_t> w(edges_.size() * 2);
    for (size_t e = 0; e < edges_.size(); ++e) {
        w[2 * e] = edges_[e] >> 16;
        w[2 * e + 1] = edges_[e] & 0xffffu;
    }
    edges_ = std::move(w);
    wide_ = true;
}

void SegmentTable::push_edges(int32_t n, std::span<const int32_t> user,
                              std::span<const int32_t> producer) {
    if (!wide_ && n > kNarrowMaxNodes) widen();
    for (size_t e = 0; e < user.size(); ++e) {
        const auto u = static_cast<uint32_t>(user[e]), p = static_cast<uint32_t>(producer[e]);
        if (wide_) {
            edges_.push_back(u);
            edges_.push_back(p);
        } else {
            edges_.push_back((u << 16) | p);
        }
    }
    edge_off_.push_back(edge_off_.back() + static_cast<int64_t>(user.size()));
}

SegmentTable::SegmentTable(int64_t graph_id, SegmentRowSource source)
    : graph_id_(graph_id), backed_(true), edge_row_off_{0}, source_(std::move(source)) {
    SEGRANK_CHECK(static_cast<bool>(source_.edges) && static_cast<bool>(source_.opcodes),
                  source_.where, ": a source-backed segment table needs edge and opcode readers");
}

void SegmentTable::push_config(std::span<const int32_t> config_local,
                               std::span<const int32_t> config_index) {
    cfg_local_.insert(cfg_local_.end(), config_local.begin(), config_local.end());
    cfg_index_.insert(cfg_index_.end(), config_index.begin(), config_index.end());
    cfg_off_.push_back(static_cast<int64_t>(cfg_local_.size()));
}

void SegmentTable::append(const Segment& seg, std::span<const int32_t> opcode) {
    const std::string where = str("segment ", seg.segment_id(), " of graph ", graph_id_);
    SEGRANK_CHECK(!backed_, where, ": cannot append to a source-backed segment table");
    SEGRANK_CHECK(seg.segment_id() == num_segments(), where, ": appended at position ",
                  num_segments());
    SEGRANK_CHECK(static_cast<int64_t>(opcode.size()) == seg.num_nodes(), where, ": ",
                  opcode.size(), " opcodes for ", seg.num_nodes(), " nodes");
    check_opcodes(opcode, where);
    const auto nodes = seg.nodes();
    if (seg.num_halo() == 0 && is_range(nodes)) {
        first_node_.push_back(nodes.front());
    } else {
        first_node_.push_back(-1);
        for (int64_t v : nodes) {
            SEGRANK_CHECK(v >= 0 && v <= std::numeric_limits<uint32_t>::max(), where, ": node id ",
                          v, " outside [0, 2^32)");
            listed_.push_back(static_cast<uint32_t>(v));
        }
    }
    list_off_.push_back(static_cast<int64_t>(listed_.size()));
    num_pooled_.push_back(seg.num_pooled());
    node_off_.push_back(node_off_.back() + seg.num_nodes());
    push_edges(seg.num_nodes(), seg.edge_user(), seg.edge_producer());
    push_config(seg.config_local(), seg.config_index());
    opcode_.insert(opcode_.end(), opcode.begin(), opcode.end());
}

void SegmentTable::append_range(int64_t first, int32_t n, std::span<const int32_t> user,
                                std::span<const int32_t> producer,
                                std::span<const int32_t> config_local,
                                std::span<const int32_t> config_index,
                                std::span<const int32_t> opcode) {
    // Validate through the Segment constructor (ids, sizes, ordering) before taking anything.
    std::vector<int64_t> nodes(static_cast<size_t>(n));
    std::iota(nodes.begin(), nodes.end(), first);
    const Segment seg(graph_id_, num_segments(), std::move(nodes), n, {user.begin(), user.end()},
                      {producer.begin(), producer.end()},
                      {config_local.begin(), config_local.end()},
                      {config_index.begin(), config_index.end()});
    append(seg, opcode);
}

void SegmentTable::append_rows(int64_t first, int32_t n, int64_t row_begin, int64_t row_end,
                               std::span<const int32_t> config_local,
                               std::span<const int32_t> config_index) {
    const std::string where =
        str(source_.where, ": segment ", num_segments(), " of graph ", graph_id_);
    SEGRANK_CHECK(backed_, where, ": append_rows needs a source-backed segment table");
    SEGRANK_CHECK(n >= 1 && first >= 0 && first + n <= source_.num_graph_nodes, where, ": nodes [",
                  first, ", ", first + n, ") outside [0, ", source_.num_graph_nodes, ")");
    SEGRANK_CHECK(row_begin == edge_row_off_.back() && row_end >= row_begin, where, ": edge rows [",
                  row_begin, ", ", row_end,
                  ") do not continue the previous segment's rows (which end at ",
                  edge_row_off_.back(), ")");
    SEGRANK_CHECK(config_local.size() == config_index.size(), where, ": ", config_local.size(),
                  " configurable local ids but ", config_index.size(), " indices");
    for (size_t j = 0; j < config_local.size(); ++j)
        SEGRANK_CHECK(config_local[j] >= 0 && config_local[j] < n &&
                          (j == 0 || config_local[j] > config_local[j - 1]),
                      where, ": config_local[", j, "] = ", config_local[j],
                      " not strictly increasing in [0, ", n, ")");
    first_node_.push_back(first);
    num_pooled_.push_back(n);
    node_off_.push_back(node_off_.back() + n);
    list_off_.push_back(static_cast<int64_t>(listed_.size()));
    edge_off_.push_back(edge_off_.back());  // no packed edges
    edge_row_off_.push_back(row_end);
    push_config(config_local, config_index);
}

void SegmentTable::reserve(int64_t segments, int64_t nodes, int64_t edges, int64_t max_nodes) {
    if (!backed_ && !wide_ && max_nodes > kNarrowMaxNodes) widen();
    const auto s = static_cast<size_t>(num_segments() + segments);
    first_node_.reserve(s);
    num_pooled_.reserve(s);
    node_off_.reserve(s + 1);
    list_off_.reserve(s + 1);
    edge_off_.reserve(s + 1);
    cfg_off_.reserve(s + 1);
    if (backed_) {
        edge_row_off_.reserve(s + 1);
        return;
    }
    edges_.reserve(edges_.size() + static_cast<size_t>(edges * (wide_ ? 2 : 1)));
    opcode_.reserve(opcode_.size() + static_cast<size_t>(nodes));
}

Segment SegmentTable::segment(int32_t s) const {
    check_index(s);
    const auto k = static_cast<size_t>(s);
    const int32_t n = num_nodes(s);
    std::vector<int64_t> nodes(static_cast<size_t>(n));
    if (first_node_[k] >= 0)
        std::iota(nodes.begin(), nodes.end(), first_node_[k]);
    else
        std::copy(listed_.begin() + list_off_[k], listed_.begin() + list_off_[k + 1],
                  nodes.begin());
    if (backed_) {
        const int64_t lo = first_node_[k], hi = lo + n;
        const std::vector<int64_t> rows = source_.edges(edge_row_off_[k], edge_row_off_[k + 1]);
        SEGRANK_CHECK(
            static_cast<int64_t>(rows.size()) == 2 * (edge_row_off_[k + 1] - edge_row_off_[k]),
            source_.where, ": edge_index rows [", edge_row_off_[k], ", ", edge_row_off_[k + 1],
            ") returned ", rows.size(), " values");
        std::vector<int32_t> eu, ep;
        for (size_t r = 0; r < rows.size() / 2; ++r) {
            const int64_t u = rows[2 * r], v = rows[2 * r + 1];
            SEGRANK_CHECK(u >= lo && u < hi && v >= 0 && v < source_.num_graph_nodes, source_.where,
                          ": edge_index row ", edge_row_off_[k] + static_cast<int64_t>(r), " = (",
                          u, ", ", v, ") changed since the graph was prepared");
            if (v < lo || v >= hi) continue;
            eu.push_back(static_cast<int32_t>(u - lo));
            ep.push_back(static_cast<int32_t>(v - lo));
        }
        std::vector<int32_t> cl(cfg_local_.begin() + cfg_off_[k],
                                cfg_local_.begin() + cfg_off_[k + 1]);
        std::vector<int32_t> ci(cfg_index_.begin() + cfg_off_[k],
                                cfg_index_.begin() + cfg_off_[k + 1]);
        return Segment(graph_id_, s, std::move(nodes), num_pooled_[k], std::move(eu), std::move(ep),
                       std::move(cl), std::move(ci));
    }
    const int64_t m = edge_off_[k + 1] - edge_off_[k];
    std::vector<int32_t> eu(static_cast<size_t>(m)), ep(static_cast<size_t>(m));
    for (int64_t e = 0; e < m; ++e) {
        const int64_t g = edge_off_[k] + e;
        if (wide_) {
            eu[static_cast<size_t>(e)] = static_cast<int32_t>(edges_[static_cast<size_t>(2 * g)]);
            ep[static_cast<size_t>(e)] =
                static_cast<int32_t>(edges_[static_cast<size_t>(2 * g + 1)]);
        } else {
            eu[static_cast<size_t>(e)] = static_cast<int32_t>(edges_[static_cast<size_t>(g)] >> 16);
            ep[static_cast<size_t>(e)] =
                static_cast<int32_t>(edges_[static_cast<size_t>(g)] & 0xffffu);
        }
    }
    std::vector<int32_t> cl(cfg_local_.begin() + cfg_off_[k], cfg_local_.begin() + cfg_off_[k + 1]);
    std::vector<int32_t> ci(cfg_index_.begin() + cfg_off_[k], cfg_index_.begin() + cfg_off_[k + 1]);
    return Segment(graph_id_, s, std::move(nodes), num_pooled_[k], std::move(eu), std::move(ep),
                   std::move(cl), std::move(ci));
}

void SegmentTable::opcodes(int32_t s, std::vector<int32_t>& out) const {
    check_index(s);
    const auto k = static_cast<size_t>(s);
    if (backed_) {
        const int64_t lo = first_node_[k], hi = lo + num_nodes(s);
        out = source_.opcodes(lo, hi);
        SEGRANK_CHECK(static_cast<int64_t>(out.size()) == hi - lo, source_.where,
                      ": node_opcode rows [", lo, ", ", hi, ") returned ", out.size(), " values");
        check_opcodes(out, source_.where + "/node_opcode", lo);
        return;
    }
    out.assign(opcode_.begin() + node_off_[k], opcode_.begin() + node_off_[k + 1]);
}

int64_t SegmentTable::memory_bytes() const {
    auto b = [](const auto& v) { return static_cast<int64_t>(v.capacity() * sizeof(v[0])); };
    return b(first_node_) + b(num_pooled_) + b(node_off_) + b(list_off_) + b(listed_) +
           b(edge_off_) + b(edges_) + b(cfg_off_) + b(cfg_local_) + b(cfg_index_) + b(opcode_) +
           b(edge_row_off_);
}

void SegmentTable::shrink_to_fit() {
    first_node_.shrink_to_fit();
    num_pooled_.shrink_to_fit();
    node_off_.shrink_to_fit();
    list_off_.shrink_to_fit();
    listed_.shrink_to_fit();
    edge_off_.shrink_to_fit();
    edges_.shrink_to_fit();
    cfg_off_.shrink_to_fit();
    cfg_local_.shrink_to_fit();
    cfg_index_.shrink_to_fit();
    opcode_.shrink_to_fit();
    edge_row_off_.shrink_to_fit();
}

}  // namespace segrank
