// The cost family registry: names, kinds and the factory switches (docs/hwmodel.md#cost-families).
#include "hwmodel/costs/cost_family.h"

#include <algorithm>
#include <array>
#include <unordered_set>

#include "gnn/core/check.h"
#include "hwmodel/costs/families.h"
#include "hwmodel/module_cost.h"
#include "hwmodel/padding.h"

namespace segrank::hw {
namespace {

struct FamilyInfo {
    CostFamily family;
    const char* name;
    CostKind kind;
    const char* help;
};

constexpr std::array<FamilyInfo, 9> kFamilies = {{
    {CostFamily::kTpuV3, "tpu_v3", CostKind::kBoth,
     "hwmodel's analytical TPU v3 model (the default)"},
    {CostFamily::kPropagate, "propagate", CostKind::kLayout,
     "XLA-style layout propagation: copies only where layouts really conflict"},
    {CostFamily::kCopyBound, "copy_bound", CostKind::kLayout,
     "copies by bytes moved in 64 B granules (strided-access penalty), dense compute"},
    {CostFamily::kMxuPadded, "mxu_padded", CostKind::kLayout,
     "MXU-bound: dims padded by layout position (minor 128, second-minor 8), XLU relayouts"},
    {CostFamily::kMemoryV5, "memory_v5", CostKind::kLayout,
     "HBM-bound, v5-like tiling (second-minor 8 x packing) at 819 GB/s"},
    {CostFamily::kFusionAware, "fusion_aware", CostKind::kLayout,
     "elementwise chains are one kernel; relayouts fuse into them"},
    {CostFamily::kVmemSpill, "vmem_spill", CostKind::kTile,
     "roofline, double-buffered blocks; VMEM overflow spills to HBM every step"},
    {CostFamily::kPipeline, "pipeline", CostKind::kTile,
     "load/compute/store pipeline refilled per output tile, DMA latency per block"},
    {CostFamily::kStepOverhead, "step_overhead", CostKind::kTile,
     "per-step overhead dominated, no overlap of compute and memory, no re-reads"},
}};

const FamilyInfo& info(CostFamily f) {
    for (const auto& i : kFamilies)
        if (i.family == f) return i;
    SEGRANK_ASSERT(false, "cost family without a name-table entry");
    return kFamilies[0];
}

}  // namespace

std::vector<std::string> cost_family_names() {
    std::vector<std::string> out;
    for (const auto& i : kFamilies) out.emplace_back(i.name);
    return out;
}

std::string_view cost_family_name(CostFamily f) { return info(f).name; }

CostKind cost_family_kind(CostFamily f) { return info(f).kind; }

std::string_view cost_kind_name(CostKind k) {
    switch (k) {
        case CostKind::kBoth:
            return "layout, tile";
        case CostKind::kLayout:
            return "layout";
        case CostKind::kTile:
            return "tile";
    }
    return "?";
}

CostFamily parse_cost_family(std::string_view name) {
    for (const auto& i : kFamilies)
        if (name == i.name) return i.family;
    std::string valid;
    for (const auto& i : kFamilies)
        valid += str(valid.empty() ? "" : ", ", i.name, " (", cost_kind_name(i.kind), ")");
    throw Error(str("unknown cost family '", name, "'; valid names: ", valid));
}

std::string cost_family_help() {
    std::string out;
    for (const auto& i : kFamilies)
        out += str("  ", i.name, std::string(14 - std::string_view(i.name).size(), ' '), "(",
                   cost_kind_name(i.kind), ") ", i.help, "\n");
    return out;
}

namespace {

// tpu_v3 as a LayoutCostFamily: hwmodel's LayoutModel.
class TpuV3Layout : public LayoutCostFamily {
public:
    TpuV3Layout(const hlo::HloModule& module, const std::vector<int64_t>& nodes, const HwParams& hw,
                const CostOptions& opt)
        : model_(module, nodes, hw, opt) {}
    double evaluate_ns(const int8_t* values) override { return model_.evaluate_ns(values); }

private:
    LayoutModel model_;
};

// tpu_v3 as a TileCostFamily: hwmodel's KernelModel.
class TpuV3Tile : public TileCostFamily {
public:
    explicit TpuV3Tile(const KernelModel& k) : k_(k) {}
    double evaluate_ns(const hlo::TileSizeConfig& t) const override {
        return k_.evaluate(t).total_ns;
    }

private:
    const KernelModel& k_;
};

}  // namespace

std::unique_ptr<LayoutCostFamily> make_layout_cost(CostFamily f, const hlo::HloModule& module,
                                                   const std::vector<int64_t>& config_nodes,
                                                   const HwParams& hw, const CostOptions& options) {
    switch (f) {
        case CostFamily::kTpuV3:
            return std::make_unique<TpuV3Layout>(module, config_nodes, hw, options);
        case CostFamily::kPropagate:
            return costs::make_propagate(module, config_nodes, hw, options);
        case CostFamily::kCopyBound:
            return costs::make_copy_bound(module, config_nodes, hw, options);
        case CostFamily::kMxuPadded:
            return costs::make_mxu_padded(module, config_nodes, hw, options);
        case CostFamily::kMemoryV5:
            return costs::make_memory_v5(module, config_nodes, hw, options);
        case CostFamily::kFusionAware:
            return costs::make_fusion_aware(module, config_nodes, hw, options);
        case CostFamily::kVmemSpill:
        case CostFamily::kPipeline:
        case CostFamily::kStepOverhead:
            break;
    }
    throw Error(str("cost family '", cost_family_name(f),
                    "' is a tile cost; it cannot label layout graphs"));
}

std::unique_ptr<TileCostFamily> make_tile_cost(CostFamily f, const KernelModel& kernel,
                                               const HwParams& hw) {
    switch (f) {
        case CostFamily::kTpuV3:
            return std::make_unique<TpuV3Tile>(kernel);
        case CostFamily::kVmemSpill:
            return costs::make_vmem_spill(kernel, hw);
        case CostFamily::kPipeline:
            return costs::make_pipeline(kernel, hw);
        case CostFamily::kStepOverhead:
            return costs::make_step_overhead(kernel, hw);
        case CostFamily::kPropagate:
        case CostFamily::kCopyBound:
        case CostFamily::kMxuPadded:
        case CostFamily::kMemoryV5:
        case CostFamily::kFusionAware:
            break;
    }
    throw Error(str("cost family '", cost_family_name(f),
                    "' is a layout cost; it cannot label tile graphs"));
}

namespace costs {

double kernel_roofline_ns(const OpWork& w, double bytes, const HwParams& hw) {
    return std::max({w.mxu_ns, w.vpu_ns, hbm_ns(bytes, hw)}) + w.ici_ns + hw.kernel_overhead_ns;
}

double kernel_bytes(const hlo::Instruction& ins, const hlo::Shape& out,
                    const std::vector<const hlo::Shape*>& operands, bool pad) {
    double bytes = static_cast<double>(padded_bytes(out, pad));
    std::unordered_set<int64_t> seen;
    for (size_t i = 0; i < operands.size() && i < ins.operand_ids.size(); ++i)
        if (seen.insert(ins.operand_ids[i]).second)
            bytes += static_cast<double>(padded_bytes(*operands[i], pad));
    return bytes;
}

hlo::Shape with_layout_of(const hlo::Shape& shape, const hlo::Shape& like) {
    if (shape.is_tuple() || like.is_tuple() || shape.dims.size() != like.dims.size()) return shape;
    hlo::Shape s = shape;
    s.has_layout = true;
    s.minor_to_major = effective_minor_to_major(like);
    return s;
}

}  // namespace costs
}  // namespace segrank::hw
