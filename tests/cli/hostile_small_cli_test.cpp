// Hostile trial 5's small weaknesses: messages that name the wrong file or the wrong cause, and
// leftovers of interrupted or failed runs (pack, stats, evaluate, train --check / --resume /
// --overwrite, bench).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args, const std::string& prefix = "") {
    return run_segrank_in_source(args, 1, prefix);
}

// A small synthetic data set of `collections` ("tile", "layout" or "tile,layout") in dir/`name`.
void synth_small(const fs::path& dir, const std::string& collections,
                 const std::string& name = "syn") {
    REQUIRE(run_segrank("synth --out " + sq((dir / name).string()) + " --collections " +
                        collections + " --graphs 3 --nodes 200:300 --configs 40 -q")
                .exit_code == 0);
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("a pack whose write fails names the store asked for, not its temporary file") {
        const fs::path dir = scratch_dir("hostile_pack_write_fails");
        synth_small(dir, "layout");
        // A file-size limit of 40 KiB (SIGXFSZ ignored, so write() fails with EFBIG): the first
        // store cannot be written.
        const auto r = run_segrank(
            "pack " + sq((dir / "syn/npz").string()) + " --out " + sq((dir / "P").string()),
            "trap '' XFSZ; ulimit -f 40; ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, (dir / "P/layout_xla_random_train.h5").string() +
                                          " (being written):/graphs/"));
        CHECK(contains_text(r.output, "H5Dwrite failed"));
        CHECK_FALSE(contains_text(r.output, ".tmp-"));
        CHECK_FALSE(fs::exists(dir / "P"));
    }
}

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank train --check refuses a data.collections entry that data.root does not hold") {
        const fs::path dir = scratch_dir("hostile_check_collection_absent");
        synth_small(dir, "layout");
        const std::string run = "train --config configs/tiny.toml --run-dir " +
                                sq((dir / "run").string()) + " --set " +
                                sq("data.root=\"" + (dir / "syn").string() + "\"") +
                                " --set 'data.collections=[\"layout:nlp:default\"]'";
        for (const char* check : {" --check", ""}) {
            const auto r = run_segrank(run + check);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output,
                                "data.collections: collection 'layout:nlp:default' not "
                                "found under"));
            CHECK(contains_text(r.output, "(found: layout:xla:random)"));
            CHECK_FALSE(contains_text(r.output, "config OK"));
        }
        CHECK_FALSE(fs::exists(dir / "run"));
        // The collection it holds passes.
        const auto ok =
            run_segrank("train --config configs/tiny.toml --run-dir " + sq((dir / "run").string()) +
                        " --set " + sq("data.root=\"" + (dir / "syn").string() + "\"") +
                        " --set 'data.collections=[\"layout:xla:random\"]' --check");
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }
}

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank train --resume of a run with best.ckpt.h5 but no last.ckpt.h5 says what to do") {
        const fs::path dir = scratch_dir("hostile_resume_no_last");
        synth_small(dir, "layout");
        const std::string run_dir = sq((dir / "run").string());
        const std::string data = " --set " + sq("data.root=\"" + (dir / "syn").string() + "\"");
        const auto first = run_segrank("train --config configs/tiny.toml --run-dir " + run_dir +
                                       data + " --set train.steps=2 --set train.eval_every=1");
        INFO(first.output);
        REQUIRE(first.exit_code == 0);
        // What a disk that filled while last.ckpt.h5 was written leaves.
        fs::remove(dir / "run/last.ckpt.h5");
        for (const char* check : {" --check", ""}) {
            const auto r =
                run_segrank("train --resume " + run_dir + " --set train.steps=6" + check);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "the run has best.ckpt.h5 (step "));
            CHECK(contains_text(r.output, "but no last.ckpt.h5"));
            CHECK(contains_text(r.output, "or start over with --overwrite"));
        }
        // What it says works (checked by --check: the run would start).
        fs::copy_file(dir / "run/best.ckpt.h5", dir / "run/last.ckpt.h5");
        const auto resumed =
            run_segrank("train --resume " + run_dir + " --set train.steps=6 --check");
        INFO(resumed.output);
        CHECK(resumed.exit_code == 0);
    }
}

TEST_SUITE("hostile") {
    TEST_CASE("an npz graph file given to stats or as --checkpoint is named as an npz file") {
        const fs::path dir = scratch_dir("hostile_npz_as_store_or_checkpoint");
        synth_small(dir, "layout");
        const fs::path npz = dir / "syn/npz/layout/xla/random/train/synth_layout_000000.npz";
        REQUIRE(fs::is_regular_file(npz));
        const auto stats = run_segrank("stats " + sq(npz.string()));
        INFO(stats.output);
        CHECK(stats.exit_code == 1);
        CHECK(
            contains_text(stats.output, "is a zip archive (an npz file), not an HDF5 graph store"));
        CHECK(contains_text(stats.output, "the folder holding it: " + npz.parent_path().string()));
        for (const char* command : {"evaluate", "predict --split valid --out "}) {
            const std::string out = std::string(command).find("--out") != std::string::npos
                                        ? sq((dir / "sub.csv").string())
                                        : std::string();
            const auto r =
                run_segrank(std::string(command) + out + " --checkpoint " + sq(npz.string()));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "--checkpoint " + npz.string() +
                                              ": is an npz file (a zip archive: a graph file, "
                                              "not a checkpoint); --checkpoint takes a run "
                                              "directory"));
            CHECK_FALSE(contains_text(r.output, "file signature"));
        }
        CHECK_FALSE(fs::exists(dir / "sub.csv"));
    }
}

TEST_SUITE("hostile") {
    TEST_CASE(
        "train --overwrite interrupted before its first checkpoint leaves no old report.json") {
        const fs::path dir = scratch_dir("hostile_overwrite_old_report");
        synth_small(dir, "layout");
        const std::string run_dir = sq((dir / "run").string());
        const std::string args = "train --config configs/tiny.toml --run-dir " + run_dir +
                                 " --set " + sq("data.root=\"" + (dir / "syn").string() + "\"");
        const auto first = run_segrank(args + " --set train.steps=2 --set train.eval_every=1");
        INFO(first.output);
        REQUIRE(first.exit_code == 0);
        REQUIRE(fs::exists(dir / "run/report.json"));
        // The new run writes metrics.jsonl after it removed the old run's files: Ctrl-C then, long
        // before its first checkpoint.
        fs::remove(dir / "run/metrics.jsonl");
        const std::string cmd = "cd " + sq(source_dir().string()) + " && OMP_NUM_THREADS=1 exec " +
                                sq(segrank_binary().string()) + " " + args +
                                " --overwrite --set train.steps=1000000 --set "
                                "train.eval_every=1000000 --set train.log_every=1";
        const InterruptedRun r =
            sigint_once_file_exists(cmd, dir / "run/metrics.jsonl", dir / "train.log");
        INFO(r.output);
        REQUIRE(r.started);
        CHECK(WIFEXITED(r.status));
        CHECK_FALSE(fs::exists(dir / "run/best.ckpt.h5"));
        CHECK_FALSE(fs::exists(dir / "run/last.ckpt.h5"));
        CHECK_FALSE(fs::exists(dir / "run/report.json"));  // it described the removed checkpoints
    }
}

TEST_SUITE("hostile") {
    TEST_CASE("pack --force removes a stale store that is a symbolic link, not its target") {
        const fs::path dir = scratch_dir("hostile_pack_force_linked_store");
        synth_small(dir, "layout");
        synth_small(dir, "tile", "tonly");
        REQUIRE(run_segrank("pack " + sq((dir / "syn/npz").string()) + " --out " +
                            sq((dir / "ext").string()))
                    .exit_code == 0);
        const fs::path target = dir / "ext/layout_xla_random_valid.h5";
        const std::string bytes = read_file_text(target);
        REQUIRE_FALSE(bytes.empty());
        fs::create_directories(dir / "P");
        fs::create_symlink("../ext/layout_xla_random_valid.h5",
                           dir / "P/layout_xla_random_valid.h5");
        const auto r = run_segrank("pack " + sq((dir / "tonly/npz").string()) + " --out " +
                                   sq((dir / "P").string()) + " --force");
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(contains_text(r.output, "removed " + (dir / "P/layout_xla_random_valid.h5").string() +
                                          " (a symbolic link to "
                                          "../ext/layout_xla_random_valid.h5, an earlier store"));
        CHECK_FALSE(fs::exists(fs::symlink_status(dir / "P/layout_xla_random_valid.h5")));
        CHECK(read_file_text(target) == bytes);  // the file it pointed at is kept
        CHECK(fs::exists(dir / "P/tile_xla_train.h5"));
    }
}

TEST_SUITE("hostile") {
    TEST_CASE("segrank tune shows a fractional runtime the same in round and closing lines") {
        const fs::path dir = scratch_dir("hostile_tune_fraction_ns");
        write_tiny_layout_collection(dir / "data");
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        const fs::path harness = dir / "harness.sh";
        std::ofstream(harness)
            << "while read -r line; do\n"
               "  id=$(printf '%s' \"$line\" | sed 's/^{\"id\": *\\([0-9]*\\).*/\\1/')\n"
               "  printf '{\"id\": %s, \"runtime_ns\": 1.5}\\n' \"$id\"\n"
               "done\n";
        const auto r =
            run_segrank("tune --strategy random --candidates search --graph " + sq(graph) +
                        " --budget 3 --batch 1 --measure " + sq("exec:sh " + harness.string()) +
                        " --out " + sq((dir / "tune").string()));
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(contains_text(r.output, "default config 0 measured: 1.5 ns"));
        CHECK(contains_text(r.output, "best 1.5 ns (config "));
        CHECK(contains_text(r.output, ", 1.5 ns, 1.000x the default (config 0, 1.5 ns)"));
        CHECK_FALSE(contains_text(r.output, " 2 ns"));
    }

    TEST_CASE("segrank bench refuses a hexadecimal --steps as every command refuses it") {
        for (const char* args : {"bench --steps 0x10 --no-peer", "pack a --out b --chunk-kib=0X2",
                                 "synth --out x --graphs 0x10"}) {
            const auto r = run_segrank(args);
            INFO(args, r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "expected an integer, got '0"));
        }
    }
}

TEST_SUITE("hostile") {
    TEST_CASE("a cross-key config error caused by a --set names the --set, not the file") {
        const auto r = run_segrank(
            "train --config configs/tiny.toml --set 'data.train_split=\"valid\"' --check");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "error: --set data.train_split=\"valid\": data.valid_split: "
                            "expected a split other than data.train_split = \"valid\""));
        CHECK_FALSE(contains_text(r.output, "tiny.toml: data.valid_split"));
    }
}
