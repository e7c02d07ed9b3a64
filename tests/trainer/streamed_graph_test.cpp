// Bounded-memory GST (issue 6 items 1, 2, 4): graphs from an HDF5 store are streamed (no config rows or
// node features held; each step reads only its K sampled rows), give the same step and scores as the
// in-memory path, reuse cached partitions, and the Trainer runs GST on a synthetic graph with many
// segments.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/store_test_util.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"
#include "trainer/trainer.h"

namespace segrank::test {
namespace {

namespace fs = std::filesystem;

// One tiny layout graph packed into <dir>/store/train.h5; returns the store path.
fs::path write_store(const fs::path& dir, const TinyLayoutSpec& spec, int graphs = 1) {
    fs::create_directories(dir / "store");
    const fs::path path = dir / "store" / "train.h5";
    CollectionId id = CollectionId::parse("layout:xla:random");
    id.split = Split::kTrain;
    GraphStoreWriter w(path, id, dir);
    for (int i = 0; i < graphs; ++i) w.add(tiny_layout_graph("big_" + std::to_string(i), i, spec));
    w.finish();
    return path;
}

}  // namespace

TEST_CASE("a graph from an HDF5 store is streamed and gives the in-memory step, gradients and scores") {
    const fs::path dir = scratch_dir("gst_streamed");
    TinyLayoutSpec spec;
    spec.min_nodes = 400;
    spec.max_nodes = 420;
    spec.configs = 120;
    spec.config_nodes = 6;
    const GraphStore store(write_store(dir, spec), LabelPolicy::kRequirePositive);
    CountingSource counting(store);
    const Normalizer norm = normalizer_of(store);
    RunConfig cfg = tiny_run_config(dir, dir / "unused", 1);
    cfg.segments.max_nodes = 100;
    Model model_s(model_config_from(cfg, Task::kLayout, norm.output_dim()));
    Model model_m(model_config_from(cfg, Task::kLayout, norm.output_dim()));
    model_s.params().initialize(3);
    model_m.params().initialize(3);
    PrepareOptions streamed = prepare_options_from(cfg), in_memory = streamed;
    in_memory.stream = false;
    auto gs = prepare_graph(entry_of(counting), norm, model_s, streamed);
    auto gm = prepare_graph(entry_of(store), norm, model_m, in_memory);
    REQUIRE(gs->streamed);
    REQUIRE_FALSE(gm->streamed);
    CHECK(counting.full_loads == 0);
    CHECK(gs->layout_config.empty());
    CHECK(gs->segment_feat.empty());
    CHECK(gm->layout_config.size() == static_cast<size_t>(120 * 6 * kLayoutConfigDim));
    CHECK(gs->memory_bytes() < gm->memory_bytes() / 2);
    REQUIRE(gs->num_segments() == gm->num_segments());
    REQUIRE(gs->num_segments() >= 4);
    CHECK(gs->segment_dependent == gm->segment_dependent);

    const std::vector<int64_t> configs = {7, 0, 99, 31, 64, 12, 5, 118};
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(gs->targets[static_cast<size_t>(c)]);
    const GstOptions opt = gst_options_from(cfg);
    HistoryTable ts(1, 0), tm(1, 0);
    for (int64_t step = 0; step < 3; ++step) {
        model_s.params().zero_grads();
        model_m.params().zero_grads();
        const GraphStepResult rs = gst_train_graph(model_s, *gs, configs, targets, step, 0.5, ts, opt);
        const GraphStepResult rm = gst_train_graph(model_m, *gm, configs, targets, step, 0.5, tm, opt);
        CHECK(rs.loss == doctest::Approx(rm.loss).epsilon(1e-6));
        CHECK(rs.stale_hits == rm.stale_hits);
        const auto a = model_s.params().grads(), b = model_m.params().grads();
        double diff = 0.0;
        for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
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
    // A byte cap on config rows cuts chunks further (6 configurable nodes x 18 bytes = 108 bytes per
    // config: 500 bytes hold 4 configs), with the same scores.
    counting.max_config_rows = 0;
    const std::vector<float> capped = score_graph(model_s, *gs, gs->configs, 16, opt, /*max_chunk_bytes=*/500);
    CHECK(counting.max_config_rows == 4);
    for (size_t i = 0; i < ss.size(); ++i) CHECK(capped[i] == doctest::Approx(ss[i]).epsilon(1e-6));
    counting.max_config_rows = 0;
    (void)score_graph(model_s, *gs, gs->configs, 16, opt, /*max_chunk_bytes=*/1);  // at least one config
    CHECK(counting.max_config_rows == 1);
}

TEST_CASE("a second prepare reuses the cached metis partition and gets identical segments") {
    const fs::path dir = scratch_dir("gst_partition_cache");
    TinyLayoutSpec spec;
    spec.min_nodes = 300;
    spec.max_nodes = 300;
    const GraphStore store(write_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    RunConfig cfg = tiny_run_config(dir, dir / "unused", 1);
    cfg.segments.max_nodes = 64;
    Model model(model_config_from(cfg, Task::kLayout, norm.output_dim()));
    PrepareOptions opt = prepare_options_from(cfg);
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
    // Range partitions of streamed graphs are recomputed from n (O(S)) and never written to the cache.
    opt.partition.method = PartitionMethod::kContiguous;
    const auto files_before = std::distance(fs::directory_iterator(dir / "partitions"), fs::directory_iterator{});
    CHECK_FALSE(prepare_graph(entry_of(store), norm, model, opt)->partition_from_cache);
    CHECK(std::distance(fs::directory_iterator(dir / "partitions"), fs::directory_iterator{}) == files_before);
}

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

TEST_CASE("streamed graphs hold compact segments equal to the in-memory ones for every partitioner and halo") {
    const fs::path dir = scratch_dir("gst_compact_segments");
    TinyLayoutSpec spec;
    spec.min_nodes = 700;
    spec.max_nodes = 700;
    spec.config_nodes = 30;
    const GraphStore store(write_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    RunConfig cfg = tiny_run_config(dir, dir / "unused", 1);
    cfg.segments.max_nodes = 90;
    Model model(model_config_from(cfg, Task::kLayout, norm.output_dim()));
    struct Variant {
        PartitionMethod method;
        int32_t halo;
    };
    for (const Variant v : {Variant{PartitionMethod::kContiguous, 0}, Variant{PartitionMethod::kSplits, 0},
                            Variant{PartitionMethod::kMetis, 0}, Variant{PartitionMethod::kContiguous, 1}}) {
        CAPTURE(to_string(v.method));
        CAPTURE(v.halo);
        PrepareOptions streamed = prepare_options_from(cfg);
        streamed.partition.method = v.method;
        streamed.halo_hops = v.halo;
        PrepareOptions in_memory = streamed;
        in_memory.stream = false;
        const auto gs = prepare_graph(entry_of(store), norm, model, streamed);
        const auto gm = prepare_graph(entry_of(store), norm, model, in_memory);
        REQUIRE(gs->streamed);
        CHECK(gs->segments.empty());
        CHECK(gs->segment_opcode.empty());
        CHECK(gs->num_segments() >= 8);
        check_same_segments(*gs, *gm);
        // The compact form is a fraction of the built segments (both Csr directions, int64 ids); halo
        // segments list their node ids, range segments store one id.
        int64_t built = 0;
        for (const Segment& seg : gm->segments) built += seg.memory_bytes();
        CHECK(gs->segment_table.memory_bytes() * (v.halo == 0 ? 4 : 2) < built);
    }
}

TEST_CASE("errors on the streamed path name the store group read, not the npz the graph was packed from") {
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
    RunConfig cfg = tiny_run_config(dir, dir / "unused", 1);
    cfg.segments.max_nodes = 20;
    const Normalizer norm = normalizer_of(store);
    Model model(model_config_from(cfg, Task::kLayout, norm.output_dim()));
    for (const bool stream : {true, false}) {
        PrepareOptions opt = prepare_options_from(cfg);
        opt.stream = stream;
        CHECK_THROWS_WITH(prepare_graph(entry_of(store), norm, model, opt),
                          doctest::Contains((where + ": config_runtime is all 0").c_str()));
    }
}

TEST_CASE("segrank's Trainer runs GST on a 20000-node store graph with many segments in bounded time") {
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path dir = scratch_dir("gst_large_graph");
    TinyLayoutSpec spec;
    spec.min_nodes = 20000;
    spec.max_nodes = 20000;
    spec.configs = 200;
    spec.config_nodes = 40;
    write_store(dir, spec);
    RunConfig cfg = tiny_run_config(dir / "store", dir / "run", 6);
    cfg.data.store = StoreFormat::kHdf5;
    cfg.sampling.batch_graphs = 1;
    cfg.segments.max_nodes = 500;  // 40 segments
    cfg.segments.fresh = 2;
    validate_config(cfg);
    LocalCommunicator comm;
    Trainer t(cfg, comm);
    for (int i = 0; i < 6; ++i) CHECK(std::isfinite(t.step()));
    // Stale segments went through the history table (fresh < segments). The contiguous partition of
    // a streamed graph is recomputed from n, so nothing is written to the partition cache.
    CHECK(t.history().stats().entries > 16 * 2);
    CHECK((!fs::exists(dir / "run" / "partitions") ||
           fs::directory_iterator(dir / "run" / "partitions") == fs::directory_iterator{}));
    const EvalResult ev = t.evaluate();
    CHECK(std::isfinite(ev.overall));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("20000-node GST: ", secs, " s");
}

}  // namespace segrank::test

namespace segrank::test {
namespace {

TEST_CASE("a config holdout on a graph whose configs are all identical names the store graph and the way out") {
    const fs::path dir = scratch_dir("holdout_identical");
    fs::create_directories(dir / "store");
    CollectionId id = CollectionId::parse("layout:xla:random");
    id.split = Split::kTrain;
    TinyLayoutSpec spec;
    LayoutGraph g = tiny_layout_graph("same_cfg", 0, spec);
    const size_t row = static_cast<size_t>(g.num_config_nodes() * kLayoutConfigDim);
    for (size_t c = 1; c < static_cast<size_t>(g.num_configs()); ++c)
        std::copy(g.node_config_feat.begin(), g.node_config_feat.begin() + static_cast<std::ptrdiff_t>(row),
                  g.node_config_feat.begin() + static_cast<std::ptrdiff_t>(c * row));
    {
        GraphStoreWriter w(dir / "store" / "train.h5", id, dir);
        w.add(g);
        w.finish();
    }
    RunConfig cfg = tiny_run_config(dir / "store", dir / "run", 1);
    cfg.data.store = StoreFormat::kHdf5;
    cfg.data.holdout = cfg::Holdout::kConfigs;
    CHECK_THROWS_WITH(Dataset(cfg.data, 0),
                      doctest::Contains("train.h5:/graphs/same_cfg (same_cfg): holdout: graph 0 has 1 distinct config(s)"));
    CHECK_THROWS_WITH(Dataset(cfg.data, 0), doctest::Contains("use data.holdout = \"graphs\""));
}

}  // namespace
}  // namespace segrank::test
