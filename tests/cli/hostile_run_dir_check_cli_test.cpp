// Hostile trial 8: `segrank train --check` refuses a run directory the run cannot create (its
// parent a file, a path component longer than a file name may be, a dangling symbolic link above
// it), one a running train holds, and a segrank tune directory, naming the key.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

// `segrank train --config configs/tiny.toml --check` with data.root the tiny layout collection in
// dir/data (written once) and the run directory `run_dir`.
CommandResult check_run_dir(const fs::path& dir, const std::string& run_dir,
                            const std::string& mode = " --check") {
    if (!fs::exists(dir / "data")) write_tiny_layout_collection(dir / "data");
    return run_segrank_in_source("train --config configs/tiny.toml --set " +
                                     sq("data.root=\"" + (dir / "data").string() + "\"") +
                                     " --run-dir " + sq(run_dir) + mode,
                                 1);
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("segrank train --check refuses a run directory whose parent is a file") {
        const fs::path dir = scratch_dir("hostile_check_run_dir_parent_file");
        std::ofstream(dir / "base.toml") << "x = 1\n";
        const auto r = check_run_dir(dir, (dir / "base.toml/x").string());
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "train.run_dir (or --run-dir) '"));
        CHECK(contains_text(r.output, "base.toml' is not a directory"));
        CHECK_FALSE(contains_text(r.output, "config OK"));
        // A run directory to create in a folder passes, and --check creates nothing.
        const auto ok = check_run_dir(dir, (dir / "new/run").string());
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK_FALSE(fs::exists(dir / "new"));
    }

    TEST_CASE("segrank train --check names train.run_dir for a path component over 255 bytes") {
        const fs::path dir = scratch_dir("hostile_check_run_dir_long_name");
        const auto r = check_run_dir(dir, (dir / std::string(5000, 'a')).string());
        INFO(r.output.substr(0, 2000));
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "train.run_dir (or --run-dir) '"));
        CHECK(contains_text(r.output, "is 5000 bytes long, more than the 255 bytes"));
        CHECK_FALSE(contains_text(r.output, "status '"));
    }

    TEST_CASE("segrank train --check refuses a run directory in a folder it may not write to") {
        // Under euid 0 access() grants W_OK on a mode-555 folder (and so does the run's mkdir):
        // the refusal can only be seen as another user.
        if (::geteuid() == 0) {
            MESSAGE("skipped: running as root, a read-only folder is writable to it");
            return;
        }
        const fs::path dir = scratch_dir("hostile_check_run_dir_read_only");
        fs::create_directories(dir / "rod");
        fs::permissions(dir / "rod", fs::perms::owner_read | fs::perms::owner_exec);
        const auto r = check_run_dir(dir, (dir / "rod/x").string());
        fs::permissions(dir / "rod", fs::perms::owner_all);
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "cannot be created in '"));
        CHECK(contains_text(r.output, "Permission denied"));
    }

    TEST_CASE("segrank train --check and the run refuse a run directory below a dangling link") {
        const fs::path dir = scratch_dir("hostile_check_run_dir_dangling_parent");
        fs::create_symlink(dir / "gone", dir / "link");
        for (const char* mode : {" --check", " --set train.steps=1"}) {
            const auto r = check_run_dir(dir, (dir / "link/run").string(), mode);
            INFO(mode, r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "train.run_dir (or --run-dir) '"));
            CHECK(contains_text(r.output, "link' is a dangling symbolic link to '"));
            CHECK_FALSE(contains_text(r.output, "File exists"));
            CHECK_FALSE(contains_text(r.output, "config OK"));
        }
        CHECK_FALSE(fs::exists(dir / "gone"));
    }

    TEST_CASE(
        "segrank train --check refuses a run directory a running train holds, naming its pid") {
        const fs::path dir = scratch_dir("hostile_check_run_dir_locked");
        fs::create_directories(dir / "run");
        // This process holds the lock as a running segrank train does (its pid in .lock).
        const int fd = ::open((dir / "run/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        REQUIRE(fd >= 0);
        REQUIRE(::write(fd, "4242\n", 5) == 5);
        REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
        const auto r = check_run_dir(dir, (dir / "run").string());
        ::close(fd);
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "run directory " + (dir / "run").string() +
                                          " is in use by another segrank train (pid 4242)"));
        CHECK_FALSE(contains_text(r.output, "config OK"));
        // Released, the same folder (its .lock left by an ended run) passes.
        const auto ok = check_run_dir(dir, (dir / "run").string());
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }

    TEST_CASE("segrank train and train --check refuse a segrank tune directory as the run dir") {
        const fs::path dir = scratch_dir("hostile_check_run_dir_tune_out");
        for (const char* f : {"tune.json", "measurements.jsonl"}) {
            const fs::path tune = dir / (std::string("tune_") + f);
            fs::create_directories(tune);
            write_file_text(tune / ".lock", "");  // a tune's --out keeps its .lock as a run's does
            write_file_text(tune / f, "{}\n");
            for (const char* mode : {" --check", " --set train.steps=1"}) {
                const auto r = check_run_dir(dir, tune.string(), mode);
                INFO(f, mode, r.output);
                CHECK(r.exit_code == 1);
                CHECK(contains_text(r.output, "train.run_dir " + tune.string() +
                                                  ": is a segrank tune directory (it holds " + f));
                CHECK_FALSE(fs::exists(tune / "config.toml"));
            }
        }
    }

    TEST_CASE("a stray .lock does not make a folder holding other files a run directory") {
        const fs::path dir = scratch_dir("hostile_check_run_dir_stray_lock");
        const fs::path lk = dir / "lk";
        fs::create_directories(lk);
        write_file_text(lk / ".lock", "999999\n");
        write_file_text(lk / "notes.txt", "mine\n");
        for (const char* mode : {" --check", " --set train.steps=1",
                                 " --set train.steps=1 --overwrite", " --check --overwrite"}) {
            const auto r = check_run_dir(dir, lk.string(), mode);
            INFO(mode, r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "train.run_dir " + lk.string() +
                                              ": not empty and not a segrank run directory"));
            CHECK(
                contains_text(r.output, (lk / "notes.txt").string() + " is no file a run writes"));
            CHECK_FALSE(fs::exists(lk / "config.toml"));
        }
        CHECK(read_file_text(lk / "notes.txt") == "mine\n");
        // A run's own config.toml there makes it an earlier run's folder: its other files are kept.
        write_file_text(lk / "config.toml", "# segrank run configuration\n");
        const auto ok = check_run_dir(dir, lk.string());
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }

    TEST_CASE(
        "a fresh run directory may hold its own data.root, as scripts/quickstart.sh lays out") {
        const fs::path dir = scratch_dir("hostile_check_run_dir_holds_data");
        const fs::path run = dir / "quickstart";
        TinyLayoutSpec spec;
        spec.valid_graphs = 1;
        write_tiny_layout_collection(run / "data", spec);
        const std::string base = "train --config configs/tiny.toml --set " +
                                 sq("data.root=\"" + (run / "data").string() + "\"") +
                                 " --run-dir " + sq(run.string());
        for (const char* mode :
             {" --check", " --set train.steps=1 --overwrite", " --set train.steps=1 --overwrite"}) {
            const auto r = run_segrank_in_source(base + mode, 1);
            INFO(std::string(mode), r.output);
            CHECK(r.exit_code == 0);
        }
        CHECK(fs::exists(run / "last.ckpt.h5"));
        CHECK(fs::is_directory(run / "data/npz"));
        // Another folder beside it is still a user's: refused.
        fs::remove_all(run / "last.ckpt.h5");
        fs::remove_all(run / "best.ckpt.h5");
        fs::remove_all(run / "config.toml");
        fs::remove_all(run / "metrics.jsonl");
        fs::create_directories(run / "mine");
        const auto mine = run_segrank_in_source(base + " --check", 1);
        INFO(mine.output);
        CHECK(mine.exit_code == 1);
        CHECK(contains_text(mine.output, (run / "mine").string() + " is no file a run writes"));
    }
}
