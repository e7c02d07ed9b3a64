// A tiny run trained by the segrank binary itself, for the CLI tests of what comes after
// training (report, evaluate, --resume): configs/tiny.toml on the tiny layout collection.
#pragma once
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

namespace segrank::test {

/// Writes the tiny layout collection under dir/data (`valid_graphs` valid graphs) and runs
/// `segrank train --config configs/tiny.toml` into dir/run for `steps` steps, with no evaluation
/// during training and `extra` (more --set options) on its command line. REQUIREs exit 0 (the
/// output is the failure's message) and returns dir/run.
inline std::filesystem::path segrank_tiny_layout_run(const std::filesystem::path& dir,
                                                     int steps = 2, int valid_graphs = 1,
                                                     const std::string& extra = "") {
    TinyLayoutSpec spec;
    spec.valid_graphs = valid_graphs;
    write_tiny_layout_collection(dir / "data", spec);
    const std::filesystem::path run = dir / "run";
    const auto t = run_segrank_in_source(
        "train --config configs/tiny.toml --set train.steps=" + std::to_string(steps) +
            " --set train.eval_every=0 " + extra + " --set train.run_dir=" + sq(run.string()) +
            " --set data.root=" + sq((dir / "data").string()),
        1);
    INFO(t.output);
    REQUIRE(t.exit_code == 0);
    return run;
}

}  // namespace segrank::test
