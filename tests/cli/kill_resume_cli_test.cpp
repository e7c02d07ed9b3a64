// A training process killed with SIGKILL while it writes a checkpoint (checkpoint_every = 1, the
// kill repeated, at growing delays after the first checkpoint appears, until it lands with a
// "<file>.tmp-<pid>" on disk, i.e. inside a write) leaves the previous last.ckpt.h5 intact:
// `--resume` loads it and the resumed run ends with the same parameters, bit for bit, as an
// uninterrupted run.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

std::string train_args(const fs::path& dir, const fs::path& run, int steps) {
    return "train --config configs/tiny.toml --set data.root=" + sq((dir / "data").string()) +
           " --set train.run_dir=" + sq(run.string()) +
           " --set train.steps=" + std::to_string(steps) +
           " --set train.eval_every=0 --set train.checkpoint_every=1 --set train.threads=1";
}

std::string segrank_in_src(const std::string& args) {
    return "cd " + sq(source_dir().string()) + " && OMP_NUM_THREADS=1 " +
           sq(segrank_binary().string()) + " " + args;
}

bool has_temp_checkpoint(const fs::path& run) {
    if (!fs::is_directory(run)) return false;
    for (const auto& e : fs::directory_iterator(run))
        if (e.path().filename().string().find(".ckpt.h5.tmp-") != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE(
    "kill -9 inside a checkpoint write leaves the previous checkpoint, and --resume ends bit for "
    "bit "
    "like an uninterrupted run") {
    const fs::path dir = scratch_dir("cli_kill_resume");
    TinyLayoutSpec spec;
    spec.valid_graphs = 1;
    write_tiny_layout_collection(dir / "data", spec);
    const int steps = 60;
    const fs::path whole = dir / "whole";
    const auto w = run_command(segrank_in_src(train_args(dir, whole, steps)));
    INFO(w.output);
    REQUIRE(w.exit_code == 0);

    const fs::path run = dir / "killed";
    bool landed = false;
    for (int attempt = 0; attempt < 60 && !landed; ++attempt) {
        fs::remove_all(run);
        // The kill waits until a first last.ckpt.h5 exists (startup takes seconds under the
        // sanitizers, longer than any fixed delay: the CI failure), then comes after 0 .. 29 ms,
        // twice over; it must find a last.ckpt.h5 (an earlier step's) and a temp file beside it
        // (the write it interrupted).
        const std::string delay = std::to_string(0.001 * (attempt % 30));
        const std::string last = sq((run / "last.ckpt.h5").string());
        std::string cmd = "(";  // appended: GCC 12's -Wrestrict misfires on "(" + std::string
        cmd += segrank_in_src(train_args(dir, run, steps));
        cmd += " >/dev/null 2>&1 & pid=$!; while [ ! -e " + last +
               " ] && kill -0 $pid 2>/dev/null; do sleep 0.002; done; sleep " + delay +
               "; kill -9 $pid; wait $pid) 2>/dev/null";
        run_command(cmd);
        landed = has_temp_checkpoint(run) && fs::exists(run / "last.ckpt.h5");
    }
    REQUIRE_MESSAGE(landed, "no kill landed inside a checkpoint write in 60 attempts");
    const auto r = run_command(segrank_in_src("train --resume " + sq(run.string())));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("resuming from step") != std::string::npos);
    const auto cmp = run_command(
        "/usr/bin/python3 -c \"import h5py, numpy as np, sys; a=h5py.File(sys.argv[1])['params']; "
        "b=h5py.File(sys.argv[2])['params']; assert sorted(a)==sorted(b); "
        "d=[k for k in a if not np.array_equal(a[k][...], b[k][...])]; print('differing', len(d)); "
        "sys.exit(1 if d else 0)\" " +
        sq((run / "last.ckpt.h5").string()) + " " + sq((whole / "last.ckpt.h5").string()));
    INFO(cmp.output);
    CHECK(cmp.exit_code == 0);
}
