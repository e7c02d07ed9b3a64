// Hostile inputs of report (metrics.jsonl), leaderboard submissions, hwmodel explain, tune's exec
// replies and tuning protobufs end to end (ctest label `hostile`): each is named with what was
// expected, and nothing is written.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;
using namespace std::string_literals;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 1); }

// A run directory holding config.toml and `metrics` as metrics.jsonl; returns its path.
fs::path run_with_metrics(const std::string& name, const std::string& metrics) {
    const fs::path dir = scratch_dir(name) / "run";
    fs::create_directories(dir);
    write_text(dir / "config.toml", "[train]\nsteps = 2\n");
    write_text(dir / "metrics.jsonl", metrics);
    return dir;
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("segrank report refuses a complete but invalid last metrics.jsonl line, not torn") {
        const fs::path run = run_with_metrics("hostile_report_last_line",
                                              "{\"phase\":\"train\",\"step\":10,\"loss\":0.5}\n{"
                                              "\"phase\":\"eval\",\"step\":1e999}\n");
        const auto r = run_segrank("report " + sq(run.string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, (run / "metrics.jsonl").string() + ":2:"));
        CHECK_FALSE(contains_text(r.output, "torn"));
        CHECK_FALSE(fs::exists(run / "report.html"));
        // Without its line end the same line is one still being written: a note, exit 0.
        write_text(run / "metrics.jsonl",
                   "{\"phase\":\"train\",\"step\":10,\"loss\":0.5}\n{\"phase\":\"eval\",\"st");
        const auto live = run_segrank("report " + sq(run.string()));
        INFO(live.output);
        CHECK(live.exit_code == 0);
        CHECK(contains_text(live.output, "metrics.jsonl:2: torn last line skipped (no line end"));
    }

    TEST_CASE(
        "segrank report refuses metrics.jsonl fields of the wrong type naming line and field") {
        const fs::path run =
            run_with_metrics("hostile_report_field_types",
                             "{\"phase\":\"train\",\"step\":10,\"loss\":0.5}\n"
                             "{\"phase\":\"train\",\"step\":\"x\",\"loss\":0.4}\n");
        const std::string file = (run / "metrics.jsonl").string();
        const auto step = run_segrank("report " + sq(run.string()));
        INFO(step.output);
        CHECK(step.exit_code == 1);
        CHECK(contains_text(step.output,
                            file + ":2: field \"step\" is \"x\", expected a non-negative integer"));
        CHECK_FALSE(contains_text(step.output, "at step 0"));
        CHECK_FALSE(fs::exists(run / "report.html"));

        write_text(run / "metrics.jsonl",
                   "{\"phase\":\"train\",\"step\":10,\"loss\":0.5}\n"
                   "{\"phase\":\"train\",\"step\":20,\"loss\":\"nan\"}\n");
        const auto loss = run_segrank("report " + sq(run.string()));
        INFO(loss.output);
        CHECK(loss.exit_code == 1);
        CHECK(contains_text(loss.output,
                            file + ":2: \"loss\" is \"nan\", expected a number >= 0 or null"));
        CHECK_FALSE(fs::exists(run / "report.html"));

        // null is how the trainer writes a loss that is not finite: a note, not an error.
        write_text(run / "metrics.jsonl",
                   "{\"phase\":\"train\",\"step\":10,\"loss\":0.5}\n"
                   "{\"phase\":\"train\",\"step\":20,\"loss\":null}\n");
        const auto ok = run_segrank("report " + sq(run.string()));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(contains_text(ok.output, "the training loss at step 20 is not finite"));
    }
}

TEST_SUITE("hostile") {
    TEST_CASE("a tuning .pb with invalid UTF-8 in a name prints no raw libprotobuf log line") {
        const fs::path dir = scratch_dir("hostile_pb_utf8");
        // ModuleTuningData { module { name: "\xff\xfe" } }: a string field that is not UTF-8.
        write_text(dir / "flip.pb", std::string("\x0a\x04\x0a\x02\xff\xfe", 6));
        const std::string pb = (dir / "flip.pb").string();
        for (const std::string& cmd :
             {"hwmodel explain " + sq(pb),
              "ingest " + sq(pb) + " --out " + sq((dir / "out").string())}) {
            const auto r = run_segrank(cmd);
            INFO(cmd, "\n", r.output);
            CHECK(r.exit_code == 1);
            CHECK_FALSE(contains_text(r.output, "[libprotobuf"));
            CHECK(contains_text(r.output, pb + ": "));
            CHECK(contains_text(r.output,
                                "String field 'segrank.pb.HloModuleProto.name' contains "
                                "invalid UTF-8 data when parsing a protocol buffer)"));
        }
        CHECK_FALSE(fs::exists(dir / "out"));
    }
}

TEST_SUITE("hostile") {
    TEST_CASE("segrank leaderboard names two submissions with one file stem by their paths") {
        const fs::path dir = scratch_dir("hostile_lb_same_stem");
        const fs::path root = write_lb_truth(dir / "truth");
        fs::create_directories(dir / "d1");
        fs::create_directories(dir / "d2");
        write_text(dir / "d1/x.csv", lb_submission_a());
        write_text(dir / "d2/x.csv", lb_submission_b());
        write_text(dir / "x.csv", lb_submission_c());
        const fs::path csv = dir / "lb.csv";
        const auto r =
            run_command("cd " + sq(dir.string()) + " && " + sq(segrank_binary().string()) +
                        " leaderboard --truth " + sq(root.string()) +
                        " d1/x.csv x.csv d2/x.csv --out-csv " + sq(csv.string()));
        INFO(r.output);
        CHECK(r.exit_code == 0);
        const std::string table = read_file_text(csv);
        INFO(table);
        // B scores highest; A and C (--missing worst) tie and are ordered by name.
        CHECK(contains_text(table, "\n1,d2/x,"));
        CHECK(contains_text(table, "\n2,d1/x,"));
        CHECK(contains_text(table, "\n3,x,"));
    }

    TEST_CASE("segrank leaderboard names an HDF5 file given as a submission, no raw bytes") {
        const fs::path dir = scratch_dir("hostile_lb_h5_submission");
        const fs::path root = write_lb_truth(dir / "truth");
        write_text(dir / "store.h5",
                   "\x89HDF\r\n\x1a\n\0\0\0\0\0\x08\x08\0\x04\0\x10\0\xff\xfe\n,,\n"s);
        write_text(dir / "blob.csv", "ID,TopConfigs\ntile:xla:k1,1\0\x01\n"s);
        write_text(dir / "ok.csv", lb_submission_a());
        const std::string h5 = (dir / "store.h5").string(), blob = (dir / "blob.csv").string();
        const auto r = run_segrank("leaderboard --truth " + sq(root.string()) + " " + sq(h5) + " " +
                                   sq(blob) + " " + sq((dir / "ok.csv").string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, h5 + ": is an HDF5 file (a graph store?), a submission CSV "
                                           "(ID,TopConfigs) was expected"));
        CHECK(contains_text(r.output, blob + ": is binary data (a NUL byte at offset 27), a "
                                             "submission CSV (ID,TopConfigs) was expected"));
        CHECK_FALSE(contains_text(r.output, "HDF\r"));
        CHECK_FALSE(contains_text(r.output, "\xff"));
        CHECK_FALSE(contains_text(r.output, h5 + ":1:"));  // one error, no per-line ones
        CHECK_FALSE(contains_text(r.output, h5 + ":2:"));
        CHECK(contains_text(r.output, " ok "));  // the valid submission is still scored
    }
}

TEST_SUITE("hostile") {
    TEST_CASE("segrank hwmodel explain and hwmodel --data name HDF5 stores they do not read") {
        const fs::path dir = scratch_dir("hostile_hwmodel_store");
        fs::create_directories(dir / "stores");
        const std::string store = (dir / "stores/layout_xla_random_valid.h5").string();
        write_text(store, "\x89HDF\r\n\x1a\n\0\0\0\0\0\x08\x08\0"s);
        const auto r = run_segrank("hwmodel explain " + sq(store));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, store + ": is an HDF5 file (a graph store or checkpoint); "
                                              "hwmodel explain takes a tuning .pb or an .npz "
                                              "graph"));
        CHECK_FALSE(contains_text(r.output, "protobuf"));
        const auto d = run_segrank("hwmodel --data " + sq((dir / "stores").string()) +
                                   " --split valid --out " + sq((dir / "sub.csv").string()));
        INFO(d.output);
        CHECK(d.exit_code == 1);
        CHECK(contains_text(d.output, "no npz collections found"));
        CHECK(contains_text(d.output,
                            "it holds 1 HDF5 graph store(s) (layout_xla_random_valid.h5), "
                            "which this command does not read"));
        CHECK_FALSE(fs::exists(dir / "sub.csv"));
    }
}
