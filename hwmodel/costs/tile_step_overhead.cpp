// Tile cost family "step_overhead" (docs/hwmodel.md#step-overhead): every grid step pays a large
// fixed cost (1.5 us: program setup, semaphore waits, DMA issue) and nothing overlaps: runtime =
// launch + steps x 1.5 us + MXU time + VPU time + HBM time of each byte once (blocks are assumed
// to stay resident, no re-reads). An MXU block reloads its weights (128 cycles) for every block
// and amortizes them over the block's rows only, so short blocks waste the systolic array.
#include <algorithm>

#include "hwmodel/costs/families.h"

namespace segrank::hw::costs {
namespace {

constexpr double kStepNs = 1500;

class StepOverhead : public TileCostFamily {
public:
    StepOverhead(const KernelModel& k, const HwParams& hw) : k_(k), hw_(hw), s_(k.summary()) {}

    double evaluate_ns(const hlo::TileSizeConfig& tile) const override {
        const TileGeometry g = k_.geometry(tile);
        const double mxu = s_.mxu_ns * g.waste * (1 + hw_.mxu_weight_load_cycles / g.block_rows);
        const double bytes =
            s_.output_bytes + s_.weight_bytes + s_.activation_bytes + s_.other_input_bytes;
        return hw_.kernel_overhead_ns + g.steps() * kStepNs + mxu + s_.vpu_ns * g.waste +
               hbm_ns(bytes, hw_);
    }

private:
    const KernelModel& k_;
    HwParams hw_;
    KernelSummary s_;
};

}  // namespace

std::unique_ptr<TileCostFamily> make_step_overhead(const KernelModel& kernel, const HwParams& hw) {
    return std::make_unique<StepOverhead>(kernel, hw);
}

}  // namespace segrank::hw::costs
