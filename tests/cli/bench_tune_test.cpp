// scripts/bench_tune.py end to end at its --tiny size: argument errors, a failing segrank run
// (named case and command, no JSON written), the synthetic recorded-pool and search-mode cases,
// and the real tile kernels tuned by the models of the folds that held them out.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "util/json_value.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

std::string bench_cmd(const fs::path& work, const std::string& extra) {
    std::string cmd = "/usr/bin/python3 ";
    cmd += sq((source_dir() / "scripts" / "bench_tune.py").string());
    cmd += " --segrank " + sq(segrank_binary().string()) + " --work " + sq(work.string()) + " " +
           extra;
    return cmd;
}

// Runs the benchmark with stdout to DIR/stdout.json and stderr to DIR/stderr.txt.
CommandResult run_bench(const fs::path& dir, const std::string& extra) {
    std::string cmd = "(";  // built with += : GCC 12 -Wrestrict false positive on "(" + std::string
    cmd += bench_cmd(dir / "w", extra);
    cmd += " > " + sq((dir / "stdout.json").string()) + " 2> " + sq((dir / "stderr.txt").string()) +
           ")";
    return run_command(cmd);
}

const JsonValue& strategy(const JsonValue& c, const char* name) {
    const JsonValue* s = c.find("strategies")->find(name);
    REQUIRE(s != nullptr);
    return *s;
}

double at(const JsonValue& s, const char* metric, const char* n) {
    const auto v = s.find(metric)->find(n)->number_at("mean");
    REQUIRE(v.has_value());
    return *v;
}

}  // namespace

TEST_CASE("bench_tune.py refuses bad arguments with exit 2 and a message") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_tune_args");
    struct Bad {
        std::string args, message;
    };
    const Bad cases[] = {
        {"--seeds 1", "--seeds must be >= 2"},
        {"--seeds 99999999999999999999",
         "--seeds: expected 2 to 1000 (each seed is a run), got 99999999999999999999"},
        {"--tiny --random-seeds 1001", "--random-seeds: expected 2 to 1000"},
        {"--random-seeds 1", "--random-seeds must be >= 2"},
        {"--cases synth_tile,nope", "unknown case(s) nope"},
        {"--cases synth_tile,synth_tile", "listed twice"},
        {"--quick --tiny", "exclude each other"},
        {"--jobs -1", "--jobs must be >= 0"},
        {"--batch 0", "--batch: expected 1 to 9223372036854775807 (segrank tune --batch), got 0"},
        {"--batch grow:1",
         "--batch: expected a count 1 to 9223372036854775807, grow or grow:CAP (CAP 2 to "
         "9223372036854775807) (segrank tune --batch), got 'grow:1'"},
        {"--batch auto",
         "grow or grow:CAP (CAP 2 to 9223372036854775807) (segrank tune --batch), "
         "got 'auto'"},
        {"--models /nonexistent/work", "--models: '/nonexistent/work' is not a directory"},
    };
    for (const Bad& b : cases) {
        const auto r = run_command(bench_cmd(dir, b.args));
        INFO(b.args, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, b.message));
    }
    std::string nobin = "/usr/bin/python3 ";
    nobin += sq((source_dir() / "scripts" / "bench_tune.py").string()) +
             " --segrank /nonexistent/segrank";
    const auto r = run_command(nobin);
    CHECK(r.exit_code == 2);
    CHECK(contains_text(r.output, "/nonexistent/segrank"));
}

TEST_CASE("bench_tune.py's random baseline equals the brute-force mean over every draw") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    // E[best of n draws without replacement] and E[draws to the first config <= target], against
    // the means over every subset / permutation of a small pool with ties.
    std::string cmd = "cd ";
    cmd += sq((source_dir() / "scripts").string());
    cmd +=
        " && /usr/bin/python3 -c 'import itertools as it, statistics as st\n"
        "from bench_tune import random_expected_curve as c, random_expected_hits as h\n"
        "v = [5, 3, 3, 9, 1, 7, 1]\n"
        "for n in range(1, 8):\n"
        "    bf = st.fmean(min(x) for x in it.combinations(v, n))\n"
        "    assert abs(bf - c(v, n)[-1]) < 1e-12, (n, bf)\n"
        "for t in (1, 3, 6):\n"
        "    bf = st.fmean(next(i + 1 for i, x in enumerate(p) if x <= t) "
        "for p in it.permutations(v))\n"
        "    assert abs(bf - h(v, t)) < 1e-12, (t, bf)\n"
        "print(\"closed forms ok\")'";
    const auto r = run_command(cmd);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains_text(r.output, "closed forms ok"));
}

TEST_CASE("bench_tune.py: a failing segrank run names the case and command, writes no JSON") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_tune_fail");
    const fs::path json = dir / "out.json";
    fs::create_directories(dir / "no_data");
    const auto r =
        run_bench(dir,
                  "--tiny --cases real_tile --seeds 2 --random-seeds 2 "
                  "--shared-data " +
                      sq((dir / "no_data").string()) + " --json-out " + sq(json.string()));
    const std::string err = read_file_text(dir / "stderr.txt");
    INFO(err);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(err, "case real_tile ingest: segrank failed (exit 1)"));
    CHECK(contains_text(err, "command: "));
    CHECK(contains_text(err, "op_tuning_data.pb"));  // segrank's own message, from its stderr
    CHECK(contains_text(err, "no JSON written"));
    CHECK_FALSE(fs::exists(json));
}

TEST_CASE(
    "bench_tune.py --tiny tunes synthetic recorded pools and searches under an unseen cost "
    "family, with every strategy's curves") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_tune_tiny");
    const fs::path json = dir / "result.json", md = dir / "table.md";
    const auto r = run_bench(dir,
                             "--tiny --cases synth_tile,search_tile,search_layout --seeds 2 "
                             "--random-seeds 2 --json-out " +
                                 sq(json.string()) + " --markdown " + sq(md.string()));
    INFO(read_file_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    const std::string text = read_file_text(dir / "stdout.json");
    CHECK(text == read_file_text(json));
    const JsonValue doc = parse_json(text, json.string());
    CHECK(doc.string_at("mode") == "tiny");
    const JsonValue* synth = doc.find("cases")->find("synth_tile");
    REQUIRE(synth != nullptr);
    for (const char* name : {"default", "random", "hwmodel", "model_oneshot", "model_refit"}) {
        INFO(name);
        const JsonValue& s = strategy(*synth, name);
        // Best found never improves with fewer measurements; the best known bounds it.
        CHECK(at(s, "slowdown_pct", "1") >= at(s, "slowdown_pct", "10") - 1e-9);
        CHECK(at(s, "slowdown_pct", "10") >= -1e-9);
        CHECK(s.find("n_within_1pct")->number_at("mean").has_value());
    }
    CHECK(at(strategy(*synth, "default"), "speedup", "10") == doctest::Approx(1.0));
    // tune measures the default first: one measurement is the default.
    CHECK(at(strategy(*synth, "model_refit"), "speedup", "1") == doctest::Approx(1.0));
    CHECK(strategy(*synth, "model_refit").number_at("runs") == 2.0);
    CHECK(strategy(*synth, "random").number_at("runs") == 1.0);  // closed form
    // The +default orders measure the default first, so they never fall below it.
    for (const char* name : {"random+default", "hwmodel+default", "model_oneshot+default"}) {
        INFO(name);
        CHECK(at(strategy(*synth, name), "speedup", "1") == doctest::Approx(1.0));
        CHECK(at(strategy(*synth, name), "speedup", "10") >= 1.0);
    }
    for (const char* name : {"search_tile", "search_layout"}) {
        INFO(name);
        const JsonValue* c = doc.find("cases")->find(name);
        REQUIRE(c != nullptr);
        CHECK(strategy(*c, "anneal").number_at("runs") == 2.0);
        CHECK(strategy(*c, "random").number_at("runs") == 2.0);
        CHECK(strategy(*c, "model_refit").number_at("runs") == 2.0);
        // Every run measures the default first: speedup 1 at n = 1, never below it later.
        CHECK(at(strategy(*c, "anneal"), "speedup", "1") == doctest::Approx(1.0));
        CHECK(at(strategy(*c, "model_norefit"), "speedup", "10") >= 1.0);
        CHECK(c->number_at("graphs_with_speedup").has_value());
    }
    CHECK(doc.find("cases")->find("search_tile")->string_at("measure") == "hwmodel:pipeline");
    CHECK(doc.find("cases")->find("search_layout")->string_at("measure") == "hwmodel:propagate");
    const std::string table = read_file_text(md);
    CHECK(contains_text(table, "### search_layout (2 graphs, measured by hwmodel:propagate)"));
    CHECK(contains_text(table, "| model_refit |"));
}

TEST_CASE(
    "bench_tune.py --batch grow:3 passes the growing rounds to every tuning strategy and records "
    "them in settings, and --models tunes with an earlier run's models without training") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_tune_grow");
    const fs::path json = dir / "result.json";
    const auto r = run_bench(dir,
                             "--tiny --cases search_layout --seeds 2 --random-seeds 2 --jobs 2 "
                             "--batch grow:3 --json-out " +
                                 sq(json.string()));
    INFO(read_file_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    const JsonValue doc = parse_json(read_file_text(json), json.string());
    CHECK(doc.find("settings")->string_at("batch") == "grow:3");
    // Every segrank tune run (model, random, anneal) was given the schedule.
    const std::string log = read_file_text(dir / "w" / "commands.log");
    size_t tunes = 0, grow = 0;
    for (size_t at = log.find(" tune "); at != std::string::npos; at = log.find(" tune ", at + 1)) {
        const size_t end = log.find('\n', at);
        ++tunes;
        grow += log.substr(at, end - at).find("--batch grow:3") != std::string::npos;
    }
    CHECK(tunes >= 8);  // 2 graphs x (2 model seeds x 2 + 2 search seeds x 2)
    CHECK(grow == tunes);

    // --models: a second run tunes with the first run's models and trains none.
    const fs::path again = dir / "again";
    fs::create_directories(again);
    const auto r2 = run_bench(again,
                              "--tiny --cases search_layout --seeds 2 --random-seeds 2 --jobs 2 "
                              "--batch grow:3 --models " +
                                  sq((dir / "w").string()));
    INFO(read_file_text(again / "stderr.txt"));
    REQUIRE(r2.exit_code == 0);
    const std::string log2 = read_file_text(again / "w" / "commands.log");
    CHECK(log2.find(" train ") == std::string::npos);
    CHECK(contains_text(log2, " tune "));
    CHECK(contains_text(log2,
                        (dir / "w" / "synth_layout" / "runs" / "seed1" / "best.ckpt.h5").string()));
    // Models of fewer seeds than --seeds asks for: exit 1 naming the missing one, no JSON.
    const fs::path fewer = dir / "fewer";
    fs::create_directories(fewer);
    const auto r3 = run_bench(fewer,
                              "--tiny --cases search_layout --seeds 3 --random-seeds 2 "
                              "--models " +
                                  sq((dir / "w").string()));
    CHECK(r3.exit_code == 1);
    const std::string err3 = read_file_text(fewer / "stderr.txt");
    CHECK(contains_text(
        err3, "--models: no " + (dir / "w" / "synth_layout" / "runs" / "seed2").string()));
    CHECK(contains_text(err3, "no JSON written"));
}

TEST_CASE(
    "bench_tune.py --tiny tunes real tile kernels and the U-Net's held-out layout configs with "
    "the models that held them out") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    SEGRANK_REQUIRE_SHARED_DATA(shared);
    const fs::path dir = scratch_dir("bench_tune_tiny_real");
    const auto r = run_bench(dir,
                             "--tiny --cases real_tile,real_layout --seeds 2 --random-seeds 2 "
                             "--shared-data " +
                                 sq(shared.string()));
    INFO(read_file_text(dir / "stderr.txt"));
    REQUIRE(r.exit_code == 0);
    const JsonValue doc =
        parse_json(read_file_text(dir / "stdout.json"), (dir / "stdout.json").string());
    const JsonValue* c = doc.find("cases")->find("real_tile");
    REQUIRE(c != nullptr);
    CHECK(c->find("graphs")->members().size() == 3);
    for (const auto& [name, g] : c->find("graphs")->members()) {
        INFO(name);
        // Recorded pools: the best known is the pool's best runtime, the default one of its
        // configs.
        const auto best = g.number_at("best_known_ns"), def = g.number_at("default_ns");
        REQUIRE(best.has_value());
        REQUIRE(def.has_value());
        CHECK(*best <= *def);
    }
    CHECK(at(strategy(*c, "hwmodel"), "slowdown_pct", "10") >= 0.0);
    CHECK(strategy(*c, "model_oneshot").number_at("runs") == 2.0);
    CHECK(strategy(*c, "model_refit").number_at("runs") == 2.0);
    const JsonValue* lay = doc.find("cases")->find("real_layout");
    REQUIRE(lay != nullptr);
    CHECK(lay->find("graphs")->members().size() == 5);  // one pool per fold
    CHECK(strategy(*lay, "model_oneshot").number_at("runs") == 2.0);
    CHECK(strategy(*lay, "model_oneshot").find("n_to_best")->number_at("mean").has_value());
}

TEST_CASE("bench_tune.py refuses a huge --seeds or --random-seeds before making its work folder" *
          doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_tune_huge_seeds");
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

TEST_CASE(
    "bench_tune.py refuses a --batch beyond segrank tune's range before making its work "
    "folder" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_tune_huge_batch");
    const auto r = run_command(bench_cmd(dir / "w", "--tiny --batch 99999999999999999999"));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains_text(r.output,
                        "--batch: expected 1 to 9223372036854775807 (segrank tune "
                        "--batch), got 99999999999999999999"));
    CHECK_FALSE(contains_text(r.output, "Traceback"));
    CHECK_FALSE(fs::exists(dir / "w"));
}

}  // namespace segrank::test
