// Hostile paths of `segrank bench --memory` and of other outputs (ctest label `hostile`, trial 13):
// --make-store at a dangling symbolic link (kept, named) or at a user's file (refused), --work-dir
// naming a user's folder (refused; a run_* folder bench did not make is never deleted) or a store
// folder holding a user's file (trial 14: refused before any work), a failed child named by its
// exit code, the options of a run beside --make-store and a repeated --cases name, tune and
// pack --out at a dangling link, train --balance-from / --check with --balance-model,
// scripts/bench_mpi.sh --work '', and a signal to bench --memory, its whole process group or its
// child while a case runs (trial 16: the child's run folder was left behind).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank bench --memory --make-store at a dangling symbolic link keeps the link and names "
        "its target") {
        const fs::path dir = scratch_dir("hostile_bench_memory_dangling");
        fs::create_symlink("/nonexistent/segrank_dir", dir / "dang");
        const auto r =
            run_segrank_in(dir, "bench --memory --threads 1 --make-store dang --nodes 1000");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "--make-store dang: is a dangling symbolic link to "
                            "'/nonexistent/segrank_dir' (which does not exist)"));
        CHECK(fs::is_symlink(fs::symlink_status(dir / "dang")));
    }

    TEST_CASE(
        "segrank bench --memory refuses --nodes / --configs without --make-store and an empty "
        "--make-store, before any work") {
        const fs::path dir = scratch_dir("hostile_bench_memory_store_options");
        for (const char* opt : {"--nodes 1000", "--configs 8"}) {
            const auto r = run_segrank_in(dir, std::string("bench --memory --threads 1 ") + opt);
            INFO(opt, r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "applies to --make-store DIR only"));
        }
        const auto empty = run_segrank_in(dir, "bench --memory --threads 1 --make-store ''");
        INFO(empty.output);
        CHECK(empty.exit_code == 1);
        CHECK(contains_text(empty.output, "--make-store: the path is empty"));
        CHECK(fs::is_empty(dir));
    }

    TEST_CASE(
        "segrank bench --memory --make-store refuses to replace a user's file at the store path "
        "and replaces its own earlier store") {
        const fs::path dir = scratch_dir("hostile_bench_memory_store_kind");
        fs::create_directories(dir / "ms" / "nodes_1e4");
        write_file_text(dir / "ms" / "nodes_1e4" / "nodes_1e4.h5", "mine\n");
        const std::string args =
            "bench --memory --threads 1 --make-store ms --nodes 1000 --cases nodes_1e4";
        const auto r = run_segrank_in(dir, args);
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "nodes_1e4.h5 is a file of another kind, not a segrank "
                            "graph store: bench --memory --make-store replaces only"));
        CHECK(read_file_text(dir / "ms" / "nodes_1e4" / "nodes_1e4.h5") == "mine\n");
        fs::remove(dir / "ms" / "nodes_1e4" / "nodes_1e4.h5");
        CHECK(run_segrank_in(dir, args).exit_code == 0);
        const auto again = run_segrank_in(dir, args);
        INFO(again.output);
        CHECK(again.exit_code == 0);
        CHECK(contains_text(again.output, "wrote "));
    }

    TEST_CASE(
        "segrank bench --memory --work-dir refuses a user's folder and never deletes a run_ folder "
        "it did not make") {
        const fs::path dir = scratch_dir("hostile_bench_memory_work_dir");
        fs::create_directories(dir / "bmw" / "run_nodes_1e4_train");
        write_file_text(dir / "bmw" / "run_nodes_1e4_train" / "best.ckpt.h5", "weeks\n");
        write_file_text(dir / "bmw" / "notes.txt", "notes\n");
        const std::string args =
            "bench --memory --json --cases nodes_1e4 --phases train --steps 1 "
            "--threads 1 --work-dir bmw";
        const auto r = run_segrank_in(dir, args);
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "--work-dir bmw: the folder exists, is not empty and is not a work "
                            "folder of bench --memory (no .bench_memory_made"));
        CHECK(read_file_text(dir / "bmw" / "run_nodes_1e4_train" / "best.ckpt.h5") == "weeks\n");
        CHECK(read_file_text(dir / "bmw" / "notes.txt") == "notes\n");
        CHECK_FALSE(fs::exists(dir / "bmw" / ".bench_memory_made"));
        // A marked folder: bench runs in a new run folder of its own and removes only that one.
        write_file_text(dir / "bmw" / ".bench_memory_made", "");
        const auto ok = run_segrank_in(dir, args);
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(contains_text(ok.output, "\"phase\":\"train\""));
        CHECK(read_file_text(dir / "bmw" / "run_nodes_1e4_train" / "best.ckpt.h5") == "weeks\n");
        CHECK_FALSE(fs::exists(dir / "bmw" / "run_nodes_1e4_train-2"));
        // A new folder is made and marked.
        CHECK(run_segrank_in(dir, replaced_first(args, "bmw", "fresh")).exit_code == 0);
        CHECK(fs::exists(dir / "fresh" / ".bench_memory_made"));
        // An unmarked folder holding only bench's stores (an earlier version's) is accepted.
        fs::remove(dir / "fresh" / ".bench_memory_made");
        CHECK(run_segrank_in(dir, replaced_first(args, "bmw", "fresh")).exit_code == 0);
        CHECK(fs::exists(dir / "fresh" / ".bench_memory_made"));
    }

    TEST_CASE(
        "segrank bench --memory --work-dir adopts an unmarked folder only if it holds nothing but "
        "bench's own stores, else refuses it before any work naming the first foreign entry") {
        const fs::path dir = scratch_dir("hostile_bench_memory_work_dir_stores");
        const std::string store_dir = "nodes_1e4-n10000-c1000-nc100-s0";
        const std::string args =
            "bench --memory --json --cases nodes_1e4 --phases train --steps 1 --threads 1 "
            "--work-dir ";
        // A text file at the store path: refused as --make-store refuses it (the same check).
        fs::create_directories(dir / "text" / store_dir);
        write_file_text(dir / "text" / store_dir / "nodes_1e4.h5", "mine\n");
        const auto text = run_segrank_in(dir, args + "text");
        INFO(text.output);
        CHECK(text.exit_code == 1);
        CHECK(contains_text(text.output,
                            "--work-dir text: " + (dir / "text" / store_dir).string() +
                                "/nodes_1e4.h5 is a file of another kind, not a segrank graph "
                                "store"));
        CHECK_FALSE(contains_text(text.output, "nodes_1e4 train"));  // no child was started
        CHECK(read_file_text(dir / "text" / store_dir / "nodes_1e4.h5") == "mine\n");
        CHECK_FALSE(fs::exists(dir / "text" / ".bench_memory_made"));
        // A marked folder: the same file is refused before a child runs, and kept.
        write_file_text(dir / "text" / ".bench_memory_made", "");
        const auto marked = run_segrank_in(dir, args + "text");
        INFO(marked.output);
        CHECK(marked.exit_code == 1);
        CHECK(contains_text(marked.output, "nodes_1e4.h5 is a file of another kind"));
        CHECK_FALSE(contains_text(marked.output, "nodes_1e4 train"));
        CHECK(read_file_text(dir / "text" / store_dir / "nodes_1e4.h5") == "mine\n");
        // A user's file in a store folder, or a folder only named like one: refused, nothing
        // written beside them.
        fs::create_directories(dir / "notes" / store_dir);
        write_file_text(dir / "notes" / store_dir / "mynotes.txt", "u\n");
        const auto notes = run_segrank_in(dir, args + "notes");
        INFO(notes.output);
        CHECK(notes.exit_code == 1);
        CHECK(contains_text(notes.output,
                            "(no .bench_memory_made; it holds " + store_dir + "/mynotes.txt)"));
        CHECK_FALSE(fs::exists(dir / "notes" / store_dir / "nodes_1e4.h5"));
        CHECK_FALSE(fs::exists(dir / "notes" / ".bench_memory_made"));
        fs::create_directories(dir / "named" / "nodes_1e4-notes");
        const auto named = run_segrank_in(dir, args + "named");
        INFO(named.output);
        CHECK(named.exit_code == 1);
        CHECK(contains_text(named.output, "it holds nodes_1e4-notes)"));
        CHECK_FALSE(fs::exists(dir / "named" / ".bench_memory_made"));
    }

    TEST_CASE(
        "segrank bench --memory reports a failed child by its exit code, not a raw wait status") {
        const fs::path dir = scratch_dir("hostile_bench_memory_child_status");
        // A real store too small to train on (2 configs) where the nodes_1e4 case reads its store:
        // the parent accepts it, the child fails with exit code 1.
        REQUIRE(run_segrank_in(dir,
                               "bench --memory --threads 1 --make-store ms --nodes 200 "
                               "--configs 2 --cases nodes_1e4")
                    .exit_code == 0);
        const fs::path store_dir = dir / "w" / "nodes_1e4-n10000-c1000-nc100-s0";
        fs::create_directories(store_dir);
        fs::copy_file(dir / "ms" / "nodes_1e4" / "nodes_1e4.h5", store_dir / "nodes_1e4.h5");
        const auto r = run_segrank_in(dir,
                                      "bench --memory --json --cases nodes_1e4 --phases train "
                                      "--steps 1 --threads 1 --work-dir w");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "case nodes_1e4 phase train failed (exit code 1)"));
        CHECK_FALSE(contains_text(r.output, "exit status"));
    }

    TEST_CASE(
        "segrank bench --memory --make-store refuses the options of a run naming both, and a "
        "repeated --cases name, before any work") {
        const fs::path dir = scratch_dir("hostile_bench_memory_make_store_options");
        for (const std::string opt : {"--steps 3", "--work-dir w", "--phases train",
                                      "--eval-passes 2", "--memory-mb 512", "--json"}) {
            const auto r = run_segrank_in(
                dir, "bench --memory --threads 1 --make-store ms --nodes 1000 " + opt);
            INFO(opt, r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "bench --memory: --make-store and " +
                                              opt.substr(0, opt.find(' ')) +
                                              " exclude each other"));
        }
        const auto twice =
            run_segrank_in(dir,
                           "bench --memory --json --cases nodes_1e4,nodes_1e4 --phases "
                           "train --steps 1 --threads 1 --work-dir w");
        INFO(twice.output);
        CHECK(twice.exit_code == 1);
        CHECK(contains_text(twice.output, "--cases: nodes_1e4 is named twice"));
        CHECK(fs::is_empty(dir));
    }

    TEST_CASE(
        "segrank tune and pack --out at a dangling symbolic link name the link and its target") {
        const fs::path dir = scratch_dir("hostile_out_dangling_tune_pack");
        fs::create_symlink("/nonexistent/segrank_out", dir / "dang");
        const std::string said =
            "--out dang: is a dangling symbolic link to '/nonexistent/segrank_out' (which does not "
            "exist)";
        const auto t =
            run_segrank_in(dir, "tune --graph g.npz --budget 5 --strategy random --out dang");
        INFO(t.output);
        CHECK(t.exit_code == 1);
        CHECK(contains_text(t.output, said));
        const auto p = run_segrank_in(dir, "pack in --out dang");
        INFO(p.output);
        CHECK(p.exit_code == 1);
        CHECK(contains_text(p.output, said));
        CHECK(fs::is_symlink(fs::symlink_status(dir / "dang")));
    }

    TEST_CASE(
        "segrank train refuses --balance-from without --balance-model and --check with "
        "--balance-model") {
        const fs::path dir = scratch_dir("hostile_train_balance_options");
        const std::string config = sq((source_dir() / "configs" / "default.toml").string());
        const auto from = run_segrank_in(dir, "train --config " + config + " --run-dir " +
                                                  sq((dir / "r").string()) + " --balance-from 3");
        INFO(from.output);
        CHECK(from.exit_code == 1);
        CHECK(contains_text(from.output, "--balance-from applies to --balance-model only"));
        CHECK_FALSE(fs::exists(dir / "r"));
        const auto check =
            run_segrank_in(dir, "train --config " + config + " --check --balance-model 2");
        INFO(check.output);
        CHECK(check.exit_code == 1);
        CHECK(contains_text(check.output, "--check and --balance-model exclude each other"));
        // It trains nothing: run-directory options are refused beside it.
        for (const std::string& opt :
             {"--run-dir " + sq((dir / "r").string()), std::string("--overwrite")}) {
            const auto r =
                run_segrank_in(dir, "train --config " + config + " --balance-model 2 " + opt);
            INFO(opt, r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "and --balance-model exclude each other"));
        }
        CHECK_FALSE(fs::exists(dir / "r"));
    }

    TEST_CASE(
        "segrank bench --memory ended by a signal to it alone or to its process group stops its "
        "child and leaves no run folder, and says so, and a child killed alone is a failed case") {
        const fs::path dir = scratch_dir("hostile_bench_memory_signal");
        const std::string bin = sq(segrank_binary().string());
        // bash with job control: the background job has its own process group and SIGINT is not
        // ignored in it (as for a command started from a terminal). Each signal is sent once the
        // train child runs (its --run-dir names this folder); then at most 10 s for the folder to
        // go. p: bench alone, g: its process group, c: the child alone.
        const std::string script =
            "set -m; cd " + sq(dir.string()) +
            "; for target in INT:p TERM:p HUP:p INT:g TERM:g KILL:c; do sig=${target%:*}; " +
            "rm -f log; " + bin +
            " bench --memory --cases nodes_1e4 --threads 1 --steps 100000 --work-dir bm > log " +
            "2>&1 & p=$!; for i in $(seq 1 400); do c=$(pgrep -f \"$PWD/b[m]/run_\"); " +
            "[ -n \"$c\" ] && break; sleep 0.05; done; sleep 0.3; case ${target#*:} in " +
            "g) kill -$sig -- -$p;; c) kill -$sig $c;; *) kill -$sig $p;; esac; wait $p; rc=$?; " +
            "for i in $(seq 1 200); do ls -d bm/run_* > /dev/null 2>&1 || break; sleep 0.05; " +
            "done; echo \"$target rc=$rc left=$(ls -d bm/run_* 2>/dev/null | wc -l) " +
            "child=$(pgrep -f \"$PWD/b[m]/run_\" | wc -l) said=$(grep -c " +
            "'interrupted by a signal; stopped its child and removed its run folder' log) " +
            "failed=$(grep -c 'phase train failed (killed by signal 9)' log)\"; done";
        const auto r = run_bash_script(dir, script);
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(r.output ==
              "INT:p rc=130 left=0 child=0 said=1 failed=0\n"
              "TERM:p rc=143 left=0 child=0 said=1 failed=0\n"
              "HUP:p rc=129 left=0 child=0 said=1 failed=0\n"
              "INT:g rc=130 left=0 child=0 said=1 failed=0\n"
              "TERM:g rc=143 left=0 child=0 said=1 failed=0\n"
              "KILL:c rc=1 left=0 child=0 said=0 failed=1\n");
        CHECK(fs::exists(dir / "bm"));  // the cached store stays for the next run
    }

    TEST_CASE(
        "segrank bench --memory --make-store ended by a signal while it writes the store removes "
        "the store's temporary file and says so, and sweeps a killed run's temporary file") {
        const fs::path dir = scratch_dir("hostile_bench_memory_store_signal");
        const std::string bin = sq(segrank_binary().string());
        // A temporary file of a process that has ended (its pid from a finished shell), then
        // SIGINT as soon as this run's own temporary file appears (the store is being written).
        const std::string script =
            "set -m; cd " + sq(dir.string()) +
            "; mkdir -p ms/nodes_1e5; dead=$(sh -c 'echo $$'); " +
            ": > ms/nodes_1e5/nodes_1e5.h5.tmp-$dead; " + bin +
            " bench --memory --make-store ms --cases nodes_1e5 > log 2>&1 & p=$!; " +
            "for i in $(seq 1 3000); do [ -e ms/nodes_1e5/nodes_1e5.h5.tmp-$p ] && break; " +
            "sleep 0.01; done; kill -INT $p; wait $p; echo \"rc=$? left=$(ls ms/nodes_1e5 | wc "
            "-l) " +
            "said=$(grep -c 'interrupted while generating' log)\"";
        const auto r = run_bash_script(dir, script);
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(r.output == "rc=130 left=0 said=1\n");
    }

    TEST_CASE("bench_mpi.sh refuses an empty --work naming the option") {
        const auto r =
            run_command("(cd " + sq(source_dir().string()) + " && sh " +
                        sq((source_dir() / "scripts" / "bench_mpi.sh").string()) + " --segrank " +
                        sq(segrank_binary().string()) + " --work '' 2>&1)");
        INFO(r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, "bench_mpi.sh: error: --work: the path is empty"));
    }
}
