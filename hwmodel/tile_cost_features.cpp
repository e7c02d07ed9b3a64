// Per-config kernel-model features of tile graphs (docs/model.md#tile-cost-features).
#include "hwmodel/tile_cost_features.h"

#include <algorithm>
#include <cmath>

#include "hwmodel/from_graph.h"

namespace segrank::hw {

std::vector<float> standardized_log(std::span<const double> x) {
    std::vector<float> z(x.size(), 0.0f);
    auto usable = [](double e) { return std::isfinite(e) && e > 0.0; };
    double sum = 0.0;
    int64_t n = 0;
    for (double e : x)
        if (usable(e)) {
            sum += std::log(e);
            ++n;
        }
    if (n < 2) return z;
    const double mean = sum / static_cast<double>(n);
    double ss = 0.0;
    for (double e : x)
        if (usable(e)) ss += (std::log(e) - mean) * (std::log(e) - mean);
    const double sd = std::sqrt(ss / static_cast<double>(n));
    if (!(sd > 0.0) || !std::isfinite(sd)) return z;
    for (size_t i = 0; i < x.size(); ++i)
        if (usable(x[i])) z[i] = static_cast<float>((std::log(x[i]) - mean) / sd);
    return z;
}

namespace {

// v clamped to [lo, hi]; a value that is not finite (or NaN) becomes lo.
float bounded(double v, double lo, double hi) {
    if (!std::isfinite(v)) return static_cast<float>(lo);
    return static_cast<float>(std::clamp(v, lo, hi));
}

}  // namespace

std::vector<float> tile_cost_features(std::span<const TileCost> configs, const HwParams& hw) {
    constexpr int64_t m = kTileCostFeatures;
    const size_t k = configs.size();
    std::vector<float> out(k * m, 0.0f);
    // Columns 0-4: the log components standardized over the valid configs (invalid ones: NaN,
    // which standardized_log skips and leaves at 0).
    std::vector<double> comp(k);
    for (int64_t c = 0; c < 5; ++c) {
        for (size_t i = 0; i < k; ++i) {
            const Breakdown& b = configs[i].breakdown;
            const double v[5] = {b.total_ns, b.mxu_ns, b.vpu_ns, b.hbm_ns, b.overhead_ns};
            comp[i] = b.invalid ? std::nan("") : v[c];
        }
        const std::vector<float> z = standardized_log(comp);
        for (size_t i = 0; i < k; ++i) out[i * m + static_cast<size_t>(c)] = z[i];
    }
    for (size_t i = 0; i < k; ++i) {
        const Breakdown& b = configs[i].breakdown;
        const TileDetail& d = configs[i].detail;
        float* row = out.data() + i * m;
        if (!b.invalid && b.total_ns > 0 && std::isfinite(b.total_ns)) {
            row[5] = bounded(b.mxu_ns / b.total_ns, 0, 1);
            row[6] = bounded(b.vpu_ns / b.total_ns, 0, 1);
            row[7] = bounded(b.hbm_ns / b.total_ns, 0, 1);
            row[8] = bounded(b.overhead_ns / b.total_ns, 0, 1);
        }
        row[9] = bounded(std::log2(static_cast<double>(std::max<int64_t>(1, b.steps))) / 16, 0, 4);
        row[10] = bounded(std::log2(std::max(1.0, d.waste)), 0, 8);
        row[11] = bounded(d.vmem_bytes / static_cast<double>(hw.vmem_bytes), 0, 4);
        row[12] = d.hbm_bytes_once > 0
                      ? bounded(std::log2(std::max(1.0, b.hbm_bytes / d.hbm_bytes_once)) / 4, 0, 4)
                      : 0.0f;
        row[13] = b.invalid ? 1.0f : 0.0f;
    }
    return out;
}

std::vector<float> tile_cost_features(const TileGraph& g, const HwParams& hw) {
    const hlo::HloModule module = module_from_graph(g);
    const KernelModel model(module, hw);
    std::vector<TileCost> costs(static_cast<size_t>(g.num_configs()));
    for (int64_t j = 0; j < g.num_configs(); ++j) {
        TileCost& c = costs[static_cast<size_t>(j)];
        c.breakdown = model.evaluate(
            tile_config_from_features(g.config_feat.data() + j * kTileConfigDim), &c.detail);
    }
    return tile_cost_features(costs, hw);
}

}  // namespace segrank::hw
