// Tile cost family "vmem_spill" (docs/hwmodel.md#vmem-spill): a roofline kernel whose blocks are
// double-buffered in VMEM. A working set beyond VMEM does not fail to compile: the overflow is
// spilled, written to and read back from HBM once per grid step. No per-step overhead and no
// pipeline bubble, so small tiles cost only their partial-tile waste and re-reads.
#include <algorithm>

#include "hwmodel/costs/families.h"

namespace segrank::hw::costs {
namespace {

class VmemSpill : public TileCostFamily {
public:
    VmemSpill(const KernelModel& k, const HwParams& hw) : k_(k), hw_(hw), s_(k.summary()) {}

    double evaluate_ns(const hlo::TileSizeConfig& tile) const override {
        const TileGeometry g = k_.geometry(tile);
        const double working_set = 2 * (g.in_block + g.out_block) + g.acc;
        const double spill = std::max(0.0, working_set - static_cast<double>(hw_.vmem_bytes));
        const double bytes = g.hbm_bytes + g.steps() * 2 * spill;
        return std::max({s_.mxu_ns * g.waste, s_.vpu_ns * g.waste, hbm_ns(bytes, hw_)}) +
               hw_.kernel_overhead_ns;
    }

private:
    const KernelModel& k_;
    HwParams hw_;
    KernelSummary s_;
};

}  // namespace

std::unique_ptr<TileCostFamily> make_vmem_spill(const KernelModel& kernel, const HwParams& hw) {
    return std::make_unique<VmemSpill>(kernel, hw);
}

}  // namespace segrank::hw::costs
