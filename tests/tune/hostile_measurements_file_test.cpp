// Hostile tune directories (ctest label `hostile`): the tune.json and measurements.jsonl rules
// that tune --resume and segrank report share (tune/measurements_file.h) refuse what segrank tune
// cannot write, naming file:line and the field.
#include <doctest/doctest.h>

#include <string>

#include "gnn/core/check.h"
#include "tests/support/test_paths.h"
#include "tune/measurements_file.h"

using namespace segrank;
namespace fs = std::filesystem;

namespace {

// As segrank tune writes it (a layout graph with 2 configurable nodes).
const std::string kTuneJson =
    R"({"graph":{"name":"g","task":"layout","num_nodes":210,"num_configs":12,)"
    R"("num_config_nodes":2,"runtimes_fnv1a":"abc"},"where":"g.npz","measure":"hwmodel",)"
    R"("noise":0.0,"candidates":"search","strategy":"model","checkpoints":["run/best.ckpt.h5"]})";

std::string check_tune_json_message(const std::string& text) {
    try {
        (void)tune::check_tune_json(read_json(text, "tune.json"), "d/tune.json");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

std::string rows(int per_row) {
    std::string r = "[";
    for (int k = 0; k < per_row; ++k) {
        if (k > 0) r += ',';
        r += std::to_string(k % 3 - 1);
    }
    return r + "]";
}

std::string read_message(const fs::path& file, const std::string& text) {
    test::write_file_text(file, text);
    try {
        const tune::ConfigBound bound{12, "tune.json", "layout", 2};
        (void)tune::read_measurements_file(file, bound);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("tune.json with an enum, sign or count segrank tune cannot write is refused") {
        CHECK(check_tune_json_message(kTuneJson).empty());
        const struct {
            std::string from, to, expected;
        } cases[] = {
            {R"("task":"layout")", R"("task":"bogus")",
             R"(d/tune.json: "graph": "task" is "bogus", expected one of tile, layout)"},
            {R"("strategy":"model")", R"("strategy":"bogus")",
             R"(d/tune.json: "strategy" is "bogus", expected one of model, anneal, random)"},
            {R"("noise":0.0)", R"("noise":-7)",
             R"(d/tune.json: "noise" is -7, expected a log-normal sigma in [0, 5])"},
            {R"("num_nodes":210)", R"("num_nodes":-210)",
             R"(d/tune.json: "graph": "num_nodes" is -210, expected an integer >= 0)"},
            {R"("measure":"hwmodel")", R"("measure":"")",
             R"(d/tune.json: "measure" is "": --measure '': expected recorded, hwmodel)"},
            {R"("candidates":"search")", R"("candidates":"bogus")",
             R"(d/tune.json: "candidates" is "bogus", expected one of recorded, search)"},
            {R"("num_configs":12)", R"("num_configs":0)",
             R"("graph": "num_configs" is 0, expected a positive integer)"},
            {R"(["run/best.ckpt.h5"])", "[3]", R"("checkpoints" is [3], expected an array)"},
        };
        for (const auto& c : cases) {
            const std::string msg =
                check_tune_json_message(test::replaced_first(kTuneJson, c.from, c.to));
            INFO(c.to, " -> ", msg);
            CHECK(msg.find(c.expected) != std::string::npos);
        }
    }

    TEST_CASE("measurements.jsonl rows, round order and error rules of tune --resume hold") {
        const fs::path dir = test::scratch_dir("hostile_measurements_rules");
        const fs::path file = dir / "measurements.jsonl";
        const std::string f = file.string();
        const std::string row18 = rows(18);
        const std::string other18 = "[5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5]";
        auto line = [&](int64_t round, const std::string& r, const std::string& tail) {
            return str(R"({"round":)", round, R"(,"config":null,"rows":[)", r, ",", r, "],", tail,
                       "}\n");
        };
        const std::string ok0 = line(0, row18, R"("measured_ns":100.0,"best_ns":100.0)");
        CHECK(read_message(
                  file,
                  ok0 + line(1, other18, R"("measured_ns":null,"error":"timeout","best_ns":100.0)"))
                  .empty());
        CHECK(read_message(file, ok0 + line(1, rows(17), R"("measured_ns":90.0)"))
                  .find(f + ":2: \"rows\" must be rows of 18 integers") != std::string::npos);
        CHECK(read_message(file, ok0 + line(1, rows(19), R"("measured_ns":90.0)"))
                  .find(f + ":2: \"rows\" must be rows of 18 integers") != std::string::npos);
        const std::string three = str(R"({"round":1,"config":null,"rows":[)", row18, ",", row18,
                                      ",", row18, R"(],"measured_ns":90.0})", "\n");
        CHECK(read_message(file, ok0 + three).find(f + ":2: \"rows\" must be 2 rows of 18") !=
              std::string::npos);
        // The round check comes first: the repeated rows are not reached.
        CHECK(read_message(file, line(999999999999, row18, R"("measured_ns":90.0)") + ok0)
                  .find(f + ":2: \"round\" is 0, before round 999999999999") != std::string::npos);
        CHECK(read_message(file, line(0, row18, R"("measured_ns":90.0,"error":"boom")"))
                  .find(f + ":1: round 0: both \"measured_ns\" 90 and \"error\" \"boom\"") !=
              std::string::npos);
        CHECK(read_message(file, line(0, row18, R"("measured_ns":null)"))
                  .find(f + ":1: round 0: \"measured_ns\" is null and \"error\" is missing") !=
              std::string::npos);
        CHECK(read_message(file, line(0, row18, R"("measured_ns":null,"error":"")"))
                  .find("\"error\" is \"\", expected why the measurement failed") !=
              std::string::npos);
    }
}
