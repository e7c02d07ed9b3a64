// The exec:CMD backend (tune/exec_measurer.h) against small harness scripts that answer, fail,
// hang, answer garbage and die; no fd or child process outlives a measurer.
#include "tune/exec_measurer.h"

#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <thread>

#include "data/hlo/featurizer.h"
#include "tests/support/test_paths.h"
#include "tune/candidates.h"
#include "util/json.h"

using namespace segrank;
using namespace segrank::tune;
using segrank::test::contains_text;

namespace {

// The harness's behaviour is chosen by the first output bound of the tile config it gets:
//   1 -> runtime 1000 + sum(config row)    2 -> {"error": "compile failed"}
//   3 -> hangs (no reply)                  4 -> a line that is not JSON
//   6 -> a stale reply (previous id), then the right one
//   8 -> exits with status 3               16 -> runtime_ns -5
//  11 -> runtime 100 + whether descriptor argv[1] of segrank's is open in the harness
constexpr const char* kHarness = R"(import json, os, sys, time
for line in sys.stdin:
    req = json.loads(line)
    b = req["tile"]["output_bounds"][0]
    if b == 1:
        print(json.dumps({"id": req["id"], "runtime_ns": 1000.0 + sum(req["config"])}), flush=True)
    elif b == 2:
        print(json.dumps({"id": req["id"], "error": "compile failed"}), flush=True)
    elif b == 3:
        time.sleep(60)
    elif b == 4:
        print("segfault in the compiler, see log", flush=True)
    elif b == 6:
        print(json.dumps({"id": req["id"] - 1, "runtime_ns": 5}), flush=True)
        print(json.dumps({"id": req["id"], "runtime_ns": 77}), flush=True)
    elif b == 8:
        sys.exit(3)
    elif b == 16:
        print(json.dumps({"id": req["id"], "runtime_ns": -5}), flush=True)
    elif b == 11:
        inherited = os.path.exists("/proc/self/fd/" + sys.argv[1])
        print(json.dumps({"id": req["id"], "runtime_ns": 100 + inherited}), flush=True)
)";

// A tile graph for requests (the backend reads only its task, name and path).
TuneGraph exec_graph() {
    TuneGraph g;
    g.task = Task::kTile;
    g.name = "kernel.7";
    g.path = "/data/tile/kernel.7.npz";
    return g;
}

Config with_bound(int64_t b) {
    hlo::TileSizeConfig t;
    t.output_bounds = {b};
    const auto row = hlo::tile_config_features(t);
    return Config{{}, std::vector<float>(row.begin(), row.end())};
}

int open_fds() {
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    REQUIRE(d != nullptr);
    while (readdir(d)) ++n;
    closedir(d);
    return n;
}

// True when `pid` is no child of ours any more (reaped; not a zombie).
bool reaped(pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) == -1 && errno == ECHILD; }

std::filesystem::path write_harness(const std::string& text) {
    const auto dir = test::scratch_dir("tune_exec");
    const auto path = dir / "harness.py";
    std::ofstream(path) << text;
    return path;
}

}  // namespace

TEST_CASE(
    "exec request lines carry id, task, the graph file as an absolute path, name and the config "
    "rows") {
    const TuneGraph g = exec_graph();
    const Json req = read_json(exec_request(12, g, with_bound(4)), "request");
    CHECK(req["id"] == 12);
    CHECK(req["task"] == "tile");
    CHECK(req["graph"] == "/data/tile/kernel.7.npz");
    CHECK(req["name"] == "kernel.7");
    CHECK(req["config"].size() == 24);
    CHECK(req["config"][8] == 4);  // integers, not 4.0
    CHECK(req["tile"]["output_bounds"] == Json::array({4}));
    CHECK(req["tile"]["kernel_bounds"].empty());
    TuneGraph l;
    l.task = Task::kLayout;
    l.name = "m";
    Config c{std::vector<int8_t>(36, -1), {}};
    c.layout[0] = 1, c.layout[1] = 0;
    const Json lr = read_json(exec_request(1, l, c), "request");
    CHECK(lr["graph"] == "m");
    // A relative path is sent resolved against the working directory (a harness may cd).
    TuneGraph rel = exec_graph();
    rel.path = "data/../tile/k.npz";
    CHECK(read_json(exec_request(2, rel, with_bound(4)), "request")["graph"] ==
          (std::filesystem::current_path() / "tile/k.npz").string());
    REQUIRE(lr["config"].size() == 2);
    CHECK(lr["config"][0].size() == 18);
    CHECK(lr["config"][0][0] == 1);
    CHECK(lr["config"][1][17] == -1);
}

TEST_CASE("exec replies: runtime, error, and every kind of garbage") {
    CHECK(*parse_exec_reply(R"({"id": 3, "runtime_ns": 12.5})", 3).runtime_ns == 12.5);
    CHECK(parse_exec_reply(R"({"id": 3, "error": "oom"})", 3).error == "exec: oom");
    for (const char* bad : {"hello", "[1]", R"({"runtime_ns": 1})", R"({"id": 4, "runtime_ns": 1})",
                            R"({"id": 3})", R"({"id": 3, "runtime_ns": 1, "error": "x"})",
                            R"({"id": 3, "runtime_ns": 0})", R"({"id": 3, "runtime_ns": "5"})",
                            R"({"id": 3, "error": 5})", R"({"id": "3", "runtime_ns": 1})"}) {
        const Measurement m = parse_exec_reply(bad, 3);
        CHECK_FALSE(m.ok());
        CHECK_MESSAGE(contains_text(m.error, "garbage reply to request 3"), bad, " -> ", m.error);
    }
}

TEST_SUITE("hostile") {
    TEST_CASE(
        "exec replies: a runtime_ns above 1e15 ns is garbage naming the reply and the bound") {
        CHECK(*parse_exec_reply(R"({"id": 3, "runtime_ns": 1e15})", 3).runtime_ns == 1e15);
        const Measurement m = parse_exec_reply(R"({"id": 3, "runtime_ns": 1e300})", 3);
        CHECK_FALSE(m.ok());
        CHECK_MESSAGE(contains_text(m.error,
                                    "garbage reply to request 3 (runtime_ns 1e+300 is "
                                    "above the plausible maximum 1e+15 ns (about 11.6 "
                                    "days)): {\"id\": 3, \"runtime_ns\": 1e300}"),
                      m.error);
    }

    TEST_CASE(
        "exec replies: a runtime_ns below 1 ns (a wrong unit) is garbage naming the reply and the "
        "bound") {
        CHECK(*parse_exec_reply(R"({"id": 3, "runtime_ns": 1})", 3).runtime_ns == 1.0);
        for (const char* tiny : {"1e-300", "0.999", "5e-9"}) {
            const std::string line = std::string(R"({"id": 3, "runtime_ns": )") + tiny + "}";
            const Measurement m = parse_exec_reply(line, 3);
            CHECK_FALSE(m.ok());
            CHECK_MESSAGE(contains_text(m.error, "garbage reply to request 3 (runtime_ns "),
                          m.error);
            CHECK_MESSAGE(contains_text(m.error,
                                        " is below the plausible minimum 1.0 ns (one "
                                        "clock cycle)): " +
                                            line),
                          m.error);
        }
    }

    TEST_CASE(
        "exec: only ids of earlier requests are late replies, and a flood of them is summarized") {
        if (!test::have_python3()) {
            MESSAGE("SKIPPED: python3 not found");
            return;
        }
        // By the first output bound: 4 -> not JSON; 20 -> 1000 replies to the previous request,
        // then the right one; 21 -> a reply to request -5, then the right one; 22 -> a reply to a
        // request never sent (id + 7), then the right one.
        const auto harness = write_harness(R"(import json, sys
for line in sys.stdin:
    req = json.loads(line)
    b, i = req["tile"]["output_bounds"][0], req["id"]
    out = []
    if b == 4:
        out.append("not json")
    elif b == 20:
        out += [json.dumps({"id": i - 1, "runtime_ns": 5})] * 1000
    elif b == 21:
        out.append(json.dumps({"id": -5, "runtime_ns": 5}))
    elif b == 22:
        out.append(json.dumps({"id": i + 7, "runtime_ns": 5}))
    if b != 4:
        out.append(json.dumps({"id": i, "runtime_ns": 77}))
    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()
)");
        std::vector<std::string> log;
        MeasureOptions o;
        o.timeout_s = 5;
        o.log = [&](const std::string& m) { log.push_back(m); };
        const TuneGraph g = exec_graph();  // borrowed by the measurer: must outlive it
        ExecMeasurer m(g, "exec python3 " + harness.string(), o);
        const auto r = m.measure(std::vector<Config>{with_bound(4), with_bound(20), with_bound(20),
                                                     with_bound(21), with_bound(22)});
        CHECK(contains_text(r[0].error, "garbage reply to request 1"));
        CHECK(r[1].ok());  // 1000 late replies to request 1 skipped (3 logged, 997 counted)
        CHECK(r[2].ok());  // 1000 late replies to request 2 skipped
        CHECK_MESSAGE(contains_text(r[3].error, "garbage reply to request 4"), r[3].error);
        CHECK_MESSAGE(contains_text(r[4].error, "garbage reply to request 5"), r[4].error);
        std::string all;
        int64_t late = 0;
        for (const auto& l : log) {
            all += l + "\n";
            late += contains_text(l, "skipped a late reply to request");
        }
        INFO(all);
        CHECK(late == 3);  // the first 3 one by one, then one line per request
        CHECK(contains_text(all,
                            "skipped 997 more late replies to earlier requests while "
                            "waiting for request 2"));
        CHECK(contains_text(all,
                            "skipped 1000 more late replies to earlier requests while "
                            "waiting for request 3"));
        CHECK(log.size() <= 10);  // not one line per reply: 2000 were skipped
    }
}

TEST_CASE(
    "exec harness: answers, errors, garbage, a stale reply, a hang and a death are measured or "
    "skipped") {
    if (!test::have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const auto harness = write_harness(kHarness);
    const TuneGraph g = exec_graph();
    // A descriptor without close-on-exec, as a library might leave one: the harness must not get
    // it.
    const int stray = ::open("/dev/null", O_RDONLY);
    REQUIRE(stray >= 0);
    const int fds_before = open_fds();
    std::vector<std::string> log;
    MeasureOptions o;
    o.timeout_s = 1;  // the python harness's own startup is covered by start_timeout_s
    o.max_restarts = 2;
    o.log = [&](const std::string& m) { log.push_back(m); };
    pid_t first_pid = -1, second_pid = -1;
    {
        ExecMeasurer m(g, "exec python3 " + harness.string() + " " + std::to_string(stray), o);
        CHECK(m.starts() == 0);  // started on the first request
        auto r = m.measure(std::vector<Config>{with_bound(1), with_bound(2), with_bound(4),
                                               with_bound(6), with_bound(16), with_bound(1),
                                               with_bound(11)});
        first_pid = m.pid();
        CHECK(m.starts() == 1);
        CHECK(open_fds() == fds_before + 2);  // the two pipe ends, nothing else
        REQUIRE_MESSAGE(r[0].ok(), r[0].error);
        CHECK(*r[0].runtime_ns == 1000 + 1 + 1 + 1);  // bound 1, its sum 1 and product 1
        CHECK(r[1].error == "exec: compile failed");
        CHECK(contains_text(r[2].error, "garbage reply to request 3 (not JSON): segfault"));
        REQUIRE(r[3].ok());
        CHECK(*r[3].runtime_ns == 77);
        CHECK(contains_text(r[4].error, "runtime_ns must be finite and > 0"));
        CHECK(r[5].ok());
        CHECK(*r[6].runtime_ns == 100);  // the stray descriptor was not inherited

        // A hang is killed after the timeout; the next request gets a new process.
        r = m.measure(std::vector<Config>{with_bound(3), with_bound(1)});
        CHECK(contains_text(r[0].error, "no reply within 1 s; killed"));
        CHECK(r[1].ok());
        CHECK(m.starts() == 2);
        CHECK(reaped(first_pid));
        second_pid = m.pid();

        // A death is a failed measurement; restarts are bounded (2 here).
        r = m.measure(std::vector<Config>{with_bound(8), with_bound(8), with_bound(1)});
        CHECK(contains_text(
            r[0].error,
            "the process closed its stdout or ended before replying (process exited with "
            "status 3)"));
        CHECK(contains_text(r[1].error, "exited with status 3"));
        CHECK(contains_text(r[2].error, "gave up after 2 restarts; last failure: request"));
        CHECK(m.starts() == 3);
        CHECK(m.pid() == -1);
        CHECK(reaped(second_pid));
    }
    CHECK(open_fds() == fds_before);
    ::close(stray);
    CHECK((::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD));  // no zombie left
    bool restart_logged = false;
    for (const auto& l : log)
        restart_logged = restart_logged || contains_text(l, "restarting (1 of 2)");
    CHECK(restart_logged);
}

TEST_CASE("exec: a simple command replaces the shell, while lists, pipes and builtins are kept") {
    CHECK(shell_command_line("python3 h.py --x 1") == "exec python3 h.py --x 1");
    CHECK(shell_command_line("  './my harness' \"a b\"") == "exec   './my harness' \"a b\"");
    for (const char* kept :
         {"exec python3 h.py", "cd /x && python3 h.py", "a | b", "a; b", "a > log",
          "FOO=1 python3 h.py", "(a)", "a\nb", "echo `x`", "if true; then a; fi", "cd /tmp", ""})
        CHECK_MESSAGE(shell_command_line(kept) == kept, kept);
}

TEST_CASE("exec: a harness that closes its stdout and stays alive fails at once, not at timeout") {
    if (!test::have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    // Without exec, /bin/sh (dash) would keep the pipe open until the timeout.
    const auto harness =
        write_harness("import os, sys, time\nsys.stdin.readline()\nos.close(1)\ntime.sleep(60)\n");
    MeasureOptions o;
    o.timeout_s = 30;
    o.start_timeout_s = 0;
    o.max_restarts = 0;
    const auto t0 = std::chrono::steady_clock::now();
    {
        const TuneGraph g = exec_graph();  // the measurer keeps a reference
        ExecMeasurer m(g, "python3 " + harness.string(), o);
        const auto r = m.measure(std::vector<Config>{with_bound(1)});
        CHECK(contains_text(r[0].error, "the process closed its stdout or ended before replying"));
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(s < 15.0);  // EOF, then 1 s for it to exit and a kill; never the 30 s timeout
    CHECK((::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD));
}

TEST_CASE("exec: a command that cannot run fails every request, boundedly") {
    const TuneGraph g = exec_graph();
    MeasureOptions o;
    o.timeout_s = 2;
    o.max_restarts = 1;
    ExecMeasurer m(g, "/nonexistent/harness --flag 2>/dev/null", o);
    const auto r = m.measure(std::vector<Config>{with_bound(1), with_bound(1), with_bound(1)});
    CHECK(contains_text(r[0].error, "exited with status 127"));
    CHECK(contains_text(r[1].error, "exited with status 127"));
    CHECK(contains_text(r[2].error, "gave up after 1 restarts"));
    CHECK(m.starts() == 2);
}

TEST_CASE("exec: the destructor ends a harness that ignores EOF, and its children") {
    const TuneGraph g = exec_graph();
    const int fds_before = open_fds();
    pid_t pid = -1;
    {
        MeasureOptions o;
        o.timeout_s = 0.3;
        o.start_timeout_s = 0;
        // Reads nothing and never exits on its own; a background child shares its group.
        ExecMeasurer m(g, "sleep 30 & sleep 30", o);
        const auto r = m.measure(std::vector<Config>{with_bound(1)});
        CHECK(contains_text(r[0].error, "no reply within 0.3 s"));
        pid = m.pid();
        CHECK(pid == -1);  // killed on the timeout
    }
    CHECK(open_fds() == fds_before);
    CHECK((::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD));
}

TEST_CASE(
    "exec: a stop flag set while a harness hangs gives the request up at once, kills the harness "
    "and throws MeasurementInterrupted, not a failed measurement") {
    const TuneGraph g = exec_graph();
    std::atomic<int> stop{0};
    MeasureOptions o;
    o.timeout_s = 60;
    o.start_timeout_s = 0;
    o.stop = &stop;
    const auto t0 = std::chrono::steady_clock::now();
    {
        // Reads requests and never answers; a background child shares its group.
        ExecMeasurer m(g, "sleep 60 & sleep 60", o);
        std::thread signal([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            stop.store(2);  // what the CLI's SIGINT handler does
        });
        CHECK_THROWS_AS(m.measure(std::vector<Config>{with_bound(1)}), MeasurementInterrupted);
        signal.join();
        CHECK(m.pid() == -1);  // killed, not left waiting
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(s < 30.0);  // never the 60 s timeout
    CHECK((::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD));
}

TEST_CASE("the example harness of docs/tune.md answers the protocol") {
    if (!test::have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const std::string doc = test::read_file_text(test::source_dir() / "docs" / "tune.md");
    const auto section = doc.find("## The exec protocol");
    REQUIRE(section != std::string::npos);
    const auto begin = doc.find("```python\n", section);
    REQUIRE(begin != std::string::npos);
    const auto end = doc.find("```", begin + 10);
    const auto harness = write_harness(doc.substr(begin + 10, end - begin - 10));
    MeasureOptions o;
    o.timeout_s = 5;
    TuneGraph l;
    l.task = Task::kLayout;
    l.name = "m";
    l.layout.node_config_ids = {3, 8};
    Config c{std::vector<int8_t>(36, -1), {}};
    c.layout[0] = 1, c.layout[1] = 0, c.layout[18 + 6] = 0;  // 3 values set
    {
        ExecMeasurer m(l, "python3 " + harness.string(), o);
        const auto r = m.measure(std::vector<Config>{c, Config{std::vector<int8_t>(36, -1), {}}});
        REQUIRE_MESSAGE(r[0].ok(), r[0].error);
        CHECK(*r[0].runtime_ns == 1e6 + 3000);
        CHECK(*r[1].runtime_ns == 1e6);
    }
    {
        const TuneGraph t = exec_graph();  // borrowed by the measurer: must outlive it
        ExecMeasurer m(t, "python3 " + harness.string(), o);
        const auto r = m.measure(std::vector<Config>{with_bound(4)});
        REQUIRE_MESSAGE(r[0].ok(), r[0].error);
        CHECK(*r[0].runtime_ns == 1000 + 4);
    }
}
