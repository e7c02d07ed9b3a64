// SegmentTable and the streaming range-segment builder (see segment_table.h).
#include "segments/segment_table.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "gnn/core/check.h"

namespace segrank {

namespace {

constexpr int64_t kNarrowMaxNodes = int64_t{1} << 16;  // local ids fit 16 bits

bool is_range(std::span<const int64_t> nodes) {
    for (size_t i = 1; i < nodes.size(); ++i)
        if (nodes[i] != nodes[i - 1] + 1) return false;
    return true;
}

// Opcodes are stored as uint8; `base` is the index of opcode[0] in the messages.
void check_opcodes(std::span<const int32_t> opcode, const std::string& where, int64_t base = 0) {
    for (size_t i = 0; i < opcode.size(); ++i)
        SEGRANK_CHECK(opcode[i] >= 0 && opcode[i] < 256, where, ": opcode[", base + static_cast<int64_t>(i), "] = ",
                      opcode[i], " outside [0, 256)");
}

}  // namespace

void SegmentTable::check_index(int32_t s) const {
    SEGRANK_CHECK(s >= 0 && s < num_segments(), "segment id ", s, " outside [0, ", num_segments(), ") of graph ",
                  graph_id_);
}

int32_t SegmentTable::num_nodes(int32_t s) const {
    check_index(s);
    return static_cast<int32_t>(node_off_[static_cast<size_t>(s) + 1] - node_off_[static_cast<size_t>(s)]);
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

void SegmentTable::push_edges(int32_t n, std::span<const int32_t> user, std::span<const int32_t> producer) {
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

void SegmentTable::append(const Segment& seg, std::span<const int32_t> opcode) {
    const std::string where = str("segment ", seg.segment_id(), " of graph ", graph_id_);
    SEGRANK_CHECK(!backed_, where, ": cannot append to a source-backed segment table");
    SEGRANK_CHECK(seg.segment_id() == num_segments(), where, ": appended at position ", num_segments());
    SEGRANK_CHECK(static_cast<int64_t>(opcode.size()) == seg.num_nodes(), where, ": ", opcode.size(),
                  " opcodes for ", seg.num_nodes(), " nodes");
    check_opcodes(opcode, where);
    const auto nodes = seg.nodes();
    if (seg.num_halo() == 0 && is_range(nodes)) {
        first_node_.push_back(nodes.front());
    } else {
        first_node_.push_back(-1);
        for (int64_t v : nodes) {
            SEGRANK_CHECK(v >= 0 && v <= std::numeric_limits<uint32_t>::max(), where, ": node id ", v,
                          " outside [0, 2^32)");
            listed_.push_back(static_cast<uint32_t>(v));
        }
    }
    list_off_.push_back(static_cast<int64_t>(listed_.size()));
    num_pooled_.push_back(seg.num_pooled());
    node_off_.push_back(node_off_.back() + seg.num_nodes());
    push_edges(seg.num_nodes(), seg.edge_user(), seg.edge_producer());
    cfg_local_.insert(cfg_local_.end(), seg.config_local().begin(), seg.config_local().end());
    cfg_index_.insert(cfg_index_.end(), seg.config_index().begin(), seg.config_index().end());
    cfg_off_.push_back(static_cast<int64_t>(cfg_local_.size()));
    opcode_.insert(opcode_.end(), opcode.begin(), opcode.end());
}

void SegmentTable::append_range(int64_t first, int32_t n, std::span<const int32_t> user,
                                std::span<const int32_t> producer, std::span<const int32_t> config_local,
                                std::span<const int32_t> config_index, std::span<const int32_t> opcode) {
    // Validate through the Segment constructor (ids, sizes, ordering) before taking anything.
    std::vector<int64_t> nodes(static_cast<size_t>(n));
    std::iota(nodes.begin(), nodes.end(), first);
    const Segment seg(graph_id_, num_segments(), std::move(nodes), n, {user.begin(), user.end()},
                      {producer.begin(), producer.end()}, {config_local.begin(), config_local.end()},
                      {config_index.begin(), config_index.end()});
    append(seg, opcode);
}

Segment SegmentTable::segment(int32_t s) const {
    check_index(s);
    const auto k = static_cast<size_t>(s);
    const int32_t n = num_nodes(s);
    std::vector<int64_t> nodes(static_cast<size_t>(n));
    if (first_node_[k] >= 0)
        std::iota(nodes.begin(), nodes.end(), first_node_[k]);
    else
        std::copy(listed_.begin() + list_off_[k], listed_.begin() + list_off_[k + 1], nodes.begin());
    if (backed_) {
        const int64_t lo = first_node_[k], hi = lo + n;
        const std::vector<int64_t> rows = edge_reader_(edge_row_off_[k], edge_row_off_[k + 1]);
        SEGRANK_CHECK(static_cast<int64_t>(rows.size()) == 2 * (edge_row_off_[k + 1] - edge_row_off_[k]), where_,
                      ": edge_index rows [", edge_row_off_[k], ", ", edge_row_off_[k + 1], ") returned ", rows.size(),
                      " values");
        std::vector<int32_t> eu, ep;
        for (size_t r = 0; r < rows.size() / 2; ++r) {
            const int64_t u = rows[2 * r], v = rows[2 * r + 1];
            SEGRANK_CHECK(u >= lo && u < hi && v >= 0 && v < num_graph_nodes_, where_, ": edge_index row ",
                          edge_row_off_[k] + static_cast<int64_t>(r), " = (", u, ", ", v,
                          ") changed since the graph was prepared");
            if (v < lo || v >= hi) continue;
            eu.push_back(static_cast<int32_t>(u - lo));
            ep.push_back(static_cast<int32_t>(v - lo));
        }
        std::vector<int32_t> cl(cfg_local_.begin() + cfg_off_[k], cfg_local_.begin() + cfg_off_[k + 1]);
        std::vector<int32_t> ci(cfg_index_.begin() + cfg_off_[k], cfg_index_.begin() + cfg_off_[k + 1]);
        return Segment(graph_id_, s, std::move(nodes), num_pooled_[k], std::move(eu), std::move(ep), std::move(cl),
                       std::move(ci));
    }
    const int64_t m = edge_off_[k + 1] - edge_off_[k];
    std::vector<int32_t> eu(static_cast<size_t>(m)), ep(static_cast<size_t>(m));
    for (int64_t e = 0; e < m; ++e) {
        const int64_t g = edge_off_[k] + e;
        if (wide_) {
            eu[static_cast<size_t>(e)] = static_cast<int32_t>(edges_[static_cast<size_t>(2 * g)]);
            ep[static_cast<size_t>(e)] = static_cast<int32_t>(edges_[static_cast<size_t>(2 * g + 1)]);
        } else {
            eu[static_cast<size_t>(e)] = static_cast<int32_t>(edges_[static_cast<size_t>(g)] >> 16);
            ep[static_cast<size_t>(e)] = static_cast<int32_t>(edges_[static_cast<size_t>(g)] & 0xffffu);
        }
    }
    std::vector<int32_t> cl(cfg_local_.begin() + cfg_off_[k], cfg_local_.begin() + cfg_off_[k + 1]);
    std::vector<int32_t> ci(cfg_index_.begin() + cfg_off_[k], cfg_index_.begin() + cfg_off_[k + 1]);
    return Segment(graph_id_, s, std::move(nodes), num_pooled_[k], std::move(eu), std::move(ep), std::move(cl),
                   std::move(ci));
}

void SegmentTable::opcodes(int32_t s, std::vector<int32_t>& out) const {
    check_index(s);
    const auto k = static_cast<size_t>(s);
    if (backed_) {
        const int64_t lo = first_node_[k], hi = lo + num_nodes(s);
        out = opcode_reader_(lo, hi);
        SEGRANK_CHECK(static_cast<int64_t>(out.size()) == hi - lo, where_, ": node_opcode rows [", lo, ", ", hi,
                      ") returned ", out.size(), " values");
        check_opcodes(out, where_ + "/node_opcode", lo);
        return;
    }
    out.assign(opcode_.begin() + node_off_[k], opcode_.begin() + node_off_[k + 1]);
}

int64_t SegmentTable::memory_bytes() const {
    auto b = [](const auto& v) { return static_cast<int64_t>(v.capacity() * sizeof(v[0])); };
    return b(first_node_) + b(num_pooled_) + b(node_off_) + b(list_off_) + b(listed_) + b(edge_off_) + b(edges_) +
           b(cfg_off_) + b(cfg_local_) + b(cfg_index_) + b(opcode_) + b(edge_row_off_);
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

SegmentTable build_range_segments(int64_t num_nodes, int64_t num_edges, std::span<const int64_t> bounds,
                                  std::span<const int64_t> node_config_ids, int64_t graph_id,
                                  const EdgeRangeReader& edges, const OpcodeRangeReader& opcodes,
                                  const std::string& where, int64_t chunk_rows, bool source_backed) {
    SEGRANK_CHECK(num_nodes >= 1 && num_edges >= 0, where, ": expected n >= 1 and m >= 0, got n = ", num_nodes,
                  ", m = ", num_edges);
    SEGRANK_CHECK(chunk_rows >= 1, "build_range_segments: chunk_rows must be >= 1, got ", chunk_rows);
    SEGRANK_CHECK(bounds.size() >= 2 && bounds.front() == 0 && bounds.back() == num_nodes, where,
                  ": segment bounds must run from 0 to n = ", num_nodes);
    for (size_t i = 1; i < bounds.size(); ++i)
        SEGRANK_CHECK(bounds[i] > bounds[i - 1], where, ": segment bounds must be strictly increasing (bounds[",
                      i, "] = ", bounds[i], ")");
    const auto S = static_cast<int64_t>(bounds.size()) - 1;
    SEGRANK_CHECK(S <= std::numeric_limits<int32_t>::max(), where, ": ", S, " segments exceed int32 ids");
    int64_t largest = 0;
    for (int64_t s = 0; s < S; ++s) largest = std::max(largest, bounds[s + 1] - bounds[s]);
    SEGRANK_CHECK(largest <= std::numeric_limits<int32_t>::max(), where, ": a segment of ", largest,
                  " nodes exceeds int32 local ids");
    auto seg_of = [&](int64_t v) {
        return static_cast<int64_t>(std::upper_bound(bounds.begin(), bounds.end(), v) - bounds.begin()) - 1;
    };

    // Pass 1: kept edges per segment (both ends in the same segment), ids checked; whether the rows
    // are sorted by user, and if so where each segment's rows start.
    std::vector<int64_t> count(static_cast<size_t>(S), 0);
    std::vector<int64_t> row_off(static_cast<size_t>(S) + 1, num_edges);
    bool sorted = true;
    int64_t prev_user = 0, next_seg = 0;
    auto for_each_chunk = [&](auto&& body) {
        for (int64_t b = 0; b < num_edges; b += chunk_rows) {
            const int64_t e = std::min(num_edges, b + chunk_rows);
            const std::vector<int64_t> rows = edges(b, e);
            SEGRANK_CHECK(static_cast<int64_t>(rows.size()) == 2 * (e - b), where, ": edge_index rows [", b, ", ",
                          e, ") returned ", rows.size(), " values");
            body(b, rows);
        }
    };
    for_each_chunk([&](int64_t b, const std::vector<int64_t>& rows) {
        for (size_t r = 0; r < rows.size() / 2; ++r) {
            const int64_t u = rows[2 * r], v = rows[2 * r + 1];
            SEGRANK_CHECK(u >= 0 && u < num_nodes && v >= 0 && v < num_nodes, where, "/edge_index: row ",
                          b + static_cast<int64_t>(r), " = (", u, ", ", v, "): expected node ids in [0, ", num_nodes,
                          ")");
            const int64_t su = seg_of(u);
            if (su == seg_of(v)) ++count[static_cast<size_t>(su)];
            sorted = sorted && u >= prev_user;
            prev_user = u;
            for (; sorted && next_seg <= su; ++next_seg) row_off[static_cast<size_t>(next_seg)] = b + static_cast<int64_t>(r);
        }
    });

    SegmentTable t(graph_id);
    // Nodes and configurable nodes: range segments in id order.
    for (size_t i = 1; i < node_config_ids.size(); ++i)
        SEGRANK_CHECK(node_config_ids[i] > node_config_ids[i - 1], where, "/node_config_ids: index ", i,
                      " not strictly increasing");
    SEGRANK_CHECK(node_config_ids.empty() || (node_config_ids.front() >= 0 && node_config_ids.back() < num_nodes),
                  where, "/node_config_ids: ids outside [0, ", num_nodes, ")");
    size_t ci = 0;
    for (int64_t s = 0; s < S; ++s) {
        const int64_t lo = bounds[static_cast<size_t>(s)], hi = bounds[static_cast<size_t>(s) + 1];
        t.first_node_.push_back(lo);
        t.num_pooled_.push_back(static_cast<int32_t>(hi - lo));
        t.node_off_.push_back(hi);
        t.list_off_.push_back(0);
        for (; ci < node_config_ids.size() && node_config_ids[ci] < hi; ++ci) {
            t.cfg_local_.push_back(static_cast<int32_t>(node_config_ids[ci] - lo));
            t.cfg_index_.push_back(static_cast<int32_t>(ci));
        }
        t.cfg_off_.push_back(static_cast<int64_t>(t.cfg_local_.size()));
    }
    auto check_all_opcodes = [&](auto&& keep) {
        for (int64_t b = 0; b < num_nodes; b += chunk_rows) {
            const int64_t e = std::min(num_nodes, b + chunk_rows);
            const std::vector<int32_t> op = opcodes(b, e);
            SEGRANK_CHECK(static_cast<int64_t>(op.size()) == e - b, where, ": node_opcode rows [", b, ", ", e,
                          ") returned ", op.size(), " values");
            check_opcodes(op, where + "/node_opcode", b);
            keep(op);
        }
    };
    if (sorted && source_backed) {
        check_all_opcodes([](const std::vector<int32_t>&) {});
        t.backed_ = true;
        t.num_graph_nodes_ = num_nodes;
        t.edge_row_off_ = std::move(row_off);
        t.edge_reader_ = edges;
        t.opcode_reader_ = opcodes;
        t.where_ = where;
        t.edge_off_.assign(static_cast<size_t>(S) + 1, 0);  // unused
        t.shrink_to_fit();
        return t;
    }
    t.wide_ = largest > kNarrowMaxNodes;
    const int64_t per_edge = t.wide_ ? 2 : 1;
    t.edge_off_.resize(static_cast<size_t>(S) + 1);
    for (int64_t s = 0; s < S; ++s)
        t.edge_off_[static_cast<size_t>(s) + 1] = t.edge_off_[static_cast<size_t>(s)] + count[static_cast<size_t>(s)];
    t.edges_.resize(static_cast<size_t>(t.edge_off_.back() * per_edge));

    // Pass 2: fill in edge order, then sort each segment by user, stably (SegmentBuilder's order).
    std::vector<int64_t> cursor(t.edge_off_.begin(), t.edge_off_.end() - 1);
    for_each_chunk([&](int64_t, const std::vector<int64_t>& rows) {
        for (size_t r = 0; r < rows.size() / 2; ++r) {
            const int64_t u = rows[2 * r], v = rows[2 * r + 1];
            const int64_t su = seg_of(u);
            if (su != seg_of(v)) continue;
            const auto lu = static_cast<uint32_t>(u - bounds[static_cast<size_t>(su)]);
            const auto lv = static_cast<uint32_t>(v - bounds[static_cast<size_t>(su)]);
            int64_t& c = cursor[static_cast<size_t>(su)];
            SEGRANK_CHECK(c < t.edge_off_[static_cast<size_t>(su) + 1], where,
                          ": edge_index changed between two reads (more kept edges in segment ", su, ")");
            if (t.wide_) {
                t.edges_[static_cast<size_t>(2 * c)] = lu;
                t.edges_[static_cast<size_t>(2 * c + 1)] = lv;
            } else {
                t.edges_[static_cast<size_t>(c)] = (lu << 16) | lv;
            }
            ++c;
        }
    });
    std::vector<std::pair<uint32_t, uint32_t>> tmp;
    for (int64_t s = 0; s < S; ++s) {
        const int64_t b = t.edge_off_[static_cast<size_t>(s)], e = t.edge_off_[static_cast<size_t>(s) + 1];
        SEGRANK_CHECK(cursor[static_cast<size_t>(s)] == e, where,
                      ": edge_index changed between two reads (fewer kept edges in segment ", s, ")");
        if (!t.wide_) {
            std::stable_sort(t.edges_.begin() + b, t.edges_.begin() + e,
                             [](uint32_t x, uint32_t y) { return (x >> 16) < (y >> 16); });
            continue;
        }
        tmp.resize(static_cast<size_t>(e - b));
        for (int64_t i = b; i < e; ++i)
            tmp[static_cast<size_t>(i - b)] = {t.edges_[static_cast<size_t>(2 * i)], t.edges_[static_cast<size_t>(2 * i + 1)]};
        std::stable_sort(tmp.begin(), tmp.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        for (int64_t i = b; i < e; ++i) {
            t.edges_[static_cast<size_t>(2 * i)] = tmp[static_cast<size_t>(i - b)].first;
            t.edges_[static_cast<size_t>(2 * i + 1)] = tmp[static_cast<size_t>(i - b)].second;
        }
    }

    // Opcodes: range segments in id order, so the table's opcodes are node_opcode.
    t.opcode_.reserve(static_cast<size_t>(num_nodes));
    check_all_opcodes([&](const std::vector<int32_t>& op) { t.opcode_.insert(t.opcode_.end(), op.begin(), op.end()); });
    t.shrink_to_fit();
    return t;
}

}  // namespace segrank
