// Cost family "copy_bound" (docs/hwmodel.md#copy-bound): a layout change costs the copy that
// performs it, and a copy is bound by the DMA's access pattern. Arrays are dense (no tile
// padding); a copy moves its data in runs that are contiguous in both layouts (the minor-most dims
// the two layouts share, in the same order), each run rounded up to a 64-byte granule, read and
// written once, plus a fixed DMA setup. Compute does not depend on the layout.
#include <algorithm>
#include <cmath>

#include "hwmodel/costs/families.h"
#include "hwmodel/costs/layout_sites.h"
#include "hwmodel/padding.h"

namespace segrank::hw::costs {
namespace {

constexpr double kGranuleBytes = 64;
constexpr double kDmaSetupNs = 1000;

// Bytes a strided copy from `from` to `to` moves (read + write), granule-rounded.
double strided_copy_bytes(const hlo::Shape& from, const hlo::Shape& to) {
    const auto a = effective_minor_to_major(from);
    const auto b = effective_minor_to_major(to);
    double run = 1;  // elements contiguous in both layouts
    for (size_t i = 0; i < a.size() && i < b.size() && a[i] == b[i]; ++i)
        run *= static_cast<double>(from.dims[static_cast<size_t>(a[i])]);
    const double elems = static_cast<double>(std::max<int64_t>(1, from.num_elements()));
    const double eb = static_cast<double>(hlo::element_byte_size(from.element_type));
    const double run_bytes = std::ceil(run * eb / kGranuleBytes) * kGranuleBytes;
    return 2 * (elems / run) * run_bytes;
}

class CopyBound : public LocalLayoutCost {
public:
    CopyBound(const hlo::HloModule& module, const std::vector<int64_t>& nodes, const HwParams& hw,
              const CostOptions& opt)
        : LocalLayoutCost(module, nodes, hw, opt) {
        init();
    }

protected:
    double instruction_ns(const hlo::Instruction& ins) const override {
        // Dense work and bytes: the layout never changes them in this family.
        CostOptions dense = m_.options();
        dense.padding = false;
        const auto ops = m_.index().operand_shapes(ins);
        const OpWork w = work_of(m_.index(), ins, ins.shape, ops, m_.hw(), dense);
        return kernel_roofline_ns(w, kernel_bytes(ins, ins.shape, ops, false), m_.hw());
    }

    double site_ns(size_t k, const SiteLayout& l) const override {
        const Site& s = m_.site(k);
        double ns = 0;
        if (l.out_set) ns += copy_ns(s.ins->shape, l.out);
        for (size_t i = 0; i < l.operands.size(); ++i)
            if (l.operand_changed(i, s)) ns += copy_ns(s.operands[i]->shape, l.operands[i]);
        return ns;
    }

private:
    double copy_ns(const hlo::Shape& from, const hlo::Shape& to) const {
        if (from.is_tuple() || same_layout(from, to)) return 0;
        return hbm_ns(strided_copy_bytes(from, to), m_.hw()) + kDmaSetupNs;
    }
};

}  // namespace

std::unique_ptr<LayoutCostFamily> make_copy_bound(const hlo::HloModule& module,
                                                  const std::vector<int64_t>& config_nodes,
                                                  const HwParams& hw, const CostOptions& options) {
    return std::make_unique<CopyBound>(module, config_nodes, hw, options);
}

}  // namespace segrank::hw::costs
