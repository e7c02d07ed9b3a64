// build_range_segments (see segment_table.h): the halo-free segments of a range partition built
// from chunked edge_index reads, in named passes, without holding the graph.
#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gnn/core/check.h"
#include "segments/segment_table.h"

namespace segrank {

namespace {

// The segments of a range partition: segment s holds nodes [bounds[s], bounds[s+1]).
struct RangeBounds {
    std::span<const int64_t> bounds;  // [S+1], checked by check_range_options

    int64_t segment_of(int64_t v) const {
        return static_cast<int64_t>(std::upper_bound(bounds.begin(), bounds.end(), v) -
                                    bounds.begin()) -
               1;
    }
    int64_t lo(int64_t s) const { return bounds[static_cast<size_t>(s)]; }
    int32_t size(int64_t s) const {
        return static_cast<int32_t>(bounds[static_cast<size_t>(s) + 1] - lo(s));
    }
};

// Checks the sizes, chunk_rows and bounds of `o` (messages name o.where); returns the node count
// of the largest segment.
int64_t check_range_options(const RangeSegmentsOptions& o) {
    const int64_t num_nodes = o.num_nodes, num_edges = o.num_edges, chunk_rows = o.chunk_rows;
    const std::span<const int64_t> bounds = o.bounds;
    const std::string& where = o.where;
    SEGRANK_CHECK(num_nodes >= 1 && num_edges >= 0, where,
                  ": expected n >= 1 and m >= 0, got n = ", num_nodes, ", m = ", num_edges);
    SEGRANK_CHECK(chunk_rows >= 1, "build_range_segments: chunk_rows must be >= 1, got ",
                  chunk_rows);
    SEGRANK_CHECK(bounds.size() >= 2 && bounds.front() == 0 && bounds.back() == num_nodes, where,
                  ": segment bounds must run from 0 to n = ", num_nodes);
    for (size_t i = 1; i < bounds.size(); ++i)
        SEGRANK_CHECK(bounds[i] > bounds[i - 1], where,
                      ": segment bounds must be strictly increasing (bounds[", i, "] = ", bounds[i],
                      ")");
    const auto S = static_cast<int64_t>(bounds.size()) - 1;
    SEGRANK_CHECK(S <= std::numeric_limits<int32_t>::max(), where, ": ", S,
                  " segments exceed int32 ids");
    int64_t largest = 0;
    for (int64_t s = 0; s < S; ++s) largest = std::max(largest, bounds[s + 1] - bounds[s]);
    SEGRANK_CHECK(largest <= std::numeric_limits<int32_t>::max(), where, ": a segment of ", largest,
                  " nodes exceeds int32 local ids");
    return largest;
}

// Calls body(b, rows) for each chunk of edge_index rows [b, e), rows holding their 2 (e - b) ids;
// throws when the reader returns another count.
template <typename Body>
void for_each_edge_chunk(const RangeSegmentsOptions& o, Body&& body) {
    for (int64_t b = 0; b < o.num_edges; b += o.chunk_rows) {
        const int64_t e = std::min(o.num_edges, b + o.chunk_rows);
        const std::vector<int64_t> rows = o.edges(b, e);
        SEGRANK_CHECK(static_cast<int64_t>(rows.size()) == 2 * (e - b), o.where,
                      ": edge_index rows [", b, ", ", e, ") returned ", rows.size(), " values");
        body(b, rows);
    }
}

// What pass 1 learns of the edge list.
struct EdgeScan {
    std::vector<int64_t> count;    // [S] kept edges (both ends in the segment) per segment
    std::vector<int64_t> row_off;  // [S+1] first row of each segment when `sorted`
    bool sorted = true;            // the rows are sorted by user
};

// Pass 1: checks every edge id, counts the kept edges per segment, and finds whether the rows are
// sorted by user and, if so, where each segment's rows start.
EdgeScan scan_edges(const RangeSegmentsOptions& o, const RangeBounds& rb, int64_t S) {
    EdgeScan scan;
    scan.count.assign(static_cast<size_t>(S), 0);
    scan.row_off.assign(static_cast<size_t>(S) + 1, o.num_edges);
    int64_t prev_user = 0, next_seg = 0;
    for_each_edge_chunk(o, [&](int64_t b, const std::vector<int64_t>& rows) {
        for (size_t r = 0; r < rows.size() / 2; ++r) {
            const int64_t u = rows[2 * r], v = rows[2 * r + 1];
            SEGRANK_CHECK(u >= 0 && u < o.num_nodes && v >= 0 && v < o.num_nodes, o.where,
                          "/edge_index: row ", b + static_cast<int64_t>(r), " = (", u, ", ", v,
                          "): expected node ids in [0, ", o.num_nodes, ")");
            const int64_t su = rb.segment_of(u);
            if (su == rb.segment_of(v)) ++scan.count[static_cast<size_t>(su)];
            scan.sorted = scan.sorted && u >= prev_user;
            prev_user = u;
            for (; scan.sorted && next_seg <= su; ++next_seg)
                scan.row_off[static_cast<size_t>(next_seg)] = b + static_cast<int64_t>(r);
        }
    });
    return scan;
}

// The configurable nodes of each range segment, in id order: [off[s], off[s+1]) of the lists.
struct ConfigLists {
    std::vector<int32_t> local;  // segment-local node ids
    std::vector<int32_t> index;  // positions in node_config_ids
    std::vector<size_t> off{0};  // [S+1]

    static std::span<const int32_t> part(const std::vector<int32_t>& v,
                                         const std::vector<size_t>& off, int64_t s) {
        const auto k = static_cast<size_t>(s);
        return std::span<const int32_t>(v).subspan(off[k], off[k + 1] - off[k]);
    }
    std::span<const int32_t> local_of(int64_t s) const { return part(local, off, s); }
    std::span<const int32_t> index_of(int64_t s) const { return part(index, off, s); }
};

// Checks node_config_ids (strictly increasing, in [0, n)) and splits them by segment.
ConfigLists range_config_lists(const RangeSegmentsOptions& o, const RangeBounds& rb, int64_t S) {
    const std::span<const int64_t> ids = o.node_config_ids;
    for (size_t i = 1; i < ids.size(); ++i)
        SEGRANK_CHECK(ids[i] > ids[i - 1], o.where, "/node_config_ids: index ", i,
                      " not strictly increasing");
    SEGRANK_CHECK(ids.empty() || (ids.front() >= 0 && ids.back() < o.num_nodes), o.where,
                  "/node_config_ids: ids outside [0, ", o.num_nodes, ")");
    ConfigLists c;
    for (int64_t s = 0, ci = 0; s < S; ++s) {
        const int64_t hi = o.bounds[static_cast<size_t>(s) + 1];
        for (; ci < static_cast<int64_t>(ids.size()) && ids[static_cast<size_t>(ci)] < hi; ++ci) {
            c.local.push_back(static_cast<int32_t>(ids[static_cast<size_t>(ci)] - rb.lo(s)));
            c.index.push_back(static_cast<int32_t>(ci));
        }
        c.off.push_back(c.local.size());
    }
    return c;
}

// Reads node_opcode[b0, e0) in chunks, checks each and passes it to keep(chunk).
template <typename Keep>
void read_opcodes(const RangeSegmentsOptions& o, int64_t b0, int64_t e0, Keep&& keep) {
    for (int64_t b = b0; b < e0; b += o.chunk_rows) {
        const int64_t e = std::min(e0, b + o.chunk_rows);
        const std::vector<int32_t> op = o.opcodes(b, e);
        SEGRANK_CHECK(static_cast<int64_t>(op.size()) == e - b, o.where, ": node_opcode rows [", b,
                      ", ", e, ") returned ", op.size(), " values");
        check_opcodes(op, o.where + "/node_opcode", b);
        keep(op);
    }
}

// Rows sorted by user: a table keeping each segment's row range and the readers (O(S) memory),
// after every opcode is checked.
SegmentTable source_backed_table(const RangeSegmentsOptions& o, const RangeBounds& rb, int64_t S,
                                 const EdgeScan& scan, const ConfigLists& cfg, int64_t largest) {
    read_opcodes(o, 0, o.num_nodes, [](const std::vector<int32_t>&) {});
    SegmentTable t(o.graph_id, SegmentRowSource{o.edges, o.opcodes, o.num_nodes, o.where});
    t.reserve(S, o.num_nodes, 0, largest);
    for (int64_t s = 0; s < S; ++s)
        t.append_rows(rb.lo(s), rb.size(s), scan.row_off[static_cast<size_t>(s)],
                      scan.row_off[static_cast<size_t>(s) + 1], cfg.local_of(s), cfg.index_of(s));
    t.shrink_to_fit();
    return t;
}

// Each segment's kept edges as local (user, producer) pairs in edge order, packed in 4 bytes
// (16-bit ids) or 8 when a segment is wider.
struct KeptEdges {
    bool wide = false;
    std::vector<int64_t> edge_off;  // [S+1] first kept edge of each segment
    std::vector<uint32_t> packed;   // [kept] or [kept, 2] when wide
    std::vector<int64_t> cursor;    // [S] end of what pass 2 wrote per segment
};

// Pass 2: reads the edges again and collects the kept ones by segment. Throws when the reader
// gives more kept edges in a segment than pass 1 counted.
KeptEdges collect_kept_edges(const RangeSegmentsOptions& o, const RangeBounds& rb, int64_t S,
                             const EdgeScan& scan, int64_t largest) {
    KeptEdges k;
    k.wide = largest > kNarrowMaxNodes;
    k.edge_off.assign(static_cast<size_t>(S) + 1, 0);
    for (int64_t s = 0; s < S; ++s)
        k.edge_off[static_cast<size_t>(s) + 1] =
            k.edge_off[static_cast<size_t>(s)] + scan.count[static_cast<size_t>(s)];
    k.packed.resize(static_cast<size_t>(k.edge_off.back() * (k.wide ? 2 : 1)));
    k.cursor.assign(k.edge_off.begin(), k.edge_off.end() - 1);
    for_each_edge_chunk(o, [&](int64_t, const std::vector<int64_t>& rows) {
        for (size_t r = 0; r < rows.size() / 2; ++r) {
            const int64_t u = rows[2 * r], v = rows[2 * r + 1];
            const int64_t su = rb.segment_of(u);
            if (su != rb.segment_of(v)) continue;
            const auto lu = static_cast<uint32_t>(u - rb.lo(su));
            const auto lv = static_cast<uint32_t>(v - rb.lo(su));
            int64_t& c = k.cursor[static_cast<size_t>(su)];
            SEGRANK_CHECK(c < k.edge_off[static_cast<size_t>(su) + 1], o.where,
                          ": edge_index changed between two reads (more kept edges in segment ", su,
                          ")");
            if (k.wide) {
                k.packed[static_cast<size_t>(2 * c)] = lu;
                k.packed[static_cast<size_t>(2 * c + 1)] = lv;
            } else {
                k.packed[static_cast<size_t>(c)] = (lu << 16) | lv;
            }
            ++c;
        }
    });
    return k;
}

// Segment s's kept edges as (user, producer) local ids, sorted by user stably (SegmentBuilder's
// order). Throws when the reader gave fewer kept edges than pass 1 counted.
void sorted_segment_edges(const RangeSegmentsOptions& o, const KeptEdges& k, int64_t s,
                          std::vector<std::pair<uint32_t, uint32_t>>& pairs,
                          std::vector<int32_t>& user, std::vector<int32_t>& producer) {
    const int64_t b = k.edge_off[static_cast<size_t>(s)],
                  e = k.edge_off[static_cast<size_t>(s) + 1];
    SEGRANK_CHECK(k.cursor[static_cast<size_t>(s)] == e, o.where,
                  ": edge_index changed between two reads (fewer kept edges in segment ", s, ")");
    pairs.resize(static_cast<size_t>(e - b));
    for (int64_t i = b; i < e; ++i) {
        const auto j = static_cast<size_t>(i);
        pairs[static_cast<size_t>(i - b)] =
            k.wide ? std::pair{k.packed[2 * j], k.packed[2 * j + 1]}
                   : std::pair{k.packed[j] >> 16, k.packed[j] & 0xffffu};
    }
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    user.resize(pairs.size());
    producer.resize(pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
        user[i] = static_cast<int32_t>(pairs[i].first);
        producer[i] = static_cast<int32_t>(pairs[i].second);
    }
}

// The packed table: each segment's sorted kept edges appended with its opcodes.
SegmentTable packed_table(const RangeSegmentsOptions& o, const RangeBounds& rb, int64_t S,
                          const KeptEdges& k, const ConfigLists& cfg, int64_t largest) {
    SegmentTable t(o.graph_id);
    t.reserve(S, o.num_nodes, k.edge_off.back(), largest);
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    std::vector<int32_t> user, producer, op;
    for (int64_t s = 0; s < S; ++s) {
        sorted_segment_edges(o, k, s, pairs, user, producer);
        // Range segments in id order: the segment's opcodes are node_opcode[lo, hi).
        op.clear();
        read_opcodes(o, rb.lo(s), rb.lo(s) + rb.size(s), [&](const std::vector<int32_t>& part) {
            op.insert(op.end(), part.begin(), part.end());
        });
        t.append_range(rb.lo(s), rb.size(s), user, producer, cfg.local_of(s), cfg.index_of(s), op);
    }
    t.shrink_to_fit();
    return t;
}

}  // namespace

SegmentTable build_range_segments(const RangeSegmentsOptions& o) {
    const int64_t largest = check_range_options(o);
    const auto S = static_cast<int64_t>(o.bounds.size()) - 1;
    const RangeBounds rb{o.bounds};
    const EdgeScan scan = scan_edges(o, rb, S);
    const ConfigLists cfg = range_config_lists(o, rb, S);
    if (scan.sorted && o.source_backed) return source_backed_table(o, rb, S, scan, cfg, largest);
    const KeptEdges kept = collect_kept_edges(o, rb, S, scan, largest);
    return packed_table(o, rb, S, kept, cfg, largest);
}

}  // namespace segrank
