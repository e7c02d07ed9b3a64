// Bad input and run-directory handling of the CLI (polish task): option parse errors exit 1 with a
// pointer to --help, a directory or missing path as --config, a run directory that already holds
// checkpoints (--overwrite / --resume), the resumed run's config.toml and metrics.jsonl, and
// `segrank pack` leaving nothing behind on a truncated npz.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult segrank_cmd(const std::string& args) {
    return run_command("cd '" + source_dir().string() + "' && OMP_NUM_THREADS=2 '" +
                       segrank_binary().string() + "' " + args);
}

int lines_with(const std::string& text, const std::string& needle) {
    int n = 0;
    std::istringstream is(text);
    for (std::string line; std::getline(is, line);) n += line.find(needle) != std::string::npos;
    return n;
}

// configs/tiny.toml on a tiny synthetic collection in dir/data, run dir dir/run.
std::string tiny_train(const fs::path& dir, int steps) {
    return "train --config configs/tiny.toml --set data.root='" + (dir / "data").string() +
           "' --set train.run_dir='" + (dir / "run").string() +
           "' --set train.steps=" + std::to_string(steps) +
           " --set train.eval_every=3 --set train.log_every=1";
}

}  // namespace

TEST_CASE("--threads outside 0..1024 exits 1 naming the option and the range, before any work") {
    const fs::path dir = scratch_dir("cli_threads_bound");
    for (const std::string n : {"100000", "1025", "-3"}) {
        // evaluate: the checkpoint does not exist, so only a check made before loading it shows.
        const auto ev =
            segrank_cmd("evaluate --checkpoint " + sq((dir / "none").string()) + " --threads " + n);
        INFO(ev.output);
        CHECK(ev.exit_code == 1);
        CHECK(ev.output.find("error: --threads: expected 0 (all cores) to 1024, got " + n) !=
              std::string::npos);
        const auto pr = segrank_cmd("predict --random 1 --data " + sq(dir.string()) + " --out " +
                                    sq((dir / "sub.csv").string()) + " --threads " + n);
        INFO(pr.output);
        CHECK(pr.exit_code == 1);
        CHECK(pr.output.find("error: --threads: expected 0 (all cores) to 1024, got " + n) !=
              std::string::npos);
        CHECK_FALSE(fs::exists(dir / "sub.csv"));
    }
    const auto b = segrank_cmd("bench --threads 0");
    INFO(b.output);
    CHECK(b.exit_code == 1);
    CHECK(b.output.find("error: --threads: expected 1 to 1024, got 0") != std::string::npos);
}

TEST_CASE(
    "option parse errors exit 1 with 'error: ... (see segrank <cmd> --help)', not internal error") {
    for (const std::string cmd : {"train", "evaluate", "predict", "hwmodel", "bench"}) {
        const auto r = segrank_cmd(cmd + " --bogus");
        INFO(cmd, ": ", r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find("internal error") == std::string::npos);
        CHECK(r.output.find("bogus") != std::string::npos);
        CHECK(r.output.find("(see segrank " + cmd + " --help)") != std::string::npos);
    }
    const auto t = segrank_cmd("evaluate --threads abc");
    INFO(t.output);
    CHECK(t.exit_code == 1);
    CHECK(t.output.find("segrank evaluate: error:") != std::string::npos);
    CHECK(t.output.find("abc") != std::string::npos);
}

TEST_CASE("a mistyped option value exits 1 naming the option, what it takes and the value") {
    const fs::path dir = scratch_dir("cli_mistyped_value");
    const std::string out = sq((dir / "sub.csv").string());
    struct Bad {
        std::string args, message;
    };
    const Bad cases[] = {
        {"predict --random 1 --data . --out " + out + " --chunk abc",
         "segrank predict: error: --chunk: expected an integer, got 'abc' (see segrank predict "
         "--help)"},
        {"predict --random 1 --data . --out " + out + " --chunk=12x",
         "error: --chunk: expected an integer, got '12x'"},
        {"predict --random 1 --data . --out " + out + " --dense=maybe",
         "error: --dense: expected true or false, got 'maybe'"},
        {"evaluate --checkpoint none --threads 2.5",
         "error: --threads: expected an integer, got '2.5'"},
        {"bench --steps many", "segrank bench: error: --steps: expected an integer, got 'many'"},
        {"bench --seed -1",
         "segrank bench: error: --seed: expected a non-negative integer, got '-1'"},
    };
    for (const Bad& b : cases) {
        const auto r = segrank_cmd(b.args);
        INFO(b.args, ": ", r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find(b.message) != std::string::npos);
        CHECK_FALSE(fs::exists(dir / "sub.csv"));
    }
}

TEST_CASE("segrank train --config of a directory or a missing path exits 1 naming the path") {
    const fs::path dir = scratch_dir("cli_config_dir");
    const auto d = segrank_cmd("train --config '" + dir.string() + "'");
    INFO(d.output);
    CHECK(d.exit_code == 1);
    CHECK(d.output.find(dir.string() + ": is a directory, expected a TOML file") !=
          std::string::npos);
    const auto m = segrank_cmd("train --config '" + (dir / "missing.toml").string() + "'");
    INFO(m.output);
    CHECK(m.exit_code == 1);
    CHECK(m.output.find((dir / "missing.toml").string() + ": no such file") != std::string::npos);
}

TEST_CASE(
    "segrank train refuses a run dir with checkpoints unless --overwrite, and --resume continues "
    "it") {
    const fs::path dir = scratch_dir("cli_overwrite_resume");
    TinyLayoutSpec spec;
    spec.valid_graphs = 2;
    write_tiny_layout_collection(dir / "data", spec);
    const fs::path run = dir / "run";

    const auto first = segrank_cmd(tiny_train(dir, 6));
    INFO(first.output);
    REQUIRE(first.exit_code == 0);
    REQUIRE(fs::exists(run / "last.ckpt.h5"));

    // Again into the same dir: refused, the old run untouched.
    const auto again = segrank_cmd(tiny_train(dir, 6));
    INFO(again.output);
    CHECK(again.exit_code == 1);
    CHECK(again.output.find(run.string()) != std::string::npos);
    CHECK(again.output.find("--resume") != std::string::npos);
    CHECK(again.output.find("--overwrite") != std::string::npos);
    CHECK(fs::exists(run / "last.ckpt.h5"));

    // --resume with a larger step count: the stored config is rewritten, no duplicated steps.
    const auto resumed = segrank_cmd("train --resume '" + run.string() + "' --set train.steps=9");
    INFO(resumed.output);
    REQUIRE(resumed.exit_code == 0);
    CHECK(resumed.output.find("resuming from step 6") != std::string::npos);
    CHECK(read_file_text(run / "config.toml").find("steps = 9") != std::string::npos);
    const std::string metrics = read_file_text(run / "metrics.jsonl");
    for (int s = 1; s <= 9; ++s)
        CHECK_MESSAGE(
            lines_with(metrics, "\"phase\":\"train\",\"step\":" + std::to_string(s) + ",") == 1,
            "step ", s);
    CHECK(lines_with(metrics, "\"phase\":\"random_baseline\"") == 1);

    // --overwrite starts over: 4 steps only in the new metrics.
    const auto over = segrank_cmd(tiny_train(dir, 4) + " --overwrite");
    INFO(over.output);
    REQUIRE(over.exit_code == 0);
    const std::string fresh = read_file_text(run / "metrics.jsonl");
    CHECK(lines_with(fresh, "\"phase\":\"train\"") == 4);
    CHECK(read_file_text(run / "config.toml").find("steps = 4") != std::string::npos);
}

TEST_CASE("segrank pack on a truncated npz exits 1 and leaves no --out directory") {
    const fs::path dir = scratch_dir("cli_pack_truncated");
    write_tiny_layout_collection(dir / "data");
    const fs::path npz = dir / "data/npz/layout/xla/random/train/tiny_train_1.npz";
    REQUIRE(fs::exists(npz));
    fs::resize_file(npz, fs::file_size(npz) / 2);
    const fs::path out = dir / "stores";
    const auto r =
        segrank_cmd("pack '" + (dir / "data").string() + "' --out '" + out.string() + "'");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("tiny_train_1.npz") != std::string::npos);
    CHECK_FALSE(fs::exists(out));
}

TEST_CASE(
    "segrank evaluate of a config-holdout run without a valid split points at --heldout, without a "
    "rank prefix") {
    const fs::path dir = scratch_dir("cli_eval_heldout_hint");
    TinyLayoutSpec spec;  // train graphs only
    write_tiny_layout_collection(dir / "data", spec);
    const auto tr = segrank_cmd(tiny_train(dir, 2) + " --set data.holdout=\"configs\"");
    INFO(tr.output);
    REQUIRE(tr.exit_code == 0);
    const auto ev = segrank_cmd("evaluate --checkpoint '" + (dir / "run").string() + "'");
    INFO(ev.output);
    CHECK(ev.exit_code == 1);
    CHECK(ev.output.find("segrank evaluate: error: no graphs in split 'valid'") !=
          std::string::npos);
    CHECK(ev.output.find("data.holdout = \"configs\"): score it with --heldout") !=
          std::string::npos);
    CHECK(ev.output.find("[rank") == std::string::npos);
    const auto ok = segrank_cmd("evaluate --checkpoint '" + (dir / "run").string() + "' --heldout");
    INFO(ok.output);
    CHECK(ok.exit_code == 0);
}

TEST_CASE(
    "a model.config_attention run trains, evaluates and predicts with --tta-orders, and "
    "--tta-orders outside 1..1024 exits 1 naming the option") {
    const fs::path dir = scratch_dir("cli_config_attention_tta");
    TinyLayoutSpec spec;
    spec.valid_graphs = 2;
    write_tiny_layout_collection(dir / "data", spec);
    const auto train = segrank_cmd(tiny_train(dir, 6) +
                                   " --set model.config_attention=true --set "
                                   "model.config_attention_dim=4 --set eval.tta_orders=2");
    INFO(train.output);
    REQUIRE(train.exit_code == 0);
    CHECK(read_file_text(dir / "run" / "config.toml").find("config_attention = true") !=
          std::string::npos);
    const std::string predict = "predict --checkpoint " + sq((dir / "run").string()) +
                                " --split valid --chunk 3 --out " + sq((dir / "sub.csv").string());
    const auto ok = segrank_cmd(predict + " --tta-orders 3");
    INFO(ok.output);
    CHECK(ok.exit_code == 0);
    CHECK(lines_with(read_file_text(dir / "sub.csv"), "tiny_valid_") == 2);
    for (const std::string n : {"0", "1025"}) {
        const auto bad = segrank_cmd(predict + " --tta-orders " + n);
        INFO(bad.output);
        CHECK(bad.exit_code == 1);
        CHECK(bad.output.find("--tta-orders: expected 1..1024, got " + n) != std::string::npos);
    }
    // A model without config attention scores each config alone: --tta-orders 5 would change
    // nothing and is refused naming the option and why (1 is the default and passes).
    std::string plain_train = tiny_train(dir, 6);
    const std::string run_key = "train.run_dir='" + (dir / "run").string() + "'";
    REQUIRE(plain_train.find(run_key) != std::string::npos);
    plain_train.replace(plain_train.find(run_key), run_key.size(),
                        "train.run_dir='" + (dir / "plain").string() + "'");
    const auto plain = segrank_cmd(plain_train);
    INFO(plain.output);
    REQUIRE(plain.exit_code == 0);
    const std::string plain_predict = "predict --checkpoint " + sq((dir / "plain").string()) +
                                      " --split valid --out " + sq((dir / "plain.csv").string());
    const auto no_attention = segrank_cmd(plain_predict + " --tta-orders 5");
    INFO(no_attention.output);
    CHECK(no_attention.exit_code == 1);
    CHECK(no_attention.output.find("--tta-orders 5: averages the scores") != std::string::npos);
    CHECK(no_attention.output.find("has model.config_attention = false") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "plain.csv"));
    CHECK(segrank_cmd(plain_predict + " --tta-orders 1").exit_code == 0);
}

TEST_CASE(
    "segrank bench refuses a missing peer, interpreter or bad step counts before timing anything, "
    "and a failing peer exits 1 with its exit code and stderr, printing no JSON") {
    const fs::path dir = scratch_dir("bench_peer_errors");
    struct Bad {
        std::string args, message;
    };
    const Bad cases[] = {
        {"--peer-script " + sq((dir / "none.py").string()), "error: --peer-script: no such file"},
        {"--python " + sq((dir / "nopython").string()), "error: --python: '"},
        {"--python no_such_python_here", "is not an executable file"},
        {"--peer-steps 0", "error: --peer-steps: expected 1 to 100000, got 0"},
        {"--peer-warmup -1", "error: --peer-warmup: expected 0 to 100000, got -1"},
        {"--warmup -2", "error: --warmup: expected 0 to 100000, got -2"},
        {"--steps 0", "error: --steps: expected 1 to 100000, got 0"},
    };
    for (const Bad& b : cases) {
        // No npz is read before these checks: a path that does not exist shows it.
        const auto r =
            segrank_cmd("bench --json --npz " + sq((dir / "absent.npz").string()) + " " + b.args);
        INFO(b.args, ": ", r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find(b.message) != std::string::npos);
        CHECK(r.output.find("absent.npz") == std::string::npos);
    }
    const auto shared = shared_dir();
    if (!shared || !fs::exists(*shared / "peers" / "synthetic_10k.npz")) return;
    // A peer that fails: its exit code and the end of its stderr are reported, stdout stays empty.
    const fs::path peer = dir / "failing_peer.py";
    std::ofstream(peer)
        << "import sys\nsys.stderr.write('torch is missing here\\n')\nsys.exit(3)\n";
    const fs::path out = dir / "stdout.json";
    // A small model (cheap under the sanitizers); the peer is asked for the same one.
    const auto r = run_command(sq(segrank_binary().string()) +
                               " bench --json --modes full --steps 1 --warmup 0 --configs 4 "
                               "--hidden 32 --layers 1 --seed 7 --npz " +
                               sq((*shared / "peers" / "synthetic_10k.npz").string()) +
                               " --python python3 --peer-script " + sq(peer.string()) + " >" +
                               sq(out.string()) + " 2>&1");
    INFO(r.output, read_file_text(out));
    CHECK(r.exit_code == 1);
    const std::string text = read_file_text(out);
    CHECK(text.find("error: the PyTorch peer exited with code 3") != std::string::npos);
    CHECK(text.find("torch is missing here") != std::string::npos);
    CHECK(text.find("--configs 4 --hidden 32 --layers 1 --seed 7") != std::string::npos);
    CHECK(text.find("\"bench\"") == std::string::npos);  // no JSON printed
}

TEST_CASE(
    "segrank train refuses train.epochs whose steps exceed 2^31 - 1, fresh or on --resume, "
    "before anything is written") {
    const fs::path dir = scratch_dir("cli_epochs_bound");
    TinyLayoutSpec spec;
    write_tiny_layout_collection(dir / "data", spec);
    const auto tr = segrank_cmd(tiny_train(dir, 2) + " --set data.holdout=\"configs\"");
    INFO(tr.output);
    REQUIRE(tr.exit_code == 0);
    const std::string config = read_file_text(dir / "run" / "config.toml");
    const auto resumed = segrank_cmd("train --resume '" + (dir / "run").string() +
                                     "' --set train.steps=0 --set train.epochs=2147483647");
    INFO(resumed.output);
    CHECK(resumed.exit_code == 1);
    CHECK(resumed.output.find("train.epochs = 2147483647: 2147483647 epochs of ") !=
          std::string::npos);
    CHECK(resumed.output.find("steps, more than 2147483647") != std::string::npos);
    CHECK(read_file_text(dir / "run" / "config.toml") == config);
    CHECK(fs::exists(dir / "run" / "report.json"));
    const auto fresh = segrank_cmd(
        "train --config configs/tiny.toml --set data.root='" + (dir / "data").string() +
        "' --set train.run_dir='" + (dir / "fresh").string() +
        "' --set data.holdout=\"configs\" --set train.steps=0 --set train.epochs=2147483647");
    INFO(fresh.output);
    CHECK(fresh.exit_code == 1);
    CHECK(fresh.output.find("steps, more than 2147483647") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "fresh"));
}
