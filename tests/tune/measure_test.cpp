// --measure parsing and the in-process backends (tune/measure.h): `recorded` returns the file's
// runtimes, `hwmodel` the analytical model with seeded log-normal noise.
#include "tune/measure.h"

#include <doctest/doctest.h>

#include <cmath>

#include "hwmodel/graph_estimates.h"
#include "hwmodel/hardware.h"
#include "hwmodel/synth/synth.h"
#include "tests/support/test_paths.h"
#include "tune/candidates.h"

using namespace segrank;
using namespace segrank::tune;
using segrank::test::contains_text;

namespace {

synth::SynthOptions tiny_synth() {
    synth::SynthOptions opt;
    opt.seed = 2;
    opt.min_nodes = 120;
    opt.max_nodes = 200;
    opt.configs = 16;
    return opt;
}

}  // namespace

TEST_CASE("--measure values parse, and anything else is refused with the valid forms") {
    CHECK(parse_measure_spec("recorded").kind == MeasureKind::kRecorded);
    CHECK(parse_measure_spec("hwmodel").kind == MeasureKind::kHwmodel);
    CHECK(parse_measure_spec("hwmodel:default").arg == "default");
    const MeasureSpec e = parse_measure_spec("exec:python3 h.py --x 'a b'");
    CHECK(e.kind == MeasureKind::kExec);
    CHECK(e.arg == "python3 h.py --x 'a b'");
    CHECK_THROWS_WITH(parse_measure_spec("simulate"),
                      doctest::Contains("--measure 'simulate': expected recorded, hwmodel, "
                                        "hwmodel:NAME or exec:CMD"));
    CHECK_THROWS_WITH(parse_measure_spec("exec:  "),
                      doctest::Contains("command after 'exec:' is empty"));
    CHECK_THROWS_WITH(parse_measure_spec("hwmodel:"),
                      doctest::Contains("name after 'hwmodel:' is empty"));
    CHECK_THROWS_WITH(parse_measure_spec("hwmodel:roofline"),
                      doctest::Contains("unknown cost family 'roofline'"));
}

TEST_CASE("recorded: a recorded config gets the file's runtime, another one a failure naming it") {
    const TuneGraph g = tune_graph(synth::synth_tile(tiny_synth(), 0).graph);
    const auto m = make_measurer("recorded", g, {});
    CHECK(m->name() == "recorded");
    std::vector<Config> batch;
    for (int64_t j = 0; j < g.num_recorded(); ++j) batch.push_back(g.recorded_config(j));
    Config odd = batch[0];
    odd.tile[8] += 1000, odd.tile[14] += 1000;  // not a recorded row
    batch.push_back(odd);
    const auto r = m->measure(batch);
    REQUIRE(r.size() == batch.size());
    for (int64_t j = 0; j < g.num_recorded(); ++j) {
        REQUIRE(r[static_cast<size_t>(j)].ok());
        CHECK(*r[static_cast<size_t>(j)].runtime_ns == doctest::Approx(g.recorded_runtime_ns(j)));
    }
    CHECK_FALSE(r.back().ok());
    CHECK(contains_text(r.back().error, "config not recorded in synth_tile_000000"));
    CHECK(contains_text(r.back().error, describe(odd)));
    // A row of the wrong shape is a caller error, not a failed measurement.
    Config short_row{{}, std::vector<float>(23, 1.0f)};
    CHECK_THROWS_WITH(
        m->measure(std::vector<Config>{short_row}),
        doctest::Contains("a tile config has 24 config_feat values, got a row of 23"));
}

TEST_CASE("recorded refuses a graph without runtimes (a test split)") {
    TileGraph tg = synth::synth_tile(tiny_synth(), 1).graph;
    std::fill(tg.config_runtime.begin(), tg.config_runtime.end(), 0);
    const TuneGraph g = tune_graph(std::move(tg));
    CHECK_THROWS_WITH(make_measurer({MeasureKind::kRecorded, ""}, g, {}),
                      doctest::Contains("--measure recorded needs recorded runtimes"));
}

TEST_CASE("hwmodel without noise equals the model estimates, for layout configs of the space too") {
    const TuneGraph t = tune_graph(synth::synth_tile(tiny_synth(), 2).graph);
    const auto est = hw::tile_estimates_ns(t.tile, hw::tpu_v3_core());
    const auto mt = make_measurer({MeasureKind::kHwmodel, ""}, t, {});
    std::vector<Config> batch;
    for (int64_t j = 0; j < t.num_recorded(); ++j) batch.push_back(t.recorded_config(j));
    const auto r = mt->measure(batch);
    for (size_t j = 0; j < batch.size(); ++j) {
        if (std::isinf(est[j])) {
            CHECK_FALSE(r[j].ok());
            CHECK(contains_text(r[j].error, "does not fit VMEM"));
        } else {
            REQUIRE(r[j].ok());
            CHECK(*r[j].runtime_ns == doctest::Approx(est[j]));
        }
    }

    const TuneGraph l = tune_graph(synth::synth_layout(tiny_synth(), 0).graph);
    const auto ml = make_measurer({MeasureKind::kHwmodel, "default"}, l, {});
    CHECK(ml->name() == "hwmodel:default");
    const auto lest = hw::layout_estimates_ns(l.layout, hw::tpu_v3_core());
    std::vector<Config> lb;
    for (int64_t j = 0; j < l.num_recorded(); ++j) lb.push_back(l.recorded_config(j));
    const auto lr = ml->measure(lb);
    for (size_t j = 0; j < lb.size(); ++j) {
        REQUIRE(lr[j].ok());
        CHECK(*lr[j].runtime_ns == doctest::Approx(lest[j]));
    }
    // A config the recorded file never had is measured too (the model is a simulator).
    Rng rng(4);
    const SearchSpace s = SearchSpace::build(l);
    const auto fresh = ml->measure(std::vector<Config>{s.random_config(rng)});
    CHECK(fresh[0].ok());
}

TEST_CASE("hwmodel noise: seeded, log-normal and fresh on each repeat of a config") {
    const TuneGraph l = tune_graph(synth::synth_layout(tiny_synth(), 1).graph);
    const Config c = l.recorded_config(0);
    const std::vector<Config> rep(200, c);
    MeasureOptions o;
    o.noise_sigma = 0.1;
    o.seed = 9;
    const auto a = make_measurer({MeasureKind::kHwmodel, ""}, l, o)->measure(rep);
    const auto b = make_measurer({MeasureKind::kHwmodel, ""}, l, o)->measure(rep);
    o.seed = 10;
    const auto other = make_measurer({MeasureKind::kHwmodel, ""}, l, o)->measure(rep);
    const double clean = *make_measurer({MeasureKind::kHwmodel, ""}, l, {})
                              ->measure(std::vector<Config>{c})[0]
                              .runtime_ns;
    double sum = 0, sq = 0;
    for (size_t i = 0; i < rep.size(); ++i) {
        CHECK(*a[i].runtime_ns == *b[i].runtime_ns);  // same seed, same draws
        const double z = std::log(*a[i].runtime_ns / clean);
        sum += z, sq += z * z;
    }
    CHECK(*a[0].runtime_ns != *a[1].runtime_ns);      // repeats draw again
    CHECK(*a[0].runtime_ns != *other[0].runtime_ns);  // another seed, other draws
    const double mean = sum / 200, sd = std::sqrt(sq / 200 - mean * mean);
    CHECK(std::abs(mean) < 0.03);
    CHECK(sd == doctest::Approx(0.1).epsilon(0.2));
}

TEST_CASE("measurer options out of range are refused naming the option") {
    const TuneGraph l = tune_graph(synth::synth_layout(tiny_synth(), 1).graph);
    MeasureOptions o;
    o.noise_sigma = -1;
    CHECK_THROWS_WITH(make_measurer({MeasureKind::kHwmodel, ""}, l, o),
                      doctest::Contains("--noise -1"));
    o = {};
    o.timeout_s = 0;
    CHECK_THROWS_WITH(make_measurer({MeasureKind::kExec, "cat"}, l, o),
                      doctest::Contains("--timeout 0"));
}
