// SegmentTable (compact segments rebuilt on use) and build_range_segments (segments of a range
// partition built from chunked edge reads), checked against SegmentBuilder.
#include "segments/segment_table.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <ranges>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"
#include "tests/segments/random_graphs.h"

namespace segrank {
namespace {

void check_equal(const Segment& a, const Segment& b) {
    CHECK(a.segment_id() == b.segment_id());
    CHECK(a.graph_id() == b.graph_id());
    CHECK(a.num_pooled() == b.num_pooled());
    CHECK(std::ranges::equal(a.nodes(), b.nodes()));
    CHECK(std::ranges::equal(a.edge_user(), b.edge_user()));
    CHECK(std::ranges::equal(a.edge_producer(), b.edge_producer()));
    CHECK(std::ranges::equal(a.config_local(), b.config_local()));
    CHECK(std::ranges::equal(a.config_index(), b.config_index()));
    CHECK(std::ranges::equal(a.operands().indptr(), b.operands().indptr()));
    CHECK(std::ranges::equal(a.operands().indices(), b.operands().indices()));
    CHECK(std::ranges::equal(a.users().indices(), b.users().indices()));
}

// Edge rows in a seeded random order (stores need not sort edges), opcodes in 0..120.
GraphStructure shuffled_graph(int64_t n, uint64_t seed) {
    GraphStructure g = test::random_dag(n, seed, 4, 30);
    const int64_t m = g.num_edges();
    std::vector<int64_t> perm(static_cast<size_t>(m));
    std::iota(perm.begin(), perm.end(), 0);
    Rng rng(seed + 99);
    for (int64_t i = m - 1; i > 0; --i)
        std::swap(perm[static_cast<size_t>(i)],
                  perm[rng.uniform_int(static_cast<uint64_t>(i + 1))]);
    std::vector<int64_t> e(g.edge_index.size());
    for (int64_t i = 0; i < m; ++i) {
        e[static_cast<size_t>(2 * i)] =
            g.edge_index[static_cast<size_t>(2 * perm[static_cast<size_t>(i)])];
        e[static_cast<size_t>(2 * i + 1)] =
            g.edge_index[static_cast<size_t>(2 * perm[static_cast<size_t>(i)] + 1)];
    }
    g.edge_index = std::move(e);
    for (int64_t v = 0; v < n; ++v)
        g.node_opcode[static_cast<size_t>(v)] = static_cast<int32_t>((v * 37) % 121);
    return g;
}

EdgeRangeReader edge_reader(const GraphStructure& g, int64_t* calls = nullptr,
                            int64_t* largest = nullptr) {
    return [&g, calls, largest](int64_t b, int64_t e) {
        if (calls) ++*calls;
        if (largest) *largest = std::max(*largest, e - b);
        return std::vector<int64_t>(g.edge_index.begin() + 2 * b, g.edge_index.begin() + 2 * e);
    };
}

OpcodeRangeReader opcode_reader(const GraphStructure& g) {
    return [&g](int64_t b, int64_t e) {
        return std::vector<int32_t>(g.node_opcode.begin() + b, g.node_opcode.begin() + e);
    };
}

std::vector<int32_t> opcodes_of(const GraphStructure& g, const Segment& s) {
    std::vector<int32_t> op;
    for (int64_t v : s.nodes()) op.push_back(g.node_opcode[static_cast<size_t>(v)]);
    return op;
}

TEST_CASE(
    "a SegmentTable returns every appended segment unchanged, with halo and metis-like node "
    "lists") {
    const GraphStructure g = shuffled_graph(600, 3);
    const std::vector<int64_t> config_ids = test::every_nth(600, 7, 2);
    for (int32_t halo : {0, 2}) {
        CAPTURE(halo);
        SegmentBuilder b(g, config_ids, partition_metis(600, g.edge_index, 80, 0), 5, halo);
        SegmentTable t(5);
        std::vector<Segment> built;
        for (int32_t s = 0; s < b.num_segments(); ++s) {
            built.push_back(b.build(s));
            t.append(built.back(), opcodes_of(g, built.back()));
        }
        REQUIRE(t.num_segments() == b.num_segments());
        std::vector<int32_t> op;
        for (int32_t s = 0; s < t.num_segments(); ++s) {
            check_equal(t.segment(s), built[static_cast<size_t>(s)]);
            t.opcodes(s, op);
            CHECK(op == opcodes_of(g, built[static_cast<size_t>(s)]));
            CHECK(t.config_independent(s) == built[static_cast<size_t>(s)].config_independent());
        }
        CHECK_FALSE(t.wide_edges());
        int64_t full = 0;
        for (const Segment& s : built) full += s.memory_bytes();
        CHECK(t.memory_bytes() < full);
    }
}

TEST_CASE(
    "build_range_segments equals SegmentBuilder for contiguous and splits bounds across chunk "
    "edges") {
    const int64_t n = 1500;
    const GraphStructure g = shuffled_graph(n, 11);
    const std::vector<int64_t> config_ids = test::every_nth(n, 13, 5);
    const std::vector<int64_t> splits = {0, 10, 10, 400, 401, 990, 1500};
    for (const auto& bounds :
         {contiguous_bounds(n, 128), splits_bounds(n, splits, 200), contiguous_bounds(n, n)}) {
        CAPTURE(bounds.size());
        SegmentBuilder ref(g, config_ids, partition_from_bounds(n, bounds), 9, 0);
        for (int64_t chunk : {int64_t{1}, int64_t{7}, int64_t{1} << 16}) {
            CAPTURE(chunk);
            int64_t calls = 0, largest = 0;
            const SegmentTable t = build_range_segments({.num_nodes = n,
                                                         .num_edges = g.num_edges(),
                                                         .bounds = bounds,
                                                         .node_config_ids = config_ids,
                                                         .graph_id = 9,
                                                         .edges = edge_reader(g, &calls, &largest),
                                                         .opcodes = opcode_reader(g),
                                                         .where = "test",
                                                         .chunk_rows = chunk});
            REQUIRE(t.num_segments() == ref.num_segments());
            CHECK_FALSE(t.source_backed());  // shuffled rows: edges packed into the table
            CHECK(largest <= chunk);
            CHECK(calls == 2 * ((g.num_edges() + chunk - 1) / chunk));  // two passes
            std::vector<int32_t> op;
            for (int32_t s = 0; s < t.num_segments(); ++s) {
                const Segment want = ref.build(s);
                check_equal(t.segment(s), want);
                t.opcodes(s, op);
                CHECK(op == opcodes_of(g, want));
            }
        }
    }
}

TEST_CASE(
    "edge lists sorted by user give a source-backed table that re-reads each segment's rows on "
    "use") {
    const int64_t n = 3000;
    GraphStructure g = test::random_dag(n, 21, 4, 40);  // rows sorted by user, as TpuGraphs files
    for (int64_t v = 0; v < n; ++v)
        g.node_opcode[static_cast<size_t>(v)] = static_cast<int32_t>((v * 7) % 121);
    const std::vector<int64_t> config_ids = test::every_nth(n, 17, 3);
    const std::vector<int64_t> bounds = contiguous_bounds(n, 250);
    int64_t calls = 0, largest = 0;
    RangeSegmentsOptions opt{.num_nodes = n,
                             .num_edges = g.num_edges(),
                             .bounds = bounds,
                             .node_config_ids = config_ids,
                             .graph_id = 4,
                             .edges = edge_reader(g, &calls, &largest),
                             .opcodes = opcode_reader(g),
                             .where = "test",
                             .chunk_rows = 500};
    const SegmentTable backed = build_range_segments(opt);
    opt.edges = edge_reader(g);
    opt.source_backed = false;
    const SegmentTable packed = build_range_segments(opt);
    CHECK(backed.source_backed());
    CHECK_FALSE(packed.source_backed());
    CHECK(calls == (g.num_edges() + 499) / 500);  // one pass only
    CHECK(backed.memory_bytes() < 4096);          // O(S) offsets
    CHECK(packed.memory_bytes() > g.num_edges() * 2);
    REQUIRE(backed.num_segments() == packed.num_segments());
    std::vector<int32_t> a, b;
    for (int32_t s = 0; s < backed.num_segments(); ++s) {
        calls = 0;
        largest = 0;
        const Segment x = backed.segment(s);
        CHECK(calls == 1);  // one read of the segment's rows
        CHECK(largest < g.num_edges() / 4);
        check_equal(x, packed.segment(s));
        backed.opcodes(s, a);
        packed.opcodes(s, b);
        CHECK(a == b);
        CHECK(backed.config_independent(s) == packed.config_independent(s));
    }
    SegmentTable copy = backed;
    CHECK_THROWS_WITH(copy.append(backed.segment(0), a), doctest::Contains("source-backed"));
    // A source that changed after prepare is refused, not silently used.
    g.edge_index[1] = n + 5;  // row 0: producer out of range
    CHECK_THROWS_WITH(backed.segment(0), doctest::Contains("changed since the graph was prepared"));
}

TEST_CASE(
    "append_rows builds a source-backed table segment by segment and refuses rows that do not "
    "continue") {
    const int64_t n = 900;
    const GraphStructure g = test::random_dag(n, 8, 4, 20);  // rows sorted by user
    const std::vector<int64_t> bounds = contiguous_bounds(n, 300);
    const std::vector<int64_t> config_ids = {10, 350, 899};
    const SegmentTable built = build_range_segments({.num_nodes = n,
                                                     .num_edges = g.num_edges(),
                                                     .bounds = bounds,
                                                     .node_config_ids = config_ids,
                                                     .graph_id = 2,
                                                     .edges = edge_reader(g),
                                                     .opcodes = opcode_reader(g),
                                                     .where = "test"});
    REQUIRE(built.source_backed());
    // The rows of segment s are those whose user lies in [bounds[s], bounds[s+1]).
    std::vector<int64_t> row_off;
    for (int64_t b : bounds) {
        int64_t r = 0;
        while (r < g.num_edges() && g.edge_index[static_cast<size_t>(2 * r)] < b) ++r;
        row_off.push_back(r);
    }
    SegmentTable t(2, SegmentRowSource{edge_reader(g), opcode_reader(g), n, "test"});
    t.reserve(3, n, 0, 300);
    const std::vector<int32_t> cl0 = {10}, ci0 = {0}, cl1 = {50}, ci1 = {1}, cl2 = {299}, ci2 = {2};
    t.append_rows(0, 300, row_off[0], row_off[1], cl0, ci0);
    t.append_rows(300, 300, row_off[1], row_off[2], cl1, ci1);
    t.append_rows(600, 300, row_off[2], row_off[3], cl2, ci2);
    REQUIRE(t.num_segments() == 3);
    CHECK(t.source_backed());
    std::vector<int32_t> a, b;
    for (int32_t s = 0; s < 3; ++s) {
        check_equal(t.segment(s), built.segment(s));
        t.opcodes(s, a);
        built.opcodes(s, b);
        CHECK(a == b);
    }
    CHECK_THROWS_WITH(t.append_rows(900, 10, row_off[3], row_off[3], {}, {}),
                      doctest::Contains("outside [0, 900)"));
    CHECK_THROWS_WITH(t.append_rows(0, 10, 0, 5, {}, {}), doctest::Contains("do not continue"));
    SegmentTable fresh(2, SegmentRowSource{edge_reader(g), opcode_reader(g), n, "test"});
    const std::vector<int32_t> unsorted = {5, 3}, two = {0, 1};
    CHECK_THROWS_WITH(fresh.append_rows(0, 10, 0, row_off[0], unsorted, two),
                      doctest::Contains("config_local[1] = 3"));
    SegmentTable packed(2);
    CHECK_THROWS_WITH(packed.append_rows(0, 10, 0, 0, {}, {}),
                      doctest::Contains("needs a source-backed segment table"));
    CHECK_THROWS_WITH(SegmentTable(2, SegmentRowSource{}),
                      doctest::Contains("needs edge and opcode readers"));
}

TEST_CASE(
    "segments above 65536 nodes switch the table to two words per edge and still round-trip") {
    const int64_t n = 70000;
    const GraphStructure g = shuffled_graph(n, 5);
    const std::vector<int64_t> config_ids = test::every_nth(n, 1000);
    const std::vector<int64_t> bounds = {0, 100, n};  // one small segment, then one of 69900 nodes
    const SegmentTable t = build_range_segments({.num_nodes = n,
                                                 .num_edges = g.num_edges(),
                                                 .bounds = bounds,
                                                 .node_config_ids = config_ids,
                                                 .graph_id = 1,
                                                 .edges = edge_reader(g),
                                                 .opcodes = opcode_reader(g),
                                                 .where = "test"});
    CHECK(t.wide_edges());
    SegmentBuilder ref(g, config_ids, partition_from_bounds(n, bounds), 1, 0);
    for (int32_t s = 0; s < 2; ++s) check_equal(t.segment(s), ref.build(s));
    // Appending a large segment to a narrow table widens the earlier ones in place.
    SegmentTable a(1);
    const Segment small = ref.build(0), large = ref.build(1);
    a.append(small, opcodes_of(g, small));
    CHECK_FALSE(a.wide_edges());
    a.append(large, opcodes_of(g, large));
    CHECK(a.wide_edges());
    check_equal(a.segment(0), small);
    check_equal(a.segment(1), large);
}

TEST_CASE(
    "build_range_segments names the graph and row for bad edges, bounds, opcodes and short reads") {
    GraphStructure g = shuffled_graph(200, 2);
    const std::vector<int64_t> bounds = contiguous_bounds(200, 50);
    auto options = [&](std::span<const int64_t> b) {
        return RangeSegmentsOptions{.num_nodes = 200,
                                    .num_edges = g.num_edges(),
                                    .bounds = b,
                                    .node_config_ids = {},
                                    .graph_id = 0,
                                    .edges = edge_reader(g),
                                    .opcodes = opcode_reader(g),
                                    .where = "store.h5 (g1)",
                                    .chunk_rows = 16};
    };
    auto build = [&](std::span<const int64_t> b) { return build_range_segments(options(b)); };
    CHECK_NOTHROW(build(bounds));
    const std::vector<int64_t> not_to_n = {0, 100, 150};
    CHECK_THROWS_WITH(
        build(not_to_n),
        doctest::Contains("store.h5 (g1): segment bounds must run from 0 to n = 200"));
    const std::vector<int64_t> repeated = {0, 100, 100, 200};
    CHECK_THROWS_WITH(build(repeated), doctest::Contains("strictly increasing"));
    g.edge_index[2 * 17 + 1] = 200;
    CHECK_THROWS_WITH(build(bounds), doctest::Contains("store.h5 (g1)/edge_index: row 17 = ("));
    g.edge_index[2 * 17 + 1] = 0;
    g.node_opcode[33] = 300;
    CHECK_THROWS_WITH(build(bounds),
                      doctest::Contains("store.h5 (g1)/node_opcode: opcode[33] = 300"));
    g.node_opcode[33] = 1;
    auto short_reader = [&](int64_t b, int64_t e) {
        return std::vector<int64_t>(g.edge_index.begin() + 2 * b, g.edge_index.begin() + 2 * e - 2);
    };
    RangeSegmentsOptions short_read = options(bounds);
    short_read.edges = short_reader;
    short_read.where = "s";
    CHECK_THROWS_WITH(build_range_segments(short_read), doctest::Contains("returned"));
    SegmentTable t(0);
    CHECK_THROWS_WITH(t.segment(0), doctest::Contains("segment id 0 outside [0, 0)"));
}

}  // namespace
}  // namespace segrank
