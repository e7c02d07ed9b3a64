// scripts/bench_quality.py end to end at its --tiny size: argument errors, a failing
// segrank run (named case / seed / command, no JSON written) and the JSON of one synthetic case.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "data/graph.h"
#include "tests/support/test_paths.h"
#include "util/json_value.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

// Debian's python3, which has numpy (python3-numpy, scripts/install_deps.sh): python3 on PATH can
// be another interpreter without it.
std::string bench_cmd(const fs::path& work, const std::string& extra) {
    std::string cmd = "/usr/bin/python3 ";
    cmd += sq((source_dir() / "scripts" / "bench_quality.py").string());
    cmd += " --segrank " + sq(segrank_binary().string()) + " --work " + sq(work.string()) + " " +
           extra;
    return cmd;
}

}  // namespace

TEST_CASE("bench_quality.py refuses bad arguments with exit 2 and a message") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_quality_args");
    struct Bad {
        std::string args, message;
    };
    const Bad cases[] = {
        {"--seeds 1", "--seeds must be >= 2"},
        {"--seeds 99999999999999999999",
         "--seeds: expected 2 to 1000 (each seed is a run), got 99999999999999999999"},
        {"--tiny --random-seeds 1001", "--random-seeds: expected 2 to 1000"},
        {"--cases synth_tile,nope", "unknown case(s) nope"},
        {"--set model.hidden", "expected section.key=value"},
        {"--ablate onlyname", "expected NAME:key=value"},
        {"--ablate model:model.hidden=8", "must be letters"},
        {"--quick --tiny", "exclude each other"},
    };
    for (const Bad& b : cases) {
        const auto r = run_command(bench_cmd(dir, b.args));
        INFO(b.args, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, b.message));
    }
    std::string nobin_cmd = "/usr/bin/python3 ";
    nobin_cmd += sq((source_dir() / "scripts" / "bench_quality.py").string()) +
                 " --segrank /nonexistent/segrank";
    const auto nobin = run_command(nobin_cmd);
    CHECK(nobin.exit_code == 2);
    CHECK(contains_text(nobin.output, "/nonexistent/segrank"));
}

TEST_SUITE("hostile") {
    TEST_CASE("the bench scripts refuse an option given twice, as segrank does") {
        if (!have_python3()) {
            MESSAGE("SKIPPED: python3 not found");
            return;
        }
        const fs::path dir = scratch_dir("bench_scripts_twice");
        const std::string scripts = (source_dir() / "scripts").string();
        struct Bad {
            std::string script, args, message;
        };
        const Bad cases[] = {
            {"bench_quality.py", "--jobs 1 --jobs 0", "--jobs given twice (--jobs 1, --jobs 0)"},
            {"bench_quality.py", "--seeds 2 --seeds=3",
             "--seeds given twice (--seeds 2, --seeds 3)"},
            {"bench_tune.py", "--cases a --cases b", "--cases given twice (--cases a, --cases b)"},
            {"bench_scale.py", "--np 2 --np 3", "--np given twice (--np 2, --np 3)"},
        };
        for (const Bad& b : cases) {
            const auto r =
                run_command("/usr/bin/python3 " + sq(scripts + "/" + b.script) + " --work " +
                            sq((dir / "w").string()) + " --segrank /nonexistent/segrank " + b.args);
            INFO(b.script, " ", b.args, "\n", r.output);
            CHECK(r.exit_code == 2);
            CHECK(contains_text(r.output, b.message + "; give it once"));
        }
        CHECK_FALSE(fs::exists(dir / "w"));
        // Lists and flags stay repeatable: --help after them still prints the usage. (The missing
        // --segrank above keeps a script that accepted a repeat from running a benchmark.)
        const auto ok =
            run_command("/usr/bin/python3 " + sq(scripts + "/bench_quality.py") +
                        " --set train.steps=1 --set train.steps=2 --ablate "
                        "a:train.steps=1 --ablate b:train.steps=2 --tiny --tiny --help");
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }
}

TEST_CASE(
    "bench/npz.py reads npz files with numpy: targets as segrank computes them, row slices "
    "written back, and a damaged file, float runtimes or an index out of range refused by name") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_quality_npz");
    const std::string code =
        "import os, sys\n"
        "import numpy as np\n"
        "sys.path.insert(0, \"" +
        (source_dir() / "scripts").string() +
        "\")\n"
        "from bench.common import BenchError\n"
        "from bench.npz import npz_rows, npz_targets, read_npz, take_rows, write_npz\n"
        "d = sys.argv[1]\n"
        "tile = os.path.join(d, 'tile.npz')\n"
        "np.savez(tile, config_runtime=np.array([10, 20, 7], dtype=np.int64),\n"
        "         config_runtime_normalizers=np.array([2, 0, 7], dtype=np.int64))\n"
        "assert npz_targets(tile) == [5.0, 20.0, 1.0], npz_targets(tile)\n"
        "feat = np.arange(24, dtype=np.float32).reshape(4, 2, 3)\n"
        "out = os.path.join(d, 'sub', 'rows.npz')\n"
        "write_npz(out, {'node_config_feat': take_rows(feat, [3, 0, 3], 'rows'),\n"
        "                'config_runtime': np.array([4, 5, 6], dtype=np.int64)})\n"
        "m = read_npz(out)\n"
        "assert m['node_config_feat'].tolist() == feat[[3, 0, 3]].tolist()\n"
        "assert m['node_config_feat'].dtype == np.float32\n"
        "rows = npz_rows(m['node_config_feat'])\n"
        "assert rows[0] == rows[2] != rows[1]\n"
        "assert npz_targets(out) == [4.0, 5.0, 6.0]\n"
        "open(os.path.join(d, 'text.npz'), 'w').write('not a zip')\n"
        "blob = open(out, 'rb').read()\n"
        "open(os.path.join(d, 'cut.npz'), 'wb').write(blob[: len(blob) // 2])\n"
        "np.savez(os.path.join(d, 'float.npz'), config_runtime=np.array([1.5, 2.0]))\n"
        "np.savez(os.path.join(d, 'none.npz'), node_feat=np.zeros(3))\n"
        "for name in ('text.npz', 'cut.npz', 'float.npz', 'none.npz', 'missing.npz'):\n"
        "    try:\n"
        "        npz_targets(os.path.join(d, name)); raise SystemExit('accepted ' + name)\n"
        "    except BenchError as e:\n"
        "        print('refused:', e)\n"
        "try:\n"
        "    take_rows(feat, [1, 4], 'rows'); raise SystemExit('accepted row 4')\n"
        "except BenchError as e:\n"
        "    print('refused:', e)\n";
    const fs::path py = scratch_dir("bench_quality_npz_script") / "npz_check.py";
    std::ofstream(py) << code;
    const auto r = run_command("/usr/bin/python3 " + sq(py.string()) + " " + sq(dir.string()));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains_text(r.output, "refused: cannot read npz '" + (dir / "text.npz").string()));
    CHECK(contains_text(r.output, "refused: cannot read npz '" + (dir / "cut.npz").string()));
    CHECK(contains_text(r.output, (dir / "float.npz").string() + ": expected int64, got <f8"));
    const std::string none_npz = (dir / "none.npz").string();
    CHECK(contains_text(r.output, "'" + none_npz + "': no member 'config_runtime'"));
    CHECK(contains_text(r.output, "refused: cannot read npz '" + (dir / "missing.npz").string()));
    CHECK(contains_text(r.output, "refused: rows: row index 4 outside the array's 4 rows"));
}

TEST_CASE("bench_quality.py: a failing segrank run names case, seed and command, writes no JSON") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_quality_fail");
    const fs::path json = dir / "out.json";
    // An eval.indices file that `train --check` accepts (a JSON object of index lists) and the run
    // refuses (it names no graph of the synthesized data).
    const fs::path indices = dir / "indices.json";
    write_file_text(indices, "{\"no_such_graph\": [0, 1]}\n");
    const auto r = run_command(bench_cmd(dir / "w",
                                         "--tiny --cases synth_tile --seeds 2 --random-seeds 2 "
                                         "--set " +
                                             sq("eval.indices=\"" + indices.string() + "\"") +
                                             " --json-out " + sq(json.string())));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(r.output, "case synth_tile model seed"));
    CHECK(contains_text(r.output, "segrank failed (exit 1)"));
    CHECK(contains_text(r.output, "command: "));
    // segrank's own message, from its stderr (`train --check` reads no graph)
    CHECK(contains_text(
        r.output, indices.string() + ": eval.indices: no config indices for evaluation graph"));
    CHECK(contains_text(r.output, "no JSON written"));
    CHECK_FALSE(fs::exists(json));
}

TEST_CASE(
    "bench_quality.py --tiny synth_layout reports the trip-blind ceiling beside the ceiling") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_quality_tiny_layout");
    const fs::path out = dir / "stdout.json", md = dir / "table.md";
    std::string cmd = "(";  // built with += : GCC 12 -Wrestrict false positive on "(" + std::string
    cmd += bench_cmd(dir / "w",
                     "--tiny --cases synth_layout --seeds 2 --random-seeds 2 "
                     "--no-ensemble --markdown " +
                         sq(md.string()));
    cmd += " > " + sq(out.string()) + " 2> " + sq((dir / "stderr.txt").string()) + ")";
    const auto r = run_command(cmd);
    INFO(read_file_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    const JsonValue doc = parse_json(read_file_text(out), out.string());
    const JsonValue* c = doc.find("cases")->find("synth_layout");
    REQUIRE(c != nullptr);
    const auto ceiling = c->find("ceiling")->number_at("value");
    REQUIRE(ceiling.has_value());
    const JsonValue* blind = c->find("ceiling_trip_blind");
    REQUIRE(blind != nullptr);
    // Charged the mean of the generator's trip counts 2, 3, 4, 6, 8, 12.
    CHECK(blind->number_at("trip_count") == doctest::Approx(35.0 / 6.0));
    const auto bv = blind->number_at("value");
    REQUIRE(bv.has_value());
    CHECK(*bv >= -1.0);
    CHECK(*bv <= 1.0);
    CHECK(c->number_at("fraction_of_trip_blind_ceiling").has_value());
    // The labels really differ where a graph has while loops (runtimes of every split).
    const fs::path w = dir / "w" / "synth_layout";
    bool differ = false;
    for (const char* split : {"train", "valid", "test"})
        for (const auto& e :
             fs::directory_iterator(w / "data_clean/npz/layout/xla/random" / split)) {
            const fs::path twin =
                w / "data_trip_blind/npz/layout/xla/random" / split / e.path().filename();
            differ =
                differ || load_layout_npz(e.path(), LabelPolicy::kRequirePositive).config_runtime !=
                              load_layout_npz(twin, LabelPolicy::kRequirePositive).config_runtime;
        }
    CHECK(differ);
    CHECK(contains_text(read_file_text(md), "(trip-blind "));
}

TEST_CASE(
    "bench_quality.py --tiny synth_tile prints one JSON object with model, baselines, ceiling, "
    "ablation") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_quality_tiny");
    const fs::path out = dir / "stdout.json", json = dir / "result.json", md = dir / "table.md";
    // A subshell: run_command appends 2>&1, which must not merge stderr into the JSON file.
    std::string cmd = "(";  // built with += : GCC 12 -Wrestrict false positive on "(" + std::string
    cmd += bench_cmd(
        dir / "w",
        "--tiny --cases synth_tile --seeds 2 --random-seeds 2 --ablate k8:sampling.configs=8 "
        "--json-out " +
            sq(json.string()) + " --markdown " + sq(md.string()));
    cmd += " > " + sq(out.string()) + " 2> " + sq((dir / "stderr.txt").string()) + ")";
    const auto r = run_command(cmd);
    INFO(read_file_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    const std::string text = read_file_text(out);
    CHECK(text == read_file_text(json));
    const JsonValue doc = parse_json(text, out.string());
    CHECK(doc.string_at("mode") == "tiny");
    REQUIRE(doc.find("machine") != nullptr);
    CHECK(doc.find("machine")->number_at("nproc").has_value());
    const JsonValue* c = doc.find("cases")->find("synth_tile");
    REQUIRE(c != nullptr);
    const JsonValue* model = c->find("model");
    REQUIRE(model != nullptr);
    CHECK(model->number_at("mean").has_value());
    CHECK(model->number_at("std").has_value());
    CHECK(model->find("per_seed")->items().size() == 2);
    CHECK(c->find("random")->number_at("mean").has_value());
    CHECK(c->find("random")->number_at("std").has_value());
    // Tile: hwmodel on the featurized kernels reproduces the noise-free labels exactly.
    CHECK(c->find("hwmodel")->find("equals_clean_label")->as_bool());
    const auto ceiling = c->find("ceiling")->number_at("value");
    REQUIRE(ceiling.has_value());
    CHECK(*ceiling > 0.5);
    CHECK(*ceiling <= 1.0);
    CHECK(c->number_at("fraction_of_ceiling").has_value());
    const JsonValue* abl = c->find("ablations")->find("k8");
    REQUIRE(abl != nullptr);
    CHECK(abl->find("per_seed")->items().size() == 2);
    CHECK(abl->find("delta_vs_model")->number_at("mean").has_value());
    // Seed ensembles: the 2 seed models of each row through `segrank predict`.
    const JsonValue* ens = model->find("ensemble");
    REQUIRE(ens != nullptr);
    CHECK(ens->number_at("members") == 2.0);
    const auto ens_value = ens->number_at("value");
    REQUIRE(ens_value.has_value());
    CHECK(*ens_value >= -1.0);
    CHECK(*ens_value <= 1.0);
    CHECK(ens->number_at("gain_vs_seed_mean").has_value());
    CHECK(ens->find("metrics")->number_at("score").has_value());
    REQUIRE(abl->find("ensemble") != nullptr);
    CHECK(abl->find("ensemble")->number_at("value").has_value());
    CHECK(c->number_at("wall_s").has_value());
    CHECK(contains_text(read_file_text(md), "| synth_tile | kendall |"));
    CHECK(contains_text(read_file_text(md), "| synth_tile ensemble of 2 | kendall |"));
}

TEST_CASE(
    "bench_quality.py --tiny runs every real case end to end (fixture folds, official indices, "
    "real tile folds) with their seed ensembles") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    SEGRANK_REQUIRE_SHARED_DATA(shared);
    const fs::path dir = scratch_dir("bench_quality_tiny_real");
    const fs::path json = dir / "result.json";
    std::string cmd = "(";
    cmd += bench_cmd(dir / "w",
                     "--tiny --cases real_tile,real_layout_fixture,real_layout_official --seeds 2 "
                     "--random-seeds 2 --shared-data " +
                         sq(shared.string()) + " --json-out " + sq(json.string()));
    cmd += " > /dev/null 2> " + sq((dir / "stderr.txt").string()) + ")";
    const auto r = run_command(cmd);
    INFO(read_file_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    const JsonValue doc = parse_json(read_file_text(json), json.string());
    for (const char* name : {"real_tile", "real_layout_fixture", "real_layout_official"}) {
        INFO(name);
        const JsonValue* c = doc.find("cases")->find(name);
        REQUIRE(c != nullptr);
        CHECK(c->find("model")->find("per_seed")->items().size() == 2);
        CHECK(c->find("hwmodel")->find("metrics")->number_at("kendall").has_value());
        const JsonValue* ens = c->find("model")->find("ensemble");
        REQUIRE(ens != nullptr);
        CHECK(ens->number_at("value").has_value());
    }
    // real_tile's regression row: the model's MAPE (from segrank evaluate) beside hwmodel's.
    const JsonValue* reg = doc.find("cases")->find("real_tile")->find("regression");
    REQUIRE(reg != nullptr);
    CHECK(reg->find("model")->find("mape")->find("per_seed")->items().size() == 2);
    CHECK(reg->find("model")->find("mape")->number_at("mean").value_or(-1) > 0);
    CHECK(reg->find("hwmodel")->number_at("anchored_mape").value_or(-1) > 0);
    CHECK(reg->find("hwmodel")->number_at("mape").value_or(-1) > 0);
}

TEST_CASE(
    "bench_quality.py --tiny transfer cases hold each cost family out once and report model, "
    "hwmodel, random, ceiling, the training costs' own rankings and the mean fraction of the "
    "ceiling") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_quality_tiny_transfer");
    const fs::path json = dir / "result.json", md = dir / "table.md";
    std::string cmd = "(";
    cmd += bench_cmd(dir / "w",
                     "--tiny --cases transfer_layout,transfer_tile --seeds 2 --random-seeds 2 "
                     "--json-out " +
                         sq(json.string()) + " --markdown " + sq(md.string()));
    cmd += " > /dev/null 2> " + sq((dir / "stderr.txt").string()) + ")";
    const auto r = run_command(cmd);
    INFO(read_file_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    const JsonValue doc = parse_json(read_file_text(json), json.string());
    struct Case {
        const char* name;
        std::vector<std::string> families;
    };
    const Case cases[] = {
        {"transfer_layout", {"propagate", "copy_bound", "mxu_padded", "memory_v5", "fusion_aware"}},
        {"transfer_tile", {"vmem_spill", "pipeline", "step_overhead"}}};
    for (const Case& want : cases) {
        INFO(want.name);
        const JsonValue* c = doc.find("cases")->find(want.name);
        REQUIRE(c != nullptr);
        CHECK(c->string_at("kind") == "transfer");
        const JsonValue* fams = c->find("families");
        REQUIRE(fams != nullptr);
        for (const std::string& f : want.families) {
            INFO(f);
            const JsonValue* fam = fams->find(f);
            REQUIRE(fam != nullptr);
            CHECK(fam->find("model")
                      ->find("metrics")
                      ->find("kendall")
                      ->find("per_seed")
                      ->items()
                      .size() == 2);
            CHECK(fam->find("hwmodel")->number_at("kendall").has_value());
            CHECK(fam->find("random")->find("kendall")->number_at("mean").has_value());
            const auto ceil = fam->find("ceiling")->number_at("kendall");
            REQUIRE(ceil.has_value());
            CHECK(*ceil <= 1.0);
            CHECK(fam->find("fraction_of_ceiling_per_seed")->items().size() == 2);
            // The training costs' own labels of the held-out graphs: every training family (and
            // tpu_v3) but never the held-out one; `best` is the largest of them.
            const JsonValue* tc = fam->find("training_costs");
            REQUIRE(tc != nullptr);
            const JsonValue* per_cost = tc->find("per_cost");
            REQUIRE(per_cost != nullptr);
            CHECK(per_cost->find(f) == nullptr);
            CHECK(per_cost->find("tpu_v3") != nullptr);
            double best = -2.0;
            for (const std::string& other : want.families) {
                if (other == f) continue;
                const auto k = per_cost->number_at(other);
                REQUIRE(k.has_value());
                best = std::max(best, *k);
            }
            best = std::max(best, *per_cost->number_at("tpu_v3"));
            CHECK(tc->number_at("best") == doctest::Approx(best));
            CHECK(tc->number_at("mix").has_value());
            CHECK(fam->number_at("best_training_cost_fraction_of_ceiling").has_value());
        }
        CHECK(c->find("fraction_of_ceiling")->find("per_seed")->items().size() == 2);
        CHECK(c->number_at("hwmodel_fraction_of_ceiling").has_value());
        CHECK(c->number_at("best_training_cost_fraction_of_ceiling").has_value());
        CHECK(c->number_at("training_cost_mix_fraction_of_ceiling").has_value());
        CHECK(contains_text(read_file_text(md), std::string("| **") + want.name + "** |"));
    }
}

TEST_CASE(
    "bench_quality.py refuses a huge --seeds or --random-seeds before making its work folder" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_quality_huge_seeds");
    for (const char* args :
         {"--tiny --seeds 99999999999999999999", "--tiny --random-seeds 99999999999999999999"}) {
        const auto r = run_command(bench_cmd(dir / "w", args));
        INFO(args, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, "expected 2 to 1000 (each seed is a run)"));
        CHECK_FALSE(contains_text(r.output, "Traceback"));
        CHECK_FALSE(fs::exists(dir / "w"));
    }
}

}  // namespace segrank::test
