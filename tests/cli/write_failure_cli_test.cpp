// HDF5 writes that fail mid-way (a file-size limit with SIGXFSZ ignored stands in for a full disk;
// no privileges needed): one clear error, exit 1, no crash at exit, nothing partial left behind.
// Before the fix both commands printed the error and then died with SIGSEGV (exit 139) in HDF5's
// exit-time cleanup.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

// Runs `segrank <args>` from the repository root with a file-size limit of `kib` KiB.
CommandResult run_limited(int kib, const std::string& args) {
    return run_command("cd " + sq(source_dir().string()) + " && OMP_NUM_THREADS=2 bash -c " +
                       sq("trap \"\" XFSZ; ulimit -f " + std::to_string(kib) + "; exec " +
                          segrank_binary().string() + " " + args));
}

int count_lines_with(const std::string& text, const std::string& needle) {
    int n = 0;
    std::istringstream is(text);
    for (std::string line; std::getline(is, line);) n += line.find(needle) != std::string::npos;
    return n;
}

}  // namespace

TEST_CASE(
    "segrank pack whose store write fails exits 1 with one error naming the store, no crash, no "
    "store") {
    const fs::path dir = scratch_dir("pack_write_fail");
    TinyLayoutSpec spec;
    spec.min_nodes = spec.max_nodes = 400;  // node_feat 224 KB per graph
    write_tiny_layout_collection(dir / "data", spec);
    const auto r =
        run_limited(128, "pack " + (dir / "data").string() + " --out " + (dir / "out").string());
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(count_lines_with(r.output, "error:") == 1);
    CHECK(r.output.find((dir / "out").string()) != std::string::npos);
    CHECK(r.output.find("File too large") != std::string::npos);
    CHECK((!fs::exists(dir / "out") || fs::is_empty(dir / "out")));
}

TEST_CASE(
    "segrank train whose checkpoint write fails exits 1 with one error naming the checkpoint, no "
    "crash") {
    const fs::path dir = scratch_dir("train_ckpt_write_fail");
    TinyLayoutSpec spec;
    spec.valid_graphs = 2;
    write_tiny_layout_collection(dir / "data", spec);
    // model.hidden = 128: a checkpoint of about 1.7 MB, over the 256 KiB limit.
    const auto r = run_limited(
        256, "train --config configs/tiny.toml --set train.run_dir=" + sq((dir / "run").string()) +
                 " --set data.root=" + sq((dir / "data").string()) +
                 " --set train.checkpoint_every=5 --set model.hidden=128");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(count_lines_with(r.output, "error:") == 1);
    CHECK(r.output.find("last.ckpt.h5.tmp") != std::string::npos);
    CHECK(r.output.find("File too large") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "run" / "last.ckpt.h5.tmp"));
}

TEST_CASE("segrank synth whose write fails exits 1 naming the file and leaves no output folder") {
    const fs::path dir = scratch_dir("synth_write_fail");
    const auto r = run_limited(64, "synth --out " + (dir / "new" / "out").string() +
                                       " --collections layout --graphs 3 --nodes 400:400 "
                                       "--configs 16 --stored -q");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(count_lines_with(r.output, "error:") == 1);
    CHECK(r.output.find("File too large") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "new"));  // neither out nor the parent synth created
}

TEST_CASE(
    "an output path the operating system refuses is an error naming the path, exit 1, not an "
    "internal error") {
    const fs::path dir = scratch_dir("env_error_paths");
    {
        std::ofstream f(dir / "plain_file");
        f << "x";
    }
    const auto r = run_command(segrank_binary().string() + " synth --out " +
                               (dir / "plain_file" / "sub").string() +
                               " --collections tile --graphs 2 --nodes 20:40 --configs 4 -q");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("internal error") == std::string::npos);
    CHECK(r.output.find((dir / "plain_file").string() + "' exists and is not a directory") !=
          std::string::npos);
    // /proc refuses new directories: the OS's reason and the path, exit 1.
    const auto p = run_command(segrank_binary().string() +
                               " synth --out /proc/segrank_no_such/x --collections tile --graphs 2 "
                               "--nodes 20:40 --configs 4 -q");
    INFO(p.output);
    CHECK(p.exit_code == 1);
    CHECK(p.output.find("internal error") == std::string::npos);
    CHECK(p.output.find("'/proc/segrank_no_such'") != std::string::npos);
}
