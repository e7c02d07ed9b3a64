// Run-directory integrity (trainer/run_dir.h): the run lock, what --resume may change, the data
// fingerprint of checkpoints, and the cleanup of fresh runs that fail before their first
// checkpoint.
#include "trainer/run_dir.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/child_process.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/checkpoint.h"
#include "trainer/comm.h"
#include "trainer/trainer.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

void write_text(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// A run of 3 steps with a last checkpoint, config.toml and a known metrics.jsonl in dir/run.
RunConfig make_checkpointed_run(const fs::path& dir, const TinyLayoutSpec& spec = {}) {
    write_tiny_layout_collection(dir / "data", spec);
    RunConfig cfg = tiny_run_config(dir / "data", dir / "run", 6);
    cfg.segments.max_nodes = 500;
    LocalCommunicator comm;
    Trainer t(cfg, comm);
    for (int i = 0; i < 3; ++i) t.step();
    t.save_checkpoint("last");
    write_text(dir / "run" / "metrics.jsonl",
               "{\"phase\":\"train\",\"step\":3}\n{\"phase\":\"train\",\"step\":4}\n");
    return cfg;
}

}  // namespace

TEST_CASE(
    "RunDirLock: a second lock on the same run directory fails naming the holder's pid until the "
    "first is released") {
    const fs::path dir = scratch_dir("run_dir_lock") / "run";
    {
        RunDirLock first(dir);
        CHECK(fs::is_regular_file(dir / ".lock"));
        const std::string msg = error_of([&] { RunDirLock second(dir); });
        CHECK(msg == str("run directory ", dir.string(),
                         " is in use by another segrank train (pid ", getpid(), ")"));
    }
    CHECK(error_of([&] { RunDirLock again(dir); }).empty());
}

TEST_CASE("resume_may_change accepts operational keys only, not eval.metric") {
    for (const char* k :
         {"train.steps", "train.epochs", "train.eval_every", "train.log_every", "train.progress",
          "train.threads", "train.run_dir", "train.checkpoint_every", "train.patience",
          "eval.chunk_configs", "eval.split", "dist.threads_per_rank"})
        CHECK_MESSAGE(resume_may_change(k), k);
    // eval.metric chose the best checkpoint so far: its best_selection is a value of that metric.
    for (const char* k : {"segments.max_nodes", "model.hidden", "data.root", "data.collections",
                          "optim.lr", "sampling.seed", "train.seed", "loss.terms",
                          "segments.history_max_mb", "hwmodel.hardware", "eval.metric"})
        CHECK_MESSAGE(!resume_may_change(k), k);
}

TEST_CASE(
    "a resume that changes eval.metric is refused naming it: the best checkpoint so far was "
    "chosen by the old metric" *
    doctest::test_suite("hostile")) {
    RunConfig run;
    RunConfig now = run;
    now.eval.metric = cfg::EvalMetric::kSlowdown5;
    CHECK(
        error_of([&] { check_resume_config(run, now, "RUN"); }) ==
        "--resume RUN: eval.metric was \"kaggle\" in the run, now \"slowdown_5\"; resuming cannot "
        "change it");
}

TEST_CASE(
    "check_resume_config names every changed model/data/segmentation key with its old and new "
    "value") {
    RunConfig run;
    run.segments.max_nodes = 500;
    RunConfig now = run;
    now.train.steps = 5000;
    now.eval.chunk_configs = 64;
    now.dist.threads_per_rank = 3;
    now.train.run_dir = "elsewhere";
    CHECK_NOTHROW(check_resume_config(run, now, "RUN"));
    now.segments.max_nodes = 300;
    now.data.collections = {"tile:xla"};
    const std::string msg = error_of([&] { check_resume_config(run, now, "RUN"); });
    CHECK(msg.find("--resume RUN: segments.max_nodes was 500 in the run, now 300; resuming cannot "
                   "change it") != std::string::npos);
    CHECK(msg.find("--resume RUN: data.collections was [] in the run, now [\"tile:xla\"]; resuming "
                   "cannot change it") != std::string::npos);
    CHECK(msg.find("train.steps") == std::string::npos);
    const auto diffs = config_differences(run, now);
    REQUIRE(diffs.size() == 6);
    CHECK(diffs[0].first == "data.collections");
}

TEST_CASE(
    "a resume that changes segments.max_nodes fails before config.toml or metrics.jsonl are "
    "touched") {
    const fs::path dir = scratch_dir("run_dir_resume_key");
    RunConfig cfg = make_checkpointed_run(dir);
    const std::string config_before = read_file_text(dir / "run" / "config.toml");
    const std::string metrics_before = read_file_text(dir / "run" / "metrics.jsonl");
    cfg.segments.max_nodes = 300;
    LocalCommunicator comm;
    const std::string msg = error_of([&] { Trainer t(cfg, comm, dir / "run"); });
    CHECK(msg.find("segments.max_nodes was 500 in the run, now 300; resuming cannot change it") !=
          std::string::npos);
    CHECK(read_file_text(dir / "run" / "config.toml") == config_before);
    CHECK(read_file_text(dir / "run" / "metrics.jsonl") == metrics_before);
    // The run is still resumable with its own config.
    cfg.segments.max_nodes = 500;
    Trainer t(cfg, comm, dir / "run");
    CHECK(t.current_step() == 3);
}

TEST_CASE(
    "a resume of a checkpoint at the last step a run records says it cannot train further, "
    "suggesting no train.steps beyond the bound") {
    const fs::path dir = scratch_dir("run_dir_resume_at_bound");
    RunConfig cfg = make_checkpointed_run(dir);
    {
        CheckpointWriter w(dir / "run" / "last.ckpt.h5");
        w.put_state(2147483647, 0);
        w.put_attr("config_toml", dump_config(cfg));
        w.commit();
    }
    cfg.train.steps = 2147483647;
    std::string msg = error_of([&] { check_resume_start(cfg, dir / "run"); });
    CHECK(msg.find("nothing left to train: it is at the last step a run records (train.steps <= "
                   "2147483647), so this run cannot train further") != std::string::npos);
    CHECK(msg.find("--set train.steps=") == std::string::npos);
    {
        CheckpointWriter w(dir / "run" / "last.ckpt.h5");
        w.put_state(2147483000, 0);
        w.put_attr("config_toml", dump_config(cfg));
        w.commit();
    }
    cfg.train.steps = 2147483000;
    msg = error_of([&] { check_resume_start(cfg, dir / "run"); });
    CHECK(msg.find("raise it, e.g. --set train.steps=2147483647") != std::string::npos);
}

TEST_CASE(
    "a resume whose train.steps (or epoch-derived total) is not above the checkpoint step fails "
    "clearly") {
    const fs::path dir = scratch_dir("run_dir_resume_steps");
    RunConfig cfg = make_checkpointed_run(dir);
    const std::string metrics_before = read_file_text(dir / "run" / "metrics.jsonl");
    LocalCommunicator comm;
    cfg.train.steps = 3;
    std::string msg = error_of([&] { Trainer t(cfg, comm, dir / "run"); });
    CHECK(msg.find("the checkpoint is at step 3 and train.steps = 3") != std::string::npos);
    CHECK(msg.find("nothing left to train") != std::string::npos);
    // 4 training graphs, 2 per batch: one epoch is 2 steps, so train.epochs = 1 ends at step 2 < 3.
    cfg.train.steps = 0;
    cfg.train.epochs = 1;
    msg = error_of([&] { Trainer t(cfg, comm, dir / "run"); });
    CHECK(msg.find("the checkpoint is at step 3 and the run ends at step 2") != std::string::npos);
    CHECK(read_file_text(dir / "run" / "metrics.jsonl") == metrics_before);
}

TEST_CASE("a resume on replaced data fails naming the first graph that differs and its file") {
    const fs::path dir = scratch_dir("run_dir_resume_data");
    RunConfig cfg = make_checkpointed_run(dir);
    TinyLayoutSpec other;
    other.min_nodes = 20;
    other.max_nodes = 30;
    fs::remove_all(dir / "data");
    write_tiny_layout_collection(dir / "data", other);
    LocalCommunicator comm;
    const std::string msg = error_of([&] { Trainer t(cfg, comm, dir / "run"); });
    CHECK(msg.find("the data differs from the data the run was trained on") != std::string::npos);
    CHECK(msg.find("train graph 'tiny_train_0' (layout:xla:random) had ") != std::string::npos);
    CHECK(msg.find("tiny_train_0.npz") != std::string::npos);
    CHECK(msg.find("last.ckpt.h5") != std::string::npos);
}

TEST_CASE(
    "a resume on data whose runtimes changed (same names and sizes) fails naming the graph and its "
    "file") {
    const fs::path dir = scratch_dir("run_dir_resume_runtimes");
    RunConfig cfg = make_checkpointed_run(dir);
    // Rewrite tiny_train_2.npz with every runtime doubled: names, shapes and sizes stay.
    const fs::path file =
        dir / "data" / "npz" / "layout" / "xla" / "random" / "train" / "tiny_train_2.npz";
    LayoutGraph g = load_layout_npz(file, LabelPolicy::kRequirePositive);
    for (auto& r : g.config_runtime) r *= 2;
    save_layout_npz(g, file);
    LocalCommunicator comm;
    const std::string msg = error_of([&] { Trainer t(cfg, comm, dir / "run"); });
    CHECK(msg.find("the data differs from the data the run was trained on") != std::string::npos);
    CHECK(msg.find("train graph 'tiny_train_2' (layout:xla:random) has the same sizes but other "
                   "runtimes or config rows (config_runtime or node_config_feat changed, or its "
                   "rows were reordered; file ") != std::string::npos);
    CHECK(msg.find("tiny_train_2.npz") != std::string::npos);
    // Restored runtimes resume.
    for (auto& r : g.config_runtime) r /= 2;
    save_layout_npz(g, file);
    cfg.train.steps = 4;
    CHECK(error_of([&] { Trainer t(cfg, comm, dir / "run"); }).empty());
}

TEST_CASE(
    "a resume on data whose config rows were reordered (runtimes in place, a label change in "
    "effect) or whose node features changed fails naming the graph and its file" *
    doctest::test_suite("hostile")) {
    const fs::path dir = scratch_dir("run_dir_resume_reordered");
    RunConfig cfg = make_checkpointed_run(dir);
    const fs::path file =
        dir / "data" / "npz" / "layout" / "xla" / "random" / "train" / "tiny_train_1.npz";
    const fs::path backup = dir / "tiny_train_1.npz.orig";
    fs::copy_file(file, backup);
    LayoutGraph g = load_layout_npz(file, LabelPolicy::kRequirePositive);
    // Swap the first two config rows that differ; config_runtime stays as it was.
    const size_t row = static_cast<size_t>(g.num_config_nodes()) * kLayoutConfigDim;
    size_t other = 1;
    while (other < static_cast<size_t>(g.num_configs()) &&
           std::equal(g.node_config_feat.begin(), g.node_config_feat.begin() + row,
                      g.node_config_feat.begin() + other * row))
        ++other;
    REQUIRE(other < static_cast<size_t>(g.num_configs()));
    std::swap_ranges(g.node_config_feat.begin(), g.node_config_feat.begin() + row,
                     g.node_config_feat.begin() + other * row);
    save_layout_npz(g, file);
    LocalCommunicator comm;
    std::string msg = error_of([&] { Trainer t(cfg, comm, dir / "run"); });
    CHECK(msg.find("train graph 'tiny_train_1' (layout:xla:random) has the same sizes but other "
                   "runtimes or config rows") != std::string::npos);
    CHECK(msg.find("tiny_train_1.npz") != std::string::npos);
    // One node feature changed, config rows restored.
    g = load_layout_npz(backup, LabelPolicy::kRequirePositive);
    g.node_feat.data()[3 * kNodeFeatDim + 21] += 5.0f;
    save_layout_npz(g, file);
    msg = error_of([&] { Trainer t(cfg, comm, dir / "run"); });
    CHECK(msg.find("train graph 'tiny_train_1' (layout:xla:random) has the same sizes but other "
                   "graph data (node_feat, node_opcode, edge_index, node_config_ids or "
                   "node_splits changed; file ") != std::string::npos);
    fs::copy_file(backup, file, fs::copy_options::overwrite_existing);
    cfg.train.steps = 4;
    CHECK(error_of([&] { Trainer t(cfg, comm, dir / "run"); }).empty());
}

TEST_CASE("a manifest without the digest columns (older checkpoints) is compared by sizes only") {
    const fs::path dir = scratch_dir("run_dir_manifest_old");
    write_tiny_layout_collection(dir / "data");
    RunConfig cfg = tiny_run_config(dir / "data", dir / "run", 2);
    Dataset ds(cfg.data, 0);
    const std::string m = data_manifest(ds.train(), ds.eval());
    CHECK(m.find("\tconfigs=") != std::string::npos);
    CHECK(m.find("\tgraph=") != std::string::npos);
    std::string old;  // drop the digest columns of every line
    std::istringstream is(m);
    for (std::string line; std::getline(is, line);)
        old += line.substr(0, line.find("\tconfigs=")) + "\n";
    CHECK(old.find("configs=") == std::string::npos);
    CHECK_NOTHROW(check_data_manifest(old, ds.train(), ds.eval(), "ck"));
    const std::vector<GraphEntry> fewer(ds.eval().begin(), ds.eval().end() - 1);
    CHECK(error_of([&] {
              check_data_manifest(old, ds.train(), fewer, "ck");
          }).find("is missing from the data") != std::string::npos);
}

TEST_CASE(
    "check_data_manifest reports a missing and a new graph, and the fingerprint depends on the "
    "sizes") {
    const fs::path dir = scratch_dir("run_dir_manifest");
    write_tiny_layout_collection(dir / "data");
    RunConfig cfg = tiny_run_config(dir / "data", dir / "run", 2);
    Dataset ds(cfg.data, 0);
    const std::string m = data_manifest(ds.train(), ds.eval());
    CHECK(m.find("train\tlayout:xla:random\ttiny_train_0\t") == 0);
    CHECK_NOTHROW(check_data_manifest(m, ds.train(), ds.eval(), "ck"));
    REQUIRE(ds.eval().size() == 4);  // holdout = configs: every graph is also an evaluation graph
    const std::vector<GraphEntry> fewer(ds.eval().begin(), ds.eval().end() - 1);
    CHECK(error_of([&] { check_data_manifest(m, ds.train(), fewer, "ck"); })
              .find("eval graph 'tiny_train_3' (layout:xla:random) is missing from the data (8 "
                    "graphs in the run, 7 now)") != std::string::npos);
    const std::string without_last = m.substr(0, m.rfind('\n', m.size() - 2) + 1);
    const std::string msg =
        error_of([&] { check_data_manifest(without_last, ds.train(), ds.eval(), "ck"); });
    CHECK(msg.find("eval graph 'tiny_train_3' (layout:xla:random) is new (file ") !=
          std::string::npos);
    CHECK(msg.find("tiny_train_3.npz") != std::string::npos);
    std::vector<GraphEntry> swapped = ds.train();
    std::swap(swapped[0], swapped[1]);
    CHECK(error_of([&] { check_data_manifest(m, swapped, ds.eval(), "ck"); })
              .find("expected train graph 'tiny_train_0' (layout:xla:random) at position 0, found "
                    "train graph 'tiny_train_1'") != std::string::npos);
    CHECK(data_fingerprint(m).size() == 16);
    CHECK(data_fingerprint(m) != data_fingerprint(m + "x"));
}

TEST_CASE(
    "RunDirCleanup removes a run directory it did not find, or only the entries created or "
    "modified since") {
    const fs::path base = scratch_dir("run_dir_cleanup");
    {
        RunDirCleanup c(base / "new");
        fs::create_directories(base / "new");
        write_text(base / "new" / "config.toml", "x");
        CHECK(c.remove_created() == 1);
        CHECK(!fs::exists(base / "new"));
    }
    {
        const fs::path d = base / "old";
        fs::create_directories(d);
        write_text(d / "notes.txt", "mine");
        write_text(d / "config.toml", "old");
        const auto old_time = fs::last_write_time(d / "config.toml");
        RunDirCleanup c(d);
        write_text(d / "config.toml", "new");
        fs::last_write_time(d / "config.toml", old_time + std::chrono::seconds(5));
        write_text(d / "metrics.jsonl", "");
        CHECK(c.remove_created() == 2);
        CHECK(fs::exists(d / "notes.txt"));
        CHECK(!fs::exists(d / "config.toml"));
        CHECK(!fs::exists(d / "metrics.jsonl"));
    }
    {
        RunDirCleanup c(base / "ckpt");
        fs::create_directories(base / "ckpt");
        write_text(base / "ckpt" / "last.ckpt.h5", "x");
        CHECK(c.remove_created() == 0);
        CHECK(fs::exists(base / "ckpt" / "last.ckpt.h5"));
    }
}

TEST_CASE(
    "RunDirCleanup of a new run directory also removes the folders above it that it created, "
    "while they are empty") {
    const fs::path base = scratch_dir("run_dir_cleanup_parents");
    RunDirCleanup c(base / "x1" / "x2" / "x3");
    fs::create_directories(base / "x1" / "x2" / "x3");
    write_text(base / "x1" / "x2" / "x3" / "config.toml", "x");
    CHECK(c.remove_created() == 1);
    CHECK_FALSE(fs::exists(base / "x1"));
    CHECK(fs::exists(base));
    // A file another process put into a created parent meanwhile keeps that parent.
    RunDirCleanup d(base / "y1" / "y2" / "y3");
    fs::create_directories(base / "y1" / "y2" / "y3");
    write_text(base / "y1" / "theirs.txt", "x");
    CHECK(d.remove_created() == 1);
    CHECK_FALSE(fs::exists(base / "y1" / "y2"));
    CHECK(fs::exists(base / "y1" / "theirs.txt"));
    // Terminated by a signal: the same.
    auto killed = run_in_child([&] {
        RunDirCleanup k(base / "z1" / "z2");
        fs::create_directories(base / "z1" / "z2" / "partitions");
        k.arm_on_termination();
        ::raise(SIGTERM);
    });
    CHECK(killed.exit_code == 128 + SIGTERM);
    CHECK_FALSE(fs::exists(base / "z1"));
}

TEST_CASE(
    "a fresh run terminated by SIGTERM before its first checkpoint removes what it created, and "
    "nothing once a checkpoint exists") {
    const fs::path base = scratch_dir("run_dir_sigterm");
    // A directory that did not exist: removed whole.
    auto fresh = run_in_child([&] {
        RunDirCleanup c(base / "new");
        fs::create_directories(base / "new" / "partitions" / "deep");
        write_text(base / "new" / "partitions" / "deep" / "p.bin", "x");
        write_text(base / "new" / "config.toml", "x");
        c.arm_on_termination();
        ::raise(SIGTERM);
    });
    CHECK(fresh.exit_code == 128 + SIGTERM);
    CHECK_FALSE(fs::exists(base / "new"));
    // An existing directory: the run's entries go, what was there stays.
    fs::create_directories(base / "old");
    write_text(base / "old" / "notes.txt", "keep");
    auto old = run_in_child([&] {
        RunDirCleanup c(base / "old");
        write_text(base / "old" / "config.toml", "x");
        write_text(base / "old" / "metrics.jsonl", "x");
        fs::create_directories(base / "old" / "partitions");
        c.arm_on_termination();
        ::raise(SIGINT);
    });
    CHECK(old.exit_code == 128 + SIGINT);
    CHECK(fs::exists(base / "old" / "notes.txt"));
    CHECK_FALSE(fs::exists(base / "old" / "config.toml"));
    CHECK_FALSE(fs::exists(base / "old" / "metrics.jsonl"));
    CHECK_FALSE(fs::exists(base / "old" / "partitions"));
    // A checkpoint was written: everything is kept.
    auto kept = run_in_child([&] {
        RunDirCleanup c(base / "ck");
        fs::create_directories(base / "ck");
        write_text(base / "ck" / "last.ckpt.h5", "x");
        write_text(base / "ck" / "config.toml", "x");
        c.arm_on_termination();
        ::raise(SIGTERM);
    });
    CHECK(kept.exit_code == 128 + SIGTERM);
    CHECK(fs::exists(base / "ck" / "config.toml"));
    // Disarmed: the signal only terminates.
    auto disarmed = run_in_child([&] {
        RunDirCleanup c(base / "d");
        fs::create_directories(base / "d");
        c.arm_on_termination();
        RunDirCleanup::disarm_on_termination();
        ::raise(SIGTERM);
    });
    CHECK(disarmed.exit_code == 128 + SIGTERM);
    CHECK(fs::exists(base / "d"));
}

}  // namespace segrank::test
