// Ranking metrics: Kendall tau-b against scipy-semantics values computed once in Python (O(n^2)
// pair enumeration, /usr/bin/python3; scipy itself is not installed) and against an independent
// O(n^2) tau-b here on random vectors with ties; OPA, slowdown@K, aggregation, eval.indices JSON.
#include "eval/metrics.h"

#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <vector>

#include "eval/submission.h"
#include "gnn/core/rng.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

// Independent O(n^2) tau-b: sum of sign products over pairs, ties counted per vector.
double naive_tau_b(const std::vector<double>& x, const std::vector<double>& y) {
    const size_t n = x.size();
    double s = 0, tx = 0, ty = 0;
    const double tot = static_cast<double>(n) * static_cast<double>(n - 1) / 2;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) {
            const int a = (x[i] > x[j]) - (x[i] < x[j]);
            const int b = (y[i] > y[j]) - (y[i] < y[j]);
            s += a * b;
            tx += x[i] == x[j];
            ty += y[i] == y[j];
        }
    if (tx == tot || ty == tot) return std::nan("");
    return s / std::sqrt(tot - tx) / std::sqrt(tot - ty);
}

double naive_opa(const std::vector<double>& s, const std::vector<double>& t) {
    double num = 0, den = 0;
    for (size_t i = 0; i < s.size(); ++i)
        for (size_t j = 0; j < s.size(); ++j)
            if (t[i] > t[j]) {
                den += 1;
                num += s[i] > s[j];
            }
    return num / den;
}

}  // namespace

TEST_CASE("kendall tau-b equals the Python reference values with and without ties") {
    // Values printed by an O(n^2) tau-b in Python (same formula as scipy.stats.kendalltau, 'b').
    struct Case {
        std::vector<double> x, y;
        double tau, opa;
    };
    const std::vector<Case> cases = {
        {{0.3, -1.2, 2.5, 0.7, 1.1, -0.4, 3.3, 0.0},
         {5, 1, 7, 2, 6, 3, 8, 4},
         0.7857142857142856,
         0.8928571428571429},
        {{0.1, 0.4, 0.35, 0.8, 0.2, 0.9, 0.5}, {2, 3, 3, 5, 2, 5, 3}, 0.8728715609439696, 1.0},
        {{1, 2, 2, 3, 3, 3, 4, 1, 2},
         {10, 20, 20, 20, 30, 30, 40, 20, 10},
         0.7369555266607762,
         0.7857142857142857},
        {{9, 8, 8, 7, 6, 5, 5}, {1, 2, 3, 3, 4, 5, 6}, -0.9233805168766385, 0.0},
    };
    for (const Case& c : cases) {
        CHECK(kendall_tau_b(c.x, c.y) == doctest::Approx(c.tau).epsilon(1e-12));
        CHECK(ordered_pair_accuracy(c.x, c.y) == doctest::Approx(c.opa).epsilon(1e-12));
    }
}

TEST_CASE("kendall tau-b matches an O(n^2) tau-b on random vectors with many ties") {
    Rng rng(7);
    for (int trial = 0; trial < 40; ++trial) {
        const size_t n = 2 + rng.uniform_int(300);
        const uint64_t levels_x = 1 + rng.uniform_int(trial % 2 ? 5 : 1000);
        const uint64_t levels_y = 1 + rng.uniform_int(trial % 3 ? 7 : 1000);
        std::vector<double> x(n), y(n);
        for (size_t i = 0; i < n; ++i) {
            x[i] = static_cast<double>(rng.uniform_int(levels_x));
            y[i] = static_cast<double>(rng.uniform_int(levels_y)) * 0.5 + 0.25 * x[i];
        }
        const double want = naive_tau_b(x, y);
        const double got = kendall_tau_b(x, y);
        if (std::isnan(want)) {
            CHECK(std::isnan(got));
        } else {
            CHECK(std::fabs(got - want) <= 1e-9);
        }
        bool y_varies = false;
        for (double v : y) y_varies |= v != y[0];
        if (y_varies) CHECK(std::fabs(ordered_pair_accuracy(x, y) - naive_opa(x, y)) <= 1e-12);
    }
}

TEST_CASE("kendall tau-b is +1 for the same order, -1 reversed, NaN when degenerate") {
    std::vector<double> a = {1, 2, 3, 4, 5};
    std::vector<double> r = {50, 40, 30, 20, 10};
    std::vector<double> c = {3, 3, 3, 3, 3};
    CHECK(kendall_tau_b(a, a) == doctest::Approx(1.0).epsilon(1e-15));
    CHECK(kendall_tau_b(a, r) == doctest::Approx(-1.0).epsilon(1e-15));
    CHECK(std::isnan(kendall_tau_b(a, c)));
    CHECK(std::isnan(kendall_tau_b(c, a)));
    CHECK(std::isnan(kendall_tau_b(std::vector<double>{1.0}, std::vector<double>{2.0})));
    CHECK(std::isnan(
        kendall_tau_b(std::vector<double>{1.0, std::nan("")}, std::vector<double>{1, 2})));
    CHECK_THROWS_AS(kendall_tau_b(a, std::vector<double>{1, 2}), Error);
}

TEST_CASE("kendall tau-b handles 100000 configs (Knight's algorithm, not O(c^2))") {
    const size_t n = 100000;
    std::vector<double> x(n), y(n);
    for (size_t i = 0; i < n; ++i) {
        x[i] = static_cast<double>(i);
        y[i] = static_cast<double>(n - i);
    }
    CHECK(kendall_tau_b(x, y) == doctest::Approx(-1.0).epsilon(1e-15));
    // Swapping one adjacent pair of the identity makes exactly one discordant pair.
    for (size_t i = 0; i < n; ++i) y[i] = static_cast<double>(i);
    std::swap(y[10], y[11]);
    const double tot = static_cast<double>(n) * static_cast<double>(n - 1) / 2;
    CHECK(kendall_tau_b(x, y) == doctest::Approx((tot - 2) / tot).epsilon(1e-12));
    const PairCounts pc = count_pairs(x, y);
    CHECK(pc.discordant == 1);
}

TEST_CASE("slowdown@K on a hand-computed 12-config graph") {
    // scores rank the configs in index order; the best runtime (30) is config 10.
    std::vector<double> scores(12);
    for (int i = 0; i < 12; ++i) scores[i] = i;
    std::vector<double> t = {50, 40, 45, 60, 70, 35, 80, 90, 100, 110, 30, 120};
    CHECK(slowdown_at_k(scores, t, 1) == doctest::Approx(20.0 / 30.0));
    CHECK(slowdown_at_k(scores, t, 5) == doctest::Approx(10.0 / 30.0));
    CHECK(slowdown_at_k(scores, t, 10) == doctest::Approx(5.0 / 30.0));
    CHECK(slowdown_at_k(scores, t, 11) == 0.0);
    CHECK(slowdown_at_k(scores, t, 100) == 0.0);  // clamped to c
    std::vector<double> zero = t;
    zero[3] = 0;
    CHECK_THROWS_AS(slowdown_at_k(scores, zero, 1), Error);
    CHECK_THROWS_AS(slowdown_at_k(scores, t, 0), Error);
}

TEST_CASE("slowdown@1 breaks score ties by the lower config index") {
    std::vector<double> scores = {1.0, 0.5, 0.5, 2.0};
    std::vector<double> t = {10, 30, 20, 40};
    CHECK(slowdown_at_k(scores, t, 1) == doctest::Approx(2.0));  // config 1 (30) vs best 10
}

TEST_CASE("evaluate_graph and aggregate_collection follow the documented NaN policy") {
    const std::vector<double> t = {3, 1, 2, 4};
    const std::vector<float> good = {0.3f, 0.1f, 0.2f, 0.4f};
    const std::vector<float> flat = {1, 1, 1, 1};
    const std::vector<double> const_t = {5, 5, 5, 5};
    GraphMetrics g1 = evaluate_graph("g1", good, t);
    CHECK(g1.kendall_tau == doctest::Approx(1.0).epsilon(1e-15));
    CHECK(g1.opa == 1.0);
    CHECK(g1.slowdown_1 == 0.0);
    GraphMetrics g2 = evaluate_graph("g2", flat, t);
    // Constant scores predict the order 0, 1, 2, 3 (ties broken by index, as a submission would
    // list them): 4 concordant, 2 discordant pairs -> tau 1/3. Raw scores are constant: NaN.
    CHECK(g2.kendall_tau == doctest::Approx(1.0 / 3.0).epsilon(1e-15));
    CHECK(g2.opa == doctest::Approx(4.0 / 6.0).epsilon(1e-15));
    CHECK(std::isnan(g2.kendall_raw));
    CHECK(g2.slowdown_1 == doctest::Approx(2.0));  // tie -> config 0 (runtime 3) vs best 1
    GraphMetrics g3 = evaluate_graph("g3", good, const_t);
    CHECK(g3.targets_constant);
    CHECK(std::isnan(g3.opa));

    std::vector<GraphMetrics> all = {g1, g2, g3};
    CollectionMetrics layout = aggregate_collection("layout:xla:random", Task::kLayout, all);
    CHECK(layout.num_graphs == 3);
    CHECK(layout.num_uninformative == 1);
    CHECK(layout.kendall_tau == doctest::Approx(2.0 / 3.0));  // (1 + 1/3) / 2: g3 left out
    CHECK(layout.kendall_raw == doctest::Approx(0.5));  // (1 + 0) / 2: constant raw scores count 0
    CHECK(layout.score == layout.kendall_tau);
    CHECK(layout.slowdown_5 == doctest::Approx(0.0));
    CHECK(layout.slowdown_1 == doctest::Approx(2.0 / 3.0));
    CollectionMetrics tile = aggregate_collection("tile:xla", Task::kTile, all);
    CHECK(tile.score == doctest::Approx(1.0 - tile.slowdown_5));
    std::vector<CollectionMetrics> cols = {layout, tile};
    CHECK(overall_score(cols) == doctest::Approx((layout.score + tile.score) / 2));

    CHECK_THROWS_AS(evaluate_graph("bad", good, std::vector<double>{1, 2, 0, 3}), Error);
    CHECK_THROWS_AS(evaluate_graph("bad", good, std::vector<double>{1, 2}), Error);
}

TEST_CASE(
    "evaluate_graph scores the predicted order: score ties are broken by config index as in a "
    "submission") {
    // Configs 0/2 and 1/3 have tied scores (duplicate config rows do this to a real model).
    const std::vector<float> scores = {0.5f, 0.2f, 0.5f, 0.2f, 0.9f};
    const std::vector<double> targets = {4, 2, 3, 1, 5};
    // Ascending score, ties by lower index: order 1, 3, 0, 2, 4 -> positions 2, 0, 3, 1, 4.
    CHECK(predicted_positions(scores) == std::vector<double>{2, 0, 3, 1, 4});
    const GraphMetrics g = evaluate_graph("g", scores, targets);
    // Positions vs targets: y in position order is 2, 1, 4, 3, 5 -> 2 discordant of 10 -> tau 0.6.
    CHECK(g.kendall_tau == doctest::Approx(0.6).epsilon(1e-15));
    CHECK(g.opa == doctest::Approx(0.8).epsilon(1e-15));
    // Raw tau-b counts the 2 score ties: 8 concordant, 0 discordant -> 8 / sqrt(8 * 10).
    CHECK(g.kendall_raw == doctest::Approx(8.0 / std::sqrt(80.0)).epsilon(1e-15));
    // The same numbers as scoring the submission row `segrank predict` writes for these scores.
    const std::vector<double> sd(scores.begin(), scores.end());
    const std::vector<int64_t> row = top_configs(sd, Task::kLayout);
    CHECK(row == std::vector<int64_t>{1, 3, 0, 2, 4});
    std::vector<float> sub(row.size());
    for (size_t p = 0; p < row.size(); ++p)
        sub[static_cast<size_t>(row[p])] = static_cast<float>(p);
    const GraphMetrics from_sub = evaluate_graph("g", sub, targets);
    CHECK(from_sub.kendall_tau == g.kendall_tau);
    CHECK(from_sub.opa == g.opa);
    CHECK(from_sub.slowdown_1 == g.slowdown_1);
    CHECK(from_sub.slowdown_5 == g.slowdown_5);
}

TEST_CASE("metrics serialize to one JSON object with NaN as null") {
    GraphMetrics g;
    g.name = "a\"b";
    g.num_configs = 3;
    g.kendall_tau = std::nan("");
    g.opa = 0.5;
    const std::string js = dump_json(to_json(g));
    CHECK(js ==
          "{\"graph\":\"a\\\"b\",\"num_configs\":3,\"targets_constant\":false,"
          "\"kendall_tau\":null,\"kendall_raw\":0.0,\"opa\":0.5,\"slowdown_1\":0.0,\"slowdown_5\":"
          "0.0,"
          "\"slowdown_10\":0.0}");
}

TEST_CASE("eval.indices restricts evaluation to the listed configs") {
    const EvalIndices idx = parse_eval_indices(
        " {\"g1\": [2, 0],\n \"g\\u00e9 \\\"2\\\"\": [] ,\"g3\":[10]}\n", "indices.json");
    REQUIRE(idx.size() == 3);
    CHECK(idx.at("g1") == std::vector<int64_t>{2, 0});
    CHECK(idx.at("g\xc3\xa9 \"2\"").empty());
    CHECK(idx.at("g3") == std::vector<int64_t>{10});
    const std::vector<double> values = {5, 6, 7};
    CHECK(select_indices(values, idx.at("g1"), "g1") == std::vector<double>{7, 5});
    CHECK_THROWS_AS(select_indices(values, idx.at("g3"), "g3"), Error);
    // A repeated index gives its value again (the paper's files repeat indices).
    CHECK(select_indices(values, std::vector<int64_t>{1, 1}, "g") == std::vector<double>{6, 6});
}

TEST_CASE("eval.indices parse errors name the file, line and column") {
    auto message = [](const char* text) {
        try {
            parse_eval_indices(text, "idx.json");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message("{\"a\": [1, 2,]}").find("idx.json:1:13") != std::string::npos);
    CHECK(message("{\"a\": [1]}\n{").find("idx.json:2:1: expected end of input") !=
          std::string::npos);
    CHECK(message("{\"a\": [1]}\n{").find("in eval.indices") != std::string::npos);
    CHECK(message("{\"a\": [1],\n \"b\": [2, -3]}").find("idx.json:2:11: eval.indices: negative") !=
          std::string::npos);
    CHECK(message("{\"a\": [1e2]}").find("integers") != std::string::npos);
    CHECK(message("{\"a\": [99999999999999999999]}").find("too large") != std::string::npos);
    CHECK(message("{\"a\": [\"1\"]}").find("found a string") != std::string::npos);
    CHECK(message("{\"a\": [-1]}").find("negative") != std::string::npos);
    CHECK(message("{\"a\": [1.5]}").find("integers") != std::string::npos);
    CHECK(message("{\"a\": [1], \"a\": [2]}")
              .find("idx.json:1:12: expected a key not already in this object") !=
          std::string::npos);
    CHECK(parse_eval_indices("{\"a\": [4, 1,\n 4]}", "idx.json").at("a") ==
          std::vector<int64_t>{4, 1, 4});  // repeats kept, as the paper's files have them
    CHECK(message("{\"a\": 3}").find("expected '['") != std::string::npos);
    CHECK(message("[1]").find("expected '{'") != std::string::npos);
    CHECK(message("{\"a\": [1]").find("end of input") != std::string::npos);
    CHECK(parse_eval_indices("{}", "x").empty());
}

TEST_CASE("evaluate_graph with eval.indices scores only the listed configs") {
    const EvalIndices idx = parse_eval_indices("{\"g\": [3, 1, 0], \"empty\": []}", "i.json");
    // Over all configs the order is wrong (config 2 is the fastest but scored highest); over the
    // listed configs {0, 1, 3} the scores order the targets exactly.
    const std::vector<float> scores = {0.1f, 0.2f, 9.0f, 0.3f};
    const std::vector<double> targets = {10, 20, 1, 30};
    const GraphMetrics all = evaluate_graph("g", scores, targets);
    const GraphMetrics sel = evaluate_graph("g", scores, targets, idx);
    CHECK(all.kendall_tau < 0.5);
    CHECK(sel.num_configs == 3);
    CHECK(sel.kendall_tau == doctest::Approx(1.0).epsilon(1e-15));
    CHECK(sel.slowdown_1 == 0.0);
    CHECK_THROWS_WITH_AS(evaluate_graph("h", scores, targets, idx), doctest::Contains("\"h\""),
                         Error);
    CHECK_THROWS_AS(evaluate_graph("empty", scores, targets, idx), Error);
}

TEST_CASE("runtime_errors gives the mean and the median absolute percentage error") {
    // APEs 0.1, 0.5, 0.0, 0.25 -> mean 0.2125, median (0.1 + 0.25) / 2.
    const std::vector<double> t = {10, 20, 30, 40}, p = {11, 10, 30, 50};
    const RuntimeErrors r = runtime_errors("g", p, t);
    CHECK(r.mape == doctest::Approx(0.2125));
    CHECK(r.median_ape == doctest::Approx(0.175));
    CHECK(runtime_errors("g", std::vector<double>{11, 10, 30}, std::vector<double>{10, 20, 30})
              .median_ape == doctest::Approx(0.1));
    CHECK_THROWS_WITH_AS(runtime_errors("g", p, std::vector<double>{10, 0, 30, 40}),
                         doctest::Contains("g: config 1 has target 0"), Error);
    CHECK_THROWS_AS(runtime_errors("g", std::vector<double>{1}, t), Error);
}

TEST_CASE("destandardized_runtimes inverts the mse target's per-graph standardization") {
    // Scores equal to the standardized log targets give the targets back exactly.
    const std::vector<double> t = {100, 200, 400, 1600};
    double mean = 0, var = 0;
    for (double x : t) mean += std::log(x) / 4;
    for (double x : t) var += (std::log(x) - mean) * (std::log(x) - mean) / 4;
    std::vector<float> z;
    for (double x : t) z.push_back(static_cast<float>((std::log(x) - mean) / std::sqrt(var)));
    const std::vector<double> back = destandardized_runtimes("g", z, t);
    for (size_t i = 0; i < t.size(); ++i) CHECK(back[i] == doctest::Approx(t[i]).epsilon(1e-5));
    CHECK(runtime_errors("g", back, t).mape < 1e-5);
    // Scores of 0 predict the geometric mean; constant targets predict themselves.
    const std::vector<float> zero(4, 0.0f);
    CHECK(destandardized_runtimes("g", zero, t)[0] == doctest::Approx(std::exp(mean)));
    CHECK(destandardized_runtimes("g", std::vector<float>{3.0f, -1.0f},
                                  std::vector<double>{5, 5})[0] == doctest::Approx(5.0));
    CHECK_THROWS_WITH_AS(
        destandardized_runtimes("g", std::vector<float>{NAN, 0.0f}, std::vector<double>{5, 6}),
        doctest::Contains("g: config 0 has a non-finite score"), Error);
}

TEST_CASE("collections average the graphs' runtime errors, JSON carries them only when computed") {
    GraphMetrics a, b, c;
    a.num_configs = b.num_configs = c.num_configs = 3;
    a.mape = 0.1;
    a.median_ape = 0.05;
    b.mape = 0.3;
    b.median_ape = 0.15;
    const std::vector<GraphMetrics> gs = {a, b, c};  // c has no regression (NaN): left out
    const CollectionMetrics cm = aggregate_collection("tile:xla", Task::kTile, gs);
    CHECK(cm.mape == doctest::Approx(0.2));
    CHECK(cm.median_ape == doctest::Approx(0.1));
    CHECK(dump_json(to_json(cm)).find("\"mape\":0.2") != std::string::npos);
    CHECK(dump_json(to_json(a)).find("\"median_ape\":0.05") != std::string::npos);
    CHECK(dump_json(to_json(c)).find("mape") == std::string::npos);
    const std::vector<GraphMetrics> none = {c};
    const CollectionMetrics cn = aggregate_collection("tile:xla", Task::kTile, none);
    CHECK(std::isnan(cn.mape));
    CHECK(dump_json(to_json(cn)).find("mape") == std::string::npos);
}

TEST_CASE(
    "the TpuGraphs paper's xla_random.json, which repeats indices, is read and scored as listed") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto file = data / "tpugraphs_npz" / "eval_indices" / "xla_random.json";
    const EvalIndices idx = load_eval_indices(file);
    const auto& unet = idx.at("unet_3d.4x4.bf16");
    REQUIRE(unet.size() == 1000);
    CHECK(std::set<int64_t>(unet.begin(), unet.end()).size() == 481);
    // Scored as listed (as the paper's baseline does): the 1000 entries, a repeated config
    // counted again in its pairs with the others; the pair of its two copies has one runtime, a
    // tie that Kendall tau-b leaves out.
    std::vector<float> scores(481);
    std::vector<double> targets(481);
    for (size_t j = 0; j < 481; ++j) {
        scores[j] = static_cast<float>((j * 7919) % 481);
        targets[j] = 1.0 + static_cast<double>((j * 7919 + (j % 5) * 31) % 481);
    }
    const GraphMetrics listed = evaluate_graph("unet_3d.4x4.bf16", scores, targets, idx);
    CHECK(listed.num_configs == 1000);
    std::vector<double> s_listed, t_listed;
    for (int64_t j : unet) {
        s_listed.push_back(scores[static_cast<size_t>(j)]);
        t_listed.push_back(targets[static_cast<size_t>(j)]);
    }
    // kendall_raw is tau-b of the listed scores and runtimes; kendall_tau ranks by the predicted
    // order (copies tie-broken by position) and the copies' equal runtimes leave their pair out.
    CHECK(listed.kendall_raw == doctest::Approx(kendall_tau_b(s_listed, t_listed)).epsilon(1e-12));
    const std::vector<float> f_listed(s_listed.begin(), s_listed.end());
    CHECK(listed.kendall_tau ==
          doctest::Approx(kendall_tau_b(predicted_positions(f_listed), t_listed)).epsilon(1e-12));
    CHECK(std::isfinite(listed.kendall_tau));
    // What is malformed stays refused: an index out of range of the graph's configs.
    const EvalIndices out_of_range{{"g", {0, 481}}};
    CHECK_THROWS_WITH_AS(evaluate_graph("g", scores, targets, out_of_range),
                         doctest::Contains("config index 481 (entry 1) out of range [0, 481)"),
                         Error);
}
