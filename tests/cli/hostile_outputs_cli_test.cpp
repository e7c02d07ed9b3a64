// Two outputs of one command that are one file in disguise (a symbolic link, dangling because
// neither exists yet, to the other output): refused before the work; and two outputs of which one
// cannot be written: neither is written (ctest label `hostile`).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 1); }

// `link` made a relative symbolic link to `target` (which need not exist).
void link_to(const std::string& target, const fs::path& link) { fs::create_symlink(target, link); }

// The refusal of two output options naming one file: exit 1, both options and both paths named,
// before any work (`work_line` is printed once the command has started).
void check_same_file_refused(const CommandResult& r, const std::string& opt_a, const fs::path& a,
                             const std::string& opt_b, const fs::path& b,
                             const std::string& work_line) {
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(r.output, opt_a + " " + a.string() + " and " + opt_b + " " + b.string() +
                                      " name the same file"));
    CHECK_FALSE(contains_text(r.output, work_line));
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("segrank predict refuses --scores that is a dangling symlink to --out") {
        const fs::path dir = scratch_dir("hostile_out_predict_link");
        const fs::path root = write_lb_truth(dir / "truth");
        link_to("same.csv", dir / "lnk.csv");
        link_to("lnk.csv", dir / "lnk2.csv");  // a chain of two dangling links
        const std::string base =
            "predict --random 7 --data " + sq(root.string()) + " --split valid";
        for (const char* scores : {"lnk.csv", "lnk2.csv"}) {
            const auto r = run_segrank(base + " --out " + sq((dir / "same.csv").string()) +
                                       " --scores " + sq((dir / scores).string()));
            check_same_file_refused(r, "--out", dir / "same.csv", "--scores", dir / scores,
                                    "wrote");
            std::string resolved = "(";
            resolved += (dir / "same.csv").string();
            resolved += ")";
            CHECK(contains_text(r.output, resolved));
        }
        // The link as --out, the file as --scores.
        const auto swapped = run_segrank(base + " --out " + sq((dir / "lnk.csv").string()) +
                                         " --scores " + sq((dir / "same.csv").string()));
        check_same_file_refused(swapped, "--out", dir / "lnk.csv", "--scores", dir / "same.csv",
                                "wrote");
        CHECK_FALSE(fs::exists(dir / "same.csv"));
        CHECK(fs::is_symlink(dir / "lnk.csv"));
    }

    TEST_CASE("segrank hwmodel refuses --scores that is a dangling symlink to --out") {
        const fs::path dir = scratch_dir("hostile_out_hwmodel_link");
        const fs::path root = write_lb_truth(dir / "truth");
        link_to("same.csv", dir / "lnk.csv");
        const auto r = run_segrank("hwmodel --data " + sq(root.string()) + " --split valid --out " +
                                   sq((dir / "same.csv").string()) + " --scores " +
                                   sq((dir / "lnk.csv").string()));
        check_same_file_refused(r, "--out", dir / "same.csv", "--scores", dir / "lnk.csv",
                                "graphs)");
        CHECK_FALSE(fs::exists(dir / "same.csv"));
        CHECK(fs::is_symlink(dir / "lnk.csv"));
    }

    TEST_CASE("segrank leaderboard refuses --out-csv that is a dangling symlink to --out-md") {
        const fs::path dir = scratch_dir("hostile_out_leaderboard_link");
        const fs::path root = write_lb_truth(dir / "truth");
        const fs::path sub = dir / "sub.csv";
        REQUIRE(run_segrank("predict --random 7 --data " + sq(root.string()) +
                            " --split valid --out " + sq(sub.string()))
                    .exit_code == 0);
        fs::create_directories(dir / "tables");
        link_to("tables/m.md", dir / "lnk.csv");  // relative to the link's folder
        const auto r = run_segrank("leaderboard --truth " + sq(root.string()) + " --out-md " +
                                   sq((dir / "tables/m.md").string()) + " --out-csv " +
                                   sq((dir / "lnk.csv").string()) + " " + sq(sub.string()));
        check_same_file_refused(r, "--out-md", dir / "tables/m.md", "--out-csv", dir / "lnk.csv",
                                "submission(s) against");
        CHECK_FALSE(fs::exists(dir / "tables/m.md"));
        // A link to a submission (an input) is refused too.
        link_to("sub.csv", dir / "to_sub.csv");
        const auto in = run_segrank("leaderboard --truth " + sq(root.string()) + " --out-csv " +
                                    sq((dir / "to_sub.csv").string()) + " " + sq(sub.string()));
        INFO(in.output);
        CHECK(in.exit_code == 1);
        CHECK(contains_text(in.output, "is the input " + sub.string()));
    }

    TEST_CASE("segrank hwmodel writes --out and --scores both or neither") {
        const fs::path dir = scratch_dir("hostile_out_hwmodel_both");
        const fs::path root = write_lb_truth(dir / "truth");
        const std::string base = "hwmodel --data " + sq(root.string()) + " --split valid";
        const auto full =
            run_segrank(base + " --out " + sq((dir / "a.csv").string()) + " --scores /dev/full");
        INFO(full.output);
        CHECK(full.exit_code == 1);
        CHECK(contains_text(full.output, "/dev/full"));
        CHECK_FALSE(fs::exists(dir / "a.csv"));
        // An earlier submission stays as it was.
        std::ofstream(dir / "old.csv") << "ID,TopConfigs\ntile:xla:k1,0\n";
        const auto again =
            run_segrank(base + " --out " + sq((dir / "old.csv").string()) + " --scores /dev/full");
        CHECK(again.exit_code == 1);
        CHECK(read_file_text(dir / "old.csv") == "ID,TopConfigs\ntile:xla:k1,0\n");
        const auto ok = run_segrank(base + " --out " + sq((dir / "a.csv").string()) + " --scores " +
                                    sq((dir / "s.csv").string()));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(contains_text(read_file_text(dir / "a.csv"), "ID,TopConfigs"));
        CHECK(contains_text(read_file_text(dir / "s.csv"), "ID,config,score"));
    }

    TEST_CASE("segrank leaderboard writes --out-md and --out-csv both or neither") {
        const fs::path dir = scratch_dir("hostile_out_leaderboard_both");
        const fs::path root = write_lb_truth(dir / "truth");
        const fs::path sub = dir / "sub.csv";
        REQUIRE(run_segrank("predict --random 7 --data " + sq(root.string()) +
                            " --split valid --out " + sq(sub.string()))
                    .exit_code == 0);
        const std::string lb = "leaderboard --truth " + sq(root.string()) + " ";
        const auto csv_full = run_segrank(lb + "--out-md " + sq((dir / "b.md").string()) +
                                          " --out-csv /dev/full " + sq(sub.string()));
        INFO(csv_full.output);
        CHECK(csv_full.exit_code == 1);
        CHECK(contains_text(csv_full.output, "/dev/full"));
        CHECK_FALSE(fs::exists(dir / "b.md"));
        const auto md_full = run_segrank(lb + "--out-md /dev/full --out-csv " +
                                         sq((dir / "b.csv").string()) + " " + sq(sub.string()));
        INFO(md_full.output);
        CHECK(md_full.exit_code == 1);
        CHECK_FALSE(fs::exists(dir / "b.csv"));
        for (const auto& e : fs::directory_iterator(dir))  // no temporary file left
            CHECK_FALSE(contains_text(e.path().filename().string(), ".tmp-"));
        const auto ok = run_segrank(lb + "--out-md " + sq((dir / "b.md").string()) + " --out-csv " +
                                    sq((dir / "b.csv").string()) + " " + sq(sub.string()));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(contains_text(read_file_text(dir / "b.md"), "| rank | name | overall |"));
        CHECK(contains_text(read_file_text(dir / "b.csv"), "rank,name,overall,"));
    }

    TEST_CASE("segrank train --resume refuses a run file that is a symbolic link") {
        const fs::path dir = scratch_dir("hostile_out_resume_link");
        segrank::test::write_tiny_layout_collection(dir / "data");
        segrank::save_config(segrank::test::tiny_run_config(dir / "data", dir / "run", 2),
                             dir / "tiny.toml");
        const auto first = run_segrank("train --config " + sq((dir / "tiny.toml").string()));
        INFO(first.output);
        REQUIRE(first.exit_code == 0);
        const fs::path run = dir / "run";
        const std::string notes = "my notes, not metrics\n";
        std::ofstream(dir / "notes.txt") << notes;
        fs::rename(run / "metrics.jsonl", dir / "metrics.jsonl");
        fs::create_symlink(dir / "notes.txt", run / "metrics.jsonl");
        const std::string resume = "train --resume " + sq(run.string()) + " --set train.steps=4";
        for (const char* extra : {" --check", ""}) {
            const auto r = run_segrank(resume + extra);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, (run / "metrics.jsonl").string() +
                                              " is a symbolic link (to '" +
                                              (dir / "notes.txt").string() + "')"));
            CHECK(read_file_text(dir / "notes.txt") == notes);
        }
        // A checkpoint linked to another run's: that one is not replaced.
        fs::remove(run / "metrics.jsonl");
        fs::rename(dir / "metrics.jsonl", run / "metrics.jsonl");
        fs::rename(run / "last.ckpt.h5", dir / "other.ckpt.h5");
        fs::create_symlink("../other.ckpt.h5", run / "last.ckpt.h5");
        const auto size = fs::file_size(dir / "other.ckpt.h5");
        const auto ckpt = run_segrank(resume);
        INFO(ckpt.output);
        CHECK(ckpt.exit_code == 1);
        CHECK(contains_text(ckpt.output, (run / "last.ckpt.h5").string() + " is a symbolic link"));
        CHECK(fs::file_size(dir / "other.ckpt.h5") == size);
        // The lock file, into which train writes its pid.
        fs::remove(run / "last.ckpt.h5");
        fs::rename(dir / "other.ckpt.h5", run / "last.ckpt.h5");
        fs::remove(run / ".lock");
        fs::create_symlink(dir / "notes.txt", run / ".lock");
        const auto lock = run_segrank(resume);
        INFO(lock.output);
        CHECK(lock.exit_code == 1);
        CHECK(contains_text(lock.output, (run / ".lock").string() + " is a symbolic link"));
        CHECK(read_file_text(dir / "notes.txt") == notes);
        // Real files again: the resume runs.
        fs::remove(run / ".lock");
        const auto ok = run_segrank(resume);
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }
}
