// scripts/bench_scale.py end to end at its --tiny size: argument errors, and the JSON of the whole
// rehearsal (synth, pack, train, ranking every valid config, the largest-graph probe, targets).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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
        {"--tiny --steps 0", "--steps must be >= 1"},
        {"--tiny --probe-configs 1", "--probe-configs must be >= 2"},
        {"--tiny --layout-choices -1", "--layout-choices must be in [0, 1000]"},
        {"--tiny --threads -1", "--threads must be >= 0"},
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
    "bench_scale.py --tiny rehearses synth, pack, train and ranking and reports the targets") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_tiny");
    const fs::path out = dir / "stdout.json", json = dir / "result.json", md = dir / "table.md";
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
    CHECK(contains_text(read_file_text(md), "| target: peak RSS < 2 GiB | met"));
    // The valid submission ranks every config of the valid graph.
    CHECK(contains_text(read_file_text(dir / "w" / "valid_submission.csv"), "ID,TopConfigs"));
}

}  // namespace segrank::test
