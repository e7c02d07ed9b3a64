// scripts/bench_scale.py end to end at its --tiny size: argument errors, the JSON of the whole
// rehearsal (synth, pack, train, ranking every valid config, the largest-graph probe, targets), and
// its MPI comparison (--np 2: training at mpirun -np 1 and -np 2, one thread per rank).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/test_paths.h"
#include "util/json_value.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

std::string scale_cmd(const fs::path& work, const std::string& extra) {
    std::string cmd = "python3 ";
    cmd += sq((source_dir() / "scripts" / "bench_scale.py").string());
    cmd += " --segrank " + sq(segrank_binary().string()) + " --work " + sq(work.string()) + " " +
           extra;
    return cmd;
}

/// True when `mpirun` is on PATH and segrank was built with MPI (else the --np test skips).
bool have_mpi() {
#ifdef SEGRANK_TEST_WITH_MPI
    return run_command("command -v mpirun >/dev/null 2>&1").exit_code == 0;
#else
    return false;
#endif
}

}  // namespace

TEST_CASE("bench_scale.py refuses bad arguments with exit 2 and a message") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_args");
    struct Bad {
        std::string args, message;
    };
    const Bad cases[] = {
        {"--quick --tiny", "exclude each other"},
        {"--tiny --steps 0", "--steps: expected 1 to 9223372036854775807 (train.steps), got 0"},
        {"--tiny --probe-configs 1", "--probe-configs: expected 2 to 1000000"},
        {"--tiny --layout-choices -1", "--layout-choices: expected 0 to 1000"},
        {"--tiny --threads -1", "--threads: expected 0 to 1024"},
        {"--tiny --recipe /nonexistent/recipe.toml", "--recipe: no such config file"},
    };
    for (const Bad& b : cases) {
        const auto r = run_command(scale_cmd(dir, b.args));
        INFO(b.args, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, b.message));
    }
    // A recipe that is no config, or one for tile data, fails before any data is made.
    for (const std::string recipe : {"README.md", "configs/tpugraphs_tile.toml"}) {
        const fs::path work = dir / "recipe";
        const auto r =
            run_command(scale_cmd(work, "--tiny --recipe " + sq((source_dir() / recipe).string())));
        INFO(recipe, "\n", r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "does not fit the rehearsal"));
        CHECK_FALSE(fs::exists(work / "npz"));
        CHECK_FALSE(fs::exists(work / "h5"));
    }
    std::string nobin = "python3 ";
    nobin += sq((source_dir() / "scripts" / "bench_scale.py").string()) +
             " --tiny --segrank /nonexistent/segrank";
    const auto r = run_command(nobin);
    CHECK(r.exit_code == 2);
    CHECK(contains_text(r.output, "/nonexistent/segrank"));
}

TEST_CASE(
    "bench_scale.py names --threads, --steps, --probe-configs or --seed beyond segrank's range "
    "before any work" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_huge_options");
    struct Bad {
        std::string args, message;
    };
    const Bad cases[] = {
        {"--tiny --threads 99999999999999999999",
         "--threads: expected 0 to 1024 (train.threads and --threads; 0 = all cores), got "
         "99999999999999999999"},
        {"--tiny --threads 1025", "--threads: expected 0 to 1024"},
        {"--tiny --steps 99999999999999999999", "--steps: expected 1 to 9223372036854775807"},
        {"--tiny --probe-configs 1000001",
         "--probe-configs: expected 2 to 1000000 (segrank synth --configs)"},
        {"--tiny --seed 9223372036854775807", "--seed: expected 0 to 9223372036854775806"},
    };
    for (const Bad& b : cases) {
        const auto r = run_command(scale_cmd(dir / "w", b.args));
        INFO(b.args, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, b.message));
        CHECK_FALSE(contains_text(r.output, "--recipe"));
        CHECK_FALSE(fs::exists(dir / "w"));
    }
}

TEST_CASE(
    "bench_scale.py --tiny rehearses synth, pack, train and ranking and reports the targets") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_tiny");
    const fs::path out = dir / "stdout.json", json = dir / "result.json", md = dir / "table.md";
    // --markdown through a symbolic link: the file it points to is written, the link kept (the
    // binary's output rules, scripts/bench/atomic_output.py).
    const fs::path md_target = dir / "table_target.md";
    fs::create_symlink(md_target.filename(), md);
    std::string cmd = "(";  // a subshell: run_command appends 2>&1
    cmd += scale_cmd(dir / "w", "--tiny --threads 1 --json-out " + sq(json.string()) +
                                    " --markdown " + sq(md.string()));
    cmd += " > " + sq(out.string()) + " 2> " + sq((dir / "stderr.txt").string()) + ")";
    const auto r = run_command(cmd);
    INFO(read_file_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    const std::string text = read_file_text(out);
    CHECK(text == read_file_text(json));
    const JsonValue doc = parse_json(text, out.string());
    CHECK(doc.string_at("size") == "tiny");
    const JsonValue* data = doc.find("data");
    REQUIRE(data != nullptr);
    CHECK(data->number_at("train_graphs") == 3);
    CHECK(data->number_at("valid_graphs") == 1);
    CHECK(*data->number_at("nodes_min") >= 200);
    CHECK(*data->number_at("nodes_max") <= 500 + 100);  // synth sizes are targets
    CHECK(*doc.find("pack")->number_at("store_mb") > 0);
    const JsonValue* train = doc.find("train");
    REQUIRE(train != nullptr);
    CHECK(train->number_at("steps") == 4);
    CHECK(*train->number_at("steps_per_s") > 0);
    CHECK(train->number_at("steps_per_epoch") == 1);  // 3 train graphs, batch of 8
    CHECK(*train->number_at("peak_rss_mb") > 0);
    const JsonValue* rank = doc.find("rank");
    REQUIRE(rank != nullptr);
    CHECK(rank->number_at("configs") == data->number_at("valid_configs"));
    CHECK(rank->find("graphs")->items().size() == 1);
    CHECK(*rank->number_at("configs_per_s") > 0);
    const JsonValue* probe = doc.find("probe");
    REQUIRE(probe != nullptr);
    CHECK(probe->number_at("configs") == 64);
    CHECK(probe->find("extrapolated")->as_bool());
    for (const char* t : {"peak_rss_mb", "probe_1e5_seconds", "epoch_seconds"}) {
        const JsonValue* v = doc.find("targets")->find(t);
        REQUIRE(v != nullptr);
        CHECK(v->number_at("value").has_value());
        CHECK(v->number_at("limit").has_value());
        CHECK(v->find("met")->as_bool() == (*v->number_at("value") <= *v->number_at("limit")));
    }
    CHECK(doc.find("targets")->find("peak_rss_mb")->find("met")->as_bool());  // tiny graphs
    // Without --np no MPI run and no MPI field or row (the output of earlier versions).
    CHECK(doc.find("mpi") == nullptr);
    CHECK(doc.find("settings")->find("np") == nullptr);
    CHECK(fs::is_symlink(md));
    CHECK(contains_text(read_file_text(md_target), "| target: peak RSS < 2 GiB |"));
    CHECK_FALSE(contains_text(read_file_text(md), "MPI"));
    CHECK(contains_text(read_file_text(md), "| target: peak RSS < 2 GiB | met"));
    // The valid submission ranks every config of the valid graph.
    CHECK(contains_text(read_file_text(dir / "w" / "valid_submission.csv"), "ID,TopConfigs"));
}

TEST_CASE(
    "bench_scale.py --np refuses 0, negatives, non-integers and a missing mpirun with exit 2") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_np_args");
    struct Bad {
        std::string args, message;
    };
    const Bad cases[] = {
        {"--tiny --np 0", "argument --np: must be >= 1, got 0"},
        {"--tiny --np -1", "argument --np: must be >= 1, got -1"},
        {"--tiny --np abc", "argument --np: expected an integer >= 1, got 'abc'"},
        {"--tiny --ownership balanced", "--ownership and --mpirun apply only with --np N >= 2"},
        {"--tiny --np 2 --ownership even", "argument --ownership: invalid choice"},
        {"--tiny --np 2 --mpirun /nonexistent/mpirun", "--np 2 needs mpirun"},
    };
    for (const Bad& b : cases) {
        const fs::path work = dir / "w";
        const auto r = run_command(scale_cmd(work, b.args));
        INFO(b.args, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, b.message));
        CHECK_FALSE(fs::exists(work));  // refused before any work
    }
    // No mpirun on PATH at all: the interpreter by its full path (python3 on PATH can be a shim
    // script that itself needs PATH, as pyenv's).
    const auto py = run_command("python3 -c 'import sys; print(sys.executable)'");
    std::string python = py.output.substr(0, py.output.find('\n'));
    std::string cmd = "env PATH=/nonexistent " + sq(python) + " ";
    cmd += sq((source_dir() / "scripts" / "bench_scale.py").string()) + " --segrank " +
           sq(segrank_binary().string()) + " --work " + sq((dir / "nopath").string()) +
           " --tiny --np 2";
    const auto r = run_command(cmd);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains_text(r.output, "--np 2 needs mpirun, and 'mpirun' was not found"));
    CHECK_FALSE(fs::exists(dir / "nopath"));
}

TEST_CASE("bench_scale.py --tiny --np 2 trains at mpirun -np 1 and -np 2 and reports the scaling") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    if (!have_mpi()) {
        MESSAGE("SKIPPED: mpirun not found or segrank built without MPI");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_np2");
    const fs::path out = dir / "stdout.json", md = dir / "table.md";
    std::string cmd = "(";  // a subshell: run_command appends 2>&1
    cmd += scale_cmd(dir / "w", "--tiny --threads 1 --np 2 --markdown " + sq(md.string()));
    cmd += " > " + sq(out.string()) + " 2> " + sq((dir / "stderr.txt").string()) + ")";
    const auto r = run_command(cmd);
    INFO(read_file_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    const JsonValue doc = parse_json(read_file_text(out), out.string());
    CHECK(doc.find("settings")->number_at("np") == 2);
    CHECK(doc.find("train") != nullptr);  // the rehearsal's own training is still there
    const JsonValue* mpi = doc.find("mpi");
    REQUIRE(mpi != nullptr);
    CHECK(mpi->number_at("np") == 2);
    CHECK(mpi->number_at("threads_per_rank") == 1);
    CHECK(mpi->string_at("ownership") == "modulo");  // the recipe's (configs/default.toml's)
    const JsonValue* one = mpi->find("np1");
    const JsonValue* two = mpi->find("npN");
    REQUIRE(one != nullptr);
    REQUIRE(two != nullptr);
    CHECK(one->number_at("ranks") == 1);
    CHECK(two->number_at("ranks") == 2);
    CHECK(two->number_at("threads_per_rank") == 1);  // as segrank printed it
    REQUIRE(two->find("work_shares") != nullptr);
    CHECK(two->find("work_shares")->items().size() == 2);
    for (const JsonValue* v : {one, two}) {
        CHECK(v->number_at("steps") == 4);
        CHECK(*v->number_at("steps_per_s") > 0);
        CHECK(*v->number_at("epoch_seconds") > 0);
        CHECK(*v->number_at("peak_rss_mb") > 0);
        CHECK(*v->number_at("peak_rss_mb_rank0") > 0);
        // mpirun's wait4 peak is the max over the ranks it reaped (mpirun alone is about 14 MiB):
        // what the ranks logged, up to the kernel's per-thread RSS counter slack (measured up to
        // 0.3 MiB below VmHWM).
        CHECK(*v->number_at("process_peak_rss_mb") >= 0.9 * *v->number_at("peak_rss_mb"));
    }
    const double eff = *mpi->number_at("scaling_efficiency");
    CHECK(eff > 0);
    CHECK(eff ==
          doctest::Approx(*two->number_at("steps_per_s") / (2.0 * *one->number_at("steps_per_s")))
              .epsilon(1e-9));
    CHECK(mpi->number_at("epoch_seconds") == two->number_at("epoch_seconds"));
    CHECK(mpi->number_at("peak_rss_mb_per_rank") == two->number_at("peak_rss_mb"));
    const std::string table = read_file_text(md);
    CHECK(contains_text(table, "| MPI scaling efficiency np=2 |"));
    CHECK(contains_text(table, "| MPI training steps/s, np=2 x 1 thread per rank |"));
    CHECK(contains_text(table, "| MPI peak RSS per rank np=2 |"));
}

TEST_CASE(
    "bench_scale.py stopped by SIGINT while segrank train runs stops the child and exits 130 "
    "without a traceback" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_sigint");
    const fs::path pid_file = dir / "train.pid";
    const fs::path log = dir / "bench.log";
    // A segrank whose training (not its --check) writes its pid and waits: the interrupt arrives
    // while bench_scale.py waits for that child; synth, pack and stats are the real binary's.
    const fs::path wrapper = dir / "segrank";
    {
        std::ofstream w(wrapper);
        w << "#!/bin/sh\ncase \" $* \" in *\" train \"*) case \" $* \" in *\" --check \"*) ;; *) "
             "echo $$ > "
          << sq(pid_file.string()) << "; exec sleep 30;; esac;; esac\nexec "
          << sq(segrank_binary().string()) << " \"$@\"\n";
    }
    fs::permissions(wrapper, fs::perms::owner_all);
    const std::string cmd = "exec python3 " +
                            sq((source_dir() / "scripts" / "bench_scale.py").string()) +
                            " --segrank " + sq(wrapper.string()) + " --work " +
                            sq((dir / "w").string()) + " --tiny --threads 1";
    const pid_t pid = spawn_shell_with_default_sigint(cmd, log);
    REQUIRE(pid >= 0);
    int status = 0;
    const bool exited = child_exited_before_file(pid, pid_file, status);
    INFO(read_file_text(log));
    REQUIRE_FALSE(exited);
    REQUIRE(fs::exists(pid_file));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the pid is written, then exec
    const pid_t child = static_cast<pid_t>(std::stol(read_file_text(pid_file)));
    REQUIRE(::kill(pid, SIGINT) == 0);
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    const std::string out = read_file_text(log);
    INFO(out);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    CHECK(contains_text(out, "bench_scale.py: interrupted"));
    CHECK_FALSE(contains_text(out, "Traceback"));
    // The training child is gone (a zombie waiting for init counts as gone).
    bool alive = ::kill(child, 0) == 0;
    for (int i = 0; i < 40 && alive; ++i) {
        std::ifstream st("/proc/" + std::to_string(child) + "/stat");
        std::string pid_s, comm, state;
        st >> pid_s >> comm >> state;
        alive = st && state != "Z" && ::kill(child, 0) == 0;
        if (alive) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK_FALSE(alive);
    if (alive) ::kill(child, SIGKILL);
}

}  // namespace segrank::test
