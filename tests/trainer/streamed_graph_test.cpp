// The Trainer on HDF5 store graphs: GST on a synthetic graph with many segments in bounded time,
// and a config holdout refused on a graph whose configs are all identical. The streamed graph
// itself (segments, steps, scores, partition cache) is tested in tests/gst/streamed_graph_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"
#include "trainer/trainer.h"

namespace segrank::test {

namespace fs = std::filesystem;

TEST_CASE(
    "segrank's Trainer runs GST on a 20000-node store graph with many segments in bounded time") {
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path dir = scratch_dir("gst_large_graph");
    TinyLayoutSpec spec;
    spec.min_nodes = 20000;
    spec.max_nodes = 20000;
    spec.configs = 200;
    spec.config_nodes = 40;
    write_tiny_layout_store(dir, spec);
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
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("20000-node GST: ", secs, " s");
}

}  // namespace segrank::test

namespace segrank::test {
namespace {

TEST_CASE(
    "a config holdout on a graph whose configs are all identical names the store graph and the way "
    "out") {
    const fs::path dir = scratch_dir("holdout_identical");
    fs::create_directories(dir / "store");
    CollectionId id = CollectionId::parse("layout:xla:random");
    id.split = Split::kTrain;
    TinyLayoutSpec spec;
    LayoutGraph g = tiny_layout_graph("same_cfg", 0, spec);
    const size_t row = static_cast<size_t>(g.num_config_nodes() * kLayoutConfigDim);
    for (size_t c = 1; c < static_cast<size_t>(g.num_configs()); ++c)
        std::copy(g.node_config_feat.begin(),
                  g.node_config_feat.begin() + static_cast<std::ptrdiff_t>(row),
                  g.node_config_feat.begin() + static_cast<std::ptrdiff_t>(c * row));
    {
        GraphStoreWriter w(dir / "store" / "train.h5", id, dir);
        w.add(g);
        w.finish();
    }
    RunConfig cfg = tiny_run_config(dir / "store", dir / "run", 1);
    cfg.data.store = StoreFormat::kHdf5;
    cfg.data.holdout = cfg::Holdout::kConfigs;
    CHECK_THROWS_WITH(
        Dataset(cfg.data, 0),
        doctest::Contains(
            "train.h5:/graphs/same_cfg (same_cfg): holdout: graph 0 has 1 distinct config(s)"));
    CHECK_THROWS_WITH(Dataset(cfg.data, 0), doctest::Contains("use data.holdout = \"graphs\""));
}

}  // namespace
}  // namespace segrank::test
