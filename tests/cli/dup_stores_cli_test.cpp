// One store (or npz folder) per collection split in a data folder: a second store of a split is
// refused by every reader, naming both files, instead of being read too (every graph trained
// twice, duplicate submission IDs).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"

using segrank::test::run_command;
using segrank::test::scratch_dir;
using segrank::test::segrank_binary;
using segrank::test::source_dir;

TEST_CASE(
    "two stores of one collection split in a data folder are refused by train, evaluate, predict "
    "and stats, naming both" *
    doctest::test_suite("hostile")) {
    namespace fs = std::filesystem;
    const fs::path dir = scratch_dir("cli_dup_stores");
    const std::string bin = segrank_binary().string();
    const std::string h5 = (dir / "h5").string();
    auto ok = [](const segrank::test::CommandResult& r) {
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
    };
    ok(run_command(bin + " synth --out " + (dir / "syn").string() +
                   " --collections layout --graphs 4 --nodes 30:60 --configs 8 --splits "
                   "0.5,0.25,0.25 --seed 1 -q"));
    ok(run_command(bin + " pack " + (dir / "syn").string() + " --out " + h5));
    const std::string train = bin + " train --config " +
                              (source_dir() / "configs/tiny.toml").string() +
                              " --set data.store=\"hdf5\" --set data.root=" + h5 +
                              " --set train.threads=1 --set train.eval_every=0 ";
    ok(run_command(train + "--set train.steps=2 --set train.run_dir=" + (dir / "run").string()));

    const std::string store = h5 + "/layout_xla_random_train.h5";
    const std::string copy = h5 + "/layout_xla_random_train_copy.h5";
    fs::copy_file(store, copy);
    const std::string both = ": collection layout:xla:random:train is also in " + store +
                             "; a data folder holds one store (or npz folder) per collection split";
    auto refused = [&](const std::string& cmd) {
        const auto r = run_command(cmd);
        INFO(cmd, "\n", r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find(copy + both) != std::string::npos);
    };
    refused(train + "--set train.steps=2 --set train.run_dir=" + (dir / "run2").string());
    CHECK_FALSE(fs::exists(dir / "run2"));
    refused(bin + " stats " + h5);
    // Another split's duplicate: the readers of the valid split refuse the folder too.
    const std::string run = (dir / "run").string();
    refused(bin + " evaluate --checkpoint " + run + " --threads 1 --data " + h5);
    refused(bin + " predict --checkpoint " + run + " --threads 1 --split valid --data " + h5 +
            " --out " + (dir / "p.csv").string());
    CHECK_FALSE(fs::exists(dir / "p.csv"));
    fs::remove(copy);
    ok(run_command(bin + " stats " + h5));
}
