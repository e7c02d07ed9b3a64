// Model-free baselines (tune/search.h): simulated annealing and random search, driven by the
// hwmodel and recorded backends on synthetic graphs.
#include "tune/search.h"

#include <doctest/doctest.h>

#include <cmath>
#include <iterator>
#include <memory>
#include <unordered_set>
#include <vector>

#include "hwmodel/synth/synth.h"

using namespace segrank;
using namespace segrank::tune;

namespace {

synth::SynthOptions tiny_synth() {
    synth::SynthOptions opt;
    opt.seed = 4;
    opt.min_nodes = 120;
    opt.max_nodes = 200;
    opt.configs = 16;
    return opt;
}

void check_trace(const SearchTrace& t, int64_t budget) {
    CHECK(static_cast<int64_t>(t.trials.size()) == budget);
    REQUIRE(t.best_so_far.size() == t.trials.size());
    std::unordered_set<std::string> keys;
    double best = INFINITY;
    for (size_t i = 0; i < t.trials.size(); ++i) {
        CHECK(keys.insert(config_key(t.trials[i].config)).second);  // never measured twice
        if (t.trials[i].runtime_ns) best = std::min(best, *t.trials[i].runtime_ns);
        CHECK(t.best_so_far[i] == best);
    }
    REQUIRE(t.best);
    CHECK(*t.trials[static_cast<size_t>(*t.best)].runtime_ns == best);
}

}  // namespace

TEST_CASE(
    "annealing: budget respected, no repeats, best-so-far consistent, deterministic by seed") {
    const TuneGraph g = tune_graph(synth::synth_layout(tiny_synth(), 0).graph);
    const SearchSpace space = SearchSpace::build(g);
    MeasureOptions mo;
    mo.noise_sigma = 0.02;
    AnnealOptions ao;
    ao.budget = 60;
    ao.seed = 1;
    ao.batch = RoundSchedule::fixed(4);
    const auto run = [&](uint64_t seed) {
        auto m = make_measurer({MeasureKind::kHwmodel, ""}, g, mo);
        AnnealOptions o = ao;
        o.seed = seed;
        return simulated_annealing(space, *m, o);
    };
    const SearchTrace a = run(1), b = run(1), c = run(2);
    check_trace(a, 60);
    CHECK(a.trials[0].config == space.default_config());
    for (size_t i = 0; i < a.trials.size(); ++i) {
        CHECK(a.trials[i].config == b.trials[i].config);
        CHECK(a.trials[i].runtime_ns == b.trials[i].runtime_ns);
    }
    bool differ = false;
    for (size_t i = 1; i < a.trials.size(); ++i)
        differ = differ || !(a.trials[i].config == c.trials[i].config);
    CHECK(differ);
    CHECK(a.best_so_far.back() <= a.best_so_far.front());
}

TEST_CASE("annealing and random search improve on the default of a synthetic tile kernel") {
    synth::SynthOptions opt = tiny_synth();
    int improved_sa = 0, improved_rs = 0, kernels = 0;
    for (int64_t index = 0; index < 6; ++index) {
        const TuneGraph g = tune_graph(synth::synth_tile(opt, index).graph);
        const SearchSpace space = SearchSpace::build(g);
        if (space.log10_size() < 1.5) continue;  // too small to search
        ++kernels;
        auto m = make_measurer({MeasureKind::kHwmodel, ""}, g, {});
        AnnealOptions ao;
        ao.budget = 40;
        ao.seed = 3;
        const SearchTrace sa = simulated_annealing(space, *m, ao);
        const SearchTrace rs = random_search(space, *m, 40, 3);
        check_trace(sa, std::min<int64_t>(40, static_cast<int64_t>(sa.trials.size())));
        check_trace(rs, std::min<int64_t>(40, static_cast<int64_t>(rs.trials.size())));
        improved_sa += sa.best_so_far.back() < sa.best_so_far.front();
        improved_rs += rs.best_so_far.back() < rs.best_so_far.front();
        MESSAGE(g.name, ": 10^", space.log10_size(), " configs, default ", sa.best_so_far.front(),
                " ns, annealing ", sa.best_so_far.back(), " ns, random ", rs.best_so_far.back(),
                " ns");
    }
    REQUIRE(kernels >= 3);
    CHECK(improved_sa >= 1);
    CHECK(improved_rs >= 1);
}

TEST_CASE("annealing records failed measurements and never moves to them") {
    // `recorded` fails every config the file does not hold: most neighbors fail.
    const TuneGraph g = tune_graph(synth::synth_layout(tiny_synth(), 1).graph);
    const SearchSpace space = SearchSpace::build(g);
    auto m = make_measurer({MeasureKind::kRecorded, ""}, g, {});
    AnnealOptions ao;
    ao.budget = 30;
    const SearchTrace t = simulated_annealing(space, *m, ao);
    CHECK(t.trials.size() == 30);
    int failed = 0;
    for (const Trial& tr : t.trials) failed += !tr.runtime_ns;
    CHECK(failed > 0);
    REQUIRE(t.best);
    CHECK(t.trials[static_cast<size_t>(*t.best)].runtime_ns);
}

TEST_CASE("baselines stop when the space is exhausted, and check their options") {
    // One reshape: output rank 2, input rank 1 -> 3 x 2 = 6 configs.
    const SearchSpace space = SearchSpace::layout({{0, {2, 1, -1}, {}}});
    // A stand-in backend: a measurer that returns the number of set values + 1 (ns).
    struct Count : Measurer {
        std::vector<Measurement> measure(std::span<const Config> cs) override {
            std::vector<Measurement> out;
            for (const Config& c : cs) {
                double n = 1;
                for (int8_t v : c.layout) n += v >= 0;
                out.push_back(Measurement::success(n));
            }
            return out;
        }
        std::string name() const override { return "count"; }
    } count;
    AnnealOptions ao;
    ao.budget = 50;
    const SearchTrace t = simulated_annealing(space, count, ao);
    CHECK(t.trials.size() == 6);
    CHECK(random_search(space, count, 50, 0, RoundSchedule::fixed(4)).trials.size() == 6);
    ao.budget = 0;
    CHECK_THROWS_WITH(simulated_annealing(space, count, ao), doctest::Contains("budget 0"));
    ao.budget = 5;
    ao.t_end = 0;
    CHECK_THROWS_WITH(simulated_annealing(space, count, ao),
                      doctest::Contains("t_start >= t_end > 0"));
}

TEST_CASE(
    "a growing round schedule holds ceil(measured / 10) configs, at least 2, at most the cap") {
    const RoundSchedule grow = RoundSchedule::growing(5);
    const int64_t measured[] = {0, 1, 10, 19, 20, 21, 30, 31, 41, 50, 51, 99, 1000};
    const int64_t want[] = {2, 2, 2, 2, 2, 3, 3, 4, 5, 5, 5, 5, 5};
    for (size_t i = 0; i < std::size(measured); ++i) {
        INFO("measured ", measured[i]);
        CHECK(grow.size(measured[i]) == want[i]);
    }
    CHECK(RoundSchedule::growing(2).size(500) == 2);
    CHECK(RoundSchedule::fixed(3).size(0) == 3);
    CHECK(RoundSchedule::fixed(3).size(500) == 3);
    CHECK(parse_round_schedule("grow").cap == RoundSchedule::kGrowCap);
    CHECK(parse_round_schedule("grow").grow);
    CHECK(parse_round_schedule("grow:3").spelling() == "grow:3");
    CHECK(parse_round_schedule("7").spelling() == "7");
    CHECK_FALSE(parse_round_schedule("7").grow);
    for (const char* bad :
         {"0", "-2", "grow:1", "grow:", "grow:x", "2x", "", "grow3", "99999999999999999999"}) {
        INFO(bad);
        CHECK_THROWS_WITH(
            parse_round_schedule(bad, "--batch"),
            doctest::Contains("--batch: expected a count of configs per round >= 1, grow"));
        CHECK_THROWS_WITH(parse_round_schedule(bad, "--batch"),
                          doctest::Contains((std::string("got '") + bad + "'").c_str()));
    }
}

TEST_CASE("random search and annealing measure rounds of the growing schedule's size") {
    const TuneGraph g = tune_graph(synth::synth_layout(tiny_synth(), 0).graph);
    const SearchSpace space = SearchSpace::build(g);
    // A measurer that keeps the size of each call (one call = one round).
    struct Sizes : Measurer {
        std::unique_ptr<Measurer> inner;
        std::vector<int64_t> sizes;
        std::vector<Measurement> measure(std::span<const Config> cs) override {
            sizes.push_back(static_cast<int64_t>(cs.size()));
            return inner->measure(cs);
        }
        std::string name() const override { return "sizes"; }
    };
    const RoundSchedule grow = RoundSchedule::growing(4);
    Sizes rs;
    rs.inner = make_measurer({MeasureKind::kHwmodel, ""}, g, {});
    REQUIRE(random_search(space, rs, 40, 1, grow).trials.size() == 40);
    // The default and one draw, then rounds of 2 up to 22 measured, 3 up to 31, 4, and the rest.
    CHECK(rs.sizes == std::vector<int64_t>{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 4, 4, 1});
    Sizes sa;
    sa.inner = make_measurer({MeasureKind::kHwmodel, ""}, g, {});
    AnnealOptions ao;
    ao.budget = 40;
    ao.batch = grow;
    REQUIRE(simulated_annealing(space, sa, ao).trials.size() == 40);
    // The default alone, then rounds of the schedule after 1, 3, ... measurements.
    CHECK(sa.sizes == std::vector<int64_t>{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 3});
}
