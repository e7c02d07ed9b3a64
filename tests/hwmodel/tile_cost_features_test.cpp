// Tile cost features (hwmodel/tile_cost_features.h, docs/model.md#tile-cost-features): on
// synthetic kernels every column is the KernelModel's own breakdown of that config (z columns the
// per-graph standardized logs, column 0 the analytical prior's z), invalid configs get the flag
// and finite values, and out-of-range quantities are bounded.
#include "hwmodel/tile_cost_features.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "hwmodel/from_graph.h"
#include "hwmodel/graph_estimates.h"
#include "hwmodel/synth/synth.h"

using namespace segrank;

namespace {

constexpr int64_t kM = hw::kTileCostFeatures;

synth::SynthOptions kernel_options() {
    synth::SynthOptions o;
    o.seed = 3;
    o.min_nodes = 20;
    o.max_nodes = 80;
    o.configs = 30;
    return o;
}

hlo::TileSizeConfig config_of(const TileGraph& g, int64_t j) {
    return hw::tile_config_from_features(g.config_feat.data() + j * kTileConfigDim);
}

}  // namespace

TEST_CASE("tile cost features of synthetic kernels are the kernel model's own breakdown") {
    const hw::HwParams hw = hw::tpu_v3_core();
    int hand_checked_waste = 0, mxu_kernels = 0;
    for (int64_t index = 0; index < 8; ++index) {  // the kernel kind varies with the index
        const TileGraph g = synth::synth_tile(kernel_options(), index).graph;
        CAPTURE(g.name);
        const std::vector<float> f = hw::tile_cost_features(g, hw);
        const int64_t c = g.num_configs();
        REQUIRE(static_cast<int64_t>(f.size()) == c * kM);
        const hlo::HloModule m = hw::module_from_graph(g);
        const hw::KernelModel km(m, hw);
        std::vector<std::vector<double>> comp(5);
        for (int64_t j = 0; j < c; ++j) {
            CAPTURE(j);
            hw::TileDetail d;
            const hw::Breakdown b = km.evaluate(config_of(g, j), &d);
            const hw::Breakdown plain = km.evaluate(config_of(g, j));  // detail changes nothing
            CHECK(b.total_ns == plain.total_ns);
            CHECK(b.hbm_bytes == plain.hbm_bytes);
            CHECK(b.steps == plain.steps);
            REQUIRE_FALSE(b.invalid);  // synthetic configs fit VMEM
            const float* row = f.data() + j * kM;
            CHECK(row[5] == doctest::Approx(b.mxu_ns / b.total_ns));
            CHECK(row[6] == doctest::Approx(b.vpu_ns / b.total_ns));
            CHECK(row[7] == doctest::Approx(b.hbm_ns / b.total_ns));
            CHECK(row[8] == doctest::Approx(b.overhead_ns / b.total_ns));
            // total = max(mxu, vpu, hbm) + overhead
            CHECK(std::max({row[5], row[6], row[7]}) + row[8] == doctest::Approx(1.0));
            CHECK(row[9] == doctest::Approx(std::log2(static_cast<double>(b.steps)) / 16));
            CHECK(row[10] == doctest::Approx(std::log2(d.waste)));
            CHECK(row[11] == doctest::Approx(d.vmem_bytes / static_cast<double>(hw.vmem_bytes)));
            CHECK(row[11] <= 1.0f);
            CHECK(row[12] == doctest::Approx(std::log2(b.hbm_bytes / d.hbm_bytes_once) / 4));
            CHECK(row[13] == 0.0f);
            const double v[5] = {b.total_ns, b.mxu_ns, b.vpu_ns, b.hbm_ns, b.overhead_ns};
            for (int k = 0; k < 5; ++k) comp[static_cast<size_t>(k)].push_back(v[k]);
            // Waste and steps by hand where the output bounds alone tile the kernel.
            const auto t = config_of(g, j);
            const auto& units = km.iteration_units();
            if (km.kernel_units().empty() && t.output_bounds.size() == units.size()) {
                double waste = 1, steps = 1;
                for (size_t i = 0; i < units.size(); ++i) {
                    const int64_t u = std::max<int64_t>(1, units[i]);
                    const int64_t bnd = std::clamp<int64_t>(t.output_bounds[i], 1, u);
                    const int64_t blocks = (u + bnd - 1) / bnd;
                    steps *= static_cast<double>(blocks);
                    waste *= static_cast<double>(blocks * bnd) / static_cast<double>(u);
                }
                CHECK(d.waste == doctest::Approx(waste));
                CHECK(static_cast<double>(b.steps) == steps);
                ++hand_checked_waste;
            }
        }
        if (comp[1][0] > 0) ++mxu_kernels;
        // Columns 0-4: the per-graph standardized logs; column 0 is the analytical prior's z.
        for (int k = 0; k < 5; ++k) {
            const std::vector<float> z = hw::standardized_log(comp[static_cast<size_t>(k)]);
            for (int64_t j = 0; j < c; ++j) CHECK(f[static_cast<size_t>(j * kM + k)] == z[j]);
        }
        const std::vector<float> prior = hw::standardized_log(hw::tile_estimates_ns(g, hw));
        double spread = 0;
        for (int64_t j = 0; j < c; ++j) {
            CHECK(f[static_cast<size_t>(j * kM)] == prior[static_cast<size_t>(j)]);
            spread = std::max(spread, std::abs(static_cast<double>(prior[j])));
        }
        CHECK(spread > 0.5);  // the configs differ
        for (float x : f) CHECK((std::isfinite(x) && std::abs(x) <= 8.0f));
    }
    CHECK(hand_checked_waste > 20);
    CHECK(mxu_kernels > 0);  // conv / dot kernels among them (MXU time > 0)
}

TEST_CASE(
    "invalid tile configs get the flag, 0 in the time columns and their real steps, waste, VMEM "
    "and re-read values") {
    const TileGraph g = synth::synth_tile(kernel_options(), 1).graph;
    const hw::HwParams hw = hw::tpu_v3_core();
    const hlo::HloModule m = hw::module_from_graph(g);
    const hw::KernelModel km(m, hw);
    std::vector<double> ws;
    for (int64_t j = 0; j < g.num_configs(); ++j) {
        hw::TileDetail d;
        km.evaluate(config_of(g, j), &d);
        ws.push_back(d.vmem_bytes);
    }
    std::vector<double> sorted = ws;
    std::sort(sorted.begin(), sorted.end());
    hw::HwParams small = hw;  // VMEM below the median working set: about half the configs overflow
    small.vmem_bytes = static_cast<int64_t>(sorted[sorted.size() / 2]) - 1;
    const std::vector<float> f = hw::tile_cost_features(g, small);
    const std::vector<float> f_big = hw::tile_cost_features(g, hw);
    const std::vector<double> est = hw::tile_estimates_ns(g, small);
    const std::vector<float> z = hw::standardized_log(est);
    int invalid = 0, valid = 0;
    for (int64_t j = 0; j < g.num_configs(); ++j) {
        CAPTURE(j);
        const float* row = f.data() + j * kM;
        const float* big = f_big.data() + j * kM;
        const bool bad = ws[static_cast<size_t>(j)] > static_cast<double>(small.vmem_bytes);
        CHECK(std::isinf(est[static_cast<size_t>(j)]) == bad);
        CHECK(row[13] == (bad ? 1.0f : 0.0f));
        CHECK(row[0] == z[static_cast<size_t>(j)]);  // standardized over the valid configs only
        if (bad) {
            for (int k = 0; k <= 8; ++k) CHECK(row[k] == 0.0f);
            CHECK(row[11] > 1.0f);
            ++invalid;
        } else {
            CHECK(row[11] <= 1.0f);
            ++valid;
        }
        for (int k : {9, 10, 12}) CHECK(row[k] == big[k]);  // computed before the VMEM check
        CHECK(row[11] == doctest::Approx(std::min(4.0, ws[static_cast<size_t>(j)] /
                                                           static_cast<double>(small.vmem_bytes))));
        for (int k = 0; k < kM; ++k) CHECK(std::isfinite(row[k]));
    }
    CHECK(invalid > 0);
    CHECK(valid > 1);
}

TEST_CASE("tile cost features bound extreme and undefined quantities") {
    const double inf = std::numeric_limits<double>::infinity();
    const hw::HwParams hw = hw::tpu_v3_core();
    std::vector<hw::TileCost> costs(3);
    costs[0].breakdown.total_ns = 0;  // no time at all: fractions 0
    costs[0].breakdown.steps = 0;
    costs[0].detail.waste = 1e9;
    costs[0].detail.vmem_bytes = 1e12;
    costs[0].detail.hbm_bytes_once = 0;  // re-read factor undefined: 0
    costs[0].breakdown.hbm_bytes = 5;
    costs[1].breakdown = {10, 0, 5, 2, 0, 0, 12, 1e30, int64_t{1} << 62, false};
    costs[1].detail = {0.5, -3, 1};  // waste < 1 and a negative working set: clamped to 0
    costs[2].breakdown.invalid = true;
    costs[2].breakdown.total_ns = inf;
    const std::vector<float> f = hw::tile_cost_features(costs, hw);
    REQUIRE(f.size() == 3 * kM);
    for (float x : f) CHECK(std::isfinite(x));
    const float* r0 = f.data();
    for (int k = 0; k <= 8; ++k) CHECK(r0[k] == 0.0f);  // one usable total: z = 0
    CHECK(r0[9] == 0.0f);
    CHECK(r0[10] == 8.0f);
    CHECK(r0[11] == 4.0f);
    CHECK(r0[12] == 0.0f);
    const float* r1 = f.data() + kM;
    CHECK(r1[5] == doctest::Approx(10.0 / 12.0));
    CHECK(r1[7] == doctest::Approx(5.0 / 12.0));
    CHECK(r1[8] == doctest::Approx(2.0 / 12.0));
    CHECK(r1[9] == doctest::Approx(62.0 / 16));
    CHECK(r1[10] == 0.0f);
    CHECK(r1[11] == 0.0f);
    CHECK(r1[12] == 4.0f);
    const float* r2 = f.data() + 2 * kM;
    CHECK(r2[13] == 1.0f);
    CHECK(hw::tile_cost_features(std::span<const hw::TileCost>{}, hw).empty());
}
