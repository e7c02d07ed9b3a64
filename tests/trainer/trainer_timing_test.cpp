// The per-step wall time of metrics.jsonl train lines (step_wall_s) and its busy share
// (step_busy_s, step_cpu_s, ...), read by scripts/bench_mpi.sh to measure steady-state steps/s
// without startup, evaluation or checkpoints, and the balance between ranks.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"
#include "trainer/trainer.h"
#include "util/json_value.h"

namespace segrank::test {
namespace fs = std::filesystem;

TEST_CASE(
    "train lines of metrics.jsonl carry the mean wall and busy time per step of their interval") {
    const fs::path dir = scratch_dir("trainer_step_wall");
    write_tiny_layout_collection(dir / "data");
    RunConfig c = tiny_run_config(dir / "data", dir / "run", 6);
    c.train.log_every = 2;
    c.train.eval_every = 4;  // an evaluation inside the run must not count as step time
    LocalCommunicator comm;
    const auto t0 = std::chrono::steady_clock::now();
    {
        Trainer t(c, comm);
        t.run();
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::ifstream in(dir / "run" / "metrics.jsonl");
    std::vector<double> walls;
    std::vector<double> steps;
    double cpu_total = 0.0;
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
        const JsonValue v = parse_json(line, "metrics.jsonl", n);
        if (v.string_at("phase") != "train") continue;
        const auto wall = v.number_at("step_wall_s");
        REQUIRE_MESSAGE(wall.has_value(), "train line without step_wall_s: ", line);
        walls.push_back(*wall);
        steps.push_back(*v.number_at("step"));
        // The share spent on this rank's own members: part of the step; with one rank the mean,
        // the per-step maximum and the busiest rank's CPU time are the same number.
        const auto busy = v.number_at("step_busy_s");
        const auto cpu = v.number_at("step_cpu_s");
        REQUIRE_MESSAGE(
            (busy && cpu && v.number_at("step_cpu_max_s") && v.number_at("rank_cpu_max_s")),
            "train line without the busy-time fields: ", line);
        CHECK(*busy > 0.0);
        CHECK(*busy <= *wall);
        CHECK(*cpu >= 0.0);
        CHECK(*v.number_at("step_cpu_max_s") == *cpu);
        CHECK(*v.number_at("rank_cpu_max_s") == *cpu);
        cpu_total += *cpu;
    }
    CHECK(cpu_total > 0.0);
    CHECK(steps == std::vector<double>{2, 4, 6});
    double timed = 0.0;
    for (double w : walls) {
        CHECK(std::isfinite(w));
        CHECK(w > 0.0);
        timed += 2.0 * w;  // two steps per interval
    }
    MESSAGE("6 steps: ", timed, " s inside step(), whole run (load, eval, checkpoints) ", elapsed,
            " s");
    CHECK(timed < elapsed);
}

}  // namespace segrank::test
