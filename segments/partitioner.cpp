// Contiguous and node_splits partitioners, Partition validation and dispatch
// (docs/gst.md#partitioners). METIS lives in partitioner_metis.cpp (the only metis.h includer).
#include "segments/partitioner.h"

#include <algorithm>
#include <numeric>

#include "gnn/core/check.h"

namespace segrank {

namespace {
constexpr EnumName<PartitionMethod> kPartitionNames[] = {
    {PartitionMethod::kContiguous, "contiguous"},
    {PartitionMethod::kSplits, "splits"},
    {PartitionMethod::kMetis, "metis"}};
}  // namespace

std::span<const EnumName<PartitionMethod>> enum_names(PartitionMethod) { return kPartitionNames; }
PartitionMethod parse_partition_method(std::string_view name) {
    return parse_enum<PartitionMethod>("partition", name);
}
std::string_view to_string(PartitionMethod method) { return enum_name(method); }

int64_t Partition::max_segment_size() const {
    int64_t best = 0;
    for (int64_t s = 0; s < num_segments(); ++s) best = std::max(best, offsets[s + 1] - offsets[s]);
    return best;
}

void Partition::validate(const std::string& where, int64_t max_nodes) const {
    SEGRANK_CHECK(num_nodes >= 1, where, ": partition num_nodes: expected >= 1, got ", num_nodes);
    SEGRANK_CHECK(offsets.size() >= 2, where,
                  ": partition offsets: expected at least 2 entries, got ", offsets.size());
    SEGRANK_CHECK(offsets.front() == 0, where, ": partition offsets[0]: expected 0, got ",
                  offsets.front());
    SEGRANK_CHECK(offsets.back() == num_nodes, where,
                  ": partition offsets[last]: expected n = ", num_nodes, ", got ", offsets.back());
    SEGRANK_CHECK(static_cast<int64_t>(nodes.size()) == num_nodes, where,
                  ": partition nodes: expected ", num_nodes, " entries, got ", nodes.size());
    std::vector<uint8_t> seen(static_cast<size_t>(num_nodes), 0);
    int64_t prev_first = -1;
    for (int64_t s = 0; s < num_segments(); ++s) {
        const int64_t b = offsets[s], e = offsets[s + 1];
        SEGRANK_CHECK(e > b, where, ": partition offsets: segment ", s,
                      " is empty or offsets decrease (", b, " -> ", e, ")");
        SEGRANK_CHECK(max_nodes <= 0 || e - b <= max_nodes, where, ": partition segment ", s,
                      " has ", e - b, " nodes, above max_nodes = ", max_nodes);
        for (int64_t i = b; i < e; ++i) {
            const int64_t v = nodes[i];
            SEGRANK_CHECK(v >= 0 && v < num_nodes, where, ": partition nodes[", i, "] = ", v,
                          ": expected a node id in [0, ", num_nodes, ")");
            SEGRANK_CHECK(i == b || nodes[i - 1] < v, where, ": partition nodes[", i,
                          "]: ids of segment ", s, " must be strictly ascending");
            SEGRANK_CHECK(!seen[v], where, ": partition nodes[", i, "] = ", v,
                          " appears in more than one place");
            seen[v] = 1;
        }
        SEGRANK_CHECK(nodes[b] > prev_first, where, ": partition segment ", s,
                      ": segments must be ordered by their first node id");
        prev_first = nodes[b];
    }
}

namespace {

// Appends near-equal pieces of [lo, hi) (each <= max_nodes) as boundaries to `bounds`.
void append_near_equal(std::vector<int64_t>& bounds, int64_t lo, int64_t hi, int64_t max_nodes) {
    const int64_t len = hi - lo;
    const int64_t pieces = std::max<int64_t>(1, (len + max_nodes - 1) / max_nodes);
    for (int64_t i = 1; i <= pieces; ++i) bounds.push_back(lo + (i * len) / pieces);
}

}  // namespace

std::vector<int64_t> contiguous_bounds(int64_t num_nodes, int64_t max_nodes) {
    SEGRANK_CHECK(num_nodes >= 1, "partition_contiguous: expected a graph with >= 1 node, got ",
                  num_nodes);
    SEGRANK_CHECK(max_nodes >= 1, "segments.max_nodes: expected >= 1, got ", max_nodes);
    std::vector<int64_t> bounds{0};
    append_near_equal(bounds, 0, num_nodes, max_nodes);
    return bounds;
}

std::vector<int64_t> splits_bounds(int64_t num_nodes, std::span<const int64_t> node_splits,
                                   int64_t max_nodes) {
    SEGRANK_CHECK(num_nodes >= 1, "partition_splits: expected a graph with >= 1 node, got ",
                  num_nodes);
    SEGRANK_CHECK(max_nodes >= 1, "segments.max_nodes: expected >= 1, got ", max_nodes);
    std::vector<int64_t> splits(node_splits.begin(), node_splits.end());
    if (splits.empty()) splits = {0, num_nodes};
    SEGRANK_CHECK(splits.front() == 0, "node_splits[0]: expected 0, got ", splits.front());
    SEGRANK_CHECK(splits.back() == num_nodes, "node_splits[", splits.size() - 1,
                  "]: expected the node count ", num_nodes, ", got ", splits.back());
    for (size_t i = 1; i < splits.size(); ++i)
        SEGRANK_CHECK(splits[i] >= splits[i - 1], "node_splits[", i, "] = ", splits[i],
                      ": expected non-decreasing boundaries (previous ", splits[i - 1], ")");
    // Cut: every non-empty range into near-equal pieces of at most max_nodes.
    std::vector<int64_t> cut{0};
    for (size_t i = 1; i < splits.size(); ++i)
        if (splits[i] > splits[i - 1]) append_near_equal(cut, splits[i - 1], splits[i], max_nodes);
    // Merge: grow the current range with its right neighbour while the union fits.
    std::vector<int64_t> bounds{0};
    int64_t start = 0;
    for (size_t i = 1; i + 1 < cut.size(); ++i) {
        if (cut[i + 1] - start > max_nodes) {
            bounds.push_back(cut[i]);
            start = cut[i];
        }
    }
    bounds.push_back(num_nodes);
    return bounds;
}

Partition partition_from_bounds(int64_t num_nodes, std::span<const int64_t> bounds) {
    Partition p;
    p.num_nodes = num_nodes;
    p.offsets.assign(bounds.begin(), bounds.end());
    p.nodes.resize(static_cast<size_t>(num_nodes));
    std::iota(p.nodes.begin(), p.nodes.end(), int64_t{0});
    return p;
}

Partition partition_contiguous(int64_t num_nodes, int64_t max_nodes) {
    return partition_from_bounds(num_nodes, contiguous_bounds(num_nodes, max_nodes));
}

Partition partition_splits(int64_t num_nodes, std::span<const int64_t> node_splits,
                           int64_t max_nodes) {
    return partition_from_bounds(num_nodes, splits_bounds(num_nodes, node_splits, max_nodes));
}

bool is_range_method(PartitionMethod method) {
    return method == PartitionMethod::kContiguous || method == PartitionMethod::kSplits;
}

std::vector<int64_t> range_partition_bounds(int64_t num_nodes, std::span<const int64_t> node_splits,
                                            const PartitionParams& params) {
    SEGRANK_CHECK(is_range_method(params.method), "range_partition_bounds: segments.partition = \"",
                  to_string(params.method), "\" does not cut id ranges");
    const int64_t bound = effective_max_nodes(num_nodes, params);
    return params.method == PartitionMethod::kContiguous
               ? contiguous_bounds(num_nodes, bound)
               : splits_bounds(num_nodes, node_splits, bound);
}

int64_t effective_max_nodes(int64_t num_nodes, const PartitionParams& params) {
    SEGRANK_CHECK(params.max_nodes >= 0,
                  "segments.max_nodes: expected >= 0 (0 = whole graph), got ", params.max_nodes);
    return params.max_nodes == 0 ? std::max<int64_t>(num_nodes, 1) : params.max_nodes;
}

Partition partition_graph(const GraphStructure& graph, std::span<const int64_t> node_splits,
                          const PartitionParams& params) {
    const int64_t n = graph.num_nodes();
    const int64_t bound = effective_max_nodes(n, params);
    Partition p;
    switch (params.method) {
        case PartitionMethod::kContiguous:
            p = partition_contiguous(n, bound);
            break;
        case PartitionMethod::kSplits:
            p = partition_splits(n, node_splits, bound);
            break;
        case PartitionMethod::kMetis:
            p = partition_metis(n, graph.edge_index, bound, params.metis_seed);
            break;
    }
    p.validate(str(graph.source.string(), " (", graph.name, ")"), bound);
    return p;
}

}  // namespace segrank
