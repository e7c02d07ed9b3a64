// Hostile launches and option values of the MPI-aware CLI (ctest label `hostile`): single-process
// commands under an MPI launcher, conflicting or repeated options, empty and odd paths.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args, const std::string& prefix = "") {
    return run_segrank_in_source(args, 1, prefix);
}

// The number of times `what` occurs in `text`.
size_t count_text(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank synth started as rank 0 of 2 by an MPI launcher refuses and writes nothing") {
        const fs::path dir = scratch_dir("hostile_mpi_synth_rank0");
        const auto r = run_segrank("synth --out " + sq((dir / "syn").string()) +
                                       " --graphs 2 --nodes 20:30 --configs 3 --seed 1",
                                   "env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "segrank synth runs in one process; only segrank train uses MPI ranks "
                            "(started as rank 0 of 2)"));
        CHECK_FALSE(fs::exists(dir / "syn"));
    }

    TEST_CASE(
        "segrank evaluate started as rank 1 of 2 exits 1 silently, leaving the message to rank 0") {
        const auto r =
            run_segrank("evaluate --checkpoint /nonexistent-run", "env PMI_RANK=1 PMI_SIZE=2 ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.empty());
    }

#if defined(SEGRANK_TEST_WITH_MPI)
    TEST_CASE("mpirun -np 2 segrank stats prints the one-process refusal once and exits non-zero") {
        const auto r =
            run_segrank("stats /nonexistent-data",
                        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 "
                        "--oversubscribe ");
        INFO(r.output);
        CHECK(r.exit_code != 0);
        CHECK(count_text(r.output,
                         "segrank stats runs in one process; only segrank train uses "
                         "MPI ranks (started as rank 0 of 2)") == 1);
        CHECK_FALSE(contains_text(r.output, "nonexistent-data"));
    }
#endif

    TEST_CASE(
        "segrank train --check refuses eval.split = bogus naming the key and the allowed splits") {
        const auto r =
            run_segrank("train --config configs/tiny.toml --check --set eval.split=\\\"bogus\\\"");
        INFO(r.output);
        CHECK(r.exit_code != 0);
        CHECK(contains_text(r.output, "eval.split"));
        CHECK(contains_text(r.output, "got \"bogus\""));
    }

    TEST_CASE("segrank hwmodel and predict --split bogus name --split and the allowed values") {
        const fs::path dir = scratch_dir("hostile_mpi_split_option");
        const auto hw = run_segrank("hwmodel --data " + sq(dir.string()) + " --split bogus --out " +
                                    sq((dir / "o.csv").string()));
        INFO(hw.output);
        CHECK(hw.exit_code == 1);
        CHECK(contains_text(hw.output,
                            "--split: expected train, valid, test or unknown, got 'bogus'"));
        const auto pr = run_segrank("predict --random 1 --data " + sq(dir.string()) +
                                    " --split bogus --out " + sq((dir / "p.csv").string()));
        INFO(pr.output);
        CHECK(pr.exit_code == 1);
        CHECK(contains_text(pr.output,
                            "--split: expected train, valid, test or unknown, got 'bogus'"));
        CHECK_FALSE(fs::exists(dir / "o.csv"));
        CHECK_FALSE(fs::exists(dir / "p.csv"));
    }

    TEST_CASE(
        "segrank predict --random -1 is refused naming the option and the range, as --seed -1 is") {
        const fs::path dir = scratch_dir("hostile_mpi_random_negative");
        const auto r = run_segrank("predict --random -1 --data " + sq(dir.string()) +
                                   " --split valid --out " + sq((dir / "p.csv").string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "--random: expected a seed >= 0, got -1"));
        CHECK_FALSE(fs::exists(dir / "p.csv"));
    }

    TEST_CASE(
        "empty --config, --resume and --truth paths name the option and say the path is empty") {
        const auto cfg = run_segrank("train --config ''");
        INFO(cfg.output);
        CHECK(cfg.exit_code == 1);
        CHECK(contains_text(cfg.output, "--config: the path is empty"));
        const auto resume = run_segrank("train --resume ''");
        INFO(resume.output);
        CHECK(resume.exit_code == 1);
        CHECK(contains_text(resume.output, "--resume: the path is empty"));
        const fs::path dir = scratch_dir("hostile_mpi_empty_truth");
        const fs::path sub = dir / "sub.csv";
        { std::ofstream(sub) << "ID,TopConfigs\n"; }
        const auto truth = run_segrank("leaderboard --truth '' " + sq(sub.string()));
        INFO(truth.output);
        CHECK(truth.exit_code == 1);
        CHECK(contains_text(truth.output, "--truth: the path is empty"));
    }

    TEST_CASE(
        "segrank leaderboard --truth /dev/zero says it is a character device, not a data folder") {
        const fs::path dir = scratch_dir("hostile_mpi_truth_device");
        const fs::path sub = dir / "sub.csv";
        { std::ofstream(sub) << "ID,TopConfigs\n"; }
        const auto r = run_segrank("leaderboard --truth /dev/zero " + sq(sub.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(
            contains_text(r.output, "--truth /dev/zero: is a character device, not a data folder"));
        CHECK_FALSE(contains_text(r.output, "no such file"));
    }

    TEST_CASE(
        "segrank train refuses the same --set key twice and --run-dir with --set train.run_dir") {
        const auto twice = run_segrank(
            "train --config configs/tiny.toml --check --set model.hidden=8 --set model.hidden=16");
        INFO(twice.output);
        CHECK(twice.exit_code == 1);
        CHECK(contains_text(twice.output, "model.hidden"));
        CHECK(contains_text(twice.output,
                            "is set twice, by --set model.hidden=8 and --set "
                            "model.hidden=16 (give each key once)"));
        const fs::path dir = scratch_dir("hostile_mpi_run_dir_conflict");
        const auto both = run_segrank("train --config configs/tiny.toml --check --run-dir " +
                                      sq((dir / "A").string()) +
                                      " --set train.run_dir=" + sq((dir / "B").string()));
        INFO(both.output);
        CHECK(both.exit_code == 1);
        CHECK(contains_text(both.output, "--run-dir " + (dir / "A").string() +
                                             " and --set train.run_dir=" + (dir / "B").string() +
                                             " both set the run directory"));
        CHECK_FALSE(fs::exists(dir / "A"));
        CHECK_FALSE(fs::exists(dir / "B"));
    }

    TEST_CASE(
        "segrank train --run-dir naming a dangling symbolic link says so and names its target") {
        const fs::path dir = scratch_dir("hostile_mpi_dangling_run_dir");
        fs::create_directory_symlink(dir / "nowhere", dir / "L");
        for (const std::string check : {"", " --check"}) {
            const auto r = run_segrank("train --config configs/tiny.toml --run-dir " +
                                       sq((dir / "L").string()) + check);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, (dir / "L").string() +
                                              ": is a dangling symbolic link to '" +
                                              (dir / "nowhere").string() + "'"));
            CHECK_FALSE(fs::exists(dir / "nowhere"));
        }
    }

    TEST_CASE(
        "--out - is refused naming the option and pointing to /dev/stdout, leaving no file named "
        "-") {
        const fs::path dir = scratch_dir("hostile_mpi_out_dash");
        const std::string in_dir = "cd " + sq(dir.string()) + " && ";
        const auto pr =
            run_command(in_dir + sq(segrank_binary().string()) + " predict --random 1 --data " +
                        sq(dir.string()) + " --split valid --out -");
        INFO(pr.output);
        CHECK(pr.exit_code == 1);
        CHECK(contains_text(pr.output, "--out -: '-' is not standard output here"));
        const auto hw = run_command(in_dir + sq(segrank_binary().string()) + " hwmodel --data " +
                                    sq(dir.string()) + " --split valid --out x.csv --scores -");
        INFO(hw.output);
        CHECK(hw.exit_code == 1);
        CHECK(contains_text(hw.output, "--scores -: '-' is not standard output here"));
        CHECK_FALSE(fs::exists(dir / "-"));
        CHECK_FALSE(fs::exists(dir / "x.csv"));
    }
}
