// Hostile inputs of `segrank tune` and of `segrank report` on tune directories, end to end (ctest
// label `hostile`): damaged measurements on --resume, round lines after a signal, another graph's
// directory under --compare, an oversized --pool.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) {
    return run_command("OMP_NUM_THREADS=1 " + sq(segrank_binary().string()) + " " + args);
}

void write_text_file(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// A harness (the exec protocol, docs/tune.md) that answers every request and sends SIGINT to
// segrank at request `at`.
fs::path sigint_harness(const fs::path& dir, int at) {
    const fs::path harness = dir / "harness.sh";
    write_text_file(harness,
                    "n=0\n"
                    "while read -r line; do\n"
                    "  n=$((n+1))\n"
                    "  id=$(printf '%s' \"$line\" | sed 's/^{\"id\": *\\([0-9]*\\).*/\\1/')\n"
                    "  if [ \"$n\" -eq " +
                        std::to_string(at) +
                        " ]; then kill -INT \"$PPID\"; fi\n"
                        "  printf '{\"id\": %s, \"runtime_ns\": %s}\\n' \"$id\" "
                        "\"$((2000000 - n))\"\n"
                        "done\n");
    return harness;
}

// Line `n` (1-based) of `text` replaced by `line`.
std::string with_line(const std::string& text, int n, const std::string& line) {
    size_t b = 0;
    for (int i = 1; i < n; ++i) b = text.find('\n', b) + 1;
    const size_t e = text.find('\n', b);
    return text.substr(0, b) + line + text.substr(e);
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank tune --resume refuses a graph file whose config rows changed since, under the "
        "same name, sizes and runtimes") {
        const fs::path dir = scratch_dir("hostile_tune_changed_rows");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const fs::path graph = dir / "data/npz/layout/xla/random/train/tiny_train_0.npz";
        const fs::path out = dir / "tune";
        const std::string base = "tune --checkpoint " + sq(run.string()) + " --graph " +
                                 sq(graph.string()) + " --quiet --out " + sq(out.string());
        REQUIRE(run_segrank(base + " --budget 3").exit_code == 0);
        const std::string before = read_file_text(out / "measurements.jsonl");
        // Configs 0 and 1 swap their layout rows; names, sizes and runtimes stay.
        const auto py = run_command(
            "/usr/bin/python3 -c \"import numpy as np, sys; z = dict(np.load(sys.argv[1])); "
            "f = z['node_config_feat']; f[[0, 1]] = f[[1, 0]]; np.savez(sys.argv[1], **z)\" " +
            sq(graph.string()));
        INFO(py.output);
        REQUIRE(py.exit_code == 0);
        const auto r = run_segrank(base + " --budget 5 --resume");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, ": the directory holds measurements of another graph ("));
        CHECK(contains_text(r.output, "\"content\":\"xxh3_64:"));
        CHECK(read_file_text(out / "measurements.jsonl") == before);
    }

    TEST_CASE(
        "segrank tune --resume refuses a measurement whose measured_ns is not a number, "
        "naming file, line, round and field") {
        const fs::path dir = scratch_dir("hostile_tune_measured_ns");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        const fs::path out = dir / "tune";
        const std::string base = "tune --checkpoint " + sq(run.string()) + " --graph " + sq(graph) +
                                 " --batch 2 --quiet --out " + sq(out.string());
        REQUIRE(run_segrank(base + " --budget 5").exit_code == 0);
        const fs::path meas = out / "measurements.jsonl";
        const std::string text = read_file_text(meas);
        for (const std::string& bad :
             {std::string("\"abc\""), std::string("[1]"), std::string("true")}) {
            write_text_file(meas, with_line(text, 2,
                                            "{\"round\":1,\"config\":3,\"predicted\":null,"
                                            "\"measured_ns\":" +
                                                bad + ",\"best_ns\":null,\"best_config\":null}"));
            const auto r = run_segrank(base + " --budget 7 --resume");
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, meas.string() + ":2: round 1: \"measured_ns\" is " + bad +
                                              ", expected a positive number of ns (or null for a "
                                              "failed measurement)"));
        }
        // Missing altogether: refused too (a line of segrank tune always has it).
        write_text_file(meas, with_line(text, 2, "{\"round\":1,\"config\":3}"));
        const auto r = run_segrank(base + " --budget 7 --resume");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, meas.string() + ":2: round 1: \"measured_ns\" is missing"));
        // Nothing was appended by the refused runs.
        CHECK(read_file_text(meas) == with_line(text, 2, "{\"round\":1,\"config\":3}"));
    }

    TEST_CASE("segrank tune stops within seconds on SIGTERM during a long full refit") {
        const fs::path dir = scratch_dir("hostile_tune_refit_sigterm");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        // 100000 full refit steps take minutes; the signal 1.5 s after the start lands in the
        // first refit (after the default and the first round, measured at once by a harness that
        // never signals).
        const fs::path harness = sigint_harness(dir, 1000000);
        const std::string cmd =
            "cd " + sq(source_dir().string()) + " && (OMP_NUM_THREADS=1 " +
            sq(segrank_binary().string()) + " tune --checkpoint " + sq(run.string()) + " --graph " +
            sq(graph) + " --budget 40 --batch 4 --measure " + sq("exec:sh " + harness.string()) +
            " --refit full "
            "--refit-steps 100000 --out " +
            sq((dir / "tune").string()) +
            " & p=$!; sleep 1.5; kill -TERM $p; s=$(date +%s); wait $p; "
            "rc=$?; echo \"rc=$rc after $(( $(date +%s) - s )) s\")";
        const auto r = run_command(cmd);
        INFO(r.output);
        CHECK(contains_text(r.output, "rc=143 after "));
        const size_t at = r.output.find("rc=143 after ");
        REQUIRE(at != std::string::npos);
        CHECK(std::stoi(r.output.substr(at + 13)) <= 5);  // not the minutes the refit would take
        CHECK(contains_text(r.output, "interrupted by signal 15 after "));
        CHECK(fs::exists(dir / "tune/measurements.jsonl"));
    }

    TEST_CASE(
        "segrank tune --strategy anneal stopped by SIGINT prints rounds with the "
        "measurements they took") {
        const fs::path dir = scratch_dir("hostile_tune_anneal_sigint");
        write_tiny_layout_collection(dir / "data");
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        const fs::path harness = sigint_harness(dir, 6);
        const auto r =
            run_segrank("tune --strategy anneal --candidates search --graph " + sq(graph) +
                        " --budget 20 --batch 4 --measure " + sq("exec:sh " + harness.string()) +
                        " --out " + sq((dir / "tune").string()));
        INFO(r.output);
        CHECK(r.exit_code == 130);
        CHECK(contains_text(r.output, "tune: round 1: 1 measured (2 of budget 20)"));
        CHECK(contains_text(r.output, "tune: round 2: 4 measured (6 of budget 20)"));
        CHECK_FALSE(contains_text(r.output, "tune: round 3:"));
        CHECK(contains_text(r.output, "interrupted by signal 2 after 6 measurements"));
        CHECK(contains_text(r.output, "--strategy anneal and random do not resume"));
    }

    TEST_CASE("segrank tune stopped by SIGINT mid-round prints the measurements the round took") {
        const fs::path dir = scratch_dir("hostile_tune_model_sigint");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        // Round 0 is request 1, round 1 picks 4: the signal at request 3 stops it after 2.
        const fs::path harness = sigint_harness(dir, 3);
        const std::string base = "tune --checkpoint " + sq(run.string()) + " --graph " + sq(graph) +
                                 " --batch 4 --budget 12 --measure " +
                                 sq("exec:sh " + harness.string()) + " --out " +
                                 sq((dir / "tune").string());
        const auto r = run_segrank(base);
        INFO(r.output);
        CHECK(r.exit_code == 130);
        CHECK(contains_text(r.output, "tune: round 1: 2 measured (3 of budget 12)"));
        CHECK(contains_text(r.output, "(continue with --resume)"));
        // The resumed run continues at round 2 with rounds of 4.
        const auto again = run_segrank(base + " --resume");
        INFO(again.output);
        CHECK(again.exit_code == 130);  // the harness signals at its own 3rd request again
        CHECK(contains_text(again.output, "tune: round 2: 3 measured (6 of budget 12)"));
    }

    TEST_CASE(
        "segrank tune refuses a --pool over 65536 at once instead of scoring it for minutes") {
        const fs::path dir = scratch_dir("hostile_tune_pool");
        write_tiny_layout_collection(dir / "data");
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        for (const std::string pool : {"1000000", "65537"}) {
            const auto r =
                run_segrank("tune --strategy random --candidates search --graph " + sq(graph) +
                            " --budget 4 --pool " + pool + " --out " + sq((dir / "tune").string()));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "--pool: expected 0..65536 proposals per round"));
            CHECK(contains_text(r.output, "got " + pool));
            CHECK_FALSE(fs::exists(dir / "tune"));
        }
    }

    TEST_CASE(
        "segrank tune whose first scoring fails removes the directory it created, and a --resume "
        "keeps it") {
        const fs::path dir = scratch_dir("hostile_tune_first_score");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const fs::path ckpt = run / "last.ckpt.h5";
        const fs::path good = dir / "good.ckpt.h5";
        fs::copy_file(ckpt, good);
        // Every parameter NaN, re-signed (a deliberate edit reaches the scoring).
        const auto py = run_command(
            "/usr/bin/python3 -c \"import h5py, numpy as np; f=h5py.File('" + ckpt.string() +
            "','r+'); [f['params'][k].__setitem__(Ellipsis, np.nan) for k in f['params']]\" && "
            "/usr/bin/python3 " +
            sq((source_dir() / "tests/support/ckpt_resign.py").string()) + " " + sq(ckpt.string()));
        INFO(py.output);
        REQUIRE(py.exit_code == 0);
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        auto tune = [&](const fs::path& c, const fs::path& out, const std::string& extra) {
            return run_segrank("tune --checkpoint " + sq(c.string()) + " --graph " + sq(graph) +
                               " --batch 2 --quiet --out " + sq(out.string()) + " " + extra);
        };
        // A fresh run: nothing measured, so nothing is left (no .lock, tune.json or empty
        // measurements.jsonl), and the same --out then starts afresh.
        const fs::path out = dir / "a" / "tune";
        const auto r = tune(ckpt, out, "--budget 3");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "is nan"));
        CHECK_FALSE(fs::exists(dir / "a"));
        CHECK(tune(good, out, "--budget 1").exit_code == 0);
        // --resume never removes the measurements, even when the run adds none.
        const std::string before = read_file_text(out / "measurements.jsonl");
        const auto res = tune(ckpt, out, "--budget 3 --resume");
        INFO(res.output);
        CHECK(res.exit_code == 1);
        CHECK(read_file_text(out / "measurements.jsonl") == before);
        CHECK(fs::exists(out / "tune.json"));
        CHECK(fs::exists(out / "best.json"));
    }
}
