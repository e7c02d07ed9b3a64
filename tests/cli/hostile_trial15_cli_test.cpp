// Trial 15's WEAK findings end to end (ctest label `hostile`): two symbolic links that point at
// each other given as an output folder, a 300-byte path component in --out, an eval.indices file
// that `train --check` must refuse as the run does, and empty path options of the benchmark
// scripts.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <utility>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_cli_run.h"
#include "tests/support/tiny_layout_data.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

constexpr const char* kLoop = "is a symbolic link loop (ELOOP";

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "two symbolic links that point at each other given as an output folder are named a loop, "
        "not a dangling link") {
        const fs::path dir = scratch_dir("hostile_trial15_out_loop");
        fs::create_symlink("loop2", dir / "loop1");
        fs::create_symlink("loop1", dir / "loop2");
        const std::string cfg = sq((source_dir() / "configs/tiny.toml").string());
        for (const std::string& args :
             {"train --config " + cfg + " --run-dir loop1",
              "train --check --config " + cfg + " --run-dir loop1",
              std::string("synth --out loop1 --collections layout"),
              std::string("pack in --out loop1"),
              std::string("tune --graph g.npz --budget 5 --strategy random --out loop1"),
              std::string("bench --memory --json --cases nodes_1e4 --phases train --steps 1 "
                          "--threads 1 --work-dir loop1")}) {
            const auto r = run_segrank_in(dir, args);
            INFO(args);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            // train quotes the path ("'loop1': is a ..."), the other commands do not.
            CHECK((contains_text(r.output, std::string("loop1: ") + kLoop) ||
                   contains_text(r.output, std::string("loop1': ") + kLoop)));
            CHECK_FALSE(contains_text(r.output, "dangling"));
        }
        // A loop above the folder is named as the folder that is the loop.
        const auto below = run_segrank_in(dir, "synth --out loop1/sub --collections layout");
        INFO(below.output);
        CHECK(below.exit_code == 1);
        CHECK(contains_text(below.output, std::string("--out loop1/sub: 'loop1' ") + kLoop));
        const auto run_below =
            run_segrank_in(dir, "train --check --config " + cfg + " --run-dir loop1/sub");
        INFO(run_below.output);
        CHECK(run_below.exit_code == 1);
        CHECK(contains_text(run_below.output, std::string("cannot be created: 'loop1' ") + kLoop));
        CHECK(fs::is_symlink(fs::symlink_status(dir / "loop1")));
        CHECK(fs::is_symlink(fs::symlink_status(dir / "loop2")));
    }

    TEST_CASE(
        "synth and pack refuse a 300-byte path component in --out before any work, naming the "
        "option and not echoing the name whole") {
        const fs::path dir = scratch_dir("hostile_trial15_long_out");
        const std::string name(300, 'd');
        const std::string said =
            "' is 300 bytes long, more than the 255 bytes a file name may have";
        for (const std::string& args :
             {"synth --out " + name + " --collections layout", "pack in --out " + name,
              "pack in --out " + name + "/x.h5"}) {
            const auto r = run_segrank_in(dir, args);
            INFO(args);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "--out " + std::string(80, 'd') + "... ("));
            CHECK(contains_text(r.output, said));
            CHECK(contains_text(r.output, "give a shorter --out"));
            CHECK_FALSE(contains_text(r.output, name));
            CHECK_FALSE(contains_text(r.output, "status '"));
        }
        // tune --out and bench --memory's folders likewise (trial 16).
        for (const auto& [args, option] :
             {std::pair<std::string, std::string>{"tune --strategy random --graph g.npz "
                                                  "--budget 2 --out " +
                                                      name,
                                                  "--out"},
              {"bench --memory --work-dir " + name, "--work-dir"},
              {"bench --memory --make-store " + name, "--make-store"}}) {
            const auto r = run_segrank_in(dir, args);
            INFO(args, r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, option + " " + std::string(80, 'd') + "... ("));
            CHECK(contains_text(r.output, said));
            CHECK_FALSE(contains_text(r.output, name));
        }
        CHECK(fs::is_empty(dir));
    }

    TEST_CASE("segrank train --check refuses an eval.indices file the run would refuse") {
        const fs::path dir = scratch_dir("hostile_trial15_check_indices");
        const std::string base = "train --check --config " +
                                 sq((source_dir() / "configs/tiny.toml").string()) + " --run-dir " +
                                 sq((dir / "run").string());
        const auto indices = [](const std::string& path) {
            return " --set " + sq("eval.indices=\"" + path + "\"");
        };
        write_file_text(dir / "open.json", "{");
        write_file_text(dir / "list.json", "[1, 2]");
        write_file_text(dir / "ok.json", "{\"g\": [0, 1]}");
        const std::pair<std::string, std::string> refused[] = {
            {"/nonexist.json", "/nonexist.json: no such file (expected an eval.indices JSON file)"},
            {"/dev/zero", "/dev/zero: is a character device, expected an eval.indices JSON file"},
            {(dir / "open.json").string(), "in eval.indices (expected {\"graph name\""},
            {(dir / "list.json").string(), "eval.indices: expected '{' opening the object"},
            {dir.string(), dir.string() + ": is a directory, expected an eval.indices JSON file"}};
        for (const auto& [path, message] : refused) {
            const auto r = run_segrank_in_source(base + indices(path), 1);
            INFO(path);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, message));
            CHECK_FALSE(contains_text(r.output, "config OK"));
        }
        // configs/tiny.toml's data.root is made later (--data-later); an existing indices file is
        // still read, a missing one is one the script writes with the data.
        const auto ok =
            run_segrank_in_source(base + indices((dir / "ok.json").string()) + " --data-later", 1);
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(contains_text(ok.output, "config OK"));
        CHECK_FALSE(contains_text(ok.output, "eval.indices was not read"));
        const auto open = run_segrank_in_source(
            base + indices((dir / "open.json").string()) + " --data-later", 1);
        CHECK(open.exit_code == 1);
        const auto later = run_segrank_in_source(
            base + indices((dir / "later.json").string()) + " --data-later", 1);
        INFO(later.output);
        CHECK(later.exit_code == 0);
        CHECK(contains_text(later.output,
                            "; eval.indices was not read (--data-later: it does not exist yet)"));
        CHECK_FALSE(fs::exists(dir / "run"));
    }

    TEST_CASE(
        "bench_scale.py, bench_quality.py and bench_tune.py refuse an empty --json-out, "
        "--markdown or --work before any work") {
        if (!have_python3()) {
            MESSAGE("SKIPPED: python3 not found");
            return;
        }
        const fs::path dir = scratch_dir("hostile_trial15_empty_paths");
        for (const char* script : {"bench_scale.py", "bench_quality.py", "bench_tune.py"}) {
            for (const std::string& opt : {std::string("--json-out="), std::string("--markdown ''"),
                                           std::string("--work ''")}) {
                const std::string work =
                    opt.starts_with("--work") ? "" : " --work " + sq((dir / "w").string());
                const auto r =
                    run_command("cd " + sq(dir.string()) + " && /usr/bin/python3 " +
                                sq((source_dir() / "scripts" / script).string()) + " --segrank " +
                                sq(segrank_binary().string()) + work + " --tiny " + opt + " 2>&1");
                INFO(script, " ", opt);
                INFO(r.output);
                CHECK(r.exit_code == 2);
                const std::string flag = opt.substr(0, opt.find_first_of("= "));
                CHECK(contains_text(r.output, flag + ": the path is empty (give a "));
                CHECK_FALSE(contains_text(r.output, "Traceback"));
            }
        }
        // An empty --mpirun or --cases was taken as the default (trial 16).
        for (const auto& [script, opt] :
             {std::pair<std::string, std::string>{"bench_scale.py", "--mpirun ''"},
              {"bench_tune.py", "--cases ''"},
              {"bench_quality.py", "--cases ''"}}) {
            const auto r = run_command("cd " + sq(dir.string()) + " && /usr/bin/python3 " +
                                       sq((source_dir() / "scripts" / script).string()) +
                                       " --segrank " + sq(segrank_binary().string()) + " --work " +
                                       sq((dir / "w").string()) + " --tiny " + opt + " 2>&1");
            INFO(script, " ", opt, r.output);
            CHECK(r.exit_code == 2);
            CHECK(contains_text(r.output, opt.substr(0, opt.find(' ')) + ": the value is empty"));
        }
        CHECK(fs::is_empty(dir));
    }

    TEST_CASE(
        "segrank report names a run's checkpoints that are not readable instead of skipping "
        "them silently") {
        const fs::path dir = scratch_dir("hostile_trial15_report_garbage_ckpt");
        const fs::path run = segrank_tiny_layout_run(dir);
        const auto clean = run_segrank_in_source("report " + sq(run.string()), 1);
        INFO(clean.output);
        REQUIRE(clean.exit_code == 0);
        CHECK_FALSE(contains_text(clean.output, "not readable as a checkpoint"));
        std::string bytes;
        for (int i = 0; i < 2000; ++i) bytes += static_cast<char>((i * 131 + 7) % 256);
        for (const char* name : {"last.ckpt.h5", "best.ckpt.h5"})
            write_file_text(run / name, bytes);
        const auto r = run_segrank_in_source("report " + sq(run.string()), 1);
        INFO(r.output);
        CHECK(r.exit_code == 0);  // the page is still drawn: evaluate and --resume refuse them
        for (const char* name : {"last.ckpt.h5", "best.ckpt.h5"}) {
            const std::string note = "segrank report: note: " + (run / name).string() +
                                     ": not readable as a checkpoint (";
            CHECK(contains_text(r.output, note));
        }
        CHECK(contains_text(r.output,
                            "), not used: its task, model id and eval.metric are not "
                            "checked against the run's files"));
        CHECK(contains_text(read_file_text(run / "report.html"),
                            (run / "last.ckpt.h5").string() + ": not readable as a checkpoint"));
    }
}
