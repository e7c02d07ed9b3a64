// The analytical model's runtime estimate of every configuration of an npz graph
// (docs/hwmodel.md#uses): shared by `segrank hwmodel` (its submission and --scores) and the
// model's analytical prior (docs/model.md#analytical-prior).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph.h"
#include "data/hlo/module.h"
#include "hwmodel/hardware.h"
#include "hwmodel/module_cost.h"

namespace segrank::hw {

/// Estimated runtime (ns) of every config_feat row of a tile graph (KernelModel over
/// module_from_graph); +inf for a config the model marks invalid (working set above VMEM).
/// Throws segrank::Error when the graph cannot be costed.
std::vector<double> tile_estimates_ns(const TileGraph& g, const HwParams& hw);

/// A layout graph analysed once (module_from_graph, LayoutModel), then its configurations costed
/// chunk by chunk, so the node_config_feat rows need not all be in memory. Needs the graph's
/// structure and node features; its config rows are not read. Not thread-safe; not movable (the
/// model refers to the module).
class LayoutEstimator {
public:
    /// Throws segrank::Error when the graph cannot be costed.
    LayoutEstimator(const LayoutGraph& g, const HwParams& hw);
    LayoutEstimator(const LayoutEstimator&) = delete;
    LayoutEstimator& operator=(const LayoutEstimator&) = delete;

    /// Appends to `out` the estimate (ns) of each of the rows.size() / (nc * 18) configs in
    /// `rows` ([k, nc, 18] node_config_feat values). Throws segrank::Error when rows.size() is
    /// not a multiple of nc * 18.
    void estimate(std::span<const int8_t> rows, std::vector<double>& out);

private:
    int64_t num_config_nodes_ = 0;
    hlo::HloModule module_;
    LayoutModel model_;
};

/// Every configuration of a layout graph loaded with its node_config_feat rows.
std::vector<double> layout_estimates_ns(const LayoutGraph& g, const HwParams& hw);

}  // namespace segrank::hw
