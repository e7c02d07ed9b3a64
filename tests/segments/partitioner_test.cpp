// Partitioners (docs/gst.md#partitioners): coverage, size bound, near-equal sizes, node_splits
// handling, METIS.
#include "segments/partitioner.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "tests/segments/random_graphs.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

// Every node exactly once, ascending within segments, ordered by first id, bound respected.
void check_partition(const Partition& p, int64_t n, int64_t max_nodes) {
    REQUIRE(p.num_nodes == n);
    REQUIRE(p.offsets.front() == 0);
    REQUIRE(p.offsets.back() == n);
    std::vector<int> count(static_cast<size_t>(n), 0);
    for (int64_t s = 0; s < p.num_segments(); ++s) {
        const auto seg = p.segment(s);
        CHECK(!seg.empty());
        CHECK(static_cast<int64_t>(seg.size()) <= max_nodes);
        CHECK(std::is_sorted(seg.begin(), seg.end()));
        for (int64_t v : seg) ++count[v];
        if (s > 0) CHECK(p.segment(s - 1)[0] < seg[0]);
    }
    CHECK(std::all_of(count.begin(), count.end(), [](int c) { return c == 1; }));
    CHECK_NOTHROW(p.validate("test", max_nodes));
}

int64_t kept_edges(const GraphStructure& g, const Partition& p) {
    std::vector<int64_t> seg_of(static_cast<size_t>(g.num_nodes()));
    for (int64_t s = 0; s < p.num_segments(); ++s)
        for (int64_t v : p.segment(s)) seg_of[v] = s;
    int64_t kept = 0;
    for (int64_t e = 0; e < g.num_edges(); ++e)
        kept += seg_of[g.edge_index[2 * e]] == seg_of[g.edge_index[2 * e + 1]];
    return kept;
}

}  // namespace

TEST_CASE("contiguous partition uses S = ceil(n / max_nodes) ranges with bounds floor(i n / S)") {
    for (int64_t n : {1, 7, 999, 1000, 1001, 2500, 10007}) {
        for (int64_t max_nodes : {1, 3, 100, 1000}) {
            CAPTURE(n);
            CAPTURE(max_nodes);
            const Partition p = partition_contiguous(n, max_nodes);
            const int64_t s = (n + max_nodes - 1) / max_nodes;
            REQUIRE(p.num_segments() == s);
            for (int64_t i = 0; i <= s; ++i) CHECK(p.offsets[i] == (i * n) / s);
            check_partition(p, n, max_nodes);
            int64_t lo = n, hi = 0;
            for (int64_t i = 0; i < s; ++i) {
                lo = std::min(lo, p.offsets[i + 1] - p.offsets[i]);
                hi = std::max(hi, p.offsets[i + 1] - p.offsets[i]);
            }
            CHECK(hi - lo <= 1);  // near-equal
        }
    }
    CHECK(partition_contiguous(2500, 1000).offsets == std::vector<int64_t>{0, 833, 1666, 2500});
}

TEST_CASE("splits partition cuts long ranges and merges small neighbours greedily") {
    // splits: [0,3) [3,4) [4,10); max 4: [4,10) is cut into [4,7) [7,10); then [0,3)+[3,4) merge.
    const std::vector<int64_t> splits{0, 3, 4, 10};
    const Partition p = partition_splits(10, splits, 4);
    CHECK(p.offsets == std::vector<int64_t>{0, 4, 7, 10});
    check_partition(p, 10, 4);
    // Without node_splits (tile graphs) it equals the contiguous partition.
    CHECK(partition_splits(2500, {}, 1000).offsets == partition_contiguous(2500, 1000).offsets);
    // Repeated boundaries (empty ranges) are skipped.
    CHECK(partition_splits(6, std::vector<int64_t>{0, 2, 2, 6}, 3).offsets ==
          std::vector<int64_t>{0, 2, 4, 6});
}

TEST_CASE(
    "splits partition boundaries come from node_splits or cuts and no two neighbours fit "
    "together") {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        Rng rng(seed);
        const int64_t n = 50 + static_cast<int64_t>(rng.uniform_int(3000));
        const int64_t max_nodes = 1 + static_cast<int64_t>(rng.uniform_int(400));
        std::set<int64_t> b{0, n};
        const int k = static_cast<int>(rng.uniform_int(30));
        for (int i = 0; i < k; ++i)
            b.insert(static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(n))));
        const std::vector<int64_t> splits(b.begin(), b.end());
        CAPTURE(seed);
        const Partition p = partition_splits(n, splits, max_nodes);
        check_partition(p, n, max_nodes);
        // Allowed boundaries: node_splits and the near-equal cut points of each range.
        std::set<int64_t> allowed(splits.begin(), splits.end());
        for (size_t i = 1; i < splits.size(); ++i) {
            const int64_t len = splits[i] - splits[i - 1],
                          pieces = (len + max_nodes - 1) / max_nodes;
            for (int64_t j = 1; j < pieces; ++j) allowed.insert(splits[i - 1] + (j * len) / pieces);
        }
        for (int64_t off : p.offsets) CHECK(allowed.count(off) == 1);
        for (int64_t s = 0; s + 1 < p.num_segments(); ++s)
            CHECK(p.offsets[s + 2] - p.offsets[s] > max_nodes);
    }
}

TEST_CASE("splits partition rejects invalid node_splits naming the index") {
    CHECK_THROWS_WITH_AS(partition_splits(10, std::vector<int64_t>{1, 10}, 4),
                         doctest::Contains("node_splits[0]"), Error);
    CHECK_THROWS_WITH_AS(partition_splits(10, std::vector<int64_t>{0, 5, 9}, 4),
                         doctest::Contains("node_splits[2]"), Error);
    CHECK_THROWS_WITH_AS(partition_splits(10, std::vector<int64_t>{0, 6, 5, 10}, 4),
                         doctest::Contains("non-decreasing"), Error);
    CHECK_THROWS_AS(partition_contiguous(10, 0), Error);
    CHECK_THROWS_AS(partition_contiguous(0, 10), Error);
}

TEST_CASE("metis partition covers every node once and respects the bound on random DAGs") {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        const int64_t n = 200 + 700 * static_cast<int64_t>(seed);
        const GraphStructure g = test::random_dag(n, seed);
        for (int64_t max_nodes : {64, 250, 5000}) {
            CAPTURE(seed);
            CAPTURE(max_nodes);
            const Partition p = partition_metis(n, g.edge_index, max_nodes, 7);
            check_partition(p, n, max_nodes);
            CHECK(p.num_segments() >= (n + max_nodes - 1) / max_nodes);
            // Deterministic for a fixed seed.
            const Partition q = partition_metis(n, g.edge_index, max_nodes, 7);
            CHECK(q.offsets == p.offsets);
            CHECK(q.nodes == p.nodes);
        }
    }
}

TEST_CASE("metis partition finds dense clusters and keeps almost every edge") {
    // Four cliques-ish clusters of 50 nodes (ids interleaved so id ranges do not reveal them),
    // joined by 4 edges; max_nodes 55 -> 4 parts.
    GraphStructure g;
    g.node_opcode.assign(200, 1);
    auto id = [](int cluster, int i) { return static_cast<int64_t>(i * 4 + cluster); };
    Rng rng(3);
    for (int c = 0; c < 4; ++c)
        for (int i = 1; i < 50; ++i)
            for (int t = 0; t < 4; ++t) {
                const int j = static_cast<int>(rng.uniform_int(static_cast<uint64_t>(i)));
                g.edge_index.insert(g.edge_index.end(), {id(c, i), id(c, j)});
            }
    for (int c = 0; c + 1 < 4; ++c)
        g.edge_index.insert(g.edge_index.end(), {id(c + 1, 0), id(c, 49)});
    const Partition p = partition_metis(200, g.edge_index, 55, 1);
    check_partition(p, 200, 55);
    const Partition contiguous = partition_contiguous(200, 55);
    CHECK(kept_edges(g, p) >= g.num_edges() * 95 / 100);
    CHECK(kept_edges(g, p) > 2 * kept_edges(g, contiguous));
}

TEST_CASE("metis partition handles graphs without edges and a single part") {
    const std::vector<int64_t> no_edges;
    check_partition(partition_metis(10, no_edges, 3, 0), 10, 3);
    const GraphStructure g = test::random_dag(40, 5);
    const Partition one = partition_metis(40, g.edge_index, 100, 0);
    CHECK(one.num_segments() == 1);
    CHECK_THROWS_WITH_AS(partition_metis(3, std::vector<int64_t>{0, 3}, 2, 0),
                         doctest::Contains("edge_index[0]"), Error);
}

TEST_CASE("partition validate rejects duplicated, missing and oversized segments") {
    Partition p;
    p.num_nodes = 4;
    p.offsets = {0, 2, 4};
    p.nodes = {0, 1, 1, 3};
    CHECK_THROWS_WITH_AS(p.validate("x"), doctest::Contains("more than one place"), Error);
    p.nodes = {0, 1, 2, 3};
    CHECK_NOTHROW(p.validate("x", 2));
    CHECK_THROWS_WITH_AS(p.validate("x", 1), doctest::Contains("above max_nodes"), Error);
    p.nodes = {2, 3, 0, 1};
    CHECK_THROWS_WITH_AS(p.validate("x"), doctest::Contains("ordered by their first node"), Error);
    CHECK_THROWS_WITH_AS(parse_partition_method("kway"),
                         doctest::Contains("\"contiguous\", \"splits\", \"metis\""), Error);
    CHECK(parse_partition_method("metis") == PartitionMethod::kMetis);
}

TEST_CASE("max_nodes = 0 makes the whole graph one segment for every method") {
    const GraphStructure g = test::random_dag(300, 6);
    const std::vector<int64_t> splits{0, 100, 300};
    for (PartitionMethod m :
         {PartitionMethod::kContiguous, PartitionMethod::kSplits, PartitionMethod::kMetis}) {
        const Partition p = partition_graph(g, splits, {m, 0, 0});
        CHECK(p.num_segments() == 1);
        check_partition(p, 300, 300);
    }
    CHECK_THROWS_WITH_AS(partition_graph(g, {}, {PartitionMethod::kContiguous, -1, 0}),
                         doctest::Contains("segments.max_nodes"), Error);
}

TEST_CASE("every partitioner covers the real layout fixture within the bound") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto path = data / "npz_samples/layout_derived/layout_xla_alexnet_cleaned_derived.npz";
    const LayoutGraph g = test::load_layout_structure(path);
    REQUIRE(g.num_nodes() == 372);
    for (PartitionMethod m :
         {PartitionMethod::kContiguous, PartitionMethod::kSplits, PartitionMethod::kMetis}) {
        for (int64_t max_nodes : {16, 100, 1000}) {
            CAPTURE(to_string(m));
            CAPTURE(max_nodes);
            const Partition p = partition_graph(g, g.node_splits, {m, max_nodes, 0});
            check_partition(p, g.num_nodes(), max_nodes);
        }
    }
}

TEST_CASE("every partitioner covers the real tile fixtures within the bound") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    int files = 0;
    for (const auto& entry :
         std::filesystem::directory_iterator(data / "npz_samples/tile_xla_test")) {
        if (entry.path().extension() != ".npz") continue;
        ++files;
        const TileGraph g = load_tile_npz(entry.path(), LabelPolicy::kAllowTestZeros);
        for (PartitionMethod m :
             {PartitionMethod::kContiguous, PartitionMethod::kSplits, PartitionMethod::kMetis}) {
            for (int64_t max_nodes : {1, 4, 16}) {
                CAPTURE(entry.path().string());
                CAPTURE(to_string(m));
                CAPTURE(max_nodes);
                check_partition(partition_graph(g, {}, {m, max_nodes, 0}), g.num_nodes(),
                                max_nodes);
            }
        }
    }
    CHECK(files == 5);
}
