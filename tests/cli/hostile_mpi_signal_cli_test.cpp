// Ctrl-C under mpirun (ctest label `hostile`): mpirun ends every rank by a signal; rank 0 says
// where the run can continue from before it ends (cli/train_interrupt.h, MpiTerminationNotice).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/config.h"

using namespace segrank::test;
namespace fs = std::filesystem;

TEST_SUITE("hostile") {
#if defined(SEGRANK_TEST_WITH_MPI)
    TEST_CASE(
        "Ctrl-C to mpirun -np 2 segrank train prints the last checkpoint and resume command") {
        const fs::path dir = scratch_dir("hostile_mpi_train_sigint");
        write_tiny_layout_collection(dir / "data");
        segrank::RunConfig c = tiny_run_config(dir / "data", dir / "run", 1000000);
        c.train.checkpoint_every = 3;
        segrank::save_config(c, dir / "tiny.toml");
        const fs::path log = dir / "train.log";
        const std::string cmd =
            "cd " + sq(source_dir().string()) +
            " && OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 exec "
            "mpirun -np 2 --oversubscribe " +
            sq(segrank_binary().string()) + " train --config " + sq((dir / "tiny.toml").string());
        const InterruptedRun r = sigint_once_file_exists(cmd, dir / "run/last.ckpt.h5", log);
        const std::string& out = r.output;
        INFO(out);
        REQUIRE(r.started);
        CHECK_FALSE((WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0));
        const std::string run = (dir / "run").string();
        CHECK(contains_text(out,
                            "segrank train: Ctrl-C ends the whole job under mpirun; continue "
                            "it from its last checkpoint with: mpirun -np 2 segrank train "
                            "--resume " +
                                run + "\n"));
        // Rank 0's line at the signal is best effort (mpirun may exit before it forwards it);
        // when it arrives it names the checkpoint.
        if (contains_text(out, "the job was ended by a signal"))
            CHECK(contains_text(out,
                                "segrank train: the job was ended by a signal (Ctrl-C under "
                                "mpirun); last checkpoint " +
                                    run +
                                    "/last.ckpt.h5; continue with: mpirun -np 2 "
                                    "segrank train --resume " +
                                    run + "\n"));
        // The run directory is whole: the printed command passes the start-up checks.
        const auto check = run_segrank_in_source("train --resume " + sq(run) + " --check");
        INFO(check.output);
        CHECK(check.exit_code == 0);
    }

    TEST_CASE(
        "SIGINT, SIGTERM or SIGHUP to mpirun -np 2 segrank train before the first checkpoint "
        "leaves no run directory") {
        const fs::path dir = scratch_dir("hostile_mpi_train_early_signal");
        write_tiny_layout_collection(dir / "data");
        segrank::RunConfig c = tiny_run_config(dir / "data", dir / "run", 1000000);
        c.train.checkpoint_every = 1000000;
        c.train.eval_every = 1000000;
        segrank::save_config(c, dir / "tiny.toml");
        // Nine signals while the ranks train (once metrics.jsonl exists), 0-0.4 s later; rank 0
        // removes what it made. Before the other ranks waited for it, mpirun's SIGKILL after the
        // first rank's end left .lock, config.toml and metrics.jsonl in about 1 of 5 tries.
        const std::string script =
            "set -m; cd " + sq(dir.string()) +
            "; export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 "
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; for i in 1 2 3 4 5 6 7 8 9; do rm -rf run; " +
            "sig=$(echo INT TERM HUP | cut -d' ' -f$((i % 3 + 1))); mpirun -np 2 --oversubscribe " +
            sq(segrank_binary().string()) +
            " train --config tiny.toml > log 2>&1 & p=$!; for k in $(seq 1 2000); do " +
            "[ -e run/metrics.jsonl ] && break; sleep 0.01; done; sleep 0.$((i % 5)); " +
            "kill -$sig $p; wait $p; echo \"$sig left=$(ls -A run 2>/dev/null | wc -l)\"; done";
        const auto r = run_bash_script(dir, script);
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(r.output ==
              "TERM left=0\nHUP left=0\nINT left=0\nTERM left=0\nHUP left=0\nINT left=0\n"
              "TERM left=0\nHUP left=0\nINT left=0\n");
    }
#endif
}
