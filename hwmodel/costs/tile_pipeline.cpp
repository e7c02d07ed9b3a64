// Tile cost family "pipeline" (docs/hwmodel.md#pipeline): each output tile runs a load / compute
// / store pipeline over its reduction steps and the pipeline is filled and drained again for every
// output tile. A block load costs its bytes plus a fixed DMA latency (500 ns), so small blocks are
// latency-bound; a step overlaps its load with the previous step's compute only.
#include <algorithm>

#include "hwmodel/costs/families.h"

namespace segrank::hw::costs {
namespace {

constexpr double kDmaLatencyNs = 500;

class Pipeline : public TileCostFamily {
public:
    Pipeline(const KernelModel& k, const HwParams& hw) : k_(k), hw_(hw), s_(k.summary()) {}

    double evaluate_ns(const hlo::TileSizeConfig& tile) const override {
        const TileGeometry g = k_.geometry(tile);
        const double load = hbm_ns(g.in_block, hw_) + kDmaLatencyNs;
        const double compute = std::max(s_.mxu_ns, s_.vpu_ns) * g.waste / g.steps();
        const double store = hbm_ns(g.out_block, hw_) + kDmaLatencyNs;
        // Per output tile: fill (first load), steps_k - 1 overlapped steps, the last compute,
        // drain (store).
        const double per_tile = load + (g.steps_k - 1) * std::max(load, compute) + compute + store;
        return g.steps_out * per_tile + hw_.kernel_overhead_ns;
    }

private:
    const KernelModel& k_;
    HwParams hw_;
    KernelSummary s_;
};

}  // namespace

std::unique_ptr<TileCostFamily> make_pipeline(const KernelModel& kernel, const HwParams& hw) {
    return std::make_unique<Pipeline>(kernel, hw);
}

}  // namespace segrank::hw::costs
