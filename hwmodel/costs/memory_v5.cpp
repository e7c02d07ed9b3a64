// Cost family "memory_v5" (docs/hwmodel.md#memory-v5): HBM-bound on a TPU v5-like core. Every
// kernel costs the bytes it reads and writes at 819 GB/s (85 % achievable) plus 400 ns per launch;
// compute is hidden. Arrays are tiled by another rule than tpu_v3's: the second-minor dim pads to
// 8 x packing rows (32-bit 8, 16-bit 16, 8-bit 32; no small (2,128)/(4,128) tiles), the minor dim
// to 128 lanes, rank-1 arrays to 1024 elements. A layout change is a copy kernel (read + write).
#include <algorithm>
#include <unordered_set>

#include "hwmodel/costs/families.h"
#include "hwmodel/costs/layout_sites.h"
#include "hwmodel/padding.h"

namespace segrank::hw::costs {

/// Bytes of `shape` under the v5-like tiling (docs/hwmodel.md#memory-v5).
double v5_tiled_bytes(const hlo::Shape& shape) {
    if (shape.is_tuple()) {
        double b = 0;
        for (const auto& s : shape.tuple_shapes) b += v5_tiled_bytes(s);
        return b;
    }
    const int64_t eb = hlo::element_byte_size(shape.element_type);
    if (eb == 0) return 0;
    if (shape.dims.empty()) return static_cast<double>(std::max<int64_t>(eb, 4));
    if (shape.dims.size() == 1) return static_cast<double>(round_up(shape.dims[0], 1024) * eb);
    const auto phys = physical_dims(shape);
    const size_t r = phys.size();
    const int64_t rows = 8 * (eb >= 4 ? 1 : 4 / eb);
    double n = static_cast<double>(round_up(phys[r - 2], rows) * round_up(phys[r - 1], 128));
    for (size_t i = 0; i + 2 < r; ++i) n *= static_cast<double>(phys[i]);
    return n * static_cast<double>(eb);
}

namespace {

HwParams v5_table(const HwParams& base) {
    HwParams p = base;
    p.hbm_bytes_per_s = 819e9;
    p.hbm_efficiency = 0.85;
    p.kernel_overhead_ns = 400;
    return p;
}

class MemoryV5 : public LocalLayoutCost {
public:
    MemoryV5(const hlo::HloModule& module, const std::vector<int64_t>& nodes, const HwParams& hw,
             const CostOptions& opt)
        : LocalLayoutCost(module, nodes, hw, opt), v5_(v5_table(hw)) {
        init();
    }

protected:
    double instruction_ns(const hlo::Instruction& ins) const override {
        return kernel_ns(ins, ins.shape, m_.index().operand_shapes(ins));
    }

    double site_ns(size_t k, const SiteLayout& l) const override {
        const Site& s = m_.site(k);
        std::vector<const hlo::Shape*> ops;
        for (const auto& o : l.operands) ops.push_back(&o);
        double ns = kernel_ns(*s.ins, l.out, ops);
        if (l.out_set) ns += copy_ns(s.ins->shape, l.out);
        for (size_t i = 0; i < l.operands.size(); ++i)
            if (l.operand_changed(i, s)) ns += copy_ns(s.operands[i]->shape, l.operands[i]);
        return ns;
    }

private:
    double kernel_ns(const hlo::Instruction& ins, const hlo::Shape& out,
                     const std::vector<const hlo::Shape*>& ops) const {
        double bytes = v5_tiled_bytes(out);
        std::unordered_set<int64_t> seen;
        for (size_t i = 0; i < ops.size() && i < ins.operand_ids.size(); ++i)
            if (seen.insert(ins.operand_ids[i]).second) bytes += v5_tiled_bytes(*ops[i]);
        return hbm_ns(bytes, v5_) + v5_.kernel_overhead_ns;
    }
    double copy_ns(const hlo::Shape& from, const hlo::Shape& to) const {
        if (same_layout(from, to)) return 0;
        return hbm_ns(v5_tiled_bytes(from) + v5_tiled_bytes(to), v5_) + v5_.kernel_overhead_ns;
    }
    HwParams v5_;
};

}  // namespace

std::unique_ptr<LayoutCostFamily> make_memory_v5(const hlo::HloModule& module,
                                                 const std::vector<int64_t>& config_nodes,
                                                 const HwParams& hw, const CostOptions& options) {
    return std::make_unique<MemoryV5>(module, config_nodes, hw, options);
}

}  // namespace segrank::hw::costs
