// Hostile tune directories for `segrank report` (ctest label `hostile`): report reads tune.json
// and measurements.jsonl with tune --resume's rules (tune/measurements_file.h), naming file:line,
// and holds best.json to the measurements.jsonl lines it counts.
#include <doctest/doctest.h>

#include <string>

#include "gnn/core/check.h"
#include "report/report.h"
#include "tests/support/test_paths.h"

using namespace segrank;
namespace fs = std::filesystem;

namespace {

const std::string kTuneJson =
    R"({"graph":{"name":"g","task":"layout","num_nodes":210,"num_configs":12,)"
    R"("num_config_nodes":1,"runtimes_fnv1a":"abc"},"where":"g.npz","measure":"hwmodel",)"
    R"("noise":0.0,"candidates":"search","strategy":"model","checkpoints":[]})"
    "\n";
const std::string kRow = "[1,0,-1,1,0,-1,1,0,-1,1,0,-1,1,0,-1,1,0,-1]";

std::string message(const fs::path& dir) {
    try {
        (void)render_tune_report_html(dir, {});
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// A recorded-candidates layout run as segrank tune writes it: the default (config 0, 2000 ns),
// then config 11 and config 2 at 1500 ns (a tie: tune keeps config 11, the first) and config 1
// failed.
const std::string kRecordedTuneJson =
    R"({"graph":{"name":"g","task":"layout","num_nodes":210,"num_configs":12,)"
    R"("num_config_nodes":1,"runtimes_fnv1a":"abc"},"where":"g.npz","measure":"hwmodel",)"
    R"("noise":0.0,"candidates":"recorded","strategy":"model","checkpoints":[]})"
    "\n";

std::string line(int round, int config, const std::string& ns, const std::string& best) {
    return R"({"round":)" + std::to_string(round) + R"(,"config":)" + std::to_string(config) +
           R"(,"predicted":-1.5,"explored":false,"measured_ns":)" + ns +
           (ns == "null" ? R"(,"error":"exec: VMEM exceeded")" : "") + R"(,"best_ns":)" + best +
           "}\n";
}

const std::string kLines = line(0, 0, "2000.0", "2000.0") + line(1, 11, "1500.0", "1500.0") +
                           line(1, 2, "1500.0", "1500.0") + line(1, 1, "null", "1500.0");

// best.json as segrank tune writes it after those 4 lines, with `edit` ("key":value pairs)
// appended (a later duplicate key wins in the reader).
std::string best_json(const std::string& edit = "") {
    return R"({"graph":"g.npz","measured":4,"default_config":0,"default_rule":"every slot -1",)"
           R"("default_runtime_ns":2000.0,"config":11,"runtime_ns":1500.0,)"
           R"("speedup_over_default":1.3333333333333333,"node_config_feat":[)" +
           kRow + "]" + (edit.empty() ? "" : "," + edit) + "}\n";
}

// The tune directory `name` holding kRecordedTuneJson, `lines` and best.json `best`.
fs::path recorded_dir(const std::string& name, const std::string& lines, const std::string& best) {
    const fs::path dir = test::scratch_dir(name);
    test::write_file_text(dir / "tune.json", kRecordedTuneJson);
    test::write_file_text(dir / "measurements.jsonl", lines);
    test::write_file_text(dir / "best.json", best);
    return dir;
}

bool contains(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("report of a tune directory applies tune --resume's tune.json and rows rules") {
        const fs::path dir = test::scratch_dir("hostile_report_tune_rules");
        test::write_file_text(dir / "tune.json", kTuneJson);
        const std::string ok =
            R"({"round":0,"config":null,"rows":[)" + kRow + R"(],"measured_ns":5.0,"best_ns":5.0})";
        test::write_file_text(dir / "measurements.jsonl", ok + "\n");
        CHECK(message(dir).empty());
        // A row of 17 integers: --resume refuses it, and so does report.
        test::write_file_text(
            dir / "measurements.jsonl",
            ok + "\n" +
                R"({"round":1,"config":null,"rows":[[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]],)" +
                R"("measured_ns":4.0,"best_ns":4.0})" + "\n");
        CHECK(message(dir).find((dir / "measurements.jsonl").string() +
                                ":2: \"rows\" must be rows of 18 integers") != std::string::npos);
        test::write_file_text(dir / "measurements.jsonl", ok + "\n");
        std::string bogus = kTuneJson;
        bogus.replace(bogus.find("\"model\""), 7, "\"bogus\"");
        test::write_file_text(dir / "tune.json", bogus);
        CHECK(message(dir).find((dir / "tune.json").string() +
                                ": \"strategy\" is \"bogus\", expected one of model, anneal, "
                                "random") != std::string::npos);
    }

    TEST_CASE(
        "report of a tune directory refuses a best.json best that measurements.jsonl does not "
        "hold") {
        const fs::path dir = recorded_dir("hostile_report_tune_best", kLines, best_json());
        CHECK(message(dir).empty());
        const std::string best = (dir / "best.json").string();
        const std::string meas = (dir / "measurements.jsonl").string();
        const std::string fastest =
            ": the fastest measurement of the 4 line(s) of " + meas +
            " that it counts (\"measured\") is " + meas +
            ":2 (round 1, config 11, 1500.0 ns) (segrank tune keeps the first of equal runtimes)";
        struct Case {
            std::string edit, expected;
        };
        const Case cases[] = {
            // a config never measured (trial 22 F-3)
            {R"("config":7)", best + ": \"config\" is 7, expected 11" + fastest},
            // config 2 ran as fast, but after config 11: tune keeps the first
            {R"("config":2)", best + ": \"config\" is 2, expected 11" + fastest},
            {R"("runtime_ns":1400.0)",
             best + ": \"runtime_ns\" is 1400.0, expected 1500.0" + fastest},
            {R"("measured":"x")", best + ": \"measured\" is \"x\", expected an integer >= 0"},
        };
        for (const Case& c : cases) {
            test::write_file_text(dir / "best.json", best_json(c.edit));
            const std::string m = message(dir);
            INFO(m);
            CHECK(contains(m, c.expected));
        }
        // measurements.jsonl edited consistently (a faster line 2, its best_ns along): best.json's
        // best is refused, naming that line.
        test::write_file_text(dir / "best.json", best_json());
        test::write_file_text(dir / "measurements.jsonl",
                              line(0, 0, "2000.0", "2000.0") + line(1, 11, "1.0", "1.0") +
                                  line(1, 2, "1500.0", "1.0") + line(1, 1, "null", "1.0"));
        const std::string m = message(dir);
        INFO(m);
        CHECK(contains(m, best +
                              ": \"runtime_ns\" is 1500.0, expected 1.0: the fastest measurement "
                              "of the 4 line(s) of " +
                              meas + " that it counts (\"measured\") is " + meas +
                              ":2 (round 1, config 11, 1.0 ns)"));
    }

    TEST_CASE(
        "report of a tune directory refuses best.json rows that are not its best line's rows") {
        // --candidates search: each line carries the config's "rows", and best.json the best's.
        const fs::path dir = test::scratch_dir("hostile_report_tune_best_rows");
        test::write_file_text(dir / "tune.json", kTuneJson);
        const std::string other = "[0,0,-1,1,0,-1,1,0,-1,1,0,-1,1,0,-1,1,0,-1]";
        test::write_file_text(dir / "measurements.jsonl",
                              R"({"round":0,"config":0,"rows":[)" + kRow +
                                  R"(],"measured_ns":5.0,"best_ns":5.0})" + "\n" +
                                  R"({"round":1,"config":null,"rows":[)" + other +
                                  R"(],"measured_ns":4.0,"best_ns":4.0})" + "\n");
        auto write_best = [&](const std::string& rows) {
            test::write_file_text(dir / "best.json",
                                  R"({"measured":2,"default_config":0,"default_runtime_ns":5.0,)"
                                  R"("config":null,"runtime_ns":4.0,"speedup_over_default":1.25,)"
                                  R"("node_config_feat":[)" +
                                      rows + "]}\n");
        };
        write_best(other);
        CHECK(message(dir).empty());
        write_best(kRow);
        CHECK(contains(message(dir), (dir / "best.json").string() + ": \"node_config_feat\" is [" +
                                         kRow + "], expected the \"rows\" of " +
                                         (dir / "measurements.jsonl").string() + ":2 ([" + other +
                                         "]): the fastest measurement"));
    }

    TEST_CASE(
        "report of a tune directory refuses a best.json default that the round-0 line "
        "contradicts") {
        const fs::path dir = recorded_dir("hostile_report_tune_default", kLines, best_json());
        const std::string best = (dir / "best.json").string();
        const std::string meas = (dir / "measurements.jsonl").string();
        const std::string def =
            ": the default's measurement is " + meas + ":1 (round 0, config 0, 2000.0 ns)";
        struct Case {
            std::string edit, expected;
        };
        const Case cases[] = {
            // 1000 s, and a speedup of 6.7e8x on the page before (trial 22 F-3)
            {R"("default_runtime_ns":1e12,"speedup_over_default":666666666.6666666)",
             best + ": \"default_runtime_ns\" is 1000000000000.0, expected 2000.0" + def},
            {R"("default_runtime_ns":null,"speedup_over_default":null)",
             best + ": \"default_runtime_ns\" is null, expected 2000.0" + def},
            {R"("default_config":3)", best + ": \"default_config\" is 3, expected 0" + def},
            {R"("speedup_over_default":3.0)",
             best + ": \"speedup_over_default\" is 3.0, expected 1.3333333333333333 "
                    "(\"default_runtime_ns\" / \"runtime_ns\")"},
        };
        for (const Case& c : cases) {
            test::write_file_text(dir / "best.json", best_json(c.edit));
            const std::string m = message(dir);
            INFO(m);
            CHECK(contains(m, c.expected));
        }
        // A failed default: its runtime is null, and a number is refused.
        const std::string failed = line(0, 0, "null", "null") + line(1, 11, "1500.0", "1500.0");
        test::write_file_text(dir / "measurements.jsonl", failed);
        test::write_file_text(dir / "best.json",
                              best_json(R"("measured":2,"default_runtime_ns":null,)"
                                        R"("speedup_over_default":null)"));
        CHECK(message(dir).empty());
        test::write_file_text(dir / "best.json", best_json(R"("measured":2)"));
        CHECK(contains(message(dir), best +
                                         ": \"default_runtime_ns\" is 2000.0, expected null: the "
                                         "default's measurement is " +
                                         meas +
                                         ":1 (round 0, config 0, failed: exec: VMEM exceeded)"));
        // No round-0 line among the counted ones: no default runtime.
        test::write_file_text(dir / "measurements.jsonl", line(1, 11, "1500.0", "1500.0"));
        test::write_file_text(dir / "best.json", best_json(R"("measured":1)"));
        CHECK(contains(message(dir), best +
                                         ": \"default_runtime_ns\" is 2000.0, expected null: the "
                                         "1 line(s) of " +
                                         meas +
                                         " that it counts (\"measured\") hold no round-0 line"));
    }

    TEST_CASE(
        "report of a tune directory holds a stale best.json to the lines it counts and draws the "
        "best from measurements.jsonl") {
        // best.json written after the default only (a kill mid-round, or a run still measuring):
        // held to line 1, no note.
        const fs::path dir = recorded_dir(
            "hostile_report_tune_stale", kLines,
            best_json(R"("measured":1,"config":0,"runtime_ns":2000.0,"speedup_over_default":1.0)"));
        std::vector<std::string> notes;
        const std::string html = render_tune_report_html(dir, {}, &notes);
        CHECK(notes.empty());
        CHECK(contains(html, "<td>best config</td><td class=\"num\">11<"));
        // ... and its best is line 1's, not a later one's.
        test::write_file_text(
            dir / "best.json",
            best_json(R"("measured":1,"runtime_ns":2000.0,"speedup_over_default":1.0)"));
        CHECK(contains(message(dir), (dir / "best.json").string() +
                                         ": \"config\" is 11, expected 0: the fastest measurement "
                                         "of the 1 line(s) of "));
        // More measurements than the file holds (lines lost): noted, not checked, and the page's
        // best config is measurements.jsonl's, not best.json's.
        test::write_file_text(dir / "best.json", best_json(R"("measured":99,"config":7)"));
        const std::string lost = render_tune_report_html(dir, {}, &notes);
        REQUIRE(notes.size() == 1);
        CHECK(contains(notes[0], "records 99 measurements, but "));
        CHECK(contains(lost, "<td>best config</td><td class=\"num\">11<"));
        CHECK_FALSE(contains(lost, "<td>best config</td><td class=\"num\">7<"));
    }

    TEST_CASE(
        "report of a tune directory accepts a tile default_config above its round-0 line's config "
        "(repeated rows)") {
        // tune names a config by the first recorded config with its rows: a tile default (the
        // first config timed as the normalizer) that repeats config 0's rows is logged as config 0.
        std::string tune = kRecordedTuneJson;
        tune.replace(tune.find("\"layout\""), 8, "\"tile\"");
        const fs::path dir = recorded_dir("hostile_report_tune_tile_default", kLines,
                                          best_json(R"("default_config":5)"));
        test::write_file_text(dir / "tune.json", tune);
        CHECK(message(dir).empty());
        test::write_file_text(dir / "best.json", best_json(R"("default_config":12)"));
        CHECK(contains(message(dir), "\"default_config\" is 12, expected 0"));
    }
}
