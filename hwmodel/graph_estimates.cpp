// Per-config runtime estimates of npz graphs (tile: kernel model, layout: module model).
#include "hwmodel/graph_estimates.h"

#include <limits>

#include "gnn/core/check.h"
#include "hwmodel/from_graph.h"
#include "hwmodel/kernel_cost.h"

namespace segrank::hw {

std::vector<double> tile_estimates_ns(const TileGraph& g, const HwParams& hw) {
    const hlo::HloModule m = module_from_graph(g);
    const KernelModel model(m, hw);
    std::vector<double> out;
    out.reserve(static_cast<size_t>(g.num_configs()));
    for (int64_t j = 0; j < g.num_configs(); ++j) {
        const auto b =
            model.evaluate(tile_config_from_features(g.config_feat.data() + j * kTileConfigDim));
        out.push_back(b.invalid ? std::numeric_limits<double>::infinity() : b.total_ns);
    }
    return out;
}

LayoutEstimator::LayoutEstimator(const LayoutGraph& g, const HwParams& hw)
    : num_config_nodes_(g.num_config_nodes()),
      module_(module_from_graph(g)),
      model_(module_, g.node_config_ids, hw) {}

void LayoutEstimator::estimate(std::span<const int8_t> rows, std::vector<double>& out) {
    const auto stride = static_cast<size_t>(num_config_nodes_) * kLayoutConfigDim;
    SEGRANK_CHECK(stride > 0 && rows.size() % stride == 0, "LayoutEstimator: ", rows.size(),
                  " config values are not a multiple of nc x 18 = ", stride);
    for (size_t b = 0; b < rows.size(); b += stride)
        out.push_back(model_.evaluate_ns(rows.data() + b));
}

std::vector<double> layout_estimates_ns(const LayoutGraph& g, const HwParams& hw) {
    LayoutEstimator e(g, hw);
    std::vector<double> out;
    out.reserve(static_cast<size_t>(g.num_configs()));
    e.estimate(g.node_config_feat, out);
    return out;
}

}  // namespace segrank::hw
