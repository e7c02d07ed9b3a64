// Tiny trained checkpoints for the cost-model API and `segrank tune` tests: a layout run on the
// tiny layout collection and a tile run on tiny tile npz files, each trained for a few steps in
// process (well under a second on 2 cores).
#pragma once
#include <filesystem>
#include <string>

#include "tests/support/tiny_tile_data.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"
#include "trainer/trainer.h"

namespace segrank::test {

/// Writes the tiny layout collection under dir/data (4 train graphs, 96 configs each), trains
/// `steps` steps into dir/<run> and saves last.ckpt.h5. Returns the run directory.
inline std::filesystem::path train_tiny_layout_run(const std::filesystem::path& dir,
                                                   const std::string& run = "run",
                                                   int64_t steps = 4, uint64_t seed = 0) {
    if (!std::filesystem::exists(dir / "data")) write_tiny_layout_collection(dir / "data");
    RunConfig cfg = tiny_run_config(dir / "data", dir / run, steps);
    cfg.train.seed = seed;
    LocalCommunicator comm;
    Trainer t(cfg, comm);
    for (int64_t i = 0; i < steps; ++i) t.step();
    t.save_checkpoint("last");
    return dir / run;
}

/// Writes 3 tiny tile graphs as npz under dir/tile_data/npz/tile/xla/train, trains `steps` steps
/// into dir/tile_run and saves last.ckpt.h5. Returns the run directory.
inline std::filesystem::path train_tiny_tile_run(const std::filesystem::path& dir,
                                                 int64_t steps = 4) {
    const auto base = dir / "tile_data" / "npz" / "tile" / "xla" / "train";
    std::filesystem::create_directories(base);
    for (int i = 0; i < 3; ++i) {
        const std::string name = "tile_" + std::to_string(i);
        save_tile_npz(tiny_tile_graph(name, i, TinyTileSpec{}), base / (name + ".npz"));
    }
    RunConfig cfg = tiny_run_config(dir / "tile_data", dir / "tile_run", steps);
    cfg.data.collections = {"tile:xla"};
    validate_config(cfg);
    LocalCommunicator comm;
    Trainer t(cfg, comm);
    for (int64_t i = 0; i < steps; ++i) t.step();
    t.save_checkpoint("last");
    return dir / "tile_run";
}

}  // namespace segrank::test
