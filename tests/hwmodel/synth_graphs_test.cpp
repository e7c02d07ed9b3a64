// Synthetic graphs and collections: determinism by seed, data-layer validation of the written
// files, featurizer consistency (module re-featurized == loaded npz), structural sanity, labels
// that vary with the configuration, splits, overwrite refusal and no partial output.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "data/collection.h"
#include "data/graph.h"
#include "data/graph_store.h"
#include "data/hlo/featurizer.h"
#include "hwmodel/module_index.h"
#include "hwmodel/synth/synth.h"
#include "hwmodel/synth/writer.h"
#include "tests/support/test_paths.h"

namespace segrank::synth {
namespace {
namespace fs = std::filesystem;

SynthOptions small(uint64_t seed) {
    SynthOptions o;
    o.seed = seed;
    o.min_nodes = 150;
    o.max_nodes = 400;
    o.configs = 24;
    o.noise_sigma = 0.05;
    return o;
}

std::vector<float> floats(const Tensor& t) { return {t.data(), t.data() + t.size()}; }

std::string bytes_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<fs::path> npz_files(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".npz") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("same seed gives identical synthetic graphs, a different seed different ones") {
    const SynthTile a = synth_tile(small(1), 3), b = synth_tile(small(1), 3),
                    c = synth_tile(small(2), 3);
    CHECK(floats(a.graph.node_feat) == floats(b.graph.node_feat));
    CHECK(a.graph.edge_index == b.graph.edge_index);
    CHECK(floats(a.graph.config_feat) == floats(b.graph.config_feat));
    CHECK(a.graph.config_runtime == b.graph.config_runtime);
    CHECK(a.graph.config_runtime != c.graph.config_runtime);
    const SynthLayout la = synth_layout(small(1), 0), lb = synth_layout(small(1), 0),
                      lc = synth_layout(small(2), 0);
    CHECK(floats(la.graph.node_feat) == floats(lb.graph.node_feat));
    CHECK(la.graph.node_config_feat == lb.graph.node_config_feat);
    CHECK(la.graph.config_runtime == lb.graph.config_runtime);
    CHECK(la.graph.config_runtime != lc.graph.config_runtime);
    // Another graph index of the same seed is another module.
    CHECK(synth_layout(small(1), 1).graph.num_nodes() != la.graph.num_nodes());
}

TEST_CASE("synthetic graphs pass validation, runtimes vary with the config") {
    for (int64_t i = 0; i < 4; ++i) {
        CAPTURE(i);
        const SynthTile t = synth_tile(small(7), i);
        validate(t.graph, LabelPolicy::kRequirePositive, t.graph.name);
        CHECK(t.graph.num_nodes() >= 150);
        CHECK(t.graph.num_nodes() <= 400);
        std::set<int64_t> rt(t.graph.config_runtime.begin(), t.graph.config_runtime.end());
        CHECK(rt.size() > 1);
        CHECK(std::all_of(t.graph.config_runtime_normalizers.begin(),
                          t.graph.config_runtime_normalizers.end(),
                          [&](int64_t v) { return v == t.graph.config_runtime[0]; }));

        const SynthLayout l = synth_layout(small(7), i);
        validate(l.graph, LabelPolicy::kRequirePositive, l.graph.name);
        std::set<int64_t> lr(l.graph.config_runtime.begin(), l.graph.config_runtime.end());
        CHECK(lr.size() > 1);
        // Config 0 is the compiler default: all -1.
        const auto nc = static_cast<size_t>(l.graph.num_config_nodes());
        CHECK(std::all_of(l.graph.node_config_feat.begin(),
                          l.graph.node_config_feat.begin() + static_cast<std::ptrdiff_t>(nc * 18),
                          [](int8_t v) { return v == -1; }));
    }
}

TEST_CASE("runtimes vary with the config even without noise (labels come from hwmodel)") {
    SynthOptions o = small(11);
    o.noise_sigma = 0;
    for (int64_t i = 0; i < 3; ++i) {
        const SynthTile t = synth_tile(o, i);
        std::set<int64_t> rt(t.graph.config_runtime.begin(), t.graph.config_runtime.end());
        CHECK(rt.size() > 2);
        const SynthLayout l = synth_layout(o, i);
        std::set<int64_t> lr(l.graph.config_runtime.begin(), l.graph.config_runtime.end());
        CHECK(lr.size() > 2);
    }
}

TEST_CASE("log-uniform sizes, per-graph config ranges and proportional configurable nodes") {
    SynthOptions o = small(4);
    o.min_nodes = 200;
    o.max_nodes = 3000;
    o.log_uniform_nodes = true;
    o.configs = 10;
    o.max_configs = 40;
    o.config_node_fraction = 0.01;
    std::set<int64_t> counts;
    int64_t below_geometric_mid = 0;
    for (int64_t i = 0; i < 12; ++i) {
        CAPTURE(i);
        const SynthLayout l = synth_layout(o, i);
        validate(l.graph, LabelPolicy::kRequirePositive, l.graph.name);
        const int64_t n = l.graph.num_nodes(), c = l.graph.num_configs();
        CHECK(n >= 200);
        CHECK(n <= 3000);
        below_geometric_mid += n < 775;  // sqrt(200 x 3000): half of a log-uniform draw
        CHECK(c >= 10);
        CHECK(c <= 40);
        CHECK(c == graph_configs(o, Task::kLayout, i));
        counts.insert(c);
        CHECK(l.graph.num_config_nodes() <= std::max<int64_t>(1, std::llround(0.01 * n)));
        CHECK(l.graph.num_config_nodes() >= 1);
    }
    CHECK(counts.size() > 3);
    CHECK(below_geometric_mid >= 2);  // a uniform draw puts 575/2800 = 21% there, log-uniform 50%
    // The count has its own stream: a range leaves the modules of the same seed unchanged.
    SynthOptions fixed = o;
    fixed.max_configs = 0;
    CHECK(synth_layout(fixed, 3).graph.edge_index == synth_layout(o, 3).graph.edge_index);
    CHECK(synth_layout(fixed, 3).graph.num_configs() == 10);
    SynthOptions bad = o;
    bad.max_configs = 5;
    CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("configs range (--configs) 10:5"),
                         Error);
    bad = o;
    bad.config_node_fraction = 1.5;
    CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("config node fraction"), Error);
}

TEST_CASE("layout_choices N: each configurable node takes at most N distinct layouts") {
    SynthOptions o = small(9);
    o.configs = 40;
    o.layout_choices = 3;
    int64_t nodes_with_several = 0;
    for (int64_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        const SynthLayout l = synth_layout(o, i, /*keep_sources=*/true);
        validate(l.graph, LabelPolicy::kRequirePositive, l.graph.name);
        const auto nc = static_cast<size_t>(l.graph.num_config_nodes());
        const auto c = static_cast<size_t>(l.graph.num_configs());
        REQUIRE(c == 40);
        const int8_t* feat = l.graph.node_config_feat.data();
        // Config 0 is still the compiler default.
        CHECK(std::all_of(feat, feat + nc * 18, [](int8_t v) { return v == -1; }));
        for (size_t k = 0; k < nc; ++k) {
            CAPTURE(k);
            std::set<std::vector<int8_t>> rows;
            for (size_t j = 1; j < c; ++j) {
                const int8_t* r = feat + (j * nc + k) * 18;
                if (std::any_of(r, r + 18, [](int8_t v) { return v != -1; }))
                    rows.insert(std::vector<int8_t>(r, r + 18));
            }
            CHECK(rows.size() <= 3);
            nodes_with_several += rows.size() >= 2;
        }
        // The kept sources are the chosen layouts: they featurize to the same graph.
        const auto again = hlo::featurize_layout(to_module_tuning(l), l.graph.name);
        REQUIRE(again.graph.has_value());
        CHECK(again.graph->node_config_feat == l.graph.node_config_feat);
    }
    CHECK(nodes_with_several > 0);
    // Same seed, same graph; and the choices change the configs but not the module.
    CHECK(synth_layout(o, 1).graph.node_config_feat == synth_layout(o, 1).graph.node_config_feat);
    CHECK(synth_layout(o, 1).graph.edge_index == synth_layout(small(9), 1).graph.edge_index);
}

TEST_CASE("layout_choices defaults to 0, and 0 gives the graphs of a fresh layout per config") {
    CHECK(SynthOptions{}.layout_choices == 0);
    SynthOptions zero = small(6);
    zero.layout_choices = 0;
    for (int64_t i = 0; i < 2; ++i) {
        CAPTURE(i);
        const SynthLayout a = synth_layout(small(6), i), b = synth_layout(zero, i);
        CHECK(a.graph.node_config_feat == b.graph.node_config_feat);
        CHECK(a.graph.config_runtime == b.graph.config_runtime);
    }
}

TEST_CASE("layout_choices outside [0, 1000] is rejected naming the option") {
    for (int64_t bad_value : {int64_t{-1}, int64_t{1001}}) {
        CAPTURE(bad_value);
        SynthOptions bad = small(1);
        bad.layout_choices = bad_value;
        CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("layout_choices"), Error);
        CHECK_THROWS_WITH_AS(synth_layout(bad, 0), doctest::Contains("layout_choices"), Error);
    }
    SynthOptions ok = small(1);
    ok.layout_choices = 1000;
    CHECK_NOTHROW(ok.validate());
}

TEST_CASE("synthetic graphs equal the featurizer's output on their tpu_graphs form") {
    const SynthTile t = synth_tile(small(5), 2, /*keep_sources=*/true);
    const auto ft = hlo::featurize_tile(to_module_tuning(t), "synth");
    REQUIRE(ft.graph.has_value());
    CHECK(floats(ft.graph->node_feat) == floats(t.graph.node_feat));
    CHECK(ft.graph->node_opcode == t.graph.node_opcode);
    CHECK(ft.graph->edge_index == t.graph.edge_index);
    CHECK(floats(ft.graph->config_feat) == floats(t.graph.config_feat));
    CHECK(ft.graph->config_runtime == t.graph.config_runtime);
    CHECK(ft.graph->config_runtime_normalizers == t.graph.config_runtime_normalizers);

    const SynthLayout l = synth_layout(small(5), 2, true);
    const auto fl = hlo::featurize_layout(to_module_tuning(l), "synth");
    REQUIRE(fl.graph.has_value());
    CHECK(floats(fl.graph->node_feat) == floats(l.graph.node_feat));
    CHECK(fl.graph->edge_index == l.graph.edge_index);
    CHECK(fl.graph->node_config_ids == l.graph.node_config_ids);
    CHECK(fl.graph->node_config_feat == l.graph.node_config_feat);
    CHECK(fl.graph->node_splits == l.graph.node_splits);
    CHECK(fl.graph->config_runtime == l.graph.config_runtime);
}

TEST_CASE("splits: counts follow the fractions, every graph gets one split, seeded") {
    const auto s = assign_splits(24, {0.7, 0.15, 0.15}, 0, Task::kTile);
    CHECK(std::count(s.begin(), s.end(), Split::kTrain) == 16);
    CHECK(std::count(s.begin(), s.end(), Split::kValid) == 4);
    CHECK(std::count(s.begin(), s.end(), Split::kTest) == 4);
    CHECK(s == assign_splits(24, {0.7, 0.15, 0.15}, 0, Task::kTile));
    CHECK(s != assign_splits(24, {0.7, 0.15, 0.15}, 1, Task::kTile));
    const auto one = assign_splits(3, {0.8, 0.1, 0.1}, 0, Task::kLayout);
    CHECK(std::count(one.begin(), one.end(), Split::kTest) == 1);
    CHECK_THROWS_AS(assign_splits(10, {0.5, 0.2, 0.2}, 0, Task::kTile), Error);
}

TEST_CASE("written npz collections load with every validation and match a re-featurized module") {
    const fs::path dir = test::scratch_dir("synth_npz");
    WriteOptions w;
    w.out = dir / "a";
    w.graphs = 5;
    w.synth = small(3);
    const auto written = write_synthetic(w);
    CHECK(written.size() == 6);  // 2 tasks x 3 splits
    CHECK(fs::is_directory(dir / "a/npz/tile/xla/train"));
    CHECK(fs::is_directory(dir / "a/npz/layout/xla/random/test"));
    for (const auto& c : discover_collections(dir / "a")) {
        for (const auto& f : c.files) {
            // Synthetic test splits keep their labels: positive everywhere.
            if (c.id.task == Task::kTile) {
                const TileGraph g = load_tile_npz(f, LabelPolicy::kRequirePositive);
                const int64_t index = std::stoll(g.name.substr(g.name.size() - 6));
                const SynthTile s = synth_tile(w.synth, index, true);
                const auto ft = hlo::featurize_tile(to_module_tuning(s), f.string());
                CHECK(floats(ft.graph->node_feat) == floats(g.node_feat));
                CHECK(ft.graph->edge_index == g.edge_index);
                CHECK(floats(ft.graph->config_feat) == floats(g.config_feat));
                CHECK(ft.graph->config_runtime == g.config_runtime);
            } else {
                const LayoutGraph g = load_layout_npz(f, LabelPolicy::kRequirePositive);
                const int64_t index = std::stoll(g.name.substr(g.name.size() - 6));
                const SynthLayout s = synth_layout(w.synth, index, true);
                const auto fl = hlo::featurize_layout(to_module_tuning(s), f.string());
                CHECK(floats(fl.graph->node_feat) == floats(g.node_feat));
                CHECK(fl.graph->node_config_feat == g.node_config_feat);
                CHECK(fl.graph->node_splits == g.node_splits);
                CHECK(fl.graph->config_runtime == g.config_runtime);
                const hw::ModuleIndex idx(s.module);
                for (int64_t node : g.node_config_ids) {
                    const int32_t op = g.node_opcode[static_cast<size_t>(node)];
                    CHECK((op == hlo::opcode_id("convolution") || op == hlo::opcode_id("dot") ||
                           op == hlo::opcode_id("reshape")));
                }
                CHECK(g.node_splits.front() == 0);
                CHECK(g.node_splits.back() == g.num_nodes());
                CHECK(std::is_sorted(g.node_splits.begin(), g.node_splits.end()));
            }
        }
    }

    SUBCASE("same seed -> byte-identical files; another seed -> different files") {
        WriteOptions w2 = w;
        w2.out = dir / "b";
        write_synthetic(w2);
        const auto fa = npz_files(dir / "a"), fb = npz_files(dir / "b");
        REQUIRE(fa.size() == 10);
        REQUIRE(fa.size() == fb.size());
        for (size_t i = 0; i < fa.size(); ++i) CHECK(bytes_of(fa[i]) == bytes_of(fb[i]));
        WriteOptions w3 = w;
        w3.out = dir / "c";
        w3.synth.seed = 4;
        write_synthetic(w3);
        const auto fc = npz_files(dir / "c");
        REQUIRE(fc.size() == fa.size());
        CHECK(bytes_of(fa[0]) != bytes_of(fc[0]));
    }
    SUBCASE("refuses to overwrite without force; force replaces") {
        CHECK_THROWS_WITH_AS(write_synthetic(w), doctest::Contains("already exists"), Error);
        w.force = true;
        w.synth.seed = 9;
        CHECK(write_synthetic(w).size() == 6);
    }
    SUBCASE("hidden test labels are zero, train labels stay positive") {
        WriteOptions h = w;
        h.out = dir / "h";
        h.hide_test_labels = true;
        write_synthetic(h);
        for (const auto& f : npz_files(dir / "h/npz/tile/xla/test")) {
            const TileGraph g = load_tile_npz(f, LabelPolicy::kAllowTestZeros);
            CHECK(std::all_of(g.config_runtime.begin(), g.config_runtime.end(),
                              [](int64_t v) { return v == 0; }));
            CHECK(std::all_of(g.config_runtime_normalizers.begin(),
                              g.config_runtime_normalizers.end(),
                              [](int64_t v) { return v == 1; }));
        }
        for (const auto& f : npz_files(dir / "h/npz/layout/xla/random/test"))
            CHECK(load_layout_npz(f, LabelPolicy::kAllowTestZeros).config_runtime.at(0) == 0);
        for (const auto& f : npz_files(dir / "h/npz/tile/xla/train"))
            CHECK_NOTHROW(load_tile_npz(f, LabelPolicy::kRequirePositive));
    }
}

TEST_CASE("a failing run leaves no output behind") {
    const fs::path dir = test::scratch_dir("synth_fail");
    WriteOptions w;
    w.out = dir / "x";
    w.graphs = 3;
    w.synth = small(1);
    fs::create_directories(dir / "x/npz/layout/xla/random/valid");
    CHECK_THROWS_AS(write_synthetic(w), Error);
    CHECK_FALSE(fs::exists(dir / "x/npz/tile"));
    for (const auto& e : fs::directory_iterator(dir / "x"))
        CHECK(e.path().filename().string().rfind(".synth-staging", 0) != 0);
    w.synth.configs = 1;  // invalid options are rejected before anything is written
    w.force = true;
    CHECK_THROWS_WITH_AS(write_synthetic(w), doctest::Contains("configs"), Error);
    CHECK_FALSE(fs::exists(dir / "x/npz/tile"));
}

TEST_CASE(
    "the staging folders of killed runs are removed by the next run, those of running "
    "processes and other folders are kept") {
    const fs::path dir = test::scratch_dir("synth_stale_staging");
    // 999999999 is above Linux's largest pid (2^22): no such process exists.
    const fs::path dead = dir / ".synth-staging-999999999";
    const fs::path alive = dir / str(".synth-staging-", ::getppid());
    const fs::path other = dir / ".synth-staging-notapid";
    for (const fs::path& d : {dead, alive, other}) {
        fs::create_directories(d / "h5");
        std::ofstream(d / "h5/partial.h5.tmp") << "partial";
    }
    WriteOptions w;
    w.out = dir;
    w.tasks = {Task::kTile};
    w.graphs = 2;
    w.splits = {1, 0, 0};
    w.synth = small(1);
    write_synthetic(w);
    CHECK_FALSE(fs::exists(dead));
    CHECK(fs::exists(alive / "h5/partial.h5.tmp"));
    CHECK(fs::exists(other / "h5/partial.h5.tmp"));
    CHECK(fs::exists(dir / "npz/tile/xla/train"));
}

TEST_CASE("hdf5 output: one store per collection split, readable with the same arrays") {
    const fs::path dir = test::scratch_dir("synth_h5");
    WriteOptions w;
    w.out = dir;
    w.graphs = 4;
    w.format = StoreFormat::kHdf5;
    w.synth = small(2);
    const auto written = write_synthetic(w);
    REQUIRE(!written.empty());
    for (const auto& s : written) {
        REQUIRE(fs::exists(s.path));
        const GraphStore store(s.path);
        CHECK(store.collection() == s.id);
        CHECK(store.size() == s.graphs);
    }
    const GraphStore tiles(dir / "h5/tile_xla_train.h5");
    const TileGraph g = tiles.load_tile(0, ConfigRows::all());
    const int64_t index = std::stoll(g.name.substr(g.name.size() - 6));
    const SynthTile ref = synth_tile(w.synth, index);
    CHECK(floats(g.node_feat) == floats(ref.graph.node_feat));
    CHECK(g.config_runtime == ref.graph.config_runtime);
}

namespace {

SynthOptions staged(uint64_t seed) {
    SynthOptions o = small(seed);
    o.min_nodes = 3300;
    o.max_nodes = 3600;
    o.configs = 12;
    o.stage_nodes = 1000;  // 4 stages
    o.max_config_nodes = 40;
    o.layout_choices = 4;
    return o;
}

}  // namespace

TEST_CASE(
    "a layout graph above stage_nodes is built in stages joined by one edge each, valid and "
    "deterministic") {
    const SynthOptions o = staged(5);
    CHECK(layout_stages(o, 0) == 4);
    SynthOptions never = o;
    never.stage_nodes = 0;
    CHECK(layout_stages(never, 0) == 1);
    std::vector<int64_t> part_nodes;
    std::vector<int64_t> edges;
    const LayoutGraph tail = synth_layout_parts(o, 0, [&](GraphStructure& p) {
        CHECK(p.name == "synth_layout_000000");
        part_nodes.push_back(p.num_nodes());
        edges.insert(edges.end(), p.edge_index.begin(), p.edge_index.end());
    });
    REQUIRE(part_nodes.size() == 4);
    std::vector<int64_t> first{0};  // first node of each part
    for (int64_t n : part_nodes) first.push_back(first.back() + n);
    const int64_t n = first.back();
    CHECK(n >= o.min_nodes);
    CHECK(n <= o.max_nodes);
    CHECK(tail.node_splits.back() == n);
    CHECK(tail.node_feat.size() == 0);
    // Every stage boundary is a node_splits boundary; exactly one edge per later stage crosses
    // into the stage before it (its first entry parameter consumes the previous entry root).
    for (size_t s = 1; s < 4; ++s)
        CHECK(std::find(tail.node_splits.begin(), tail.node_splits.end(), first[s]) !=
              tail.node_splits.end());
    auto stage_of = [&](int64_t v) {
        return static_cast<int64_t>(std::upper_bound(first.begin(), first.end(), v) -
                                    first.begin()) -
               1;
    };
    std::vector<int> crossing(4, 0);
    for (size_t e = 0; e < edges.size(); e += 2) {
        const int64_t su = stage_of(edges[e]), sv = stage_of(edges[e + 1]);
        if (su == sv) continue;
        CHECK(su == sv + 1);
        ++crossing[static_cast<size_t>(su)];
    }
    CHECK(crossing == std::vector<int>{0, 1, 1, 1});
    // Configurable nodes in every stage, at most the cap (40 over 4 stages).
    CHECK(tail.num_config_nodes() <= 40);
    for (size_t s = 0; s < 4; ++s)
        CHECK(std::any_of(tail.node_config_ids.begin(), tail.node_config_ids.end(),
                          [&](int64_t v) { return stage_of(v) == static_cast<int64_t>(s); }));
    // The gathered record: valid, equal to the parts, the same on a second run.
    const SynthLayout a = synth_layout(o, 0), b = synth_layout(o, 0);
    validate(a.graph, LabelPolicy::kRequirePositive, "staged");
    CHECK(a.graph.num_nodes() == n);
    CHECK(a.graph.edge_index == edges);
    CHECK(a.graph.node_config_ids == tail.node_config_ids);
    CHECK(a.graph.node_config_feat == tail.node_config_feat);
    CHECK(a.graph.config_runtime == tail.config_runtime);
    CHECK(floats(a.graph.node_feat) == floats(b.graph.node_feat));
    CHECK(a.graph.config_runtime == b.graph.config_runtime);
    // Configs differ in their runtimes (labels come from every stage's hwmodel).
    std::set<int64_t> distinct(a.graph.config_runtime.begin(), a.graph.config_runtime.end());
    CHECK(distinct.size() > 6);
    CHECK_THROWS_WITH_AS(synth_layout(o, 0, true), doctest::Contains("cannot be kept"), Error);
}

TEST_CASE("stage_nodes below 1000 or negative is rejected naming the option") {
    SynthOptions o = small(1);
    for (int64_t bad : {int64_t{-1}, int64_t{1}, int64_t{999}}) {
        o.stage_nodes = bad;
        CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("stage_nodes (--stage-nodes)"), Error);
    }
    o.stage_nodes = 0;
    CHECK_NOTHROW(o.validate());
}

TEST_CASE(
    "staged graphs go into an HDF5 store part by part and read back equal to the gathered "
    "record and to the npz output") {
    const fs::path dir = test::scratch_dir("synth_h5_staged");
    WriteOptions w;
    w.out = dir / "h5out";
    w.tasks = {Task::kLayout};
    w.graphs = 2;
    w.splits = {1, 0, 0};
    w.format = StoreFormat::kHdf5;
    w.synth = staged(7);
    w.synth.min_nodes = 1500;
    w.synth.max_nodes = 2500;
    write_synthetic(w);
    WriteOptions wn = w;
    wn.out = dir / "npzout";
    wn.format = StoreFormat::kNpz;
    write_synthetic(wn);
    const GraphStore store(dir / "h5out/h5/layout_xla_random_train.h5");
    REQUIRE(store.size() == 2);
    for (int64_t i = 0; i < 2; ++i) {
        const LayoutGraph g = store.load_layout(i, ConfigRows::all());
        const int64_t index = std::stoll(g.name.substr(g.name.size() - 6));
        CHECK(layout_stages(w.synth, index) == 2);
        const SynthLayout ref = synth_layout(w.synth, index);
        CHECK(floats(g.node_feat) == floats(ref.graph.node_feat));
        CHECK(g.node_opcode == ref.graph.node_opcode);
        CHECK(g.edge_index == ref.graph.edge_index);
        CHECK(g.node_config_ids == ref.graph.node_config_ids);
        CHECK(g.node_config_feat == ref.graph.node_config_feat);
        CHECK(g.config_runtime == ref.graph.config_runtime);
        CHECK(g.node_splits == ref.graph.node_splits);
        const LayoutGraph z =
            load_layout_npz(dir / "npzout/npz/layout/xla/random/train" / (g.name + ".npz"),
                            LabelPolicy::kRequirePositive);
        CHECK(floats(z.node_feat) == floats(g.node_feat));
        CHECK(z.edge_index == g.edge_index);
        CHECK(z.config_runtime == g.config_runtime);
    }
}

}  // namespace segrank::synth
