// Search space and candidate generation (tune/candidates.h): permutation counts, legality, moves,
// seeded determinism, and the spaces of synthetic and real graphs.
#include "tune/candidates.h"

#include <doctest/doctest.h>

#include <set>
#include <unordered_set>

#include "data/hlo/featurizer.h"
#include "data/hlo/proto_reader.h"
#include "hwmodel/from_graph.h"
#include "hwmodel/hardware.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/synth/synth.h"
#include "tests/support/test_paths.h"

using namespace segrank;
using namespace segrank::tune;
using segrank::test::contains_text;

namespace {

// Two hand-made configurable nodes:
//   node 5: a convolution, output rank 4, input rank 4, kernel rank 2 -> 25 x 25 x 3 choices
//   node 9: a reshape, output rank 2, input rank 1, no kernel          ->  3 x  2 x 1 choices
SearchSpace hand_space() { return SearchSpace::layout({{5, {4, 4, 2}}, {9, {2, 1, -1}}}); }

Config layout_config(std::vector<int8_t> values) { return Config{std::move(values), {}}; }

std::vector<int8_t> defaults(size_t nodes) { return std::vector<int8_t>(nodes * 18, -1); }

}  // namespace

TEST_CASE("layout_permutations lists rank! distinct permutations of 0..rank-1") {
    for (int r = 0; r <= kMaxLayoutRank; ++r) {
        const auto& perms = layout_permutations(r);
        CHECK(static_cast<int64_t>(perms.size()) == num_layout_permutations(r));
        std::set<std::vector<int8_t>> distinct(perms.begin(), perms.end());
        CHECK(distinct.size() == perms.size());
        for (const auto& p : perms) {
            CHECK(static_cast<int>(p.size()) == r);
            CHECK(is_permutation(p));
        }
    }
    CHECK(num_layout_permutations(6) == 720);
    CHECK(num_layout_permutations(0) == 1);
    CHECK_THROWS_WITH(layout_permutations(7), doctest::Contains("out of range 0..6"));
    const std::vector<int8_t> dup = {0, 0, 1}, gap = {0, 2}, ok = {2, 0, 1};
    CHECK_FALSE(is_permutation(dup));
    CHECK_FALSE(is_permutation(gap));
    CHECK(is_permutation(ok));
}

TEST_CASE("hand-made layout node: choices per slot are rank! + 1 (the default)") {
    const SearchSpace s = hand_space();
    REQUIRE(s.num_genes() == 6);
    CHECK(s.num_choices(0) == 25);
    CHECK(s.num_choices(1) == 25);
    CHECK(s.num_choices(2) == 3);
    CHECK(s.num_choices(3) == 3);
    CHECK(s.num_choices(4) == 2);
    CHECK(s.num_choices(5) == 1);
    CHECK(s.log10_size() == doctest::Approx(std::log10(25.0 * 25 * 3 * 3 * 2)));
    CHECK(s.default_config().layout == defaults(2));
}

TEST_CASE("partial lists: a rank-5 tensor allowing 2-dim lists has 1 + 20 + 120 choices") {
    LayoutNodeSpace n{7, {5, 1, -1}, {}};
    n.partial_lengths[0] = {2};
    const SearchSpace s = SearchSpace::layout({n});
    CHECK(s.num_choices(0) == 1 + 20 + 120);
    CHECK(layout_arrangements(5, 2).size() == 20);
    auto v = defaults(1);
    v[0] = 4, v[1] = 0;  // {4,0}: the two most-minor dims
    CHECK_FALSE(s.why_illegal(layout_config(v)));
    v[1] = 4;
    CHECK(contains_text(*s.why_illegal(layout_config(v)), "not distinct dims of 0..4"));
    v[1] = 0, v[2] = 1;  // 3 dims: not allowed
    CHECK(contains_text(*s.why_illegal(layout_config(v)), "(allowed: 2 or 5)"));
    Rng rng(9);
    for (int i = 0; i < 300; ++i) {
        const Config a = s.random_config(rng);
        CHECK_FALSE(s.why_illegal(a));
        const auto g = s.encode(a);
        REQUIRE(g);
        CHECK(s.decode(*g) == a);
        CHECK_FALSE(s.why_illegal(s.neighbor(a, rng)));
    }
}

TEST_CASE("why_illegal names non-permutations, wrong lengths and tensors the node lacks") {
    const SearchSpace s = hand_space();
    auto v = defaults(2);
    CHECK_FALSE(s.why_illegal(layout_config(v)));
    v[0] = 3, v[1] = 2, v[2] = 1, v[3] = 0;  // node 5 output {3,2,1,0}: legal
    CHECK_FALSE(s.why_illegal(layout_config(v)));
    v[3] = 1;  // {3,2,1,1}
    REQUIRE(s.why_illegal(layout_config(v)));
    CHECK(contains_text(*s.why_illegal(layout_config(v)), "not a permutation of 0..3"));
    v[3] = -1;  // {3,2,1}: 3 dims of a rank-4 tensor
    CHECK(contains_text(*s.why_illegal(layout_config(v)),
                        "lists 3 dims of a rank-4 tensor (allowed: 4)"));
    v = defaults(2);
    v[18 + 12] = 0;  // node 9 (a reshape) kernel {0}
    CHECK(
        contains_text(*s.why_illegal(layout_config(v)), "kernel {0}: the node has no such tensor"));
    v = defaults(2);
    v[1] = 0;  // a value after a -1
    CHECK(contains_text(*s.why_illegal(layout_config(v)), "slot 1 = 0 after a -1"));
    CHECK(contains_text(*s.why_illegal(layout_config(defaults(3))), "expected 2 nodes x 18 = 36"));
}

TEST_CASE("encode and decode are inverse, and every move keeps configs legal") {
    const SearchSpace s = hand_space();
    Rng rng(11);
    for (int i = 0; i < 500; ++i) {
        const Config a = s.random_config(rng), b = s.random_config(rng);
        REQUIRE_FALSE(s.why_illegal(a));
        const auto g = s.encode(a);
        REQUIRE(g);
        CHECK(s.decode(*g) == a);
        const Config n = s.neighbor(a, rng);
        CHECK_FALSE(s.why_illegal(n));
        CHECK_FALSE(n == a);
        const Config m = s.mutate(a, rng, 0.2);
        CHECK_FALSE(s.why_illegal(m));
        CHECK_FALSE(m == a);
        const Config x = s.crossover(a, b, rng);
        CHECK_FALSE(s.why_illegal(x));
        // Crossover takes each node's 18 values from one parent.
        for (size_t k = 0; k < 2; ++k) {
            const auto first = x.layout.begin() + static_cast<ptrdiff_t>(k * 18);
            CHECK(
                (std::equal(first, first + 18, a.layout.begin() + static_cast<ptrdiff_t>(k * 18)) ||
                 std::equal(first, first + 18, b.layout.begin() + static_cast<ptrdiff_t>(k * 18))));
        }
    }
    auto bad = defaults(2);
    bad[0] = 0, bad[1] = 0, bad[2] = 0, bad[3] = 0;
    CHECK_THROWS_WITH(s.neighbor(layout_config(bad), rng), doctest::Contains("not a permutation"));
}

TEST_CASE("a neighbor changes one slot of one node") {
    const SearchSpace s = hand_space();
    Rng rng(3);
    for (int i = 0; i < 200; ++i) {
        const Config a = s.random_config(rng);
        const Config n = s.neighbor(a, rng);
        int changed_slots = 0;
        for (size_t t = 0; t < 6; ++t)
            changed_slots += !std::equal(a.layout.begin() + static_cast<ptrdiff_t>(t * 6),
                                         a.layout.begin() + static_cast<ptrdiff_t>(t * 6 + 6),
                                         n.layout.begin() + static_cast<ptrdiff_t>(t * 6));
        CHECK(changed_slots == 1);
    }
}

TEST_CASE("tile bounds: near-even splits, multiples of 16 and powers of two below the extent") {
    // ceil(26 / s) = 26 13 9 7 6 5 4 4 3 3 3 3 2 ... 1; 16; 1 2 4 8 16
    CHECK(tile_bound_choices(26) == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 26});
    CHECK(tile_bound_choices(8) == std::vector<int64_t>{1, 2, 3, 4, 8});
    CHECK(tile_bound_choices(1) == std::vector<int64_t>{1});
    // The fixture's dense layer tiles its 125-unit dim by 16, 32, 48 and 64.
    const auto c125 = tile_bound_choices(125);
    for (int64_t b : {16, 32, 48, 64, 125, 63, 42, 1})
        CHECK(std::binary_search(c125.begin(), c125.end(), b));
    // fusion.232 of the fixture iterates [32, 26, 26, 192] with layout {3,0,2,1}: physical extents
    // 26, 26, 32/8 = 4 rows of 8, 192/128 -> 2 lanes of 128 (docs/hwmodel.md#tile-units).
    const SearchSpace s = SearchSpace::tile({}, {26, 26, 4, 2});
    CHECK(s.num_genes() == 4);
    CHECK(s.log10_size() == doctest::Approx(std::log10(12.0 * 12 * 3 * 2)));
    const Config d = s.default_config();  // whole extents
    hlo::TileSizeConfig t;
    t.output_bounds = {26, 26, 4, 2};
    const auto row = hlo::tile_config_features(t);
    CHECK(d.tile == std::vector<float>(row.begin(), row.end()));
    Config bad = d;
    bad.tile[8] = 10, bad.tile[14] = 10 + 26 + 4 + 2, bad.tile[15] = 10 * 26 * 4 * 2;
    REQUIRE(s.why_illegal(bad));
    CHECK(contains_text(*s.why_illegal(bad), "output bound 0 = 10 is not an allowed tile size"));
    bad = d;
    bad.tile[14] = 1;  // the sum no longer matches
    CHECK(contains_text(*s.why_illegal(bad), "not S0(6) of its bounds"));
    Rng rng(5);
    for (int i = 0; i < 300; ++i) {
        const Config a = s.random_config(rng);
        CHECK_FALSE(s.why_illegal(a));
        CHECK_FALSE(s.why_illegal(s.neighbor(a, rng)));
        CHECK_FALSE(s.why_illegal(s.mutate(a, rng, 0.3)));
        CHECK_FALSE(s.why_illegal(s.crossover(a, s.random_config(rng), rng)));
    }
}

TEST_CASE("propose: n distinct unseen configs, deterministic in the seed and the round") {
    const CandidateGenerator gen(hand_space(), 42);
    std::vector<Trial> trials;
    Rng rng(1);
    for (int i = 0; i < 20; ++i) trials.push_back({gen.space().random_config(rng), 1000.0 + i});
    trials.push_back({gen.space().default_config(), std::nullopt});  // a failed one
    const auto a = gen.propose(64, trials, 3);
    REQUIRE(a.size() == 64);
    std::unordered_set<std::string> keys;
    for (const Trial& t : trials) keys.insert(config_key(t.config));
    for (const Config& c : a) {
        CHECK_FALSE(gen.space().why_illegal(c));
        CHECK(keys.insert(config_key(c)).second);  // distinct and unseen
    }
    CHECK(gen.propose(64, trials, 3) == a);
    CHECK_FALSE(CandidateGenerator(hand_space(), 43).propose(64, trials, 3) == a);
    CHECK_FALSE(gen.propose(64, trials, 4) == a);
}

TEST_CASE("propose exhausts a small space, then returns nothing") {
    // One reshape with a rank-2 output and a rank-1 input: 3 x 2 = 6 configs.
    const CandidateGenerator gen(SearchSpace::layout({{0, {2, 1, -1}}}), 1);
    std::vector<Trial> trials{{gen.space().default_config(), 5.0}};
    const auto rest = gen.propose(10, trials, 0);
    CHECK(rest.size() == 5);
    for (const Config& c : rest) trials.push_back({c, 1.0});
    CHECK(gen.propose(10, trials, 1).empty());
}

TEST_CASE("generator options are checked") {
    GeneratorOptions o;
    o.local_share = 0.9;
    CHECK_THROWS_WITH(CandidateGenerator(hand_space(), 0, o),
                      doctest::Contains("sum to at most 1"));
    o = {};
    o.parents = 0;
    CHECK_THROWS_WITH(CandidateGenerator(hand_space(), 0, o), doctest::Contains("parents"));
}

TEST_CASE(
    "synthetic layout graph: the space derived from node features holds every recorded config") {
    synth::SynthOptions opt;
    opt.seed = 3;
    opt.min_nodes = 150;
    opt.max_nodes = 250;
    opt.configs = 40;
    opt.layout.partial_prob = 0;  // full permutations only (partial lists are outside the space)
    for (int64_t index = 0; index < 3; ++index) {
        const TuneGraph g = tune_graph(synth::synth_layout(opt, index).graph);
        const SearchSpace s = SearchSpace::build(g);
        REQUIRE(s.layout_nodes().size() == g.layout.node_config_ids.size());
        for (int64_t j = 0; j < g.num_recorded(); ++j) {
            const auto why = s.why_illegal(g.recorded_config(j));
            CHECK_MESSAGE(!why, g.name, " config ", j, ": ", why.value_or(""));
        }
    }
}

TEST_CASE("synthetic tile graph: every recorded config is in the space") {
    synth::SynthOptions opt;
    opt.seed = 5;
    opt.configs = 24;
    for (int64_t index = 0; index < 6; ++index) {
        const TuneGraph g = tune_graph(synth::synth_tile(opt, index).graph);
        const SearchSpace s = SearchSpace::build(g);
        int64_t legal = 0;
        for (int64_t j = 0; j < g.num_recorded(); ++j) {
            const auto why = s.why_illegal(g.recorded_config(j));
            legal += !why;
            if (why) MESSAGE(g.name, " config ", j, ": ", *why);
        }
        CHECK(legal == g.num_recorded());
        CHECK(s.feasible(s.default_config()));
    }
}

TEST_CASE(
    "real graphs: the space holds every recorded config, and the fixture's tiles follow the rule") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto root = data / "tpugraphs_npz" / "npz";
    for (const std::string rel :
         {"layout/xla/random/train/openai_v0_rnn_optimized.npz",
          "layout/xla/default/train/unet3d.npz", "layout/xla/random/valid/unet_3d.4x4.bf16.npz"}) {
        const TuneGraph g =
            load_tune_graph(root / rel, Task::kLayout, LabelPolicy::kRequirePositive);
        const SearchSpace s = SearchSpace::build(g);
        for (int64_t j = 0; j < g.num_recorded(); ++j) {
            const auto why = s.why_illegal(g.recorded_config(j));
            REQUIRE_MESSAGE(!why, rel, " config ", j, ": ", why.value_or(""));
        }
    }
    // op_tuning_data.pb: every recorded bound of a block whose length matches hwmodel's extents is
    // one of tile_bound_choices(extent) (the rule, not the recorded extents, decides).
    const auto tuning = hlo::read_tuning_file(data / "xla_tuning" / "op_tuning_data.pb");
    int64_t bounds = 0;
    for (const auto& mt : tuning.modules) {
        auto f = hlo::featurize_tile(mt, "op_tuning_data.pb");
        if (!f.graph) continue;
        const TuneGraph g = tune_graph(std::move(*f.graph));
        const SearchSpace s = SearchSpace::build(g);
        for (int64_t j = 0; j < g.num_recorded(); ++j) {
            const auto why = s.why_illegal(g.recorded_config(j));
            REQUIRE_MESSAGE(!why, g.name, " config ", j, ": ", why.value_or(""));
        }
        const hlo::HloModule m = hw::module_from_graph(g.tile);
        const hw::KernelModel model(m, hw::tpu_v3_core());
        for (const auto& run : mt.runs) {
            const std::pair<const std::vector<int64_t>*, const std::vector<int64_t>*> blocks[] = {
                {&run.tile.kernel_bounds, &model.kernel_units()},
                {&run.tile.output_bounds, &model.iteration_units()}};
            for (const auto& [rec, ext] : blocks) {
                if (rec->size() != ext->size()) continue;
                for (size_t i = 0; i < rec->size(); ++i, ++bounds) {
                    const auto ch = tile_bound_choices((*ext)[i]);
                    CHECK_MESSAGE(std::binary_search(ch.begin(), ch.end(), (*rec)[i]), g.name,
                                  " bound ", (*rec)[i], " of extent ", (*ext)[i]);
                }
            }
        }
    }
    CHECK(bounds > 2000);
}
