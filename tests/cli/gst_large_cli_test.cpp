// `segrank train` runs GST on a large synthetic graph: the store made by
// `segrank bench --memory --make-store` (20000 nodes), configs/gst_large_synthetic.toml with
// segments.max_nodes = 500 (40 segments), a few steps, evaluation; with METIS, the partition cached
// in the run dir.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

TEST_CASE(
    "segrank train with configs/gst_large_synthetic.toml runs GST on a 20000-node store graph") {
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path dir = scratch_dir("gst_large_cli");
    const std::string bin = "cd '" + source_dir().string() + "' && OMP_NUM_THREADS=2 '" +
                            segrank_binary().string() + "' ";
    const auto made = run_command(bin + "bench --memory --make-store '" + (dir / "data").string() +
                                  "' --cases nodes_1e4 --nodes 20000 --configs 200");
    INFO(made.output);
    REQUIRE(made.exit_code == 0);
    REQUIRE(fs::exists(dir / "data" / "nodes_1e4" / "nodes_1e4.h5"));
    const auto r = run_command(bin +
                               "train --config configs/gst_large_synthetic.toml --set "
                               "train.steps=6 --set train.eval_every=3 "
                               "--set data.root='" +
                               (dir / "data" / "nodes_1e4").string() + "' --set train.run_dir='" +
                               (dir / "run").string() + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("held-out metrics of the final model") != std::string::npos);
    CHECK(fs::exists(dir / "run" / "last.ckpt.h5"));
    // The contiguous partition of a streamed graph is recomputed from n: nothing cached.
    const fs::path parts = dir / "run" / "partitions";
    CHECK((!fs::exists(parts) || fs::directory_iterator(parts) == fs::directory_iterator{}));
    // METIS partitions are cached in the run directory and reused by --resume.
    const std::string metis = bin +
                              "train --config configs/gst_large_synthetic.toml --set train.steps=2 "
                              "--set train.eval_every=0 "
                              "--set segments.partition=\"metis\" --set data.root='" +
                              (dir / "data" / "nodes_1e4").string() + "' --set train.run_dir='" +
                              (dir / "run_metis").string() + "'";
    const auto rm = run_command(metis);
    INFO(rm.output);
    REQUIRE(rm.exit_code == 0);
    CHECK(std::distance(fs::directory_iterator(dir / "run_metis" / "partitions"),
                        fs::directory_iterator{}) == 1);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("gst_large_synthetic: ", secs, " s");
}
