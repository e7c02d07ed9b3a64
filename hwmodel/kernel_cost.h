// A fused TPU kernel under a tile-size configuration (docs/hwmodel.md#kernels-under-a-tile-config):
// grid steps, VMEM check, HBM traffic with re-reads, roofline max plus per-step and per-kernel
// overheads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/hlo/module.h"
#include "hwmodel/breakdown.h"
#include "hwmodel/hardware.h"
#include "hwmodel/module_index.h"
#include "hwmodel/op_cost.h"

namespace segrank::hw {

/// Work of one instruction of a kernel, for the explain table.
struct NodeCost {
    std::string name;  ///< instruction name
    std::string opcode;
    std::string shape;  ///< e.g. "f32[32,26,26,192]{3,0,2,1}"
    OpWork work;        ///< on the full (unblocked) shapes
};

/// Quantities of one KernelModel::evaluate besides its Breakdown
/// (docs/model.md#tile-cost-features). Set for invalid configs too (they are computed before the
/// VMEM check).
struct TileDetail {
    double waste = 1;       ///< partial-tile waste factor >= 1 (padded blocks / iteration space)
    double vmem_bytes = 0;  ///< single-buffered working set: blocks + f32 accumulator (bytes)
    double hbm_bytes_once = 0;  ///< HBM bytes if every input and output moved once (no re-reads,
                                ///< no waste); Breakdown::hbm_bytes / this = the re-read factor
};

/// Block geometry of one tile configuration (docs/hwmodel.md#kernels-under-a-tile-config), shared
/// by KernelModel::evaluate and the tile cost families (docs/hwmodel.md#cost-families).
struct TileGeometry {
    double steps_out = 1;                    ///< output blocks
    double steps_k = 1;                      ///< reduction (kernel) blocks per output block
    double waste = 1;                        ///< padded blocks / iteration space (>= 1)
    double feat_blocks = 1;                  ///< blocks along the output-feature dim
    double weight_reads = 1, act_reads = 1;  ///< times the weights / activations are read
    double out_block = 0;                    ///< bytes of one output block
    double in_block = 0;                     ///< bytes of one step's input blocks
    double acc = 0;                          ///< f32 accumulator bytes (MXU kernels)
    double hbm_bytes = 0;                    ///< HBM bytes with re-reads and partial-tile waste
    double block_rows = 8;  ///< second-minor extent of an output block (elements; 8 for rank 1)
    double steps() const { return steps_out * steps_k; }
};

/// The kernel's work and bytes on its full shapes (for the tile cost families).
struct KernelSummary {
    double mxu_ns = 0, vpu_ns = 0;  ///< unblocked MXU / VPU time (ns)
    double output_bytes = 0, weight_bytes = 0, activation_bytes = 0, other_input_bytes = 0;
    bool has_accumulator = false;
};

/// One tile kernel (a tpu_graphs tile module: the entry root is a fusion, copy, reshape, ...),
/// analysed once; evaluate() is then cheap (O(#kernel inputs)) per tile configuration.
/// The module must outlive the model.
class KernelModel {
public:
    /// Throws segrank::Error when the module is malformed (see ModuleIndex).
    KernelModel(const hlo::HloModule& module, const HwParams& hw, const CostOptions& options = {});

    /// Estimated runtime of the kernel under `tile` (docs/hwmodel.md#kernels-under-a-tile-config).
    /// Bounds are per physical dim, major first, in tile units (docs/hwmodel.md#tile-units); a
    /// bounds list of the wrong length = one block over the whole iteration space; no output bounds
    /// at all (reshape kernels) = best_tile(). A bounds list whose length does not match the
    /// iterated array is ignored. Returns invalid (total = +inf) when the (single-buffered) working
    /// set exceeds VMEM. With `detail`, its quantities are written there too (same computation).
    Breakdown evaluate(const hlo::TileSizeConfig& tile, TileDetail* detail = nullptr) const;

    /// Block geometry of `tile` (the same substitutions as evaluate: no output bounds = the
    /// default tile, bounds of the wrong length = one block).
    TileGeometry geometry(const hlo::TileSizeConfig& tile) const;
    /// Work and bytes of the whole kernel.
    KernelSummary summary() const;

    /// The compiler-default stand-in: the fastest of an enumerated candidate set of output bounds
    /// (powers of two and full extents per dim), kernel bounds spanning everything.
    hlo::TileSizeConfig best_tile() const;

    /// Per-instruction work of the fused body (for `segrank hwmodel explain`).
    const std::vector<NodeCost>& node_costs() const { return nodes_; }
    /// Extents (tile units, major first) of the iterated array, and of the conv/dot kernel operand.
    const std::vector<int64_t>& iteration_units() const { return iter_units_; }
    const std::vector<int64_t>& kernel_units() const { return kernel_units_; }

private:
    HwParams hw_;
    CostOptions opt_;
    std::vector<NodeCost> nodes_;
    double mxu_ns_ = 0, vpu_ns_ = 0;
    std::vector<int64_t> iter_units_;
    int64_t iter_feature_pos_ = -1;      // physical position of the output-feature dim, or -1
    std::vector<int64_t> kernel_units_;  // conv/dot weight operand units, empty if none
    int64_t kernel_feature_pos_ = -1;    // physical position of kernel_output_feature in it
    double output_bytes_ = 0;            // kernel outputs, padded
    double weight_bytes_ = 0;            // the conv/dot weight input
    double activation_bytes_ = 0;        // the conv/dot activation input
    double other_input_bytes_ = 0;       // all other inputs
    bool has_accumulator_ = false;
    hlo::TileSizeConfig default_tile_;  // best_tile(), used when a run gives no output bounds
};

}  // namespace segrank::hw
