// Hostile options of the layout benchmark (ctest label `hostile`, trial 17): `segrank bench
// --no-peer` with a peer option (refused naming both, before any work: it was silently ignored,
// even invalid values), scripts/bench_mpi.sh's number options (refused naming the option) and its
// path options with a value that starts with '-' (a path in the current directory).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank bench refuses a peer option beside --no-peer, naming both, before any work") {
        const fs::path dir = scratch_dir("hostile_bench_no_peer_options");
        // The npz does not exist: the refusal comes before the graph is read.
        const std::string base = "bench --npz missing.npz --no-peer --steps 1 --warmup 0 ";
        for (const std::string opt : {"peer-steps -3", "peer-warmup -1", "peer-timeout 5",
                                      "python /nonexistent", "peer-script /nonexistent"}) {
            const auto r = run_segrank_in(dir, base + "--" + opt);
            INFO(opt, ": ", r.output);
            CHECK(r.exit_code == 1);
            const std::string name = opt.substr(0, opt.find(' '));
            CHECK(contains_text(r.output, "--no-peer and --" + name + " exclude each other"));
            CHECK_FALSE(contains_text(r.output, "missing.npz"));
        }
        // Without --no-peer the same value is checked as before.
        const auto bad = run_segrank_in(dir, "bench --npz missing.npz --peer-steps 0");
        INFO(bad.output);
        CHECK(bad.exit_code == 1);
        CHECK(contains_text(bad.output, "--peer-steps: expected 1 to 100000, got 0"));
    }

    TEST_CASE("bench_mpi.sh refuses a number option that is not a number, naming the option") {
        const fs::path dir = scratch_dir("hostile_bench_mpi_numbers");
        for (const std::string opt : {"steps", "graphs", "batch", "repeats", "warmup", "log-every"})
            for (const std::string value : {"''", "abc", "-1"}) {
                const auto r = run_command(
                    "(cd " + sq(dir.string()) + " && sh " +
                    sq((source_dir() / "scripts" / "bench_mpi.sh").string()) + " --segrank " +
                    sq(segrank_binary().string()) + " --work w --" + opt + " " + value + " 2>&1)");
                INFO(opt, " ", value, ": ", r.output);
                CHECK(r.exit_code == 2);
                const std::string shown = value == "''" ? "" : value;
                CHECK(contains_text(r.output, "bench_mpi.sh: error: --" + opt +
                                                  ": expected a non-negative integer, got '" +
                                                  shown + "'"));
                CHECK_FALSE(fs::exists(dir / "w"));
            }
    }

    TEST_CASE(
        "bench_mpi.sh refuses a number option above its bound, also one beyond the shell's "
        "arithmetic, naming the option and the bound") {
        const fs::path dir = scratch_dir("hostile_bench_mpi_big_numbers");
        const struct {
            std::string opt, value, bound;
        } cases[] = {{"steps", "99999999999999999999", "10000000"},
                     {"warmup", "99999999999", "10000000"},
                     {"steps", "2147483648000", "10000000"},
                     {"repeats", "5000", "1000"}};
        for (const auto& c : cases) {
            const auto r = run_command("(cd " + sq(dir.string()) + " && sh " +
                                       sq((source_dir() / "scripts" / "bench_mpi.sh").string()) +
                                       " --segrank " + sq(segrank_binary().string()) +
                                       " --work w --" + c.opt + " " + c.value + " 2>&1)");
            INFO(c.opt, " ", c.value, ": ", r.output);
            CHECK(r.exit_code == 2);
            CHECK(contains_text(r.output, "bench_mpi.sh: error: --" + c.opt + ": expected 0 to " +
                                              c.bound + ", got '" + c.value + "'"));
            CHECK_FALSE(fs::exists(dir / "w"));
        }
    }

    TEST_CASE("bench_mpi.sh refuses a value option given last without its value, naming it") {
        const fs::path dir = scratch_dir("hostile_bench_mpi_missing_value");
        for (const std::string opt :
             {"segrank", "work", "repeats", "steps", "log-every", "warmup", "graphs", "nodes",
              "nodes-dist", "configs", "config-node-fraction", "splits", "ownership", "batch",
              "config", "omp-wait-policy"}) {
            const auto r = run_command("(cd " + sq(dir.string()) + " && sh " +
                                       sq((source_dir() / "scripts" / "bench_mpi.sh").string()) +
                                       " --" + opt + " 2>&1)");
            INFO(opt, ": ", r.output);
            CHECK(r.exit_code == 2);
            CHECK(r.output == "bench_mpi.sh: error: --" + opt + ": expected a value after it\n");
        }
    }

    TEST_CASE("bench_mpi.sh refuses another option where a value belongs, naming both") {
        const fs::path dir = scratch_dir("hostile_bench_mpi_option_as_value");
        const auto r = run_command("(cd " + sq(dir.string()) + " && sh " +
                                   sq((source_dir() / "scripts" / "bench_mpi.sh").string()) +
                                   " --work --steps 5 2>&1)");
        INFO(r.output);
        CHECK(r.exit_code == 2);
        CHECK(r.output ==
              "bench_mpi.sh: error: --work: expected a value after it, got the option '--steps'\n");
        CHECK_FALSE(fs::exists(dir / "--steps"));
    }

    TEST_CASE(
        "bench_mpi.sh takes a --work, --config and --segrank whose relative path starts with '-' "
        "as the file or folder of that name in the current directory") {
        const fs::path dir = scratch_dir("hostile_bench_mpi_dash_paths");
        // A segrank that stops at the first training (after synth wrote the data), recording its
        // arguments, and an mpirun that is never reached: no MPI run is needed.
        fs::create_directories(dir / "bin");
        write_file_text(dir / "-seg",
                        "#!/bin/sh\ncase \" $* \" in *\" train \"*) printf '%s\\n' \"$@\" > "
                        "train_args.txt; echo 'stopped by the test' >&2; exit 3;; esac\nexec " +
                            sq(segrank_binary().string()) + " \"$@\"\n");
        write_file_text(dir / "bin" / "mpirun", "#!/bin/sh\nexit 99\n");
        for (const char* exe : {"-seg", "bin/mpirun"})
            fs::permissions(dir / exe, fs::perms::owner_all);
        fs::copy_file(source_dir() / "configs" / "quickstart.toml", dir / "-c.toml");
        const std::string script = "(cd " + sq(dir.string()) + " && PATH=\"$PWD/bin:$PATH\" sh " +
                                   sq((source_dir() / "scripts" / "bench_mpi.sh").string());
        const auto r = run_command(script +
                                   " --segrank -seg --config -c.toml --work -x --steps 30 --warmup "
                                   "10 --repeats 1 --graphs 2 2>&1)");
        INFO(r.output);
        CHECK(r.exit_code == 2);  // the stopped training
        CHECK(contains_text(r.output, "stopped by the test"));
        CHECK_FALSE(contains_text(r.output, "invalid option"));
        CHECK(fs::is_regular_file(dir / "-x" / ".bench_mpi_made"));
        CHECK(fs::is_directory(dir / "-x" / "data" / "npz" / "layout"));
        CHECK(contains_text(read_file_text(dir / "train_args.txt"),
                            "train\n--config\n./-c.toml\n--set\ndata.root=./-x/data\n"));
        // A folder of that kind that is not its own is refused naming --work.
        fs::create_directories(dir / "-y");
        write_file_text(dir / "-y" / "notes.txt", "mine\n");
        const auto y = run_command(script + " --segrank -seg --work -y 2>&1)");
        INFO(y.output);
        CHECK(y.exit_code == 2);
        CHECK(contains_text(y.output,
                            "bench_mpi.sh: error: --work './-y': the folder exists, is not "
                            "empty and is not a work folder of bench_mpi.sh"));
        CHECK(read_file_text(dir / "-y" / "notes.txt") == "mine\n");
    }
}
