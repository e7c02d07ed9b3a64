// Graphs read from an HDF5 store: streamed (no config rows or node features held; each step reads
// only its K sampled rows), with the step and scores of the same graph held in memory, cached METIS
// partitions, compact segments equal to the built ones for every partitioner, and errors naming the
// store group.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <ranges>
#include <utility>

#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

namespace segrank::test {

namespace fs = std::filesystem;

namespace {

// Every segment of `a` equals the same segment of `b`: nodes, pooled count, edges in order,
// configurable nodes, and the adjacency built from them.
void check_same_segments(const PreparedGraph& a, const PreparedGraph& b) {
    REQUIRE(a.num_segments() == b.num_segments());
    CHECK(a.segment_dependent == b.segment_dependent);
    for (int64_t s = 0; s < a.num_segments(); ++s) {
        const Segment x = a.segment(s), y = b.segment(s);
        CHECK(x.num_pooled() == y.num_pooled());
        CHECK(std::ranges::equal(x.nodes(), y.nodes()));
        CHECK(std::ranges::equal(x.edge_user(), y.edge_user()));
        CHECK(std::ranges::equal(x.edge_producer(), y.edge_producer()));
        CHECK(std::ranges::equal(x.config_local(), y.config_local()));
        CHECK(std::ranges::equal(x.config_index(), y.config_index()));
        CHECK(std::ranges::equal(x.operands().indptr(), y.operands().indptr()));
        CHECK(std::ranges::equal(x.operands().indices(), y.operands().indices()));
    }
}

}  // namespace

TEST_CASE(
    "a graph from an HDF5 store is streamed and gives the in-memory step, gradients and scores") {
    const fs::path dir = scratch_dir("gst_streamed");
    TinyLayoutSpec spec;
    spec.min_nodes = 400;
    spec.max_nodes = 420;
    spec.configs = 120;
    spec.config_nodes = 6;
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    // With model.layout_bytes the features' neighbourhood is gathered from the store too.
    // Option 2: model.loop_depth reads the structure and node_feat column 0 once while preparing.
    for (int option = 0; option < 3; ++option) {
        const bool bytes = option == 1;
        const bool loop_depth = option == 2;
        INFO("layout_bytes=", bytes, " loop_depth=", loop_depth);
        CountingSource counting(store);
        ModelConfig mc = tiny_model_config(Task::kLayout, norm.output_dim() + (loop_depth ? 1 : 0));
        mc.loop_depth = loop_depth;
        mc.layout_bytes = bytes;
        Model model_s(mc);
        Model model_m(mc);
        model_s.params().initialize(3);
        model_m.params().initialize(3);
        PrepareOptions streamed = tiny_prepare_options(100), in_memory = streamed;
        in_memory.stream = false;
        auto gs = prepare_graph(entry_of(counting), norm, model_s, streamed);
        auto gm = prepare_graph(entry_of(store), norm, model_m, in_memory);
        // The store graph is read from the store (no copy held, no rebuilt segments kept); with
        // stream = false the graph is loaded into memory with every config row.
        REQUIRE(gs->held == nullptr);
        REQUIRE(gs->source == &counting);
        REQUIRE(gm->held != nullptr);
        CHECK(counting.full_loads == 0);
        CHECK(gs->kept_segments.empty());
        CHECK(gm->held->info(0).num_configs == 120);
        CHECK(gm->held->memory_bytes() >= 120 * 6 * kLayoutConfigDim);
        CHECK(gs->memory_bytes() < gm->memory_bytes() / 2);
        REQUIRE(gs->num_segments() == gm->num_segments());
        REQUIRE(gs->num_segments() >= 4);
        CHECK(gs->segment_dependent == gm->segment_dependent);
        CHECK(gs->loop_depth.size() == (loop_depth ? static_cast<size_t>(gs->num_nodes) : 0));
        CHECK(gs->loop_depth == gm->loop_depth);
        // Preparing read column 0 of every node (one chunk here); the steps below read one
        // segment's rows at a time.
        if (loop_depth) counting.max_node_rows = 0;

        const std::vector<int64_t> configs = {7, 0, 99, 31, 64, 12, 5, 118};
        std::vector<double> targets;
        for (int64_t c : configs) targets.push_back(gs->targets[static_cast<size_t>(c)]);
        const GstOptions opt = tiny_gst_options();
        HistoryTable ts(1, 0), tm(1, 0);
        for (int64_t step = 0; step < 3; ++step) {
            model_s.params().zero_grads();
            model_m.params().zero_grads();
            const GraphStepResult rs =
                gst_train_graph(model_s, *gs, configs, targets, step, 0.5, ts, opt);
            const GraphStepResult rm =
                gst_train_graph(model_m, *gm, configs, targets, step, 0.5, tm, opt);
            CHECK(rs.loss == doctest::Approx(rm.loss).epsilon(1e-6));
            CHECK(rs.stale_hits == rm.stale_hits);
            const auto a = model_s.params().grads(), b = model_m.params().grads();
            double diff = 0.0;
            for (size_t i = 0; i < a.size(); ++i)
                diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
            CHECK(diff < 1e-6);
        }
        // Each step read its K rows only, and one segment's node rows at a time.
        CHECK(counting.max_config_rows == static_cast<int64_t>(configs.size()));
        CHECK(counting.max_node_rows <= 100 + 2 * 60);

        counting.max_config_rows = 0;
        const std::vector<float> ss = score_graph(model_s, *gs, gs->configs, /*chunk=*/16, opt);
        const std::vector<float> sm = score_graph(model_m, *gm, gm->configs, 16, opt);
        REQUIRE(ss.size() == sm.size());
        for (size_t i = 0; i < ss.size(); ++i) CHECK(ss[i] == doctest::Approx(sm[i]).epsilon(1e-5));
        CHECK(counting.max_config_rows == 16);  // inference reads configs in chunks
        // A byte cap on config rows cuts chunks further (6 configurable nodes x 18 bytes = 108
        // bytes per config: 500 bytes hold 4 configs), with the same scores.
        counting.max_config_rows = 0;
        const std::vector<float> capped =
            score_graph(model_s, *gs, gs->configs, 16, opt, /*max_chunk_bytes=*/500);
        CHECK(counting.max_config_rows == 4);
        for (size_t i = 0; i < ss.size(); ++i)
            CHECK(capped[i] == doctest::Approx(ss[i]).epsilon(1e-6));
        counting.max_config_rows = 0;
        (void)score_graph(model_s, *gs, gs->configs, 16, opt,
                          /*max_chunk_bytes=*/1);  // at least one config
        CHECK(counting.max_config_rows == 1);
        CHECK((gs->layout_neighbourhood != nullptr) == bytes);
        CHECK((gm->layout_neighbourhood != nullptr) == bytes);
    }
}

TEST_CASE(
    "with layout_bytes and / or layout_access each segment input row holds the 9 byte and / or 15 "
    "access features of its configurable node under its config, as the graph's neighbourhood "
    "gives them, also for configs that repeat rows") {
    const fs::path dir = scratch_dir("gst_layout_features");
    TinyLayoutSpec spec;
    spec.min_nodes = 300;
    spec.max_nodes = 320;
    spec.configs = 20;
    spec.config_nodes = 6;
    spec.shapes = true;
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    struct Variant {
        bool bytes, access;
    };
    for (const Variant& o : {Variant{true, false}, Variant{true, true}, Variant{false, true}}) {
        INFO("layout_bytes=", o.bytes, " layout_access=", o.access);
        ModelConfig mc = tiny_model_config(Task::kLayout, norm.output_dim());
        mc.layout_bytes = o.bytes;
        mc.layout_access = o.access;
        Model model(mc);
        auto gb = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(100));
        REQUIRE(gb->layout_neighbourhood != nullptr);
        const hw::LayoutNeighbourhood& nb = *gb->layout_neighbourhood;
        const int64_t nc = gb->num_config_nodes;
        const ConfigBatch batch = load_config_batch(*gb, std::vector<int64_t>{3, 0, 17, 9});
        // Configs 0 and 3 twice: every row of theirs repeats, so the features computed once per
        // distinct (node, row) are copied to the repeats.
        const std::vector<int64_t> configs = {3, 0, 17, 9, 0, 3};
        const std::vector<int64_t> batch_pos = {0, 1, 2, 3, 1, 0};
        // The blocks that are on, in row order: width and the expected rows of each node.
        const int64_t w = mc.layout_feature_width();
        REQUIRE(w == (o.bytes ? kLayoutByteFeatures : 0) + (o.access ? kLayoutAccessFeatures : 0));
        std::array<bool, 2> nonzero = {false, false};
        for (int64_t s = 0; s < gb->num_segments(); ++s) {
            SegmentInputBuffers buf;
            BuiltSegment scratch;
            const BuiltSegment& built = built_segment(*gb, s, scratch);
            const SegmentInput in = make_segment_input(*gb, built, batch, configs, buf);
            const std::span<const int32_t> idx = built.segment->config_index();
            const auto ncs = static_cast<int64_t>(idx.size());
            REQUIRE(static_cast<int64_t>(in.layout_features.size()) ==
                    static_cast<int64_t>(configs.size()) * ncs * w);
            for (size_t c = 0; c < configs.size(); ++c) {
                // Config c's row of the batch holds every configurable node's values (so
                // neighbours in other segments are seen).
                const std::span<const int8_t> values{
                    batch.layout.data() + batch_pos[c] * nc * kLayoutConfigDim,
                    static_cast<size_t>(nc * kLayoutConfigDim)};
                std::vector<int8_t> rows;
                for (int32_t j : idx)
                    rows.insert(rows.end(), values.begin() + j * kLayoutConfigDim,
                                values.begin() + (j + 1) * kLayoutConfigDim);
                std::array<std::vector<float>, 2> want = {
                    std::vector<float>(static_cast<size_t>(ncs * kLayoutByteFeatures)),
                    std::vector<float>(static_cast<size_t>(ncs * kLayoutAccessFeatures))};
                hw::layout_byte_features(nb, values, idx, want[0]);
                hw::layout_access_features_of_rows(nb, rows, idx, want[1]);
                const std::array<bool, 2> on = {o.bytes, o.access};
                const std::array<int64_t, 2> width = {kLayoutByteFeatures, kLayoutAccessFeatures};
                for (int64_t j = 0; j < ncs; ++j) {
                    const float* got = in.layout_features.data() + (c * ncs + j) * w;
                    for (size_t blk = 0; blk < 2; ++blk) {
                        if (!on[blk]) continue;
                        for (int64_t i = 0; i < width[blk]; ++i) {
                            const float x = want[blk][static_cast<size_t>(j * width[blk] + i)];
                            CHECK(*got++ == x);
                            nonzero[blk] = nonzero[blk] || x != 0.0f;
                        }
                    }
                }
            }
        }
        // The random layouts of the tiny store change padded sizes and layouts somewhere.
        CHECK(nonzero[0] == o.bytes);
        CHECK(nonzero[1] == o.access);
    }
}

TEST_CASE("a second prepare reuses the cached metis partition and gets identical segments") {
    const fs::path dir = scratch_dir("gst_partition_cache");
    TinyLayoutSpec spec;
    spec.min_nodes = 300;
    spec.max_nodes = 300;
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    PrepareOptions opt = tiny_prepare_options(64);
    opt.partition.method = PartitionMethod::kMetis;
    opt.partition_cache_dir = dir / "partitions";
    auto first = prepare_graph(entry_of(store), norm, model, opt);
    auto second = prepare_graph(entry_of(store), norm, model, opt);
    CHECK_FALSE(first->partition_from_cache);
    CHECK(second->partition_from_cache);
    REQUIRE(first->num_segments() == second->num_segments());
    REQUIRE(first->num_segments() >= 5);
    for (int64_t s = 0; s < first->num_segments(); ++s) {
        const Segment a = first->segment(s);
        const Segment b = second->segment(s);
        CHECK(a.num_pooled() == b.num_pooled());
        CHECK(std::equal(a.nodes().begin(), a.nodes().end(), b.nodes().begin(), b.nodes().end()));
    }
    // Other partitioner settings are another key: not served from the cache.
    opt.partition.max_nodes = 50;
    CHECK_FALSE(prepare_graph(entry_of(store), norm, model, opt)->partition_from_cache);
    // Range partitions of streamed graphs are recomputed from n (O(S)) and never written to the
    // cache.
    opt.partition.method = PartitionMethod::kContiguous;
    const auto files_before =
        std::distance(fs::directory_iterator(dir / "partitions"), fs::directory_iterator{});
    CHECK_FALSE(prepare_graph(entry_of(store), norm, model, opt)->partition_from_cache);
    CHECK(std::distance(fs::directory_iterator(dir / "partitions"), fs::directory_iterator{}) ==
          files_before);
}

TEST_CASE(
    "streamed graphs hold compact segments equal to the in-memory ones for every partitioner and "
    "halo") {
    const fs::path dir = scratch_dir("gst_compact_segments");
    TinyLayoutSpec spec;
    spec.min_nodes = 700;
    spec.max_nodes = 700;
    spec.config_nodes = 30;
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    struct Variant {
        PartitionMethod method;
        int32_t halo;
    };
    for (const Variant v :
         {Variant{PartitionMethod::kContiguous, 0}, Variant{PartitionMethod::kSplits, 0},
          Variant{PartitionMethod::kMetis, 0}, Variant{PartitionMethod::kContiguous, 1}}) {
        CAPTURE(to_string(v.method));
        CAPTURE(v.halo);
        PrepareOptions streamed = tiny_prepare_options(90);
        streamed.partition.method = v.method;
        streamed.halo_hops = v.halo;
        PrepareOptions in_memory = streamed;
        in_memory.stream = false;
        const auto gs = prepare_graph(entry_of(store), norm, model, streamed);
        const auto gm = prepare_graph(entry_of(store), norm, model, in_memory);
        REQUIRE(gs->held == nullptr);
        CHECK(gs->kept_segments.empty());  // neither built segments nor their opcodes are held
        REQUIRE(gm->kept_segments.size() == static_cast<size_t>(gm->num_segments()));
        CHECK(gs->num_segments() >= 8);
        check_same_segments(*gs, *gm);
        // The compact form is a fraction of the built segments (both Csr directions, int64 ids);
        // halo segments list their node ids, range segments store one id.
        int64_t built = 0;
        for (const BuiltSegment& b : gm->kept_segments) built += b.segment->memory_bytes();
        CHECK(gs->segment_table.memory_bytes() * (v.halo == 0 ? 4 : 2) < built);
    }
}

TEST_CASE(
    "errors on the streamed path name the store group read, not the npz the graph was packed "
    "from") {
    const fs::path dir = scratch_dir("gst_store_where");
    fs::create_directories(dir / "store");
    CollectionId id = CollectionId::parse("layout:xla:random");
    id.split = Split::kTest;  // test splits may hold all-zero runtimes
    TinyLayoutSpec spec;
    LayoutGraph g = tiny_layout_graph("zero_rt", 0, spec);
    g.source = dir / "somewhere" / "zero_rt.npz";
    std::fill(g.config_runtime.begin(), g.config_runtime.end(), 0);
    {
        GraphStoreWriter w(dir / "store" / "test.h5", id, dir);
        w.add(g);
        w.finish();
    }
    const GraphStore store(dir / "store" / "test.h5", LabelPolicy::kAllowTestZeros);
    const std::string where = store.where(0);
    CHECK(where.find((dir / "store" / "test.h5").string()) != std::string::npos);
    CHECK(where.find("zero_rt") != std::string::npos);
    CHECK(store.load_structure_index(0).where == where);
    const Normalizer norm = normalizer_of(store);
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    for (const bool stream : {true, false}) {
        PrepareOptions opt = tiny_prepare_options(20);
        opt.stream = stream;
        CHECK_THROWS_WITH(prepare_graph(entry_of(store), norm, model, opt),
                          doctest::Contains((where + ": config_runtime is all 0").c_str()));
    }
}

}  // namespace segrank::test
