// Cost families (docs/hwmodel.md#cost-families): TPU-like timing models that label the synthetic
// collections (`segrank synth --cost NAME`). tpu_v3 is the analytical model of hwmodel/ (the
// default); the others differ from it, and from each other, in structure, so a ranking model can be
// scored on a cost it never trained on. One file per family; this registry is an enum and a switch.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/hlo/module.h"
#include "hwmodel/hardware.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/op_cost.h"

namespace segrank::hw {

/// A cost family. tpu_v3 labels both collections; the others one collection each.
enum class CostFamily {
    kTpuV3,         ///< hwmodel's LayoutModel / KernelModel (docs/hwmodel.md)
    kPropagate,     ///< layout: XLA-style layout propagation, copies only at real conflicts
    kCopyBound,     ///< layout: copies by bytes moved with a strided-access (granule) penalty
    kMxuPadded,     ///< layout: MXU-bound, dims padded by layout position (minor 128, 2nd 8)
    kMemoryV5,      ///< layout: HBM-bound, v5-like tiling (2nd-minor 8 x packing) and bandwidth
    kFusionAware,   ///< layout: elementwise chains are one kernel; relayouts fuse into them
    kVmemSpill,     ///< tile: roofline, double-buffered working set, VMEM overflow spills to HBM
    kPipeline,      ///< tile: DMA / compute / store pipeline refilled per output tile
    kStepOverhead,  ///< tile: per-step overhead dominated, no overlap, no re-reads
};

/// Which collection a family labels.
enum class CostKind { kBoth, kLayout, kTile };

/// The families' names, tpu_v3 first (the default).
std::vector<std::string> cost_family_names();
/// Name of a family ("tpu_v3", "propagate", ...).
std::string_view cost_family_name(CostFamily f);
/// Parses a name; throws segrank::Error listing the valid names (with their kind) when unknown.
CostFamily parse_cost_family(std::string_view name);
/// The collection(s) the family labels.
CostKind cost_family_kind(CostFamily f);
/// "layout", "tile" or "layout, tile".
std::string_view cost_kind_name(CostKind k);
/// One line per family: "name (layout): what it charges", for `segrank synth --help`.
std::string cost_family_help();

/// A layout cost of one module with its configurable nodes (noise-free). Not thread-safe.
class LayoutCostFamily {
public:
    virtual ~LayoutCostFamily() = default;
    /// Runtime (ns, > 0) of one node_config_feat row: values [nc * 18] (int8 -1..5, -1 = unset).
    virtual double evaluate_ns(const int8_t* values) = 0;
};

/// The layout cost of family `f` (a layout or both-kind family) for `module` with configurable
/// nodes `config_nodes` (flattened node indices). The module must outlive the cost. Throws
/// segrank::Error when `f` is a tile family or the module is malformed.
std::unique_ptr<LayoutCostFamily> make_layout_cost(CostFamily f, const hlo::HloModule& module,
                                                   const std::vector<int64_t>& config_nodes,
                                                   const HwParams& hw,
                                                   const CostOptions& options = {});

/// A tile cost of one kernel (noise-free): finite (> 0) for every config, also those tpu_v3 calls
/// invalid (the families without a VMEM cliff charge overflow instead).
class TileCostFamily {
public:
    virtual ~TileCostFamily() = default;
    /// Runtime (ns) of the kernel under `tile` (bounds as in KernelModel::evaluate).
    virtual double evaluate_ns(const hlo::TileSizeConfig& tile) const = 0;
};

/// The tile cost of family `f` (a tile or both-kind family) on `kernel` (which must outlive it).
/// Throws segrank::Error when `f` is a layout family.
std::unique_ptr<TileCostFamily> make_tile_cost(CostFamily f, const KernelModel& kernel,
                                               const HwParams& hw);

}  // namespace segrank::hw
