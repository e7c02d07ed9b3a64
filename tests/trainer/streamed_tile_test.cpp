// The Trainer on a tile HDF5 store (tests/support/tiny_tile_data.h): it trains and evaluates. The
// streamed tile graph itself is tested in tests/gst/streamed_tile_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_tile_data.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"
#include "trainer/trainer.h"

namespace segrank::test {
namespace {

namespace fs = std::filesystem;

// The tiny layout RunConfig turned into a tile one.
RunConfig tile_run_config(const fs::path& store_dir, const fs::path& run_dir, int64_t steps) {
    RunConfig cfg = tiny_run_config(store_dir, run_dir, steps);
    cfg.data.collections = {"tile:xla"};
    cfg.data.store = StoreFormat::kHdf5;
    cfg.sampling.configs = 8;
    validate_config(cfg);
    return cfg;
}

}  // namespace

TEST_CASE("segrank's Trainer trains on a tile HDF5 store and evaluates it finitely") {
    const fs::path dir = scratch_dir("trainer_tile_store");
    TinyTileSpec spec;
    spec.min_nodes = 40;
    spec.max_nodes = 90;
    write_tiny_tile_store(dir / "store", Split::kTrain, 4, spec);
    write_tiny_tile_store(dir / "store", Split::kValid, 2, spec, /*first_index=*/10);
    RunConfig cfg = tile_run_config(dir / "store", dir / "run", 4);
    cfg.data.holdout = cfg::Holdout::kGraphs;  // the valid store
    cfg.segments.max_nodes = 20;               // 2-5 segments per graph
    cfg.eval.metric = cfg::EvalMetric::kKaggle;
    validate_config(cfg);
    LocalCommunicator comm;
    Trainer t(cfg, comm);
    for (int i = 0; i < 4; ++i) CHECK(std::isfinite(t.step()));
    CHECK(t.history().stats().entries > 0);  // stale segments went through the history table
    const EvalResult ev = t.evaluate();
    REQUIRE(ev.collections.size() == 1);
    CHECK(ev.collections[0].collection.starts_with("tile:xla"));
    CHECK(ev.collections[0].task == Task::kTile);
    CHECK(ev.collections[0].num_graphs == 2);
    CHECK(std::isfinite(ev.collections[0].slowdown_5));
    CHECK(ev.collections[0].score == doctest::Approx(1.0 - ev.collections[0].slowdown_5));
    CHECK(std::isfinite(ev.overall));
    CHECK(std::isfinite(ev.selection));
}

}  // namespace segrank::test
