// Leaderboard: truth loading, submission validation (every error with file:line), scores equal to
// hand-computed values, missing-graph policies, agreement with evaluate_graph, table formats.
#include "eval/leaderboard.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "data/graph_store.h"
#include "gnn/core/rng.h"
#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"
#include "util/json.h"
#include "util/json_value.h"

using namespace segrank;
using segrank::test::scratch_dir;

namespace {

const Truth& fixture_truth() {
    static const Truth truth = [] {
        const auto root = test::write_lb_truth(scratch_dir("lb_truth"));
        return load_truth({root}, Split::kValid);
    }();
    return truth;
}

CheckedSubmission check(const std::string& text, MissingPolicy missing = MissingPolicy::kWorst) {
    return check_submission_text(text, "sub.csv", fixture_truth(), missing);
}

// The first issue whose message contains `needle` (or a default Issue with empty where).
Issue find_issue(const CheckedSubmission& s, const std::string& needle) {
    for (const Issue& i : s.issues) {
        if (i.message.find(needle) != std::string::npos) return i;
    }
    return {};
}

std::string all_issues(const CheckedSubmission& s) {
    std::string out;
    for (const Issue& i : s.issues) out += i.to_string() + "\n";
    return out;
}

const CollectionMetrics& coll(const LeaderboardEntry& e, const std::string& name) {
    for (const auto& c : e.collections) {
        if (c.collection == name) return c;
    }
    FAIL("collection ", name, " not scored");
    return e.collections.front();
}

}  // namespace

TEST_CASE("load_truth reads targets as runtime / normalizer for tile and runtime for layout") {
    const Truth& t = fixture_truth();
    REQUIRE(t.collections().size() == 2);
    CHECK(t.collections()[0].name() == "tile:xla");
    CHECK(t.collections()[1].name() == "layout:xla:random");
    const TruthGraph* k1 = t.find("tile:xla:k1");
    REQUIRE(k1 != nullptr);
    CHECK(k1->targets == std::vector<double>{5, 4, 3, 2, 1, 6, 7});
    const TruthGraph* big = t.find("layout:xla:random:big");
    REQUIRE(big != nullptr);
    CHECK(big->targets.size() == 1001);
    CHECK(big->targets[1000] == 4000.0);
    CHECK(t.collection_size(0) == 2);
    CHECK(t.find("tile:xla:nope") == nullptr);
}

TEST_CASE("scores of two submissions equal the hand-computed values and rank B first") {
    const Truth& t = fixture_truth();
    std::vector<LeaderboardEntry> entries;
    for (const auto& [name, text] : {std::pair{"a.csv", test::lb_submission_a()},
                                     std::pair{"b.csv", test::lb_submission_b()}}) {
        const CheckedSubmission s = check_submission_text(text, name, t, MissingPolicy::kWorst);
        INFO(all_issues(s));
        CHECK(s.valid());
        CHECK(s.issues.empty());
        entries.push_back(score_submission(s, t, MissingPolicy::kWorst));
    }
    const LeaderboardEntry& a = entries[0];
    const LeaderboardEntry& b = entries[1];
    CHECK(coll(a, "tile:xla").score == doctest::Approx(test::lb_tile_a()).epsilon(1e-12));
    CHECK(coll(a, "tile:xla").slowdown_5 == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(coll(a, "layout:xla:random").score ==
          doctest::Approx(test::lb_layout_a()).epsilon(1e-12));
    CHECK(a.overall ==
          doctest::Approx((test::lb_tile_a() + test::lb_layout_a()) / 2).epsilon(1e-12));
    CHECK(coll(b, "tile:xla").score == doctest::Approx(test::lb_tile_b()).epsilon(1e-12));
    CHECK(coll(b, "layout:xla:random").score ==
          doctest::Approx(test::lb_layout_b()).epsilon(1e-12));
    CHECK(a.graphs_scored == 4);
    CHECK(a.graphs_missing == 0);
    // Tile rows carry 5 configs: tau, OPA and slowdown@10 are not defined for them.
    CHECK(std::isnan(coll(a, "tile:xla").kendall_tau));
    CHECK(std::isnan(coll(a, "tile:xla").slowdown_10));
    rank_entries(entries);
    CHECK(entries[0].name == "b");
    CHECK(entries[0].rank == 1);
    CHECK(entries[1].name == "a");
    CHECK(entries[1].rank == 2);
}

TEST_CASE("tile slowdown uses runtime / normalizer, ties in layout runtimes follow tau-b") {
    const Truth& t = fixture_truth();
    // By raw runtime, config 3 (40) would not be the second best; by target (2) it is.
    auto s = check(
        "ID,TopConfigs\ntile:xla:k1,3;0;1;2;5\ntile:xla:k2,1;0;2\n"
        "layout:xla:random:g1,3;1;2;0\nlayout:xla:random:big," +
        test::lb_sequence(1001, true) + "\n");
    REQUIRE(s.valid());
    const LeaderboardEntry e = score_submission(s, t, MissingPolicy::kWorst);
    // k1: min target among listed = 2, best 1 -> slowdown 1; k2: 0 -> tile = 1 - 0.5.
    CHECK(coll(e, "tile:xla").score == doctest::Approx(0.5).epsilon(1e-12));
    // slowdown@1: k1 lists config 3 first (target 2: (2 - 1) / 1 = 1), k2 its best -> mean 0.5.
    CHECK(coll(e, "tile:xla").slowdown_1 == doctest::Approx(0.5).epsilon(1e-12));
    // g1 "3;1;2;0" orders the tied pair (1, 3) either way: still 5 concordant, 1 tie -> 5/sqrt(30).
    CHECK(coll(e, "layout:xla:random").score ==
          doctest::Approx((5.0 / std::sqrt(30.0) + 1.0) / 2).epsilon(1e-12));
}

TEST_CASE("a tile graph with fewer than 5 configs needs all of them and scores slowdown 0") {
    auto s = check("ID,TopConfigs\ntile:xla:k2,2;1\n", MissingPolicy::kSkip);
    CHECK_FALSE(s.valid());
    const Issue i = find_issue(s, "tile row lists 2 valid config(s), expected min(5, c) = 3");
    CHECK(i.where == "sub.csv:2");
    auto ok = check("ID,TopConfigs\ntile:xla:k2,0;2;1\n", MissingPolicy::kSkip);
    REQUIRE(ok.valid());
    const LeaderboardEntry e = score_submission(ok, fixture_truth(), MissingPolicy::kSkip);
    CHECK(coll(e, "tile:xla").score == 1.0);
    CHECK(e.collections.size() == 1);  // layout had no rows and is skipped
    CHECK(e.graphs_missing == 3);
}

TEST_CASE(
    "missing graphs: worst scores them as the worst submission, skip leaves them out, error "
    "invalidates") {
    const Truth& t = fixture_truth();
    const auto worst = check(test::lb_submission_c(), MissingPolicy::kWorst);
    INFO(all_issues(worst));
    REQUIRE(worst.valid());
    const Issue w = find_issue(worst, "have no row");
    CHECK(w.severity == Severity::kWarning);
    CHECK(w.message.find("tile:xla:k1") != std::string::npos);
    CHECK(find_issue(worst, "layout:nlp:default ignored").severity == Severity::kWarning);
    const LeaderboardEntry ew = score_submission(worst, t, MissingPolicy::kWorst);
    CHECK(coll(ew, "tile:xla").score == doctest::Approx(0.0).epsilon(1e-12));
    CHECK(coll(ew, "layout:xla:random").score ==
          doctest::Approx((5.0 / std::sqrt(30.0) - 1.0) / 2).epsilon(1e-12));
    CHECK(ew.graphs_scored == 2);
    CHECK(ew.graphs_missing == 2);

    const auto skip = check(test::lb_submission_c(), MissingPolicy::kSkip);
    const LeaderboardEntry es = score_submission(skip, t, MissingPolicy::kSkip);
    CHECK(coll(es, "tile:xla").score == 1.0);
    CHECK(coll(es, "layout:xla:random").score ==
          doctest::Approx(5.0 / std::sqrt(30.0)).epsilon(1e-12));
    CHECK(coll(es, "layout:xla:random").num_graphs == 1);

    const auto err = check(test::lb_submission_c(), MissingPolicy::kError);
    CHECK_FALSE(err.valid());
    CHECK(find_issue(err, "have no row").where == "sub.csv");
    const LeaderboardEntry ee = score_submission(err, t, MissingPolicy::kError);
    CHECK_FALSE(ee.valid);
    CHECK(ee.collections.empty());
}

TEST_CASE("every validation error names file:line") {
    struct Case {
        std::string text;
        std::string needle;
        std::string where;
    };
    const Case cases[] = {
        {"Id,TopConfigs\n", "header is 'Id,TopConfigs', expected 'ID,TopConfigs'", "sub.csv:1"},
        {"", "empty file", "sub.csv:1"},
        {"ID,TopConfigs\ntile:xla:k1,0;1;2;3;4\ntile:xla:k1,0;1;2;3;4\n",
         "duplicate ID 'tile:xla:k1' (first at sub.csv:2)", "sub.csv:3"},
        {"ID,TopConfigs\ntile:xla:k2,0;1;2\ntile:xla:nosuch,0;1;2;3;4\n",
         "unknown graph 'tile:xla:nosuch'", "sub.csv:3"},
        {"ID,TopConfigs\nbogus:k1,0\n", "malformed ID 'bogus:k1'", "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:,0\n", "malformed ID 'tile:xla:'", "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:k1\n", "expected 2 fields 'ID,TopConfigs', found 1", "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:k1,0;1,2\n", "found 3", "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:k1,0;x;2;3;4\n", "not a non-negative integer: 'x' (entry 2)",
         "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:k1,0;-1;2;3;4\n", "not a non-negative integer: '-1' (entry 2)",
         "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:k1,\n", "TopConfigs is empty", "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:k1,0;1;2;3;7\n", "out of range [0, 7): 7 (entry 5)", "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:k1,0;1;2;1;4\n", "repeated: 1 (entries 2 and 4)", "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:k1,0;1;2\n",
         "tile row lists 3 valid config(s), expected min(5, c) = 5", "sub.csv:2"},
        {"ID,TopConfigs\nlayout:xla:random:g1,1;3;2\n",
         "not a permutation of 0..3: lists 3 distinct valid config(s) of 4; absent: 0",
         "sub.csv:2"},
        {"ID,TopConfigs\nlayout:xla:random:g1,1;3;2;3\n", "repeated: 3 (entries 2 and 4)",
         "sub.csv:2"},
        {"ID,TopConfigs\ntile:xla:k2,0;1;2\n\nlayout:xla:random:g1,0;1;2;4\n",
         "out of range [0, 4): 4", "sub.csv:4"},
    };
    for (const Case& c : cases) {
        const auto s = check(c.text, MissingPolicy::kSkip);
        INFO(c.text);
        INFO(all_issues(s));
        CHECK_FALSE(s.valid());
        const Issue i = find_issue(s, c.needle);
        CHECK(i.where == c.where);
        CHECK(i.severity == Severity::kError);
    }
}

TEST_CASE("all problems of a file are reported, not only the first, warnings keep it valid") {
    const auto s = check(
        "ID,TopConfigs\r\ntile:xla:k1,0;1;2;3;4;5\r\ntile:xla:k2,0;1;9\r\n"
        "layout:xla:random:g1,0;0;1;2\r\nnope\r\n",
        MissingPolicy::kSkip);
    INFO(all_issues(s));
    CHECK(find_issue(s, "only the first 5 count").where == "sub.csv:2");
    CHECK(find_issue(s, "only the first 5 count").severity == Severity::kWarning);
    CHECK(find_issue(s, "out of range [0, 3): 9").where == "sub.csv:3");
    CHECK(find_issue(s, "repeated: 0").where == "sub.csv:4");
    CHECK(find_issue(s, "expected 2 fields").where == "sub.csv:5");
    const auto w = check("\xEF\xBB\xBFID,TopConfigs\ntile:xla:k1,0;1;2;3;4;5\ntile:xla:k2,0;1;2\n",
                         MissingPolicy::kSkip);
    CHECK(w.valid());
    REQUIRE(w.rows.size() == 2);
    CHECK(w.rows[0].top_configs.size() == 5);  // truncated to the 5 that count
    CHECK(w.rows[0].where == "sub.csv:2");
}

TEST_CASE("an unreadable submission file is one error naming the file") {
    const auto s = check_submission(scratch_dir("lb_none") / "absent.csv", fixture_truth(),
                                    MissingPolicy::kWorst);
    CHECK_FALSE(s.valid());
    REQUIRE(s.issues.size() == 1);
    CHECK(s.issues[0].message == "no such file (expected a submission CSV file (ID,TopConfigs))");
    CHECK(s.name == "absent");
}

TEST_CASE("a submission file over the size bound is one error naming its size, not read" *
          doctest::test_suite("hostile")) {
    const auto path = scratch_dir("lb_huge") / "huge.csv";
    { std::ofstream(path) << "ID,TopConfigs\n"; }
    std::filesystem::resize_file(path, (uint64_t{1} << 30) + 1);  // sparse
    const auto s = check_submission(path, fixture_truth(), MissingPolicy::kWorst);
    CHECK_FALSE(s.valid());
    REQUIRE(s.issues.size() == 1);
    CHECK(s.issues[0].where == path.string());
    CHECK(s.issues[0].message ==
          "1073741825 bytes (1024.0 MiB), more than the 1073741824 bytes (1024.0 MiB) allowed for "
          "a submission CSV file (ID,TopConfigs)");
}

namespace {

// Model scores -> top_configs submission -> leaderboard, against evaluate_graph on the scores.
void check_leaderboard_equals_evaluate(bool tied) {
    CAPTURE(tied);
    const Truth& t = fixture_truth();
    Rng rng(42);
    std::vector<SubmissionRow> rows;
    std::map<std::string, std::vector<float>> model;
    for (const TruthGraph& g : t.graphs()) {
        std::vector<float> s(g.targets.size());
        // Continuous scores (no ties) or 3 distinct values (many ties: the tie policy decides).
        for (auto& v : s)
            v = tied ? static_cast<float>(rng.uniform_int(3)) : static_cast<float>(rng.normal());
        std::vector<double> sd(s.begin(), s.end());
        const Task task = t.collections()[g.collection].task;
        rows.push_back({g.id, top_configs(sd, task), ""});
        model[g.id] = s;
    }
    std::string text = "ID,TopConfigs\n";
    for (const auto& r : rows) {
        text += r.id + ",";
        for (size_t i = 0; i < r.top_configs.size(); ++i) {
            if (i) text += ';';
            text += std::to_string(r.top_configs[i]);
        }
        text += "\n";
    }
    const auto sub = check(text);
    REQUIRE(sub.valid());
    const LeaderboardEntry e = score_submission(sub, t, MissingPolicy::kWorst);
    std::vector<CollectionMetrics> expected;
    for (size_t ci = 0; ci < t.collections().size(); ++ci) {
        std::vector<GraphMetrics> gm;
        for (const TruthGraph& g : t.graphs()) {
            if (g.collection == ci) gm.push_back(evaluate_graph(g.id, model[g.id], g.targets));
        }
        expected.push_back(
            aggregate_collection(t.collections()[ci].name(), t.collections()[ci].task, gm));
    }
    REQUIRE(e.collections.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        CHECK(e.collections[i].score == expected[i].score);  // exactly
        CHECK(e.collections[i].slowdown_5 == expected[i].slowdown_5);
        CHECK(e.collections[i].slowdown_1 == expected[i].slowdown_1);
        if (expected[i].task == Task::kLayout) {
            CHECK(e.collections[i].kendall_tau == expected[i].kendall_tau);
            CHECK(e.collections[i].opa == expected[i].opa);
            // Raw-score tau-b counts the ties the submission broke: it differs when there are ties.
            if (tied) CHECK(expected[i].kendall_raw != expected[i].kendall_tau);
        }
    }
    CHECK(e.overall == overall_score(expected));
}

}  // namespace

TEST_CASE(
    "leaderboard scores equal evaluate_graph on the model scores that produced the submission") {
    check_leaderboard_equals_evaluate(false);
}

TEST_CASE(
    "leaderboard equals evaluate_graph also when the model's scores tie (ties broken by config "
    "index)") {
    check_leaderboard_equals_evaluate(true);
}

TEST_CASE("a missing graph with tied runtimes scores as the worst permutation, not -1") {
    // Only big and the tile graphs listed; g1 (runtimes 40 10 30 10, configs 1 and 3 tie) is
    // missing. Slowest first: 0, 2, then 1 and 3 in index order -> 5 discordant pairs, 1 tied in
    // runtime: tau-b = -5 / sqrt(6 * 5); no permutation can reach -1.
    const auto s =
        check("ID,TopConfigs\ntile:xla:k1,4;3;2;1;0\ntile:xla:k2,1;2;0\nlayout:xla:random:big," +
              test::lb_sequence(1001, true) + "\n");
    REQUIRE(s.valid());
    const LeaderboardEntry e = score_submission(s, fixture_truth(), MissingPolicy::kWorst);
    CHECK(e.graphs_missing == 1);
    CHECK(coll(e, "layout:xla:random").score ==
          doctest::Approx((1.0 - 5.0 / std::sqrt(30.0)) / 2).epsilon(1e-12));
}

TEST_CASE("worst_scores lists the slowest config first and gives equal targets equal scores") {
    const std::vector<double> targets = {3, 9, 3, 1};
    // Slowest first: 9 at position 0, the two 3s share position 1, 1 at position 3.
    CHECK(worst_scores(targets) == std::vector<float>{1, 0, 1, 3});
    CHECK(kendall_tau_b(std::vector<double>{1, 0, 1, 3}, targets) == doctest::Approx(-1.0));
    CHECK(submission_scores(std::vector<int64_t>{3, 1, 0, 2, 5, 4}, 7, Task::kTile) ==
          std::vector<float>{2, 1, 3, 0, 5, 4, 5});
}

TEST_CASE(
    "a test split without runtimes is refused with a clear error, a wrong split lists what "
    "exists") {
    const auto root = scratch_dir("lb_test_split");
    const auto dir = root / "npz/tile/xla/test";
    std::filesystem::create_directories(dir);
    save_tile_npz(test::lb_tile("t0", {0, 0, 0}, {1, 1, 1}), dir / "t0.npz");
    CHECK_THROWS_WITH_AS(
        load_truth({root}, Split::kTest),
        doctest::Contains(
            "config_runtime is all 0 in tile:xla:test: this split carries no runtimes"),
        Error);
    CHECK_THROWS_WITH_AS(
        load_truth({root}, Split::kValid),
        doctest::Contains("no collection of split 'valid' found (found tile:xla:test)"), Error);
}

TEST_CASE("truth from an HDF5 store gives the same scores as the npz truth") {
    const auto root = test::write_lb_truth(scratch_dir("lb_store_src"));
    const auto h5 = scratch_dir("lb_store") / "layout_xla_random_valid.h5";
    {
        const CollectionId id{Task::kLayout, Source::kXla, Search::kRandom, Split::kValid};
        GraphStoreWriter w(h5, id, root);
        w.add(load_layout_npz(root / "npz/layout/xla/random/valid/big.npz",
                              LabelPolicy::kRequirePositive));
        w.add(load_layout_npz(root / "npz/layout/xla/random/valid/g1.npz",
                              LabelPolicy::kRequirePositive));
        w.finish();
    }
    const Truth t = load_truth({h5}, Split::kValid);
    REQUIRE(t.collections().size() == 1);
    const auto s =
        check_submission_text(test::lb_submission_a(), "a.csv", t, MissingPolicy::kWorst);
    INFO(all_issues(s));
    CHECK(s.valid());
    CHECK(find_issue(s, "tile:xla ignored").severity == Severity::kWarning);
    const LeaderboardEntry e = score_submission(s, t, MissingPolicy::kWorst);
    CHECK(e.overall == doctest::Approx(test::lb_layout_a()).epsilon(1e-12));
    CHECK_THROWS_WITH_AS(load_truth({h5, h5}, Split::kValid), doctest::Contains("given twice"),
                         Error);
}

TEST_CASE(
    "tables: text, Markdown and CSV list rank, name, scores, blanks for absent collections, JSON "
    "parses") {
    const Truth& t = fixture_truth();
    std::vector<LeaderboardEntry> entries;
    entries.push_back(score_submission(
        check_submission_text(test::lb_submission_a(), "dir/a.csv", t, MissingPolicy::kWorst), t,
        MissingPolicy::kWorst));
    entries.push_back(score_submission(
        check_submission_text("ID,TopConfigs\nx\n", "bad.csv", t, MissingPolicy::kWorst), t,
        MissingPolicy::kWorst));
    entries.push_back(score_submission(
        check_submission_text(test::lb_submission_b(), "b.csv", t, MissingPolicy::kWorst), t,
        MissingPolicy::kWorst));
    rank_entries(entries);
    const std::string csv = format_leaderboard_csv(entries);
    CHECK(csv.rfind(
              "rank,name,overall,tile:xla,layout:xla:default,layout:xla:random,layout:nlp:default,"
              "layout:nlp:random,graphs,missing,status\n",
              0) == 0);
    CHECK(csv.find("\n1,b," + format_number(entries[0].overall) + ",1.0,,") !=
          std::string::npos);  // tile score 1
    CHECK(csv.find("\n2,a,") != std::string::npos);
    CHECK(csv.find("\n,bad,,,,,,,,,invalid (") != std::string::npos);
    const std::string md = format_leaderboard_markdown(entries);
    CHECK(md.find("| rank | name | overall | tile:xla |") == 0);
    CHECK(md.find("| 1 | b | ") != std::string::npos);
    const std::string text = format_leaderboard_text(entries);
    CHECK(text.find("invalid (") != std::string::npos);
    const JsonValue j =
        parse_json(format_leaderboard_json(entries, Split::kValid, MissingPolicy::kWorst), "json");
    const auto& items = j.find("entries")->items();
    REQUIRE(items.size() == 3);
    CHECK(items[0].string_at("name") == std::optional<std::string>("b"));
    CHECK(*items[0].number_at("overall") == entries[0].overall);  // round-trip precision
    CHECK(items[2].find("valid")->as_bool() == false);
    CHECK(items[2].find("issues")->items().size() >= 1);
}

TEST_CASE("parse_missing_policy lists the valid names") {
    CHECK(parse_missing_policy("skip") == MissingPolicy::kSkip);
    CHECK_THROWS_WITH_AS(parse_missing_policy("zero"),
                         doctest::Contains("expected worst, skip or error"), Error);
}
