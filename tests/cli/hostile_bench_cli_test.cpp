// Hostile inputs of the benchmarks (ctest label `hostile`): scripts/bench_mpi.sh's --work rule
// (new, empty or its own folder; it deletes only the run folders it made) and its --config /
// --segrank checks, the Python scripts' --segrank check and bench_quality.py's --resume with
// nothing to resume, `segrank bench --peer-timeout` killing a hung PyTorch peer, and
// `segrank bench --memory` out of memory or with an unknown case (a named option, nothing left
// behind, nothing on stdout).
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

// `sh scripts/bench_mpi.sh --segrank <the built binary> ARGS` with stdout to `out` (the result
// holds stderr), after the shell commands `prefix`.
CommandResult bench_mpi(const std::string& args, const fs::path& out,
                        const std::string& prefix = "") {
    return run_command("(" + prefix + "sh " +
                       sq((source_dir() / "scripts" / "bench_mpi.sh").string()) + " --segrank " +
                       sq(segrank_binary().string()) + " " + args + " 2>&1 >" + sq(out.string()) +
                       ")");
}

// `segrank ARGS` from the repository with stdout to `out` (the result holds stderr).
CommandResult segrank_to(const std::string& args, const fs::path& out,
                         const std::string& prefix = "") {
    return run_command("(cd " + sq(source_dir().string()) + " && " + prefix +
                       "env OMP_NUM_THREADS=1 " + sq(segrank_binary().string()) + " " + args +
                       " 2>&1 >" + sq(out.string()) + ")");
}

// The small bench_mpi.sh job of the tests (seconds): 2 graphs, 30 steps, one repeat.
const std::string kSmallMpiJob = "--steps 30 --warmup 10 --repeats 1 --graphs 2";

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "bench_mpi.sh refuses a non-empty --work it did not make, a device as --config and a "
        "binary that is not segrank, before writing anything") {
        const fs::path dir = scratch_dir("hostile_bench_mpi_refusals");
        const fs::path work = dir / "mine";
        fs::create_directories(work / "run_my_experiment_2024");
        write_file_text(work / "run_my_experiment_2024" / "best.ckpt.h5", "weeks of work\n");
        write_file_text(work / "results.tsv", "my,results\n");
        const auto r = bench_mpi("--work " + sq(work.string()) + " " + kSmallMpiJob + " --no-np1x2",
                                 dir / "out.json");
        INFO(r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, "bench_mpi.sh: error: --work '" + work.string() +
                                          "': the folder exists, is not empty and is not a work "
                                          "folder of bench_mpi.sh (no .bench_mpi_made)"));
        CHECK(read_file_text(work / "run_my_experiment_2024" / "best.ckpt.h5") ==
              "weeks of work\n");
        CHECK(read_file_text(work / "results.tsv") == "my,results\n");
        CHECK_FALSE(fs::exists(work / ".bench_mpi_made"));
        CHECK(read_file_text(dir / "out.json").empty());

        const auto dev = bench_mpi("--work " + sq((dir / "new").string()) + " --config /dev/zero",
                                   dir / "out.json");
        INFO(dev.output);
        CHECK(dev.exit_code == 2);
        CHECK(contains_text(dev.output, "--config '/dev/zero' is not a regular file"));
        CHECK_FALSE(contains_text(dev.output, "not found"));

        const auto tru =
            run_command("sh " + sq((source_dir() / "scripts" / "bench_mpi.sh").string()) +
                        " --segrank /bin/true --work " + sq((dir / "new").string()) + " 2>&1");
        INFO(tru.output);
        CHECK(tru.exit_code == 2);
        CHECK(contains_text(tru.output, "--segrank '/bin/true' is not a segrank binary"));
        CHECK_FALSE(fs::exists(dir / "new"));
    }

    TEST_CASE(
        "bench_tune.py, bench_quality.py and bench_scale.py refuse a --segrank that is not segrank "
        "naming it, before making --work") {
        if (!have_python3()) {
            MESSAGE("SKIPPED: python3 not found");
            return;
        }
        const fs::path dir = scratch_dir("hostile_bench_not_segrank");
        for (const char* name : {"bench_tune.py", "bench_quality.py", "bench_scale.py"}) {
            for (const char* bin : {"/bin/true", "/bin/false"}) {
                const fs::path work = dir / (std::string("w_") + name);
                const auto r = run_command(
                    "(/usr/bin/python3 " + sq((source_dir() / "scripts" / name).string()) +
                    " --segrank " + bin + " --tiny --work " + sq(work.string()) + " 2>&1 >" +
                    sq((dir / "out.json").string()) + ")");
                INFO(name, " ", bin, "\n", r.output);
                CHECK(r.exit_code == 2);
                CHECK(contains_text(r.output, "--segrank: '" + std::string(bin) +
                                                  "' is not a segrank binary ('" + bin +
                                                  " --help' "));
                CHECK_FALSE(contains_text(r.output, "no graphs in"));
                CHECK(read_file_text(dir / "out.json").empty());
                CHECK_FALSE(fs::exists(work));
            }
        }
    }

    TEST_CASE(
        "bench_quality.py --resume refuses a --work that does not exist or holds no earlier run: "
        "nothing to resume") {
        if (!have_python3()) {
            MESSAGE("SKIPPED: python3 not found");
            return;
        }
        const fs::path dir = scratch_dir("hostile_bench_quality_resume_nothing");
        fs::create_directories(dir / "empty");
        const std::string quality =
            "/usr/bin/python3 " + sq((source_dir() / "scripts" / "bench_quality.py").string()) +
            " --segrank " + sq(segrank_binary().string()) + " --tiny --resume --work ";
        const auto missing = run_command(quality + sq((dir / "none").string()));
        INFO(missing.output);
        CHECK(missing.exit_code == 2);
        CHECK(contains_text(missing.output, "--resume: --work " + (dir / "none").string() +
                                                " does not exist: nothing to resume"));
        CHECK_FALSE(fs::exists(dir / "none"));
        const auto empty = run_command(quality + sq((dir / "empty").string()));
        INFO(empty.output);
        CHECK(empty.exit_code == 2);
        CHECK(contains_text(empty.output, "--resume: --work " + (dir / "empty").string() +
                                              " holds no earlier run of bench_quality.py (no "
                                              ".bench_quality_made): nothing to resume"));
        CHECK(fs::is_empty(dir / "empty"));
    }

#if defined(SEGRANK_TEST_WITH_MPI)
    TEST_CASE(
        "bench_mpi.sh reuses its own --work, keeps a folder a user put there and refuses to "
        "replace a run folder it did not make") {
        const fs::path dir = scratch_dir("hostile_bench_mpi_own_work");
        const fs::path work = dir / "w";
        // OMP_NUM_THREADS=1 exported by the caller does not change the recorded CPU count.
        const auto first =
            bench_mpi("--work " + sq(work.string()) + " " + kSmallMpiJob + " --no-np1x2",
                      dir / "first.json", "export OMP_NUM_THREADS=1 && ");
        INFO(first.output);
        REQUIRE(first.exit_code == 0);
        CHECK(contains_text(read_file_text(dir / "first.json"), "\"scaling_efficiency_np2\""));
        // The step-cost model's scaling efficiency beside it.
        CHECK(contains_text(read_file_text(dir / "first.json"),
                            "\"predicted_scaling_efficiency_np2\""));
        CHECK(contains_text(read_file_text(dir / "first.json"),
                            "\"nproc\": " + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN))));
        CHECK(fs::is_regular_file(work / ".bench_mpi_made"));
        CHECK_FALSE(fs::exists(work / "run_np1x1_1"));

        // A marked folder is accepted; a run folder the user added there is kept.
        fs::create_directories(work / "run_mine");
        write_file_text(work / "run_mine" / "notes.txt", "mine\n");
        const auto second =
            bench_mpi("--work " + sq(work.string()) + " " + kSmallMpiJob + " --no-np1x2",
                      dir / "second.json");
        INFO(second.output);
        CHECK(second.exit_code == 0);
        CHECK(read_file_text(work / "run_mine" / "notes.txt") == "mine\n");
        CHECK_FALSE(fs::exists(work / "run_np2x1_modulo_1"));

        // The run folders it deleted at the end left its mark: a folder the user makes later
        // under such a name is theirs, refused and kept (trial 22 F-2's class).
        CHECK_FALSE(contains_text(read_file_text(work / ".bench_mpi_made"), "run_np1x1_1"));
        fs::create_directories(work / "run_np1x1_1");
        write_file_text(work / "run_np1x1_1" / "notes.txt", "mine, later\n");
        const auto later = bench_mpi(
            "--work " + sq(work.string()) + " " + kSmallMpiJob + " --no-np1x2", dir / "later.json");
        INFO(later.output);
        CHECK(later.exit_code == 2);
        CHECK(contains_text(later.output, (work / "run_np1x1_1").string() +
                                              " (or its .log) exists and was not made by "
                                              "bench_mpi.sh"));
        CHECK(read_file_text(work / "run_np1x1_1" / "notes.txt") == "mine, later\n");
        fs::remove_all(work / "run_np1x1_1");

        // A run folder of a variant this folder never ran (np1x2) was not made by the script.
        fs::create_directories(work / "run_np1x2_1");
        write_file_text(work / "run_np1x2_1" / "notes.txt", "mine too\n");
        const auto third =
            bench_mpi("--work " + sq(work.string()) + " " + kSmallMpiJob, dir / "third.json");
        INFO(third.output);
        CHECK(third.exit_code == 2);
        CHECK(contains_text(third.output, (work / "run_np1x2_1").string() +
                                              " (or its .log) exists and was not made by "
                                              "bench_mpi.sh"));
        CHECK(read_file_text(work / "run_np1x2_1" / "notes.txt") == "mine too\n");
        CHECK(read_file_text(work / "run_mine" / "notes.txt") == "mine\n");
        CHECK(read_file_text(dir / "third.json").empty());
    }
#endif

    TEST_CASE(
        "segrank bench kills a PyTorch peer that hangs after --peer-timeout and its children, "
        "naming the script and the timeout, with nothing on stdout") {
        const fs::path dir = scratch_dir("hostile_bench_peer_timeout");
        write_tiny_layout_collection(dir / "data");
        const fs::path npz = dir / "data/npz/layout/xla/random/train/tiny_train_0.npz";
        const fs::path peer = dir / "hang.py";
        // The peer starts a child that would outlive it (a pipeline's second process).
        write_file_text(peer,
                        "import subprocess, sys, time\n"
                        "subprocess.Popen(['sleep', '987'])\n"
                        "sys.stderr.write('loading torch\\n'); sys.stderr.flush()\n"
                        "time.sleep(1000)\n");
        const auto r =
            segrank_to("bench --json --npz " + sq(npz.string()) +
                           " --threads 1 --steps 1 --warmup 0 --modes segments --hidden 8 "
                           "--layers 1 --configs 2 --peer-steps 1 --peer-warmup 0 --python "
                           "/usr/bin/python3 --peer-script " +
                           sq(peer.string()) + " --peer-timeout 2",
                       dir / "out.json");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "error: the PyTorch peer " + peer.string() +
                                          " did not finish within --peer-timeout 2 s and was "
                                          "killed"));
        CHECK(contains_text(r.output, "loading torch"));
        CHECK(read_file_text(dir / "out.json").empty());
        // The peer's child went with it (its process group was killed).
        CHECK(run_command("pgrep -f 'sleep [9]87'").exit_code == 1);

        const auto bad =
            segrank_to("bench --npz " + sq(npz.string()) + " --peer-timeout 0", dir / "out.json");
        CHECK(bad.exit_code == 1);
        CHECK(contains_text(bad.output, "--peer-timeout: expected 1 to 86400 seconds, got 0"));
    }

#if !defined(__SANITIZE_ADDRESS__)  // ASan's shadow memory needs more than a ulimit -v allows
    TEST_CASE(
        "segrank bench --memory --make-store out of memory names --nodes and the memory needed and "
        "leaves no folder behind") {
        const fs::path dir = scratch_dir("hostile_bench_make_store_oom");
        const fs::path store = dir / "ms";
        const auto r = segrank_to(
            "bench --memory --threads 1 --make-store " + sq(store.string()) + " --nodes 100000000",
            dir / "out.txt", "ulimit -v 2000000 && ");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "bench --memory --make-store: --nodes 100000000 --configs "
                            "1000 (case nodes_1e4): out of memory building the graph"));
        CHECK(contains_text(r.output, "MiB in memory)"));
        CHECK(contains_text(r.output, "ulimit -v"));
        CHECK_FALSE(fs::exists(store));
        // An existing DIR stays; only what the command created inside it goes.
        fs::create_directories(store);
        const auto again = segrank_to(
            "bench --memory --threads 1 --make-store " + sq(store.string()) + " --nodes 100000000",
            dir / "out.txt", "ulimit -v 2000000 && ");
        CHECK(again.exit_code == 1);
        CHECK(fs::is_directory(store));
        CHECK(fs::is_empty(store));
        CHECK(read_file_text(dir / "out.txt").empty());
    }
#endif

    TEST_CASE("segrank bench --memory with an unknown case prints nothing on stdout") {
        const fs::path dir = scratch_dir("hostile_bench_memory_bogus_case");
        const auto r = segrank_to("bench --memory --threads 1 --cases nodes_1e4,bogus --work-dir " +
                                      sq((dir / "w").string()),
                                  dir / "out.txt");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "bench --memory: unknown case 'bogus' (nodes_1e4, "));
        CHECK(read_file_text(dir / "out.txt").empty());
        CHECK_FALSE(fs::exists(dir / "w"));  // nodes_1e4's store was not generated first
    }
}
