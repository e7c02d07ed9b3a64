// Hostile trial 8: `segrank train --check` refuses a run directory the run cannot create (its
// parent a file, a path component longer than a file name may be), naming the key.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

// `segrank train --config configs/tiny.toml --check` with data.root in `dir` (not listed: no
// graph is needed) and the run directory `run_dir`.
CommandResult check_run_dir(const fs::path& dir, const std::string& run_dir) {
    return run_segrank_in_source("train --config configs/tiny.toml --set " +
                                     sq("data.root=\"" + (dir / "npz").string() + "\"") +
                                     " --run-dir " + sq(run_dir) + " --check",
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
}
