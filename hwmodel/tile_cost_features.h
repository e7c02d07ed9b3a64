// Per-config features of the analytical kernel model for the tile GNN
// (docs/model.md#tile-cost-features): the Breakdown components of KernelModel::evaluate (log,
// standardized per graph, and as fractions of the total), grid steps, partial-tile waste, VMEM
// working set, HBM re-reads and the invalid flag, every value finite and O(1).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph.h"
#include "hwmodel/breakdown.h"
#include "hwmodel/hardware.h"
#include "hwmodel/kernel_cost.h"

namespace segrank::hw {

/// Features per tile config (the columns of docs/model.md#tile-cost-features, in this order):
///  0-4  z of log total, mxu, vpu, hbm, overhead ns (standardized_log over the graph's configs)
///  5-8  mxu, vpu, hbm, overhead ns / total ns
///  9    log2(grid steps) / 16
///  10   log2(partial-tile waste), at most 8
///  11   VMEM working set / vmem_bytes, at most 4
///  12   log2(HBM bytes / bytes moved once) / 4, at most 4
///  13   1 if the config is invalid (working set above VMEM), else 0
/// Invalid configs get 0 in columns 0-8 (0 = the graph mean in 0-4) and their real 9-12.
inline constexpr int64_t kTileCostFeatures = 14;

/// z_i = (log x_i - mean) / sd, mean and sd (population) over the x_i that are finite and > 0;
/// the others get 0 (the mean), and every z is 0 when fewer than two values qualify or sd is 0.
std::vector<float> standardized_log(std::span<const double> x);

/// The per-config quantities the features are made of (one KernelModel::evaluate).
struct TileCost {
    Breakdown breakdown;
    TileDetail detail;
};

/// Features [configs.size(), kTileCostFeatures] (row-major) of the evaluated configs of one graph,
/// on hardware `hw` (its vmem_bytes scales column 11). Per-graph standardization is over `configs`.
std::vector<float> tile_cost_features(std::span<const TileCost> configs, const HwParams& hw);

/// tile_cost_features of every config_feat row of a tile graph (KernelModel over
/// module_from_graph, as tile_estimates_ns). Throws segrank::Error when the graph cannot be costed.
std::vector<float> tile_cost_features(const TileGraph& g, const HwParams& hw);

}  // namespace segrank::hw
