// Hostile and unlucky inputs end to end (ctest label `hostile`): each case names the input, what a
// user expects, and checks that no partial output stays behind.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "data/graph.h"
#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args, const std::string& prefix = "") {
    return run_segrank_in_source(args, 1, prefix);
}

// The tiny layout collection under dir/data and its config dir/tiny.toml (run dir dir/run).
fs::path tiny_setup(const fs::path& dir, int64_t steps) {
    write_tiny_layout_collection(dir / "data");
    segrank::RunConfig cfg = tiny_run_config(dir / "data", dir / "run", steps);
    segrank::save_config(cfg, dir / "tiny.toml");
    return dir / "tiny.toml";
}

// A 2 GB address-space limit for a command that must not allocate much, as on a small machine;
// none under AddressSanitizer, whose shadow memory needs terabytes of address space.
#if defined(__SANITIZE_ADDRESS__)
const std::string kAddressSpaceLimit;
#else
const std::string kAddressSpaceLimit = "ulimit -v 2000000 && ";
#endif

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("segrank train refuses a 0 ns runtime in the train split naming file and config") {
        const fs::path dir = scratch_dir("hostile_cli_zero_runtime");
        const fs::path cfg = tiny_setup(dir, 2);
        const fs::path npz = dir / "data/npz/layout/xla/random/train/tiny_train_1.npz";
        segrank::LayoutGraph g =
            segrank::load_layout_npz(npz, segrank::LabelPolicy::kAllowTestZeros);
        g.config_runtime[5] = 0;
        segrank::save_layout_npz(g, npz);
        const auto r = run_segrank("train --config " + sq(cfg.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        // Named by the label read or the whole-graph read, whichever comes first.
        CHECK(contains_text(r.output, npz.string() + ": key 'config_runtime': "));
        CHECK(contains_text(r.output, " 5 "));
        CHECK(contains_text(r.output, "> 0 ns"));
        CHECK_FALSE(fs::exists(dir / "run"));
    }

    TEST_CASE("segrank train warns naming a training graph with one config (it adds no pair)") {
        const fs::path dir = scratch_dir("hostile_cli_one_config");
        segrank::test::TinyLayoutSpec spec;
        spec.valid_graphs = 2;
        write_tiny_layout_collection(dir / "data", spec);
        segrank::RunConfig c = tiny_run_config(dir / "data", dir / "run", 2);
        c.data.holdout = segrank::cfg::Holdout::kGraphs;  // configs holdout refuses the graph
        const fs::path cfg = dir / "tiny.toml";
        segrank::save_config(c, cfg);
        const auto clean = run_segrank("train --config " + sq(cfg.string()));
        INFO(clean.output);
        REQUIRE(clean.exit_code == 0);
        CHECK_FALSE(contains_text(clean.output, "fewer than 2 configs"));
        const fs::path npz = dir / "data/npz/layout/xla/random/train/tiny_train_1.npz";
        segrank::LayoutGraph g =
            segrank::load_layout_npz(npz, segrank::LabelPolicy::kAllowTestZeros);
        const size_t per_config = g.node_config_feat.size() / g.config_runtime.size();
        g.config_runtime.resize(1);
        g.node_config_feat.resize(per_config);
        segrank::save_layout_npz(g, npz);
        const auto r = run_segrank("train --overwrite --config " + sq(cfg.string()));
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(contains_text(r.output,
                            "segrank train: warning: 1 training graph(s) with fewer "
                            "than 2 configs add no pair to rank and nothing to the "
                            "loss: tiny_train_1 (" +
                                npz.string() + ")"));
    }

    TEST_CASE("hwmodel explain checks --config against every module before printing any") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const fs::path pb = data / "xla_tuning" / "op_tuning_data.pb";
        const fs::path out = scratch_dir("hostile_cli_explain") / "stdout.txt";
        const auto r =
            run_segrank("hwmodel explain " + sq(pb.string()) + " --config 5 > " + sq(out.string()));
        const std::string text = read_file_text(out);  // stdout and stderr
        INFO(text);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(text, ": --config 5 out of range [0, 5) (choose it with --module)"));
        CHECK(text.rfind("segrank hwmodel: error: ", 0) == 0);  // nothing explained before it
    }

    TEST_CASE("an option that takes one value given twice is refused, not the last one kept") {
        const auto out = run_segrank("predict --checkpoint x --out a.csv --out b.csv");
        INFO(out.output);
        CHECK(out.exit_code == 1);
        CHECK(contains_text(out.output, "--out given 2 times (a.csv, b.csv): it takes one value"));
        const auto cfg = run_segrank(
            "train --config configs/quickstart.toml --config "
            "configs/default.toml --check");
        INFO(cfg.output);
        CHECK(cfg.exit_code == 1);
        CHECK(contains_text(cfg.output, "--config given 2 times"));
        const auto ens = run_segrank("predict --checkpoint r --checkpoint r --out a.csv");
        INFO(ens.output);
        CHECK(ens.exit_code == 1);
        CHECK(contains_text(ens.output, "--checkpoint lists 'r' twice"));
        // --set may repeat, each key once: a key set twice is refused naming both settings.
        const auto set = run_segrank(
            "train --config configs/quickstart.toml --set train.steps=2 "
            "--set train.steps=3 --check");
        INFO(set.output);
        CHECK(set.exit_code == 1);
        CHECK(contains_text(set.output, "train.steps is set twice"));
        CHECK_FALSE(fs::exists(source_dir() / "a.csv"));
    }

    TEST_CASE(
        "segrank train refuses to start when no training graph has 2 configs (every loss would be "
        "0)") {
        const fs::path dir = scratch_dir("hostile_cli_all_one_config");
        segrank::test::TinyLayoutSpec spec;
        spec.train_graphs = 2;
        spec.valid_graphs = 1;
        spec.configs = 1;
        write_tiny_layout_collection(dir / "one", spec);
        segrank::RunConfig c = tiny_run_config(dir / "one", dir / "run", 2);
        c.data.holdout = segrank::cfg::Holdout::kGraphs;
        segrank::save_config(c, dir / "graphs.toml");
        const auto r = run_segrank("train --config " + sq((dir / "graphs.toml").string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "data: no training graph has 2 or more configs to rank: the 2 "
                            "training graph(s) of split 'train' in layout:xla:random"));
        CHECK(contains_text(r.output, "every step's loss would be 0"));
        CHECK_FALSE(contains_text(r.output, "loss 0"));
        CHECK_FALSE(fs::exists(dir / "run"));
        // Configs holdout that keeps one training config per graph.
        spec.configs = 16;
        spec.valid_graphs = 0;
        write_tiny_layout_collection(dir / "many", spec);
        c = tiny_run_config(dir / "many", dir / "run", 2);
        c.data.holdout_fraction = 0.99;
        segrank::save_config(c, dir / "configs.toml");
        const auto h = run_segrank("train --config " + sq((dir / "configs.toml").string()));
        INFO(h.output);
        CHECK(h.exit_code == 1);
        CHECK(contains_text(h.output, "data: no training graph has 2 or more configs to rank"));
        CHECK(contains_text(h.output, "lower data.holdout_fraction"));
        CHECK_FALSE(fs::exists(dir / "run"));
    }

    TEST_CASE(
        "data.ingest writes where data.root discovery reads (also for an npz/ root) and a run "
        "that fails before training removes it") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const fs::path dir = scratch_dir("hostile_cli_train_ingest");
        const fs::path cfg = tiny_setup(dir, 2);
        const std::string pb = (data / "xla_tuning" / "op_tuning_data.pb").string();
        const std::string sets = " --set 'data.root=\"" + (dir / "data/npz").string() +
                                 "\"' --set 'data.ingest=[\"" + pb + "\"]'";
        // Tile graphs with holdout by graphs and no valid split: refused after the ingest.
        const auto bad =
            run_segrank("train --config " + sq(cfg.string()) + sets +
                        " --set 'data.collections=[\"tile:xla\"]' --set 'data.holdout=\"graphs\"'");
        INFO(bad.output);
        CHECK(bad.exit_code == 1);
        CHECK(contains_text(bad.output, "no graphs in split 'valid'"));
        CHECK(contains_text(bad.output, "removed the 15 npz file(s) data.ingest wrote"));
        CHECK_FALSE(fs::exists(dir / "data/npz/tile"));
        CHECK_FALSE(fs::exists(dir / "data/npz/npz"));
        CHECK(fs::exists(dir / "data/npz/layout/xla/random/train/tiny_train_0.npz"));
        CHECK_FALSE(fs::exists(dir / "run"));
        // A run that trains keeps them, beside the layout collection it reads.
        const auto ok = run_segrank("train --config " + sq(cfg.string()) + sets);
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(fs::exists(dir / "data/npz/tile/xla/train/fusion.191.npz"));
        CHECK_FALSE(fs::exists(dir / "data/npz/npz"));
    }

    TEST_CASE("stats and pack name a device or FIFO given as the data folder, not 'no such file'") {
        const fs::path dir = scratch_dir("hostile_cli_stats_device");
        const fs::path fifo = dir / "fifo";
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        for (const std::string cmd : {"stats ", "pack "}) {
            const std::string out = cmd == "pack " ? " --out " + sq((dir / "out").string()) : "";
            const auto dev = run_segrank(cmd + "/dev/null" + out);
            INFO(dev.output);
            CHECK(dev.exit_code == 1);
            CHECK(contains_text(dev.output, "/dev/null: is a character device, expected "));
            const auto pipe = run_segrank(cmd + sq(fifo.string()) + out);  // never opened: no hang
            INFO(pipe.output);
            CHECK(pipe.exit_code == 1);
            CHECK(contains_text(pipe.output, fifo.string() + ": is a FIFO (named pipe), expected"));
            const auto missing = run_segrank(cmd + sq((dir / "none").string()) + out);
            INFO(missing.output);
            CHECK(missing.exit_code == 1);
            CHECK(contains_text(missing.output, (dir / "none").string() + ": no such "));
        }
        CHECK_FALSE(fs::exists(dir / "out"));
    }

    TEST_CASE("segrank stats warns about a 0 ns runtime in the train split and still shows it") {
        const fs::path dir = scratch_dir("hostile_cli_stats_zero_runtime");
        write_tiny_layout_collection(dir / "data");
        const auto clean = run_segrank("stats " + sq((dir / "data").string()));
        INFO(clean.output);
        REQUIRE(clean.exit_code == 0);
        CHECK_FALSE(contains_text(clean.output, "warning"));
        const fs::path npz = dir / "data/npz/layout/xla/random/train/tiny_train_1.npz";
        segrank::LayoutGraph g =
            segrank::load_layout_npz(npz, segrank::LabelPolicy::kAllowTestZeros);
        g.config_runtime[5] = 0;
        g.config_runtime[7] = 0;
        segrank::save_layout_npz(g, npz);
        // stdout (the JSON) to a file: r.output is stderr alone.
        const fs::path json = dir / "stats.json";
        const auto r =
            run_command("(" + sq(segrank_binary().string()) + " stats " +
                        sq((dir / "data").string()) + " --json > " + sq(json.string()) + ")");
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(contains_text(r.output, "segrank stats: warning: " + npz.string() +
                                          ": key 'config_runtime': config 5 has a runtime of 0 "
                                          "ns (2 of "));
        CHECK(contains_text(r.output,
                            "labelled split layout:xla:random:train: segrank train and "
                            "evaluate refuse it"));
        const std::string text = read_file_text(json);
        CHECK(contains_text(text, "\"runtime_min\":0,"));  // the statistics are still shown
        CHECK_FALSE(contains_text(text, "warning"));
    }

    TEST_CASE("segrank train --check runs the start-up checks that read no data") {
        const fs::path dir = scratch_dir("hostile_cli_check");
        const fs::path cfg = tiny_setup(dir, 2);
        const auto first = run_segrank("train --config " + sq(cfg.string()));
        INFO(first.output);
        REQUIRE(first.exit_code == 0);
        const std::string run = (dir / "run").string();
        // A --resume change the run refuses is refused by --check too.
        const auto resume = run_segrank("train --resume " + sq(run) +
                                        " --set model.hidden=32 --set train.steps=4 --check");
        INFO(resume.output);
        CHECK(resume.exit_code == 1);
        CHECK(contains_text(resume.output, "model.hidden was 16 in the run, now 32"));
        CHECK(run_segrank("train --resume " + sq(run) + " --set train.steps=4 --check").exit_code ==
              0);
        // A fresh run into a run directory with checkpoints, and a task mix.
        const auto again = run_segrank("train --config " + sq(cfg.string()) + " --check");
        CHECK(again.exit_code == 1);
        CHECK(contains_text(again.output, "run directory already holds"));
        const auto mix = run_segrank("train --config " + sq(cfg.string()) +
                                     " --overwrite --check --set "
                                     "'data.collections=[\"tile:xla\", \"layout:xla:random\"]'");
        INFO(mix.output);
        CHECK(mix.exit_code == 1);
        CHECK(contains_text(mix.output, "one run trains one task"));
        // A run directory that is a regular file.
        const fs::path file = dir / "a_file";
        std::ofstream(file) << "mine";
        const auto not_dir = run_segrank("train --config " + sq(cfg.string()) + " --run-dir " +
                                         sq(file.string()) + " --check");
        INFO(not_dir.output);
        CHECK(not_dir.exit_code == 1);
        CHECK(contains_text(not_dir.output, "exists and is not a directory"));
        CHECK(read_file_text(file) == "mine");
    }

    TEST_CASE("segrank train and --check refuse a missing data.ingest file naming key and path") {
        const fs::path dir = scratch_dir("hostile_cli_missing_ingest");
        const fs::path cfg = tiny_setup(dir, 2);
        const std::string pb = (dir / "no_such.pb").string();
        const std::string set = " --set 'data.ingest=[\"" + pb + "\"]'";
        for (const char* check : {" --check", ""}) {
            const auto r = run_segrank("train --config " + sq(cfg.string()) + set + check);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "data.ingest: '" + pb + "': no such file"));
            CHECK(contains_text(r.output, "--set data.ingest="));  // where the key was set
            CHECK_FALSE(fs::exists(dir / "run"));
        }
    }

    TEST_CASE("a run directory inside data.root is refused by train and --check naming both") {
        const fs::path dir = scratch_dir("hostile_cli_run_in_root");
        const fs::path cfg = tiny_setup(dir, 2);
        for (const std::string& run : {(dir / "data/run").string(), (dir / "data").string(),
                                       (dir / "other/../data/npz/x").string()}) {
            for (const char* check : {" --check", ""}) {
                const auto r = run_segrank("train --config " + sq(cfg.string()) + " --run-dir " +
                                           sq(run) + check);
                INFO(r.output);
                CHECK(r.exit_code == 1);
                CHECK(contains_text(r.output, "the run directory '" + run + "' (train.run_dir)"));
                CHECK(contains_text(r.output, "data.root '" + (dir / "data").string() + "'"));
                CHECK(contains_text(r.output, "beside the data"));
            }
        }
        CHECK_FALSE(fs::exists(dir / "data/run"));
        CHECK_FALSE(fs::exists(dir / "data/npz/x"));
        CHECK_FALSE(fs::exists(dir / "data/.lock"));
        // A run directory beside data.root (or holding it) is fine.
        CHECK(run_segrank("train --config " + sq(cfg.string()) + " --check").exit_code == 0);
    }

    TEST_CASE("a data split that no collection has fails at train time naming the splits found") {
        const fs::path dir = scratch_dir("hostile_cli_missing_split");
        const fs::path cfg = tiny_setup(dir, 2);
        const std::string set = " --set data.train_split=test";
        // --check reads no data: a valid split name passes there.
        CHECK(run_segrank("train --config " + sq(cfg.string()) + set + " --check").exit_code == 0);
        const auto r = run_segrank("train --config " + sq(cfg.string()) + set);
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "data.train_split: no graphs in split 'test' under '"));
        CHECK(contains_text(r.output, "(the splits found there: train)"));
        CHECK_FALSE(fs::exists(dir / "run"));
        const auto bogus = run_segrank("train --config " + sq(cfg.string()) +
                                       " --set data.train_split=bogus --check");
        INFO(bogus.output);
        CHECK(bogus.exit_code == 1);
        CHECK(contains_text(bogus.output,
                            "data.train_split: expected one of \"train\", "
                            "\"valid\", \"test\", \"unknown\""));
    }

    TEST_CASE(
        "a config or eval.indices file over its size bound, or eval.indices naming a folder, is "
        "refused naming the file") {
        const fs::path dir = scratch_dir("hostile_cli_big_inputs");
        const fs::path cfg = tiny_setup(dir, 2);
        { std::ofstream(dir / "big.toml") << "[train]\n"; }
        fs::resize_file(dir / "big.toml", uint64_t{1} << 30);  // sparse: nothing on disk
        // Under a 2 GB address-space limit, as a user on a small machine: no allocation failure.
        const auto big = run_segrank(
            "train --config " + sq((dir / "big.toml").string()) + " --check", kAddressSpaceLimit);
        INFO(big.output);
        CHECK(big.exit_code == 1);
        CHECK(contains_text(big.output, (dir / "big.toml").string() +
                                            ": 1073741824 bytes (1024.0 MiB), more than the "
                                            "16777216 bytes (16.0 MiB) allowed for a TOML config"));
        fs::create_directories(dir / "indices");
        const auto folder =
            run_segrank("train --config " + sq(cfg.string()) + " --set 'eval.indices=\"" +
                        (dir / "indices").string() + "\"'");
        INFO(folder.output);
        CHECK(folder.exit_code == 1);
        CHECK(contains_text(folder.output, (dir / "indices").string() +
                                               ": is a directory, expected an eval.indices JSON "
                                               "file"));
        CHECK_FALSE(contains_text(folder.output, "internal error"));
        CHECK_FALSE(fs::exists(dir / "run"));
        { std::ofstream(dir / "big.json") << "{}"; }
        fs::resize_file(dir / "big.json", uint64_t{1} << 30);
        const auto idx =
            run_segrank("train --config " + sq(cfg.string()) + " --set 'eval.indices=\"" +
                            (dir / "big.json").string() + "\"'",
                        kAddressSpaceLimit);
        INFO(idx.output);
        CHECK(idx.exit_code == 1);
        CHECK(contains_text(idx.output, (dir / "big.json").string() + ": 1073741824 bytes"));
        CHECK(contains_text(idx.output, "allowed for an eval.indices JSON file"));
        CHECK_FALSE(fs::exists(dir / "run"));
    }

    TEST_CASE("segrank train --overwrite keeps the old checkpoints when the new run is refused") {
        const fs::path dir = scratch_dir("hostile_cli_overwrite");
        const fs::path cfg = tiny_setup(dir, 2);
        REQUIRE(run_segrank("train --config " + sq(cfg.string())).exit_code == 0);
        const fs::path run = dir / "run";
        const std::string best = read_file_text(run / "best.ckpt.h5");
        REQUIRE_FALSE(best.empty());
        // A temporary checkpoint of a killed earlier run (pid 999999999 is above pid_max).
        std::ofstream(run / "last.ckpt.h5.tmp-999999999") << "partial";
        const auto bad = run_segrank("train --config " + sq(cfg.string()) +
                                     " --overwrite --set data.root=" + sq((dir / "none").string()));
        INFO(bad.output);
        CHECK(bad.exit_code == 1);
        CHECK(read_file_text(run / "best.ckpt.h5") == best);
        CHECK(fs::exists(run / "last.ckpt.h5"));
        CHECK_FALSE(fs::exists(run / "last.ckpt.h5.tmp-999999999"));  // swept at start-up
        // A successful --overwrite also removes the old run's report page (segrank report), which
        // describes the model that is gone; the rest of --overwrite is tested in
        // cli_errors_test.cpp.
        std::ofstream(run / "report.html")
            << "<!DOCTYPE html><html><head><meta name=\"generator\" content=\"segrank report\">"
               "</head>old run</html>";
        const auto good = run_segrank("train --config " + sq(cfg.string()) + " --overwrite");
        INFO(good.output);
        CHECK(good.exit_code == 0);
        CHECK_FALSE(fs::exists(run / "report.html"));
        CHECK(fs::exists(run / "best.ckpt.h5"));
    }

    TEST_CASE(
        "segrank predict writes --out and --scores both or neither, and refuses one path twice") {
        const fs::path dir = scratch_dir("hostile_cli_predict_outputs");
        const fs::path root = write_lb_truth(dir / "truth");
        const std::string base =
            "predict --random 7 --data " + sq(root.string()) + " --split valid";
        const auto full =
            run_segrank(base + " --out " + sq((dir / "ok.csv").string()) + " --scores /dev/full");
        INFO(full.output);
        CHECK(full.exit_code == 1);
        CHECK(contains_text(full.output, "/dev/full"));
        CHECK_FALSE(fs::exists(dir / "ok.csv"));
        const auto same = run_segrank(base + " --out " + sq((dir / "x.csv").string()) +
                                      " --scores " + sq((dir / "sub/../x.csv").string()));
        INFO(same.output);
        CHECK(same.exit_code == 1);
        CHECK(contains_text(same.output, "--out " + (dir / "x.csv").string() + " and --scores"));
        CHECK(contains_text(same.output, "name the same file"));
        CHECK_FALSE(fs::exists(dir / "x.csv"));
        const auto ok = run_segrank(base + " --out " + sq((dir / "ok.csv").string()) +
                                    " --scores " + sq((dir / "scores.csv").string()));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(fs::exists(dir / "ok.csv"));
        CHECK(fs::exists(dir / "scores.csv"));
    }

    TEST_CASE("segrank predict refuses --out naming the checkpoint it reads") {
        const fs::path dir = scratch_dir("hostile_cli_predict_ckpt");
        const fs::path cfg = tiny_setup(dir, 1);
        REQUIRE(run_segrank("train --config " + sq(cfg.string())).exit_code == 0);
        const fs::path ckpt = dir / "run/best.ckpt.h5";
        const std::string before = read_file_text(ckpt);
        const auto r = run_segrank("predict --checkpoint " + sq((dir / "run").string()) +
                                   " --split train --out " + sq(ckpt.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "--out " + ckpt.string() +
                                          ": is an HDF5 file (a checkpoint or graph store)"));
        CHECK(read_file_text(ckpt) == before);
    }

    TEST_CASE(
        "segrank predict --out / --scores refuses any file of the run dir other than an earlier "
        "submission or scores CSV") {
        const fs::path dir = scratch_dir("hostile_cli_predict_run_files");
        const fs::path cfg = tiny_setup(dir, 1);
        REQUIRE(run_segrank("train --config " + sq(cfg.string())).exit_code == 0);
        const fs::path run = dir / "run";
        const std::string base =
            "predict --checkpoint " + sq((run / "best.ckpt.h5").string()) + " --split train";
        for (const char* f : {"last.ckpt.h5", "config.toml", "metrics.jsonl", "report.json"}) {
            REQUIRE(fs::is_regular_file(run / f));
            const std::string before = read_file_text(run / f);
            const auto r = run_segrank(base + " --out " + sq((run / f).string()));
            INFO(f, "\n", r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "--out " + (run / f).string() + ": is "));
            CHECK(contains_text(r.output,
                                "not a submission CSV (ID,TopConfigs): segrank predict "
                                "replaces only an earlier one"));
            CHECK(read_file_text(run / f) == before);
        }
        const auto kind = run_segrank(base + " --out " + sq((dir / "sub.csv").string()) +
                                      " --scores " + sq((run / "last.ckpt.h5").string()));
        INFO(kind.output);
        CHECK(kind.exit_code == 1);
        CHECK(contains_text(kind.output, "--scores " + (run / "last.ckpt.h5").string() +
                                             ": is an HDF5 file (a checkpoint or graph store), "
                                             "not a scores CSV"));
        CHECK_FALSE(fs::exists(dir / "sub.csv"));
        // Earlier outputs (and empty files) are replaced; a submission is no scores file.
        std::ofstream(dir / "empty.csv").flush();
        const std::string ok = base + " --out " + sq((dir / "sub.csv").string()) + " --scores " +
                               sq((dir / "scores.csv").string());
        REQUIRE(run_segrank(ok).exit_code == 0);
        CHECK(run_segrank(ok).exit_code == 0);
        CHECK(run_segrank(base + " --out " + sq((dir / "empty.csv").string())).exit_code == 0);
        const auto swapped = run_segrank(base + " --out " + sq((dir / "scores.csv").string()));
        CHECK(swapped.exit_code == 1);
        CHECK(contains_text(swapped.output, "is a scores CSV (ID,config,score), not a submission"));
    }

    TEST_CASE("an output path that is a FIFO is refused naming the option, not opened (no hang)") {
        const fs::path dir = scratch_dir("hostile_cli_fifo_out");
        const fs::path root = write_lb_truth(dir / "truth");
        const fs::path fifo = dir / "sub.csv";
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        const std::string base =
            "predict --random 7 --data " + sq(root.string()) + " --split valid";
        const auto out = run_segrank(base + " --out " + sq(fifo.string()), "timeout 20 ");
        INFO(out.output);
        CHECK(out.exit_code == 1);
        CHECK(contains_text(out.output, "--out " + fifo.string() + ": is a FIFO (named pipe)"));
        const auto scores = run_segrank(
            base + " --out " + sq((dir / "ok.csv").string()) + " --scores " + sq(fifo.string()),
            "timeout 20 ");
        INFO(scores.output);
        CHECK(scores.exit_code == 1);
        CHECK(contains_text(scores.output, "--scores " + fifo.string() + ": is a FIFO"));
        CHECK_FALSE(fs::exists(dir / "ok.csv"));
        // The other commands' output options, checked before their work.
        const auto stats = run_segrank("stats " + sq(root.string()) + " --out " + sq(fifo.string()),
                                       "timeout 20 ");
        CHECK(stats.exit_code == 1);
        CHECK(contains_text(stats.output, "--out " + fifo.string() + ": is a FIFO"));
        const auto rep = run_segrank("report " + sq(root.string()) + " --out " + sq(fifo.string()),
                                     "timeout 20 ");
        CHECK(rep.exit_code == 1);
        CHECK(contains_text(rep.output, "--out " + fifo.string() + ": is a FIFO"));
        REQUIRE(run_segrank(base + " --out " + sq((dir / "ok.csv").string())).exit_code == 0);
        const auto lb = run_segrank("leaderboard --truth " + sq(root.string()) + " --out-md " +
                                        sq(fifo.string()) + " " + sq((dir / "ok.csv").string()),
                                    "timeout 20 ");
        CHECK(lb.exit_code == 1);
        CHECK(contains_text(lb.output, "--out-md " + fifo.string() + ": is a FIFO"));
        const auto hw = run_segrank(
            "hwmodel --data " + sq(root.string()) + " --split valid --out " + sq(fifo.string()),
            "timeout 20 ");
        CHECK(hw.exit_code == 1);
        CHECK(contains_text(hw.output, "--out " + fifo.string() + ": is a FIFO"));
        // An open descriptor (a pipe to another process) is still written through.
        const auto piped = run_segrank(base + " --out /dev/stdout | head -c 13", "timeout 20 ");
        CHECK(contains_text(piped.output, "ID,TopConfigs"));
    }

    TEST_CASE("segrank train refuses a FIFO in place of a run directory file before any work") {
        const fs::path dir = scratch_dir("hostile_cli_train_fifo");
        const fs::path cfg = tiny_setup(dir, 1);
        fs::create_directories(dir / "run");
        REQUIRE(::mkfifo((dir / "run/metrics.jsonl").c_str(), 0600) == 0);
        for (const char* check : {" --check", ""}) {
            const auto r = run_segrank("train --config " + sq(cfg.string()) + check, "timeout 60 ");
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(
                r.output, "train.run_dir " + (dir / "run/metrics.jsonl").string() + ": is a FIFO"));
        }
        CHECK_FALSE(fs::exists(dir / "run/config.toml"));
    }

    TEST_CASE(
        "segrank evaluate / predict --data of the other data format says which format the run "
        "reads and what the folder holds") {
        const fs::path dir = scratch_dir("hostile_cli_data_format");
        const fs::path cfg = tiny_setup(dir, 1);
        REQUIRE(run_segrank("train --config " + sq(cfg.string())).exit_code == 0);
        const auto pack = run_segrank("pack " + sq((dir / "data").string()) + " --out " +
                                      sq((dir / "h5").string()));
        INFO(pack.output);
        REQUIRE(pack.exit_code == 0);
        const std::string run = sq((dir / "run").string());
        for (const std::string& cmd : {"evaluate --checkpoint " + run + " --split train",
                                       "predict --checkpoint " + run + " --split train --out " +
                                           sq((dir / "sub.csv").string())}) {
            const auto r = run_segrank(cmd + " --data " + sq((dir / "h5").string()));
            INFO(cmd, "\n", r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "data.root: '" + (dir / "h5").string() +
                                              "' holds 1 HDF5 graph store(s) ("));
            CHECK(contains_text(r.output,
                                "but data.store = \"npz\" (this run reads npz files): "
                                "give the npz collection folder"));
        }
        CHECK_FALSE(fs::exists(dir / "sub.csv"));
        // A run trained on the stores, given the npz folder.
        const auto h5run =
            run_segrank("train --config " + sq(cfg.string()) +
                        " --set data.store=\"hdf5\" --set data.root=" + sq((dir / "h5").string()) +
                        " --set train.run_dir=" + sq((dir / "h5run").string()));
        INFO(h5run.output);
        REQUIRE(h5run.exit_code == 0);
        const auto r = run_segrank("evaluate --checkpoint " + sq((dir / "h5run").string()) +
                                   " --split train --data " + sq((dir / "data").string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "holds npz collections and no .h5 stores, but data.store = "
                            "\"hdf5\" (this run reads HDF5 graph stores)"));
    }

    TEST_CASE("segrank report refuses to write report.html into a folder that is not a run") {
        const fs::path dir = scratch_dir("hostile_cli_report_folder");
        const fs::path data = write_lb_truth(dir / "truth");
        const auto r = run_segrank("report " + sq(data.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "not a run directory (no metrics.jsonl or config.toml)"));
        CHECK_FALSE(fs::exists(data / "report.html"));
        CHECK(run_segrank("report " + sq(data.string()) + " --out " + sq((dir / "r.html").string()))
                  .exit_code == 0);
    }

    TEST_CASE("segrank report says on stderr what its page skipped: garbage, a null loss") {
        const fs::path dir = scratch_dir("hostile_cli_report_notes");
        fs::create_directories(dir / "run");
        std::ofstream(dir / "run/config.toml") << "[train]\nsteps = 2\n";
        std::ofstream(dir / "run/metrics.jsonl") << "garbage{";
        const auto g = run_segrank("report " + sq((dir / "run").string()));
        INFO(g.output);
        CHECK(g.exit_code == 0);  // a run still writing may have a torn (unterminated) last line
        CHECK(contains_text(g.output,
                            "segrank report: note: " + (dir / "run/metrics.jsonl").string() +
                                ":1: torn last line skipped"));
        CHECK(contains_text(g.output, "report.json: absent (the run has not finished)"));
        std::ofstream(dir / "run/metrics.jsonl", std::ios::trunc)
            << "{\"phase\":\"train\",\"step\":10,\"loss\":0.5}\n"
               "{\"phase\":\"train\",\"step\":20,\"loss\":null}\n";
        const auto n = run_segrank("report " + sq((dir / "run").string()));
        INFO(n.output);
        CHECK(n.exit_code == 0);
        CHECK(contains_text(n.output,
                            "metrics.jsonl:2: the training loss at step 20 is not "
                            "finite (null)"));
        CHECK(contains_text(read_file_text(dir / "run/report.html"), "is not finite (null)"));
    }

    TEST_CASE("segrank report names the file and line of a JSON number beyond the double range") {
        const fs::path dir = scratch_dir("hostile_cli_report_overflow");
        fs::create_directories(dir / "run");
        std::ofstream(dir / "run/config.toml") << "[train]\nsteps = 2\n";
        std::ofstream(dir / "run/metrics.jsonl")
            << "{\"phase\":\"train\",\"step\":10,\"loss\":1e999}\n"
               "{\"phase\":\"train\",\"step\":20,\"loss\":0.5}\n";
        const auto m = run_segrank("report " + sq((dir / "run").string()));
        INFO(m.output);
        CHECK(m.exit_code == 1);
        CHECK(contains_text(m.output, (dir / "run/metrics.jsonl").string() +
                                          ":1:39: number overflow parsing '1e999'"));
        CHECK_FALSE(contains_text(m.output, "internal error"));
        std::ofstream(dir / "run/metrics.jsonl", std::ios::trunc)
            << "{\"phase\":\"train\",\"step\":10,\"loss\":0.5}\n";
        std::ofstream(dir / "run/report.json") << "{\n\"test\": {\"opa\": -1e999}}\n";
        const auto r = run_segrank("report " + sq((dir / "run").string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, (dir / "run/report.json").string() + ":2:"));
        CHECK_FALSE(fs::exists(dir / "run/report.html"));
    }

    TEST_CASE("segrank report --out refuses to replace a file that is not an HTML page") {
        const fs::path dir = scratch_dir("hostile_cli_report_out");
        const fs::path data = write_lb_truth(dir / "truth");
        const fs::path victim = dir / "metrics.jsonl";
        std::ofstream(victim) << "{\"step\": 1}\n";
        const auto r = run_segrank("report " + sq(data.string()) + " --out " + sq(victim.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "--out " + victim.string() +
                                ": is a JSON or JSON-lines file, not a page segrank report wrote"));
        CHECK(read_file_text(victim) == "{\"step\": 1}\n");
        // An earlier report is replaced.
        const fs::path page = dir / "r.html";
        REQUIRE(
            run_segrank("report " + sq(data.string()) + " --out " + sq(page.string())).exit_code ==
            0);
        CHECK(
            run_segrank("report " + sq(data.string()) + " --out " + sq(page.string())).exit_code ==
            0);
    }

    TEST_CASE("a submission file name with a newline survives the leaderboard CSV and report") {
        const fs::path dir = scratch_dir("hostile_cli_newline_name");
        const fs::path root = write_lb_truth(dir / "truth");
        const fs::path sub = dir / "bad\nname.csv";
        REQUIRE(run_segrank("predict --random 7 --data " + sq(root.string()) +
                            " --split valid --out " + sq(sub.string()))
                    .exit_code == 0);
        const auto lb = run_segrank("leaderboard --truth " + sq(root.string()) + " --out-csv " +
                                    sq((dir / "table.csv").string()) + " " + sq(sub.string()));
        INFO(lb.output);
        REQUIRE(lb.exit_code == 0);
        CHECK(contains_text(read_file_text(dir / "table.csv"), "\"bad\nname\""));
        fs::create_directories(dir / "run");
        const auto rep = run_segrank("report " + sq((dir / "run").string()) + " --leaderboard " +
                                     sq((dir / "table.csv").string()) + " --out " +
                                     sq((dir / "r.html").string()));
        INFO(rep.output);
        CHECK(rep.exit_code == 0);
        CHECK(contains_text(read_file_text(dir / "r.html"), "bad"));
    }

    TEST_CASE(
        "segrank leaderboard refuses outputs naming an input, another kind of file or one path "
        "twice, and a submission given twice") {
        const fs::path dir = scratch_dir("hostile_cli_leaderboard_out");
        const fs::path root = write_lb_truth(dir / "truth");
        const fs::path sub = dir / "sub.csv";
        REQUIRE(run_segrank("predict --random 7 --data " + sq(root.string()) +
                            " --split valid --out " + sq(sub.string()))
                    .exit_code == 0);
        const std::string sub_text = read_file_text(sub);
        const std::string lb = "leaderboard --truth " + sq(root.string()) + " ";
        const auto refused = [&](const std::string& opts, const std::string& message) {
            const auto r = run_segrank(lb + opts + " " + sq(sub.string()));
            INFO(opts);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, message));
            CHECK_FALSE(contains_text(r.output, "submission(s) against"));  // before any work
        };
        refused("--out-csv " + sq(sub.string()),
                "--out-csv " + sub.string() + ": is the input " + sub.string());
        CHECK(read_file_text(sub) == sub_text);
        const fs::path cfg = dir / "config.toml";
        std::ofstream(cfg) << "[data]\nroot = \"x\"\n";
        refused("--out-csv " + sq(cfg.string()),
                "--out-csv " + cfg.string() + ": is a TOML file, not a leaderboard CSV");
        CHECK(read_file_text(cfg) == "[data]\nroot = \"x\"\n");
        const fs::path ckpt = dir / "best.ckpt.h5";
        std::ofstream(ckpt, std::ios::binary) << std::string("\x89HDF\r\n\x1a\n", 8) << "rest";
        refused("--out-md " + sq(ckpt.string()), "--out-md " + ckpt.string() + ": is an HDF5 file");
        CHECK(fs::file_size(ckpt) == 12);
        const fs::path both = dir / "x.out";
        refused("--out-md " + sq(both.string()) + " --out-csv " + sq(both.string()),
                "name the same file");
        CHECK_FALSE(fs::exists(both));
        refused(sq(sub.string()), "submission " + sub.string() + " is given twice");
        // Earlier tables of their own kind are replaced.
        const std::string ok = "--out-md " + sq((dir / "t.md").string()) + " --out-csv " +
                               sq((dir / "t.csv").string()) + " " + sq(sub.string());
        REQUIRE(run_segrank(lb + ok).exit_code == 0);
        const auto again = run_segrank(lb + ok);
        INFO(again.output);
        CHECK(again.exit_code == 0);
    }

    TEST_CASE("segrank stats --out replaces only an earlier stats output, never its input") {
        const fs::path dir = scratch_dir("hostile_cli_stats_out");
        write_tiny_layout_collection(dir / "data");
        const std::string stats = "stats " + sq((dir / "data").string()) + " --out ";
        const fs::path npz = dir / "data/npz/layout/xla/random/train/tiny_train_1.npz";
        const auto npz_size = fs::file_size(npz);
        auto r = run_segrank(stats + sq(npz.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "--out " + npz.string() + ": is a zip archive"));
        CHECK(fs::file_size(npz) == npz_size);
        const fs::path cfg = dir / "config.toml";
        std::ofstream(cfg) << "[data]\n";
        r = run_segrank(stats + sq(cfg.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "is a TOML file, not an earlier stats output"));
        CHECK(read_file_text(cfg) == "[data]\n");
        for (const char* json : {"", " --json"}) {
            const fs::path out = dir / (std::string("s") + json + ".out");
            REQUIRE(run_segrank(stats + sq(out.string()) + json).exit_code == 0);
            CHECK(run_segrank(stats + sq(out.string()) + json).exit_code == 0);
        }
    }

    TEST_CASE("segrank report refuses a --leaderboard file without the leaderboard header") {
        const fs::path dir = scratch_dir("hostile_cli_report_lb_header");
        fs::create_directories(dir / "run");
        std::ofstream(dir / "run/config.toml") << "[data]\n";
        std::ofstream(dir / "tc.toml") << "[data]\nroot = \"x\"\n";
        std::ofstream(dir / "abc.csv") << "a,b,c\n1,2,3\n";
        for (const char* bad : {"tc.toml", "abc.csv"}) {
            const auto r = run_segrank("report " + sq((dir / "run").string()) + " --leaderboard " +
                                       sq((dir / bad).string()));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, (dir / bad).string() + ":1: "));
            CHECK(contains_text(r.output, "(rank,name,overall,tile:xla,"));
            CHECK_FALSE(fs::exists(dir / "run/report.html"));
        }
    }

    TEST_CASE("a FIFO given as the config or an input file is refused at once, not read") {
        const fs::path dir = scratch_dir("hostile_cli_fifo");
        REQUIRE(::mkfifo((dir / "x.toml").c_str(), 0600) == 0);
        const auto r = run_segrank("train --config " + sq((dir / "x.toml").string()) + " --check",
                                   "timeout 20 ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(
            contains_text(r.output, "x.toml: is a FIFO (named pipe), expected a TOML config file"));
        const auto lb = run_segrank("report " + sq(dir.string()) + " --out " +
                                        sq((dir / "r.html").string()) + " --leaderboard /dev/zero",
                                    "timeout 20 ");
        INFO(lb.output);
        CHECK(lb.exit_code == 1);
        CHECK(contains_text(lb.output, "/dev/zero: is a character device"));
    }

    TEST_CASE("segrank bench refuses step and size counts beyond their bounds naming the option") {
        const auto steps = run_segrank("bench --no-peer --steps 1000000000000");
        INFO(steps.output);
        CHECK(steps.exit_code == 1);
        CHECK(contains_text(steps.output, "--steps: expected 1 to 100000, got 1000000000000"));
        const fs::path dir = scratch_dir("hostile_cli_bench_bounds");
        const auto nodes = run_segrank("bench --memory --make-store " + sq(dir.string()) +
                                       " --nodes 1000000000000");
        INFO(nodes.output);
        CHECK(nodes.exit_code == 1);
        CHECK(contains_text(nodes.output, "--nodes: expected"));
        CHECK(contains_text(nodes.output, "to 100000000, got 1000000000000"));
        const auto msteps = run_segrank("bench --memory --steps 1000000000000");
        CHECK(msteps.exit_code == 1);
        CHECK(contains_text(msteps.output, "--steps: expected 1 to 100000"));
    }

    TEST_CASE("a second segrank synth into the same --out fails while the first holds it") {
        const fs::path dir = scratch_dir("hostile_cli_synth_lock");
        fs::create_directories(dir / "out");
        // flock(1) holds the folder's lock as a running synth would.
        const auto r = run_segrank("synth --out " + sq((dir / "out").string()) +
                                       " --collections tile --graphs 2 --nodes 20:30 --configs 4",
                                   "flock -n " + sq((dir / "out").string()) + " ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "is being written by another process (pid "));
        CHECK(fs::is_empty(dir / "out"));
    }

    TEST_CASE("bench_quality.py checks --set with segrank train --check before any synth") {
        if (!have_python3()) {
            MESSAGE("SKIPPED: python3 not found");
            return;
        }
        const fs::path dir = scratch_dir("hostile_cli_bench_quality_set");
        const auto r = run_command(
            "/usr/bin/python3 " + sq((source_dir() / "scripts" / "bench_quality.py").string()) +
            " --segrank " + sq(segrank_binary().string()) + " --work " +
            sq((dir / "work").string()) + " --tiny --cases synth_tile --set model.hiden=8");
        INFO(r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, "model.hiden: unknown key"));
        CHECK_FALSE(fs::exists(dir / "work/logs"));
    }

    TEST_CASE("segrank evaluate --json replaces only an earlier evaluate output, never run files") {
        const fs::path dir = scratch_dir("hostile_cli_evaluate_json");
        const fs::path cfg = tiny_setup(dir, 1);
        REQUIRE(run_segrank("train --config " + sq(cfg.string())).exit_code == 0);
        const fs::path run = dir / "run";
        std::ofstream(dir / "package.json") << "{\"name\": \"mine\"}\n";
        const std::string base = "evaluate --checkpoint " + sq(run.string()) + " --split train";
        for (const fs::path& f :
             {run / "metrics.jsonl", run / "report.json", dir / "package.json"}) {
            const std::string before = read_file_text(f);
            const auto r = run_segrank(base + " --json " + sq(f.string()));
            INFO(f, "\n", r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "--json " + f.string() +
                                              ": is a JSON or JSON-lines "
                                              "file, not a segrank evaluate --json output"));
            CHECK(read_file_text(f) == before);
        }
        // Refused before the work: a missing folder.
        const auto nodir = run_segrank(base + " --json " + sq((dir / "no/e.json").string()));
        CHECK(nodir.exit_code == 1);
        CHECK(contains_text(nodir.output,
                            "--json " + (dir / "no/e.json").string() + ": cannot write: folder"));
        CHECK_FALSE(contains_text(nodir.output, "overall"));
        // Its own output (marked "kind": "segrank evaluate") is replaced.
        const std::string ok = base + " --json " + sq((dir / "e.json").string());
        REQUIRE(run_segrank(ok).exit_code == 0);
        CHECK(read_file_text(dir / "e.json").starts_with("{\"kind\":\"segrank evaluate\","));
        CHECK(run_segrank(ok).exit_code == 0);
    }

    TEST_CASE("segrank report --out replaces a page it wrote but not a user's own HTML page") {
        const fs::path dir = scratch_dir("hostile_cli_report_user_page");
        const fs::path data = write_lb_truth(dir / "truth");
        const fs::path mine = dir / "p.html";
        std::ofstream(mine) << "<html>mine</html>\n";
        const auto r = run_segrank("report " + sq(data.string()) + " --out " + sq(mine.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "--out " + mine.string() +
                                          ": is an HTML page, not a page segrank report wrote"));
        CHECK(read_file_text(mine) == "<html>mine</html>\n");
        const fs::path page = dir / "r.html";
        const std::string ok = "report " + sq(data.string()) + " --out " + sq(page.string());
        REQUIRE(run_segrank(ok).exit_code == 0);
        CHECK(contains_text(read_file_text(page),
                            "<meta name=\"generator\" content=\"segrank report\">"));
        CHECK(run_segrank(ok).exit_code == 0);
    }

    TEST_CASE("segrank hwmodel refuses one path for --out and --scores, and a missing folder") {
        const fs::path dir = scratch_dir("hostile_cli_hwmodel_outputs");
        const fs::path root = write_lb_truth(dir / "truth");
        const std::string base = "hwmodel --data " + sq(root.string()) + " --split valid";
        const auto same = run_segrank(base + " --out " + sq((dir / "hw.csv").string()) +
                                      " --scores " + sq((dir / "hw.csv").string()));
        INFO(same.output);
        CHECK(same.exit_code == 1);
        CHECK(contains_text(same.output, "name the same file"));
        CHECK_FALSE(contains_text(same.output, "graphs)"));  // refused before any graph
        CHECK_FALSE(fs::exists(dir / "hw.csv"));
        const auto nodir = run_segrank(base + " --out " + sq((dir / "no/hw.csv").string()));
        INFO(nodir.output);
        CHECK(nodir.exit_code == 1);
        CHECK(contains_text(nodir.output, "cannot write: folder"));
        CHECK_FALSE(contains_text(nodir.output, "graphs)"));
        const auto ok = run_segrank(base + " --out " + sq((dir / "hw.csv").string()) +
                                    " --scores " + sq((dir / "scores.csv").string()));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }

    TEST_CASE("segrank pack --force replaces a graph store but not a checkpoint") {
        const fs::path dir = scratch_dir("hostile_cli_pack_force");
        const fs::path cfg = tiny_setup(dir, 1);
        REQUIRE(run_segrank("train --config " + sq(cfg.string())).exit_code == 0);
        const fs::path root = write_lb_truth(dir / "truth");
        const std::string src = sq((root / "npz/tile/xla/valid").string());
        const fs::path ckpt = dir / "run/best.ckpt.h5";
        const std::string before = read_file_text(ckpt);
        const auto r = run_segrank("pack " + src + " --out " + sq(ckpt.string()) + " --force");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, ckpt.string() + " is an HDF5 file (a checkpoint or graph "
                                                      "store), not a segrank graph store"));
        CHECK(read_file_text(ckpt) == before);
        const std::string ok = "pack " + src + " --out " + sq((dir / "s.h5").string());
        REQUIRE(run_segrank(ok).exit_code == 0);
        CHECK(run_segrank(ok + " --force").exit_code == 0);
    }

    TEST_CASE("segrank train refuses to replace a user's files in a folder that is no run") {
        const fs::path dir = scratch_dir("hostile_cli_train_user_files");
        const fs::path cfg = tiny_setup(dir, 1);
        const std::string tiny = read_file_text(cfg);
        // The config kept as RUN_DIR/config.toml: the file the run writes its config to.
        const fs::path e = dir / "e";
        fs::create_directories(e);
        std::ofstream(e / "config.toml") << "# my notes\n" << tiny;
        const std::string mine = read_file_text(e / "config.toml");
        const auto self = run_segrank("train --config " + sq((e / "config.toml").string()) +
                                      " --run-dir " + sq(e.string()));
        INFO(self.output);
        CHECK(self.exit_code == 1);
        CHECK(contains_text(self.output, "--config " + (e / "config.toml").string() +
                                             " is the file the run writes its effective config"));
        CHECK(read_file_text(e / "config.toml") == mine);
        // A user's config.toml, report.json or metrics.jsonl there (config given elsewhere).
        for (const char* f : {"config.toml", "report.json", "metrics.jsonl"}) {
            const fs::path u = dir / (std::string("u_") + f);
            fs::create_directories(u);
            std::ofstream(u / f) << (std::string(f) == "config.toml" ? "# mine\n" : "{\"a\": 1}\n");
            const std::string before = read_file_text(u / f);
            const auto r =
                run_segrank("train --config " + sq(cfg.string()) + " --run-dir " + sq(u.string()));
            INFO(f, "\n", r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "train.run_dir " + (u / f).string() + ": is "));
            CHECK(contains_text(r.output, "segrank train replaces only an earlier one"));
            CHECK(read_file_text(u / f) == before);
            CHECK_FALSE(fs::exists(u / ".lock"));
        }
        // Any other file in a folder that is no run directory (also under --check).
        const fs::path g = dir / "g";
        fs::create_directories(g);
        std::ofstream(g / "notes.txt") << "hi\n";
        for (const char* extra : {"", " --check"}) {
            const auto r = run_segrank("train --config " + sq(cfg.string()) + " --run-dir " +
                                       sq(g.string()) + extra);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "train.run_dir " + g.string() +
                                              ": not empty and not a segrank run directory"));
            CHECK(contains_text(r.output, (g / "notes.txt").string() + " is no file a run writes"));
        }
        // A config kept beside the run's files is fine, and so is --overwrite of an earlier run
        // that holds other files (an evaluate --json output).
        const fs::path k = dir / "k";
        fs::create_directories(k);
        fs::copy_file(cfg, k / "my.toml");
        const std::string keep =
            "train --config " + sq((k / "my.toml").string()) + " --run-dir " + sq(k.string());
        REQUIRE(run_segrank(keep).exit_code == 0);
        std::ofstream(k / "eval.json") << "{}\n";
        const auto again = run_segrank(keep + " --overwrite");
        INFO(again.output);
        CHECK(again.exit_code == 0);
        CHECK(fs::exists(k / "eval.json"));
    }

    TEST_CASE("segrank tune locks its --out and refuses a folder that is no tune directory") {
        const fs::path dir = scratch_dir("hostile_cli_tune_out");
        const fs::path cfg = tiny_setup(dir, 1);
        REQUIRE(run_segrank("train --config " + sq(cfg.string())).exit_code == 0);
        const fs::path npz = dir / "data/npz/layout/xla/random/train/tiny_train_0.npz";
        REQUIRE(fs::is_regular_file(npz));
        const auto tune = [&](const fs::path& out, const std::string& extra,
                              const std::string& prefix = "") {
            return run_segrank("tune --graph " + sq(npz.string()) +
                                   " --budget 3 --strategy random --quiet --out " +
                                   sq(out.string()) + extra,
                               prefix);
        };
        // A training run directory and a user's best.json are refused, nothing written.
        const fs::path run = dir / "run";
        const auto r = tune(run, "");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "--out " + run.string() +
                                          ": not empty and not a tune directory (no tune.json)"));
        CHECK_FALSE(fs::exists(run / "tune.json"));
        CHECK_FALSE(fs::exists(run / "best.json"));
        const fs::path d = dir / "d";
        fs::create_directories(d);
        std::ofstream(d / "best.json") << "{\"mine\": 1}\n";
        const auto u = tune(d, "");
        INFO(u.output);
        CHECK(u.exit_code == 1);
        CHECK(contains_text(u.output, (d / "best.json").string() + " is no file a tune writes"));
        CHECK(read_file_text(d / "best.json") == "{\"mine\": 1}\n");
        // A second tune (here flock(1) holding the lock as a running tune would) is refused.
        const fs::path t = dir / "t";
        REQUIRE(tune(t, "").exit_code == 0);
        REQUIRE(fs::exists(t / ".lock"));
        const std::string before = read_file_text(t / "measurements.jsonl");
        for (const char* extra : {"", " --resume"}) {
            const auto busy =
                run_segrank("tune --graph " + sq(npz.string()) + " --budget 5 --checkpoint " +
                                sq(run.string()) + " --quiet --out " + sq(t.string()) + extra,
                            "flock -n " + sq((t / ".lock").string()) + " ");
            INFO(busy.output);
            CHECK(busy.exit_code == 1);
            CHECK(contains_text(busy.output, "tune directory " + t.string() +
                                                 " is in use by another segrank tune (pid "));
        }
        CHECK(read_file_text(t / "measurements.jsonl") == before);
        // A failed fresh tune leaves no folder (nor .lock) behind.
        const auto bad =
            run_segrank("tune --graph " + sq((dir / "none.npz").string()) +
                        " --budget 3 --strategy random --out " + sq((dir / "gone/x").string()));
        CHECK(bad.exit_code == 1);
        CHECK_FALSE(fs::exists(dir / "gone"));
    }

    TEST_CASE("graph names with a comma or a line break are refused when the folder is listed") {
        // A graph's name is its npz file stem and a field of the submission CSV (ID,TopConfigs):
        // stats and train refuse it up front instead of predict failing late on its CSV.
        const fs::path dir = scratch_dir("hostile_cli_graph_name_csv");
        const fs::path cfg = tiny_setup(dir, 2);
        const fs::path folder = dir / "data/npz/layout/xla/random/train";
        const std::pair<std::string, std::string> cases[] = {{"tiny,comma", "','"},
                                                             {"tiny\nline", "'\\n'"}};
        for (const auto& [stem, shown] : cases) {
            fs::rename(folder / "tiny_train_1.npz", folder / (stem + ".npz"));
            const fs::path bad = folder / (stem + ".npz");
            for (const std::string& cmd :
                 {"stats " + sq((dir / "data").string()), "train --config " + sq(cfg.string())}) {
                const auto r = run_segrank(cmd);
                INFO(cmd, r.output);
                CHECK(r.exit_code == 1);
                CHECK(contains_text(r.output, folder.string() + "/" +
                                                  (stem == "tiny,comma" ? stem : "tiny\\nline") +
                                                  ".npz: graph name (the file name without .npz) "
                                                  "contains " +
                                                  shown));
                CHECK(contains_text(r.output, "submission CSV"));
            }
            CHECK_FALSE(fs::exists(dir / "run"));
            fs::rename(bad, folder / "tiny_train_1.npz");
        }
    }

    TEST_CASE("segrank evaluate where no graph can be scored exits 1 naming the data, no nan") {
        // Every graph of the evaluated split has one runtime for all its configs: Kendall tau, OPA
        // and the score are undefined, so the evaluation scored nothing (was "overall nan", exit
        // 0).
        const fs::path dir = scratch_dir("hostile_cli_evaluate_nothing_scored");
        const fs::path cfg = tiny_setup(dir, 2);
        const auto train = run_segrank("train --config " + sq(cfg.string()));
        INFO(train.output);
        REQUIRE(train.exit_code == 0);
        const fs::path folder = dir / "data/npz/layout/xla/random/train";
        for (const auto& e : fs::directory_iterator(folder)) {
            segrank::LayoutGraph g =
                segrank::load_layout_npz(e.path(), segrank::LabelPolicy::kRequirePositive);
            for (auto& t : g.config_runtime) t = 1000;
            segrank::save_layout_npz(g, e.path());
        }
        const fs::path json = dir / "eval.json";
        const auto r = run_segrank("evaluate --checkpoint " + sq((dir / "run").string()) +
                                   " --split train --json " + sq(json.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "no graph could be scored: none of the 4 graph(s) of split "
                            "'train' under '" +
                                (dir / "data").string() + "' has two scored configs"));
        CHECK_FALSE(contains_text(r.output, "nan"));
        CHECK_FALSE(contains_text(r.output, "overall"));
        CHECK_FALSE(fs::exists(json));
    }

    TEST_CASE("segrank train --resume names a missing run directory, a broken link and a file") {
        const fs::path dir = scratch_dir("hostile_cli_resume_missing");
        const fs::path missing = dir / "no_such_run";
        const auto r = run_segrank("train --resume " + sq(missing.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, missing.string() + ": no such run directory (expected the "
                                                         "run directory of an earlier segrank "
                                                         "train)"));
        CHECK_FALSE(contains_text(r.output, "config.toml"));
        const fs::path link = dir / "run_link";
        fs::create_symlink(dir / "gone", link);
        const auto dangling = run_segrank("train --resume " + sq(link.string()));
        INFO(dangling.output);
        CHECK(dangling.exit_code == 1);
        CHECK(contains_text(dangling.output, link.string() + ": broken symbolic link (to '" +
                                                 (dir / "gone").string() +
                                                 "', which does not exist) (expected the run"));
        std::ofstream(dir / "file") << "x\n";
        const auto file = run_segrank("train --resume " + sq((dir / "file").string()));
        INFO(file.output);
        CHECK(file.exit_code == 1);
        CHECK(contains_text(file.output, (dir / "file").string() + ": not a directory"));
        CHECK_FALSE(fs::exists(dir / "gone"));
        CHECK_FALSE(fs::exists(missing));
    }

    TEST_CASE("Ctrl-C after a checkpoint stops train at its next step naming the resume command") {
        const fs::path dir = scratch_dir("hostile_cli_train_sigint");
        write_tiny_layout_collection(dir / "data");
        segrank::RunConfig c = tiny_run_config(dir / "data", dir / "run", 1000000);
        c.train.checkpoint_every = 3;
        segrank::save_config(c, dir / "tiny.toml");
        const fs::path log = dir / "train.log";
        const std::string cmd = "cd " + sq(source_dir().string()) + " && OMP_NUM_THREADS=1 exec " +
                                sq(segrank_binary().string()) + " train --config " +
                                sq((dir / "tiny.toml").string());
        const InterruptedRun r = sigint_once_file_exists(cmd, dir / "run/last.ckpt.h5", log);
        const std::string& out = r.output;
        INFO(out);
        REQUIRE(r.started);
        CHECK(WIFEXITED(r.status));
        CHECK(WEXITSTATUS(r.status) == 130);
        const std::string run = (dir / "run").string();
        CHECK(contains_text(out, "segrank train: interrupted at step "));
        CHECK(contains_text(out, "; last checkpoint " + run + "/last.ckpt.h5 (step "));
        CHECK(contains_text(out, "); continue with: segrank train --resume " + run + "\n"));
        CHECK_FALSE(contains_text(out, "error"));
        // The run directory is whole: the printed command passes the start-up checks.
        const auto check = run_segrank("train --resume " + sq(run) + " --check");
        INFO(check.output);
        CHECK(check.exit_code == 0);
    }
    TEST_CASE("segrank ingest and pack refuse an empty --out naming the option, writing nothing") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        // Run inside an empty folder: an empty path used as a folder would mean this one.
        const fs::path dir = scratch_dir("hostile_cli_empty_out");
        const fs::path cwd = dir / "cwd";
        fs::create_directories(cwd);
        const fs::path root = write_lb_truth(dir / "truth");
        auto in_cwd = [&](const std::string& args) {
            return run_command("cd " + sq(cwd.string()) + " && " + sq(segrank_binary().string()) +
                               " " + args);
        };
        const auto ingest = in_cwd(
            "ingest " + sq((data / "xla_tuning" / "op_tuning_data.pb").string()) + " --out ''");
        INFO(ingest.output);
        CHECK(ingest.exit_code == 1);
        CHECK(contains_text(ingest.output, "--out: expected an output folder, got an empty path"));
        const auto pack =
            in_cwd("pack " + sq((root / "npz/tile/xla/valid").string()) + " --out ''");
        INFO(pack.output);
        CHECK(pack.exit_code == 1);
        CHECK(contains_text(pack.output,
                            "--out: expected an output .h5 file or folder, got an empty path"));
        CHECK(fs::is_empty(cwd));
    }

    TEST_CASE("segrank ingest names the .pb file, module, run and layout entry of a corrupt dim") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const fs::path dir = scratch_dir("hostile_cli_ingest_corrupt_pb");
        // One byte of a packed minor_to_major list of the real layout file set to 127 (a dim
        // index no rank-6 shape has): runs[16], configurable node 14, the input tensor's dim 1.
        std::string bytes = read_file_text(data / "xla_tuning" / "module_tuning_data_layout.pb");
        REQUIRE(bytes.size() > 514735);
        bytes[514735] = '\x7f';
        const fs::path pb = dir / "corrupt.pb";
        std::ofstream(pb, std::ios::binary) << bytes;
        const auto r =
            run_segrank("ingest " + sq(pb.string()) + " --out " + sq((dir / "out").string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, pb.string() + " (module '"));
        CHECK(contains_text(r.output, "module_config.layout_config.nodes["));
        CHECK(contains_text(r.output, "= 127"));
        CHECK(contains_text(r.output, "expected a dimension index in [-1, 5]"));
        CHECK_FALSE(contains_text(r.output, "key '"));
        CHECK_FALSE(fs::exists(dir / "out"));
    }

    TEST_CASE("segrank synth --force replaces an earlier synth output whole, not a user's files") {
        const fs::path dir = scratch_dir("hostile_cli_synth_force_whole");
        const fs::path out = dir / "out";
        const std::string synth = "synth --out " + sq(out.string()) +
                                  " --graphs 3 --nodes 20:30 --configs 4 -q --collections ";
        REQUIRE(run_segrank(synth + "layout,tile").exit_code == 0);
        REQUIRE(fs::is_directory(out / "npz/tile/xla/train"));
        // A user's own files beside synth's: kept.
        std::ofstream(out / "notes.txt") << "mine\n";
        std::ofstream(out / "npz/tile/README") << "mine\n";
        const auto r = run_segrank(synth + "layout --force");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        CHECK(contains_text(r.output, "removed the earlier collection split"));
        for (const char* split : {"train", "valid", "test"}) {
            CHECK_FALSE(fs::exists(out / "npz/tile/xla" / split));
            CHECK(fs::is_directory(out / "npz/layout/xla/random" / split));
        }
        CHECK_FALSE(fs::exists(out / "npz/tile/xla"));  // left empty by the removal
        CHECK(read_file_text(out / "notes.txt") == "mine\n");
        CHECK(read_file_text(out / "npz/tile/README") == "mine\n");
        // Another format replaces the npz output too; without --force nothing is removed.
        REQUIRE(run_segrank(synth + "tile --format hdf5").exit_code == 0);
        CHECK(fs::is_directory(out / "npz/layout/xla/random/train"));
        REQUIRE(run_segrank(synth + "tile --format hdf5 --force").exit_code == 0);
        CHECK_FALSE(fs::exists(out / "npz/layout"));
        CHECK(fs::exists(out / "h5/tile_xla_train.h5"));
        CHECK(read_file_text(out / "npz/tile/README") == "mine\n");
        // A manifest naming anything but a synth split is refused before any work.
        std::ofstream(out / ".synth-manifest") << "notes.txt\n";
        const auto bad = run_segrank(synth + "layout --force");
        INFO(bad.output);
        CHECK(bad.exit_code == 1);
        CHECK(contains_text(bad.output,
                            (out / ".synth-manifest").string() +
                                ": line 1: 'notes.txt' is not a file segrank synth writes"));
        CHECK(fs::exists(out / "notes.txt"));
        CHECK(fs::exists(out / "h5/tile_xla_train.h5"));
        CHECK_FALSE(fs::exists(out / "npz/layout"));
    }
}
