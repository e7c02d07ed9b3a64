// Hostile tune directories for `segrank report` (ctest label `hostile`): report reads tune.json
// and measurements.jsonl with tune --resume's rules (tune/measurements_file.h), naming file:line.
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
}
