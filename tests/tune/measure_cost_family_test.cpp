// --measure hwmodel:NAME (tune/measure.h): a config measured under cost family NAME is the family's
// cost (hw::make_tile_cost / hw::make_layout_cost on the module rebuilt from the graph record),
// with the noise of plain `hwmodel`; families of the other collection and unknown names are refused
// with the valid names.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gnn/core/rng.h"
#include "hwmodel/costs/cost_family.h"
#include "hwmodel/from_graph.h"
#include "hwmodel/hardware.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/synth/synth.h"
#include "tests/support/test_paths.h"
#include "tune/candidates.h"
#include "tune/measure.h"

using namespace segrank;
using namespace segrank::tune;
using segrank::test::contains_text;

namespace {

synth::SynthOptions tiny_synth() {
    synth::SynthOptions opt;
    opt.seed = 3;
    opt.min_nodes = 120;
    opt.max_nodes = 200;
    opt.configs = 12;
    return opt;
}

const std::vector<std::string> kLayoutFamilies = {"propagate", "copy_bound", "mxu_padded",
                                                  "memory_v5", "fusion_aware"};
const std::vector<std::string> kTileFamilies = {"vmem_spill", "pipeline", "step_overhead"};

// The recorded configs of `g` and, for a layout graph, a few fresh ones from its search space.
std::vector<Config> some_configs(const TuneGraph& g) {
    std::vector<Config> out;
    for (int64_t j = 0; j < g.num_recorded(); ++j) out.push_back(g.recorded_config(j));
    if (g.task == Task::kLayout) {
        Rng rng(11);
        const SearchSpace s = SearchSpace::build(g);
        for (int i = 0; i < 4; ++i) out.push_back(s.random_config(rng));
    }
    return out;
}

// Noise-free runtimes of `configs` measured by --measure `spec` (every one must succeed).
std::vector<double> measured(const std::string& spec, const TuneGraph& g,
                             const std::vector<Config>& configs, const MeasureOptions& o = {}) {
    const auto r = make_measurer(spec, g, o)->measure(configs);
    std::vector<double> out;
    for (const Measurement& m : r) {
        REQUIRE_MESSAGE(m.ok(), spec, ": ", m.error);
        out.push_back(*m.runtime_ns);
    }
    return out;
}

}  // namespace

TEST_CASE("hwmodel:NAME without noise is the tile family's cost on the graph's rebuilt kernel") {
    const TuneGraph g = tune_graph(synth::synth_tile(tiny_synth(), 0).graph);
    const std::vector<Config> configs = some_configs(g);
    const hlo::HloModule module = hw::module_from_graph(g.tile);
    const hw::KernelModel kernel(module, hw::tpu_v3_core());
    const std::vector<double> tpu = measured("hwmodel", g, configs);
    for (const std::string& name : kTileFamilies) {
        CAPTURE(name);
        const auto cost =
            hw::make_tile_cost(hw::parse_cost_family(name), kernel, hw::tpu_v3_core());
        const std::vector<double> got = measured("hwmodel:" + name, g, configs);
        bool differs = false;  // the family is really used, not tpu_v3
        for (size_t i = 0; i < configs.size(); ++i) {
            const double want =
                cost->evaluate_ns(hw::tile_config_from_features(configs[i].tile.data()));
            CHECK(got[i] == want);
            differs = differs || std::abs(got[i] - tpu[i]) > 1e-6 * tpu[i];
        }
        CHECK(differs);
    }
    // tpu_v3 by name is plain hwmodel.
    CHECK(measured("hwmodel:tpu_v3", g, configs) == tpu);
}

TEST_CASE("hwmodel:NAME without noise is the layout family's cost on the graph's rebuilt module") {
    const TuneGraph g = tune_graph(synth::synth_layout(tiny_synth(), 0).graph);
    const std::vector<Config> configs = some_configs(g);
    const hlo::HloModule module = hw::module_from_graph(g.layout);
    const std::vector<double> tpu = measured("hwmodel", g, configs);
    for (const std::string& name : kLayoutFamilies) {
        CAPTURE(name);
        const auto cost = hw::make_layout_cost(hw::parse_cost_family(name), module,
                                               g.layout.node_config_ids, hw::tpu_v3_core());
        const std::vector<double> got = measured("hwmodel:" + name, g, configs);
        bool differs = false;
        for (size_t i = 0; i < configs.size(); ++i) {
            CHECK(got[i] == cost->evaluate_ns(configs[i].layout.data()));
            differs = differs || std::abs(got[i] - tpu[i]) > 1e-6 * tpu[i];
        }
        CHECK(differs);
    }
    CHECK(measured("hwmodel:tpu_v3", g, configs) == tpu);
    CHECK(measured("hwmodel:default", g, configs) == tpu);
}

TEST_CASE("hwmodel:NAME draws the same seeded log-normal noise as hwmodel") {
    const TuneGraph g = tune_graph(synth::synth_layout(tiny_synth(), 1).graph);
    const std::vector<Config> rep(3, g.recorded_config(1));
    MeasureOptions o;
    o.noise_sigma = 0.2;
    o.seed = 5;
    const auto clean_tpu = measured("hwmodel", g, rep);
    const auto clean_fam = measured("hwmodel:memory_v5", g, rep);
    const auto tpu = measured("hwmodel", g, rep, o);
    const auto fam = measured("hwmodel:memory_v5", g, rep, o);
    CHECK(make_measurer("hwmodel:memory_v5", g, o)->name() == "hwmodel:memory_v5");
    for (size_t i = 0; i < rep.size(); ++i)  // the same factor exp(sigma z_k) per repeat
        CHECK(fam[i] / clean_fam[i] == doctest::Approx(tpu[i] / clean_tpu[i]).epsilon(1e-12));
    CHECK(fam[0] != fam[1]);
}

TEST_CASE("each cost family measures its own collection and is refused for the other") {
    const TuneGraph t = tune_graph(synth::synth_tile(tiny_synth(), 1).graph);
    const TuneGraph l = tune_graph(synth::synth_layout(tiny_synth(), 2).graph);
    CHECK_NOTHROW(make_measurer("hwmodel:tpu_v3", t, {}));
    CHECK_NOTHROW(make_measurer("hwmodel:tpu_v3", l, {}));
    for (const std::string& name : kTileFamilies) {
        CAPTURE(name);
        CHECK(parse_measure_spec("hwmodel:" + name).arg == name);
        CHECK_NOTHROW(make_measurer("hwmodel:" + name, t, {}));
        CHECK_THROWS_WITH(make_measurer("hwmodel:" + name, l, {}),
                          doctest::Contains(doctest::String(
                              ("cost family '" + name +
                               "' is a tile cost; it cannot measure the layout graph "
                               "synth_layout_000002; valid names for layout graphs: "
                               "tpu_v3, propagate, copy_bound, mxu_padded, "
                               "memory_v5, fusion_aware")
                                  .c_str())));
    }
    for (const std::string& name : kLayoutFamilies) {
        CAPTURE(name);
        CHECK(parse_measure_spec("hwmodel:" + name).arg == name);
        CHECK_NOTHROW(make_measurer("hwmodel:" + name, l, {}));
        CHECK_THROWS_WITH(make_measurer("hwmodel:" + name, t, {}),
                          doctest::Contains(doctest::String(
                              ("cost family '" + name +
                               "' is a layout cost; it cannot measure the tile graph "
                               "synth_tile_000001; valid names for tile graphs: "
                               "tpu_v3, vmem_spill, pipeline, step_overhead")
                                  .c_str())));
    }
}

TEST_CASE("an unknown cost family is refused listing the names of both collections") {
    CHECK_THROWS_WITH(parse_measure_spec("hwmodel:tpu_v4"),
                      doctest::Contains("--measure 'hwmodel:tpu_v4': unknown cost family "
                                        "'tpu_v4'; valid names for layout graphs: tpu_v3, "
                                        "propagate, copy_bound, mxu_padded, memory_v5, "
                                        "fusion_aware; for tile graphs: tpu_v3, vmem_spill, "
                                        "pipeline, step_overhead"));
    // Names are exact (no case folding, no --cost-style prefix).
    CHECK_THROWS_WITH(parse_measure_spec("hwmodel:Pipeline"),
                      doctest::Contains("unknown cost family 'Pipeline'"));
}
