// Hostile paths of `segrank tune` found by hostile trial 17 (ctest label `hostile`): a signal while
// tune loads its checkpoint and graph (before the first measurement) leaves no --out behind, and
// a measurements.jsonl emptied by hand is noted by `tune --resume` and by `report`.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"

using namespace segrank::test;
namespace fs = std::filesystem;

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank tune ended by SIGINT, SIGTERM or SIGHUP while it loads its graph leaves no --out "
        "and says nothing was written") {
        const fs::path dir = scratch_dir("hostile_tune_setup_signal");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const std::string bin = sq(segrank_binary().string());
        // A 40000-node graph takes tune a few hundred ms to read: the signal goes once tune has
        // taken its lock in --out (its handlers are in place by then), while it still reads.
        const auto synth = run_command(bin + " synth --out " + sq((dir / "big").string()) +
                                       " --collections layout --graphs 1 --nodes 40000:40000 " +
                                       "--configs 16 --splits 1,0,0 --seed 1 -q");
        REQUIRE(synth.exit_code == 0);
        const std::string graph =
            (dir / "big/npz/layout/xla/random/train/synth_layout_000000.npz").string();
        const std::string script =
            "set -m; cd " + sq(dir.string()) + "; for sig in INT TERM HUP; do rm -rf tn; " +
            "OMP_NUM_THREADS=1 " + bin + " tune --checkpoint " + sq(run.string()) + " --graph " +
            sq(graph) + " --measure hwmodel --budget 4 --out tn/a --quiet > log 2>&1 & p=$!; " +
            "for i in $(seq 1 4000); do [ -e tn/a/.lock ] && break; sleep 0.005; done; " +
            "kill -$sig $p; wait $p; echo \"$sig rc=$? left=$(ls -A tn 2>/dev/null | wc -l) " +
            "said=$(grep -c 'before the first measurement; nothing written to tn/a' log)\"; done";
        const auto r = run_bash_script(dir, script);
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(r.output ==
              "INT rc=130 left=0 said=1\nTERM rc=143 left=0 said=1\nHUP rc=129 left=0 said=1\n");
    }

    TEST_CASE(
        "segrank tune --resume and report note measurements that best.json records but "
        "measurements.jsonl lost") {
        const fs::path dir = scratch_dir("hostile_tune_lost_measurements");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const std::string bin = "OMP_NUM_THREADS=1 " + sq(segrank_binary().string());
        const std::string tune =
            bin + " tune --checkpoint " + sq(run.string()) + " --graph " +
            sq((dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string()) +
            " --quiet --out " + sq((dir / "te").string());
        REQUIRE(run_command(tune + " --budget 4").exit_code == 0);
        std::ofstream(dir / "te" / "measurements.jsonl", std::ios::trunc).flush();
        const auto report = run_command(bin + " report " + sq((dir / "te").string()) + " --out " +
                                        sq((dir / "te.html").string()));
        INFO(report.output);
        CHECK(report.exit_code == 0);
        CHECK(contains_text(report.output, "best.json: records 4 measurements, but "));
        CHECK(contains_text(report.output, "measurements.jsonl holds 0: the curves miss the lost"));
        const auto resumed = run_command(tune + " --budget 5 --resume");
        INFO(resumed.output);
        CHECK(resumed.exit_code == 0);
        CHECK(contains_text(resumed.output,
                            "measurements.jsonl holds 0 measurements, but best.json records 4: "
                            "the 4 missing ones are lost and may be measured again"));
    }
}
