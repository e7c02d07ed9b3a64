// Constructors of the cost families, one per file (hwmodel/costs/<family>.cpp); the registry
// (cost_family.cpp) switches over CostFamily to call them (docs/hwmodel.md#cost-families).
#pragma once
#include <memory>
#include <vector>

#include "hwmodel/costs/cost_family.h"

namespace segrank::hw::costs {

std::unique_ptr<LayoutCostFamily> make_propagate(const hlo::HloModule& module,
                                                 const std::vector<int64_t>& config_nodes,
                                                 const HwParams& hw, const CostOptions& options);
std::unique_ptr<LayoutCostFamily> make_copy_bound(const hlo::HloModule& module,
                                                  const std::vector<int64_t>& config_nodes,
                                                  const HwParams& hw, const CostOptions& options);
std::unique_ptr<LayoutCostFamily> make_mxu_padded(const hlo::HloModule& module,
                                                  const std::vector<int64_t>& config_nodes,
                                                  const HwParams& hw, const CostOptions& options);
std::unique_ptr<LayoutCostFamily> make_memory_v5(const hlo::HloModule& module,
                                                 const std::vector<int64_t>& config_nodes,
                                                 const HwParams& hw, const CostOptions& options);
std::unique_ptr<LayoutCostFamily> make_fusion_aware(const hlo::HloModule& module,
                                                    const std::vector<int64_t>& config_nodes,
                                                    const HwParams& hw, const CostOptions& options);

std::unique_ptr<TileCostFamily> make_vmem_spill(const KernelModel& kernel, const HwParams& hw);
std::unique_ptr<TileCostFamily> make_pipeline(const KernelModel& kernel, const HwParams& hw);
std::unique_ptr<TileCostFamily> make_step_overhead(const KernelModel& kernel, const HwParams& hw);

/// Bytes moved to and from HBM by a kernel (ns of one read or write of `bytes` is hbm_ns); the
/// common roofline of the local layout families: max(mxu, vpu, hbm(bytes)) + ici + overhead.
double kernel_roofline_ns(const OpWork& w, double bytes, const HwParams& hw);

/// Padded bytes (tpu_v3 tiling) of `out` plus each distinct operand of `ins` read at `operands`.
double kernel_bytes(const hlo::Instruction& ins, const hlo::Shape& out,
                    const std::vector<const hlo::Shape*>& operands, bool pad);

/// `shape` with the (complete) minor_to_major of `like` (same rank).
hlo::Shape with_layout_of(const hlo::Shape& shape, const hlo::Shape& like);

}  // namespace segrank::hw::costs

namespace segrank::hw::costs {
/// Bytes of `shape` under memory_v5's tiling (docs/hwmodel.md#memory-v5): rank >= 2 pads the
/// second-minor dim to 8 x packing and the minor dim to 128; rank 1 pads to 1024 elements; scalars
/// take max(4, element bytes); tuples sum.
double v5_tiled_bytes(const hlo::Shape& shape);
}  // namespace segrank::hw::costs
