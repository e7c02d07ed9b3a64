// Out of memory while a graph is trained on, as on a small machine (ctest label `hostile`): the
// error names the graph and the settings its memory grows with, not a bare "out of memory".
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"
#include "util/rss.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {
// "path" as a TOML basic string (scratch paths hold no quote or backslash).
[[maybe_unused]] std::string dq(const std::string& path) { return "\"" + path + "\""; }
}  // namespace

TEST_SUITE("hostile") {
// An address-space limit cannot work under AddressSanitizer, whose shadow memory needs terabytes
// of address space; data/graph_memory_test.cpp covers the message there.
#if !defined(__SANITIZE_ADDRESS__)
    TEST_CASE(
        "segrank train out of memory names the graph and the settings its memory grows with") {
        const fs::path dir = scratch_dir("hostile_cli_train_oom");
        const auto synth = run_segrank_in_source(
            "synth --out " + sq((dir / "syn").string()) +
            " --graphs 4 --nodes 2000:3000 --configs 40 --seed 3 --collections layout");
        REQUIRE(synth.exit_code == 0);
        std::ofstream(dir / "big.toml")
            << ("[data]\nroot = " + dq((dir / "syn/npz").string()) +
                "\ncollections = [\"layout:xla:random\"]\n[train]\n"
                "steps = 2\nrun_dir = " +
                dq((dir / "run").string()) +
                "\n[model]\nhidden = 1024\n[segments]\nmax_nodes = 0\n");
        // 1 GB of address space: the model (11 M parameters) fits, one whole-graph step does not.
        const auto r = run_segrank_in_source("train --config " + sq((dir / "big.toml").string()), 1,
                                             "ulimit -v 1000000 && ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "error: out of memory while training on graph "
                            "'synth_layout_000001' ("));
        CHECK(contains_text(r.output, "synth_layout_000001.npz, "));
        CHECK(contains_text(r.output,
                            " configs): an allocation failed; its memory grows with "
                            "model.hidden = 1024, sampling.configs = 32 and "
                            "segments.max_nodes = 0"));
        CHECK_FALSE(fs::exists(dir / "run"));
    }

    TEST_CASE(
        "segrank train under an address-space limit too small for oneDNN refuses it, no crash") {
        const fs::path dir = scratch_dir("hostile_cli_train_address_space");
        const auto synth = run_segrank_in_source(
            "synth --out " + sq((dir / "syn").string()) +
            " --graphs 3 --nodes 50:80 --configs 8 --seed 3 --collections layout");
        REQUIRE(synth.exit_code == 0);
        std::ofstream(dir / "tiny.toml")
            << ("[data]\nroot = " + dq((dir / "syn/npz").string()) +
                "\ncollections = [\"layout:xla:random\"]\n[train]\nsteps = 2\nthreads = 1\n"
                "run_dir = " +
                dq((dir / "run").string()) + "\n[model]\nhidden = 16\n");
        // 95 MB: the loader fits, oneDNN's JIT code buffers do not (oneDNN crashed here).
        const auto r = run_segrank_in_source("train --config " + sq((dir / "tiny.toml").string()),
                                             1, "ulimit -v 95000 && ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "error: the address-space limit (ulimit -v) is 92 MiB; segrank train "
                            "needs at least 128 MiB (oneDNN's JIT code buffers and the libraries) "
                            "with 1 OpenMP thread(s)"));
        CHECK_FALSE(fs::exists(dir / "run"));
    }

    TEST_CASE(
        "segrank train refuses a model larger than the machine's physical memory before "
        "allocating it, naming model.hidden and model.layers") {
        // The largest model the bounds allow: about 3.26e9 parameters, 49.7 GB with gradients and
        // AdamW's moments (on a machine with more memory it is a legal model: not run there).
        if (segrank::physical_memory_bytes() > 49681ull << 20) {
            MESSAGE("skipped: this machine holds the largest model");
            return;
        }
        const fs::path dir = scratch_dir("hostile_cli_train_model_ram");
        const auto synth = run_segrank_in_source(
            "synth --out " + sq((dir / "syn").string()) +
            " --graphs 3 --nodes 50:80 --configs 8 --seed 3 --collections layout");
        REQUIRE(synth.exit_code == 0);
        const auto r = run_segrank_in_source(
            "train --config configs/tiny.toml --set model.hidden=4096 --set model.layers=64 "
            "--set data.root=" +
                sq((dir / "syn/npz").string()) +
                " --set train.run_dir=" + sq((dir / "a" / "run").string()),
            1);
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "error: model.hidden = 4096 and model.layers = 64 make a model of "));
        CHECK(contains_text(r.output,
                            " MiB with gradients and AdamW's moments, more than this "
                            "machine's physical memory ("));
        CHECK_FALSE(fs::exists(dir / "a"));
        // bench sizes its model from --hidden and --layers: the same refusal, naming them.
        const auto b = run_segrank_in_source(
            "bench --hidden 4096 --layers 64 --no-peer --steps 1 --threads 1", 1);
        INFO(b.output);
        CHECK(b.exit_code == 1);
        CHECK(contains_text(b.output, "error: --hidden 4096 and --layers 64 make a model of "));
    }

    TEST_CASE("segrank train out of memory building the model names model.hidden and its size") {
        const fs::path dir = scratch_dir("hostile_cli_train_model_oom");
        const auto synth = run_segrank_in_source(
            "synth --out " + sq((dir / "syn").string()) +
            " --graphs 3 --nodes 50:80 --configs 8 --seed 3 --collections layout");
        REQUIRE(synth.exit_code == 0);
        std::ofstream(dir / "wide.toml")
            << ("[data]\nroot = " + dq((dir / "syn/npz").string()) +
                "\ncollections = [\"layout:xla:random\"]\n[train]\nsteps = 2\nthreads = 1\n"
                "run_dir = " +
                dq((dir / "run").string()) + "\n[model]\nhidden = 4096\nlayers = 2\n");
        // 300 MB: the libraries fit, a 4096-wide model (about 80 M parameters) does not.
        const auto r = run_segrank_in_source("train --config " + sq((dir / "wide.toml").string()),
                                             1, "ulimit -v 300000 && ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "error: out of memory while building the model ("));
        CHECK(contains_text(r.output,
                            " MiB with gradients and AdamW's moments): an allocation failed; its "
                            "memory grows with model.hidden = 4096 and model.layers = 2"));
        CHECK_FALSE(fs::exists(dir / "run"));
    }

    TEST_CASE(
        "segrank evaluate, predict and tune out of memory loading a checkpoint name the file") {
        const fs::path dir = scratch_dir("hostile_cli_checkpoint_oom");
        const auto synth = run_segrank_in_source(
            "synth --out " + sq((dir / "syn").string()) +
            " --graphs 3 --nodes 50:80 --configs 8 --seed 3 --collections layout");
        REQUIRE(synth.exit_code == 0);
        std::ofstream(dir / "wide.toml")
            << ("[data]\nroot = " + dq((dir / "syn/npz").string()) +
                "\ncollections = [\"layout:xla:random\"]\n[train]\nsteps = 1\nthreads = 1\n"
                "run_dir = " +
                dq((dir / "run").string()) + "\n[model]\nhidden = 1024\nlayers = 2\n");
        REQUIRE(
            run_segrank_in_source("train --config " + sq((dir / "wide.toml").string())).exit_code ==
            0);
        const std::string ckpt = sq((dir / "run").string());
        const fs::path graph = dir / "syn/npz/layout/xla/random/test/synth_layout_000002.npz";
        REQUIRE(fs::exists(graph));
        // 150 MB: the libraries fit (about 103 MB), a 1024-wide model (8.5 M parameters) does not.
        for (const std::string& cmd :
             {"evaluate --checkpoint " + ckpt,
              "predict --checkpoint " + ckpt + " --split test --out " +
                  sq((dir / "p.csv").string()),
              "tune --checkpoint " + ckpt + " --graph " + sq(graph.string()) +
                  " --budget 2 --measure hwmodel --out " + sq((dir / "tune").string())}) {
            const auto r = run_segrank_in_source(cmd + " --threads 1", 1, "ulimit -v 150000 && ");
            INFO(cmd);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output,
                                "best.ckpt.h5: out of memory while building the checkpoint's "
                                "model ("));
            CHECK(contains_text(r.output,
                                " parameters, 33 MiB): an allocation failed; its memory grows "
                                "with the model.hidden = 1024 and model.layers = 2"));
        }
        CHECK_FALSE(fs::exists(dir / "p.csv"));
        CHECK_FALSE(fs::exists(dir / "tune"));
    }

    TEST_CASE(
        "segrank evaluate out of memory advises its own --memory-mb, and a smaller one fits") {
        const fs::path dir = scratch_dir("hostile_cli_evaluate_oom_advice");
        const auto synth = run_segrank_in_source(
            "synth --out " + sq((dir / "syn").string()) +
            " --graphs 3 --nodes 2000:3000 --configs 40 --seed 3 --collections layout");
        REQUIRE(synth.exit_code == 0);
        std::ofstream(dir / "whole.toml")
            << ("[data]\nroot = " + dq((dir / "syn/npz").string()) +
                "\ncollections = [\"layout:xla:random\"]\n[train]\nsteps = 1\nthreads = 1\n"
                "run_dir = " +
                dq((dir / "run").string()) +
                "\n[model]\nhidden = 256\n[segments]\nmax_nodes = 0\n");
        REQUIRE(run_segrank_in_source("train --config " + sq((dir / "whole.toml").string()))
                    .exit_code == 0);
        const std::string cmd = "evaluate --threads 1 --checkpoint " + sq((dir / "run").string());
        // 312 MiB: the 40 configs of a whole 2551-node graph in one pass (eval.memory_mb = 1024)
        // do not fit; a pass within --memory-mb 16 does.
        const auto r = run_segrank_in_source(cmd, 1, "ulimit -v 320000 && ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(
            contains_text(r.output, "error: out of memory while evaluating graph 'synth_layout_"));
        CHECK(contains_text(r.output,
                            "its memory grows with the checkpoint's model.hidden = 256 and "
                            "segments.max_nodes = 0 (0: the whole graph at once) and the configs "
                            "scored per pass, which --memory-mb bounds (now 1024); lower "
                            "--memory-mb (at least 16) or give the process more memory"));
        CHECK_FALSE(contains_text(r.output, "eval.memory_mb"));
        const auto fits = run_segrank_in_source(cmd + " --memory-mb 16", 1, "ulimit -v 320000 && ");
        INFO(fits.output);
        CHECK(fits.exit_code == 0);
        CHECK(contains_text(fits.output, "  overall "));
        const auto bad = run_segrank_in_source(cmd + " --memory-mb 8", 1);
        CHECK(bad.exit_code == 1);
        CHECK(contains_text(bad.output, "error: --memory-mb: expected 16 to 1048576, got 8"));
    }

    TEST_CASE(
        "segrank tune and hwmodel explain out of memory at start-up on a big graph name the graph "
        "file and the step") {
        const fs::path dir = scratch_dir("hostile_cli_tune_explain_oom");
        const auto synth = run_segrank_in_source(
            "synth --out " + sq((dir / "syn").string()) +
            " --graphs 1 --nodes 30000:30000 --configs 50 --seed 3 --collections layout");
        REQUIRE(synth.exit_code == 0);
        const std::string graph =
            (dir / "syn/npz/layout/xla/random/train/synth_layout_000000.npz").string();
        REQUIRE(fs::exists(graph));
        // 122 MiB: the 30000-node graph loads, its cost model (about 10000 kernels) does not.
        const auto ex =
            run_segrank_in_source("hwmodel explain " + sq(graph), 1, "ulimit -v 125000 && ");
        INFO(ex.output);
        CHECK(ex.exit_code == 1);
        CHECK(contains_text(ex.output,
                            "error: " + graph +
                                ": out of memory while building the cost model of config 0 (30000 "
                                "nodes) and its breakdown (an allocation failed; the address-space "
                                "limit (ulimit -v) is 122 MiB"));
        // 156 MiB: tune's libraries, the checkpoint and the graph fit; setting up --measure hwmodel
        // or scoring and measuring the default (round 0) does not.
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const auto r = run_segrank_in_source(
            "tune --checkpoint " + sq(run.string()) + " --graph " + sq(graph) +
                " --budget 3 --batch 1 --measure hwmodel --threads 1 --quiet --out " +
                sq((dir / "tune").string()),
            1, "ulimit -v 160000 && ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "error: " + graph + ": out of memory while "));
        CHECK(contains_text(r.output,
                            " (an allocation failed; the address-space limit (ulimit -v) is 156 "
                            "MiB"));
        CHECK_FALSE(fs::exists(dir / "tune"));
    }

    TEST_CASE("segrank synth out of memory names the graph being generated and --nodes") {
        const fs::path dir = scratch_dir("hostile_cli_synth_oom");
        const auto r = run_segrank_in_source(
            "synth --out " + sq((dir / "syn").string()) +
                " --graphs 2 --nodes 2000000:2000001 --configs 1000 --collections layout",
            1, "ulimit -v 150000 && ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(
            contains_text(r.output, "error: out of memory while generating graph 'synth_layout_"));
        CHECK(contains_text(r.output,
                            " of --graphs 2): an allocation failed; its memory grows "
                            "with --nodes 2000000:2000001 and --configs 1000"));
        CHECK_FALSE(fs::exists(dir / "syn"));
    }

    TEST_CASE(
        "segrank tune out of memory scoring a --pool names the pool, and --resume with a smaller "
        "one continues") {
        const fs::path dir = scratch_dir("hostile_cli_tune_pool_oom");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const std::string base =
            "tune --checkpoint " + sq(run.string()) + " --graph " +
            sq((dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string()) +
            " --batch 2 --candidates search --threads 1 --quiet --out " +
            sq((dir / "tune").string());
        // 146 MiB: the libraries and the default's measurement fit, 65536 proposals do not.
        const auto r =
            run_segrank_in_source(base + " --budget 4 --pool 65536", 1, "ulimit -v 150000 && ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "error: out of memory in round 1 while scoring 65536 proposals of "
                            "--pool (lower --pool, e.g. --pool 2048); the 1 measurements so far "
                            "are in "));
        CHECK(contains_text(r.output,
                            "(continue with --resume) (an allocation failed; the "
                            "address-space limit (ulimit -v) is 146 MiB"));
        const auto again = run_segrank_in_source(base + " --budget 3 --pool 64 --resume", 1);
        INFO(again.output);
        CHECK(again.exit_code == 0);
        CHECK(contains_text(again.output, "segrank tune: 3 measurements (2 now)"));
    }

    TEST_CASE(
        "segrank leaderboard out of memory reading one submission makes it that submission's "
        "error and scores the others") {
        const fs::path dir = scratch_dir("hostile_cli_leaderboard_oom");
        const fs::path root = write_lb_truth(dir / "truth");
        write_text(dir / "a.csv", lb_submission_a());
        // 3 million config indices on one row: 22 MB of text, more once parsed.
        std::string big = "ID,TopConfigs\nlayout:xla:random:g1,0";
        big.reserve(23'000'000);
        for (int i = 1; i < 3'000'000; ++i) {
            big += ';';
            big += std::to_string(i);
        }
        big += "\n";
        write_text(dir / "big.csv", big);
        const auto r = run_segrank_in_source(
            "leaderboard --truth " + sq(root.string()) + " --split valid " +
                sq((dir / "big.csv").string()) + " " + sq((dir / "a.csv").string()),
            1, "ulimit -v 100000 && ");
        INFO(r.output);
        CHECK(r.exit_code == 1);  // an invalid submission
        CHECK(contains_text(r.output, "error: " + (dir / "big.csv").string() +
                                          ": out of memory while reading and scoring this "
                                          "submission of " +
                                          std::to_string(big.size()) +
                                          " bytes (an allocation "
                                          "failed; the address-space "
                                          "limit (ulimit -v) is 97 "
                                          "MiB"));
        CHECK(contains_text(r.output, "; the other submissions are scored"));
        // a is ranked 1 (scored), big invalid.
        CHECK(contains_text(r.output, "   1  a "));
    }
#endif
}
