// Ctrl-C in the middle of a training step (util/signal_relay.h): the handler must not run on a
// thread inside oneDNN's AVX-512 JIT GEMM, which points the stack pointer into the heap; before
// the relay about 4 in 10 such interrupts ended in "corrupted size vs. prev_size" (exit 134) or a
// segmentation fault instead of the clean stop (exit 130).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

TEST_SUITE("hostile") {
    TEST_CASE("Ctrl-C at random moments of training steps always ends train cleanly with 130") {
        const fs::path dir = scratch_dir("hostile_signal_relay_train");
        const std::string bin = sq(segrank_binary().string());
        const auto synth = run_command(bin + " synth --out " + sq((dir / "data").string()) +
                                       " --collections layout --graphs 8 --nodes 400:1500 " +
                                       "--configs 64 --splits 0.75,0.25,0 --seed 3 -q");
        INFO(synth.output);
        REQUIRE(synth.exit_code == 0);
        // Eight interrupts 0.6-1.6 s after the start: inside the first steps' GEMMs (the default
        // recipe's 128-wide layers on 400-1500-node graphs), before the first checkpoint.
        const std::string loop =
            "cd " + sq(source_dir().string()) + " && for i in 1 2 3 4 5 6 7 8; do rm -rf " +
            sq((dir / "run").string()) + "; OMP_NUM_THREADS=1 " + bin +
            " train --config configs/default.toml --set 'data.root=\"" + (dir / "data").string() +
            "\"' --set 'data.collections=[\"layout:xla:random\"]' --set train.threads=1 " +
            "--set train.progress=false --run-dir " + sq((dir / "run").string()) + " > " +
            sq((dir / "train.log").string()) +
            " 2>&1 & p=$!; sleep 0.$((i + 5)); sleep 0.$((i % 4)); " +
            "kill -INT $p; wait $p; echo \"rc=$?\"; done";
        const auto r = run_command(loop);
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(r.output == std::string("rc=130\n") + "rc=130\n" + "rc=130\n" + "rc=130\n" +
                              "rc=130\n" + "rc=130\n" + "rc=130\n" + "rc=130\n");
        CHECK_FALSE(fs::exists(dir / "run"));  // removed by the clean stop before a checkpoint
    }
}
