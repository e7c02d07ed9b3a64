// The cost model library (include/segrank/cost_model.h): the same scores from every way of giving a
// graph, ensembles normalized as predict does, errors that name what is wrong, concurrent scoring,
// and refit on measured runtimes.
#include "segrank/cost_model.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "api/cost_model_internal.h"
#include "data/graph.h"
#include "gnn/loss.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"

using namespace segrank;
using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

std::string error_of(const auto& fn) {
    try {
        fn();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

// A trained tiny layout run shared by the cases of this file (trained once per process).
const fs::path& layout_run_dir() {
    static const fs::path dir = [] {
        const fs::path d = scratch_dir("api_cost_model");
        train_tiny_layout_run(d, "run", 4, 0);
        train_tiny_layout_run(d, "run2", 4, 1);
        return d;
    }();
    return dir;
}

fs::path train_npz() {
    return layout_run_dir() / "data/npz/layout/xla/random/train/tiny_train_0.npz";
}

}  // namespace

TEST_CASE(
    "CostModel gives one layout graph the same scores from an npz, a store entry and arrays") {
    const fs::path dir = layout_run_dir();
    const CostModel model({(dir / "run").string()});
    CHECK(model.num_members() == 1);
    CHECK(model.task(0) == CostTask::kLayout);
    CHECK(model.covers(CostTask::kLayout));
    CHECK_FALSE(model.covers(CostTask::kTile));

    const Graph g = Graph::open(train_npz().string());
    CHECK(g.task() == CostTask::kLayout);
    CHECK(g.num_configs() == 96);
    CHECK(g.num_config_nodes() == 2);
    const std::vector<double> s = model.score(g);
    REQUIRE(s.size() == 96);
    CHECK(std::all_of(s.begin(), s.end(), [](double x) { return std::isfinite(x); }));
    CHECK(*std::max_element(s.begin(), s.end()) > *std::min_element(s.begin(), s.end()));

    // A subset is scored as those configs of the whole.
    const std::vector<int64_t> some = {5, 0, 77};
    const std::vector<double> part = model.score(g, some);
    REQUIRE(part.size() == 3);
    for (size_t i = 0; i < some.size(); ++i)
        CHECK(part[i] == doctest::Approx(s[static_cast<size_t>(some[i])]).epsilon(1e-6));

    // The same graph packed into an HDF5 store.
    const LayoutGraph rec = load_layout_npz(train_npz(), LabelPolicy::kRequirePositive);
    CollectionId id = CollectionId::parse("layout:xla:random");
    id.split = Split::kTrain;
    const fs::path store = dir / "one.h5";
    if (!fs::exists(store)) {
        GraphStoreWriter w(store, id, dir);
        w.add(rec);
        w.finish();
    }
    const std::vector<double> from_store =
        model.score(Graph::open(store.string() + ":" + rec.name));
    REQUIRE(from_store.size() == s.size());
    for (size_t i = 0; i < s.size(); ++i)
        CHECK(from_store[i] == doctest::Approx(s[i]).epsilon(1e-6));

    // The same arrays held in memory.
    GraphArrays a;
    a.task = CostTask::kLayout;
    a.name = "in_memory";
    a.node_feat.assign(rec.node_feat.data(), rec.node_feat.data() + rec.node_feat.size());
    a.node_opcode = rec.node_opcode;
    a.edge_index = rec.edge_index;
    a.node_config_ids = rec.node_config_ids;
    a.node_config_feat = rec.node_config_feat;
    a.node_splits = rec.node_splits;
    a.config_runtime = rec.config_runtime;
    const Graph mem = Graph::from_arrays(std::move(a));
    CHECK(mem.runtimes_ns() == rec.config_runtime);
    const std::vector<double> from_mem = model.score(mem);
    for (size_t i = 0; i < s.size(); ++i) CHECK(from_mem[i] == doctest::Approx(s[i]).epsilon(1e-6));

    // The predicted order sorts by ascending score, ties by index.
    const std::vector<double> tied = {0.5, 0.1, 0.5, 0.1};
    CHECK(CostModel::ranking(tied) == std::vector<int64_t>{1, 3, 0, 2});
}

TEST_CASE("CostModel ensembles average per-graph min-max normalized member scores") {
    const fs::path dir = layout_run_dir();
    const Graph g = Graph::from_npz(train_npz().string());
    const CostModel a({(dir / "run").string()});
    const CostModel b({(dir / "run2").string()});
    const CostModel both({(dir / "run").string(), (dir / "run2").string()});
    const std::vector<double> sa = a.score(g), sb = b.score(g), s = both.score(g);
    auto norm = [](std::vector<double> v) {
        const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        const double l = *lo, h = *hi;
        for (auto& x : v) x = (x - l) / (h - l);
        return v;
    };
    const std::vector<double> na = norm(sa), nb = norm(sb);
    for (size_t i = 0; i < s.size(); ++i) CHECK(s[i] == doctest::Approx((na[i] + nb[i]) / 2));
    const auto members = both.member_scores(g);
    REQUIRE(members.size() == 2);
    CHECK(members[0][3] == doctest::Approx(sa[3]));
    CHECK(members[1][3] == doctest::Approx(sb[3]));
}

TEST_CASE("CostModel and Graph errors name the file, the graph and what was expected") {
    const fs::path dir = layout_run_dir();
    CHECK(error_of([&] { CostModel m({(dir / "nowhere").string()}); }).find("nowhere") !=
          std::string::npos);
    CHECK(error_of([] {
              CostModel m(std::vector<std::string>{});
          }).find("at least one checkpoint") != std::string::npos);
    const CostModel model({(dir / "run").string()});
    const Graph g = Graph::open(train_npz().string());
    const std::vector<int64_t> bad = {96};
    const std::string e = error_of([&] { model.score(g, bad); });
    CHECK(e.find("config index 96") != std::string::npos);
    CHECK(e.find("96 configs") != std::string::npos);
    CHECK(error_of([&] { Graph::open((dir / "one.h5").string()); }).find("STORE.h5:NAME") !=
          std::string::npos);
    CHECK(error_of([&] { Graph::open((dir / "x.txt").string()); }).find("expected a .npz") !=
          std::string::npos);
    CHECK(error_of([&] {
              Graph::from_npz((dir / "missing.npz").string());
          }).find("missing.npz: no such file (expected an npz file)") != std::string::npos);
    // A path that exists but is no file is named as what it is.
    fs::create_directories(dir / "folder.npz");
    CHECK(error_of([&] {
              Graph::from_npz((dir / "folder.npz").string());
          }).find("folder.npz: is a directory") != std::string::npos);
    // A tile graph for a layout-only model.
    GraphArrays t;
    t.task = CostTask::kTile;
    t.name = "tile_kernel";
    t.node_feat.assign(2 * 140, 0.0f);
    t.node_opcode = {1, 2};
    t.edge_index = {1, 0};
    t.config_feat.assign(3 * 24, 1.0f);
    const Graph tile = Graph::from_arrays(t);
    CHECK(tile.num_configs() == 3);
    CHECK(error_of([&] {
              model.score(tile);
          }).find("no loaded checkpoint was trained on the tile") != std::string::npos);
    t.config_feat.resize(25);
    CHECK(error_of([&] { Graph::from_arrays(t); }).find("config_feat has 25 values") !=
          std::string::npos);
}

TEST_CASE("CostModel::score may be called from several threads at once on one graph") {
    const fs::path dir = layout_run_dir();
    const CostModel model({(dir / "run").string(), (dir / "run2").string()});
    const Graph g = Graph::open(train_npz().string());
    const std::vector<double> want = model.score(g);
    std::vector<std::vector<double>> got(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < got.size(); ++t)
        threads.emplace_back([&, t] { got[t] = model.score(Graph(g)); });
    for (auto& th : threads) th.join();
    for (const auto& s : got) CHECK(s == want);
}

TEST_CASE(
    "CostModel::refit on measured runtimes lowers the pairwise loss, head scope moves only the "
    "head") {
    const fs::path dir = layout_run_dir();
    CostModel model({(dir / "run").string()});
    const Graph g = Graph::open(train_npz().string());
    const std::vector<int64_t> rt = g.runtimes_ns();
    std::vector<int64_t> configs;
    std::vector<double> runtimes;
    for (int64_t c = 0; c < 24; ++c) {
        configs.push_back(c);
        runtimes.push_back(static_cast<double>(rt[static_cast<size_t>(c)]));
    }
    auto loss = [&] {
        const std::vector<double> s = model.score(g, configs);
        return pairwise_hinge_loss(s, runtimes, 0.1, {});
    };
    auto& params = model.impl().members[0].lm.model->params();
    const std::vector<float> before(params.values().begin(), params.values().end());
    const double l0 = loss();
    model.refit(g, configs, runtimes, CostModel::RefitScope::kHead, 150, 3e-3);
    const double l1 = loss();
    CHECK(l1 < l0);
    bool head_moved = false, other_moved = false;
    for (const auto& r : params.refs())
        for (int64_t i = r.offset; i < r.offset + r.rows * r.cols; ++i)
            if (params.values()[static_cast<size_t>(i)] != before[static_cast<size_t>(i)])
                (r.name.rfind("head", 0) == 0 ? head_moved : other_moved) = true;
    CHECK(head_moved);
    CHECK_FALSE(other_moved);
    // Full scope trains the encoder as well.
    model.refit(g, configs, runtimes, CostModel::RefitScope::kAll, 20, 3e-3);
    bool encoder_moved = false;
    for (const auto& r : params.refs())
        if (r.name.rfind("head", 0) != 0)
            for (int64_t i = r.offset; i < r.offset + r.rows * r.cols; ++i)
                encoder_moved = encoder_moved || params.values()[static_cast<size_t>(i)] !=
                                                     before[static_cast<size_t>(i)];
    CHECK(encoder_moved);
    CHECK(loss() < l0);
    const std::vector<double> zero = {0.0};
    const std::vector<int64_t> one = {0};
    CHECK(error_of([&] {
              model.refit(g, one, zero, CostModel::RefitScope::kHead);
          }).find("expected a positive number of ns") != std::string::npos);
}

TEST_CASE(
    "CostModel at the smallest ScoreOptions::memory_mb scores as at the default budget, and a "
    "budget out of range or a cache that does not fit it is refused naming the option") {
    const fs::path dir = layout_run_dir();
    const Graph g = Graph::open(train_npz().string());
    const std::vector<double> def = CostModel({(dir / "run").string()}).score(g);
    ScoreOptions tiny;
    tiny.memory_mb = 16;  // a 16-config probe chunk: the 96 configs are scored in several chunks
    const std::vector<double> small = CostModel({(dir / "run").string()}, tiny).score(g);
    REQUIRE(small.size() == def.size());
    for (size_t i = 0; i < def.size(); ++i)
        CHECK(small[i] == doctest::Approx(def[i]).epsilon(1e-5));
    ScoreOptions low;
    low.memory_mb = 8;
    CHECK(error_of([&] { CostModel({(dir / "run").string()}, low); })
              .starts_with("ScoreOptions.memory_mb: expected 0 (the checkpoint's eval.memory_mb) "
                           "or 16 to 1048576, got 8"));
    ScoreOptions big_cache;
    big_cache.cache_mb = 600;  // against the checkpoint's eval.memory_mb = 1024
    CHECK(error_of([&] { CostModel({(dir / "run").string()}, big_cache); })
              .starts_with("ScoreOptions.cache_mb = 600 does not fit eval.memory_mb of " +
                           (dir / "run").string() + " = 1024"));
    big_cache.memory_mb = 2048;  // a budget of its own: the cache fits
    CHECK(CostModel({(dir / "run").string()}, big_cache).score(g).size() == def.size());
}

TEST_CASE("a tuning file's module not found, or not named among several, is refused listing them") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const std::string pb = (data / "xla_tuning" / "op_tuning_data.pb").string();
    const std::string missing = error_of([&] { Graph::open(pb + ":nosuch"); });
    CHECK(missing.find("no module named 'nosuch' among its 15 modules (") != std::string::npos);
    CHECK(missing.find("fusion.191") != std::string::npos);
    const std::string unnamed = error_of([&] { Graph::open(pb); });
    CHECK(unnamed.find("the modules: ") != std::string::npos);
    CHECK(unnamed.find("fusion.191") != std::string::npos);
}
