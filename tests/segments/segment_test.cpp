// Segments: induced local edges, halo = exactly the h-hop neighbourhood, configurable-node mapping.
#include "segments/segment.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "tests/segments/random_graphs.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

using Pairs = std::multiset<std::pair<int64_t, int64_t>>;

// Edges of the whole graph with both ends in `nodes`, as global (user, producer) pairs.
Pairs induced_edges(const GraphStructure& g, std::span<const int64_t> nodes) {
    std::set<int64_t> in(nodes.begin(), nodes.end());
    Pairs out;
    for (int64_t e = 0; e < g.num_edges(); ++e) {
        const int64_t u = g.edge_index[2 * e], v = g.edge_index[2 * e + 1];
        if (in.count(u) && in.count(v)) out.emplace(u, v);
    }
    return out;
}

Pairs segment_edges_global(const Segment& s) {
    Pairs out;
    for (int64_t i = 0; i < s.num_edges(); ++i)
        out.emplace(s.nodes()[s.edge_user()[i]], s.nodes()[s.edge_producer()[i]]);
    return out;
}

// Checks one graph's segments against oracles for halo, edges, both Csr directions and config ids.
void check_segments(const GraphStructure& g, std::span<const int64_t> config_ids,
                    const std::vector<Segment>& segs, const Partition& p, int32_t halo_hops) {
    REQUIRE(static_cast<int64_t>(segs.size()) == p.num_segments());
    std::vector<int64_t> config_pos(static_cast<size_t>(g.num_nodes()), -1);
    for (size_t i = 0; i < config_ids.size(); ++i)
        config_pos[config_ids[i]] = static_cast<int64_t>(i);
    for (const Segment& s : segs) {
        CAPTURE(s.segment_id());
        const auto pooled = p.segment(s.segment_id());
        CHECK(std::equal(s.pooled_nodes().begin(), s.pooled_nodes().end(), pooled.begin(),
                         pooled.end()));
        // Halo: exactly the nodes at undirected distance 1..h from the pooled set.
        const auto dist = test::hop_distance(g, std::vector<int64_t>(pooled.begin(), pooled.end()));
        std::vector<int64_t> expect_halo;
        for (int64_t v = 0; v < g.num_nodes(); ++v)
            if (dist[v] >= 1 && dist[v] <= halo_hops) expect_halo.push_back(v);
        CHECK(std::vector<int64_t>(s.halo_nodes().begin(), s.halo_nodes().end()) == expect_halo);
        CHECK(segment_edges_global(s) == induced_edges(g, s.nodes()));
        // Both directions: operands row u holds v for each edge (u, v); users is its transpose.
        CHECK(s.operands().nnz() == s.num_edges());
        CHECK(s.users().nnz() == s.num_edges());
        for (int64_t i = 0; i < s.num_edges(); ++i) {
            const auto ops = s.operands().row(s.edge_user()[i]);
            const auto users = s.users().row(s.edge_producer()[i]);
            CHECK(std::find(ops.begin(), ops.end(), s.edge_producer()[i]) != ops.end());
            CHECK(std::find(users.begin(), users.end(), s.edge_user()[i]) != users.end());
        }
        // Configurable nodes: every local node with a config position, in local order.
        std::vector<int32_t> expect_local, expect_index;
        for (int32_t l = 0; l < s.num_nodes(); ++l)
            if (config_pos[s.nodes()[l]] >= 0) {
                expect_local.push_back(l);
                expect_index.push_back(static_cast<int32_t>(config_pos[s.nodes()[l]]));
            }
        CHECK(std::vector<int32_t>(s.config_local().begin(), s.config_local().end()) ==
              expect_local);
        CHECK(std::vector<int32_t>(s.config_index().begin(), s.config_index().end()) ==
              expect_index);
        CHECK(s.config_independent() == expect_local.empty());
    }
}

}  // namespace

TEST_CASE("segments keep only internal edges and halo nodes are exactly the h-hop neighbourhood") {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        const GraphStructure g = test::random_dag(300 + 50 * static_cast<int64_t>(seed), seed);
        const auto config_ids = test::every_nth(g.num_nodes(), 7, 3);
        for (PartitionMethod m : {PartitionMethod::kContiguous, PartitionMethod::kMetis}) {
            for (int32_t h : {0, 1, 2}) {
                CAPTURE(seed);
                CAPTURE(h);
                CAPTURE(to_string(m));
                const PartitionParams params{m, 60, 0};
                Partition p = partition_graph(g, {}, params);
                SegmentBuilder b(g, config_ids, p, /*graph_id=*/static_cast<int64_t>(seed), h);
                const auto segs = b.build_all();
                check_segments(g, config_ids, segs, p, h);
                for (const Segment& s : segs) CHECK(s.graph_id() == static_cast<int64_t>(seed));
                if (h == 0) {
                    int64_t kept = 0;
                    for (const Segment& s : segs) kept += s.num_edges();
                    CHECK(kept < g.num_edges());  // cross-segment edges were dropped
                }
            }
        }
    }
}

TEST_CASE("a single segment is the whole graph with identical adjacency") {
    const GraphStructure g = test::random_dag(500, 9);
    SegmentBuilder builder(g, {}, partition_graph(g, {}, {PartitionMethod::kContiguous, 1000, 0}),
                           0, 2);
    const auto segs = builder.build_all();
    REQUIRE(segs.size() == 1);
    const Segment& s = segs[0];
    CHECK(s.num_nodes() == 500);
    CHECK(s.num_pooled() == 500);
    CHECK(s.num_halo() == 0);
    CHECK(s.num_edges() == g.num_edges());
    const GraphCsr full = build_graph_csr(g.num_nodes(), g.edge_index);
    CHECK(std::ranges::equal(s.operands().indptr(), full.operands.indptr()));
    CHECK(std::ranges::equal(s.operands().indices(), full.operands.indices()));
    CHECK(std::ranges::equal(s.users().indptr(), full.users.indptr()));
    CHECK(std::ranges::equal(s.users().indices(), full.users.indices()));
    CHECK(s.config_independent());  // tile graph: no configurable nodes
    CHECK(s.memory_bytes() > 0);
}

TEST_CASE("segment builder streams segments one at a time with identical results") {
    const GraphStructure g = test::random_dag(400, 4);
    const auto config_ids = test::every_nth(400, 5);
    SegmentBuilder b(g, config_ids, partition_contiguous(400, 64), 3, 1);
    const auto all = b.build_all();
    for (int32_t s = b.num_segments() - 1; s >= 0; --s) {
        const Segment one = b.build(s);
        CHECK(std::ranges::equal(one.nodes(), all[s].nodes()));
        CHECK(std::ranges::equal(one.edge_user(), all[s].edge_user()));
        CHECK(std::ranges::equal(one.edge_producer(), all[s].edge_producer()));
        CHECK(std::ranges::equal(one.config_index(), all[s].config_index()));
    }
    CHECK_THROWS_AS(b.build(b.num_segments()), Error);
}

TEST_CASE("segment builder rejects inconsistent inputs with named fields") {
    const GraphStructure g = test::random_dag(50, 2);
    CHECK_THROWS_WITH_AS(
        SegmentBuilder(g, std::vector<int64_t>{3, 60}, partition_contiguous(50, 10), 0, 0),
        doctest::Contains("node_config_ids[1]"), Error);
    CHECK_THROWS_WITH_AS(SegmentBuilder(g, {}, partition_contiguous(49, 10), 0, 0),
                         doctest::Contains("partition"), Error);
    CHECK_THROWS_WITH_AS(SegmentBuilder(g, {}, partition_contiguous(50, 10), 0, -1),
                         doctest::Contains("segments.halo_hops"), Error);
    CHECK_THROWS_WITH_AS(Segment(0, 0, {5, 6}, 2, {0}, {2}, {}, {}),
                         doctest::Contains("edge_producer[0] = 2"), Error);
    CHECK_THROWS_WITH_AS(Segment(0, 0, {5, 6}, 3, {}, {}, {}, {}), doctest::Contains("num_pooled"),
                         Error);
}

TEST_CASE("segments of the real layout fixture map every configurable node once") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto path = data / "npz_samples/layout_derived/layout_xla_alexnet_cleaned_derived.npz";
    const LayoutGraph g = test::load_layout_structure(path);
    REQUIRE(g.num_nodes() == 372);
    for (PartitionMethod m :
         {PartitionMethod::kContiguous, PartitionMethod::kSplits, PartitionMethod::kMetis}) {
        CAPTURE(to_string(m));
        const PartitionParams params{m, 40, 0};
        const Partition p = partition_graph(g, g.node_splits, params);
        SegmentBuilder b(g, g.node_config_ids, p, 0, 1);
        const auto segs = b.build_all();
        check_segments(g, g.node_config_ids, segs, p, 1);
        // Counting pooled configurable nodes only: each appears in exactly one segment.
        std::vector<int> seen(static_cast<size_t>(g.num_config_nodes()), 0);
        for (const Segment& s : segs)
            for (size_t i = 0; i < s.config_local().size(); ++i)
                if (s.config_local()[i] < s.num_pooled()) ++seen[s.config_index()[i]];
        CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    }
}
