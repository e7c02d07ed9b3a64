// Cost family "mxu_padded" (docs/hwmodel.md#mxu-padded): compute-bound on a 128x128 systolic
// array. Every dim of a tensor is padded by its position in the tensor's layout (minor to 128,
// second-minor to 8, others not at all), so the MXU work of a dot or convolution depends on where
// each operand and the output put their dims; memory is free (fully overlapped). A layout change
// is an XLU relayout in VMEM (2 cycles per 8x128 vreg of source and destination), not a copy.
#include <algorithm>
#include <cmath>

#include "hwmodel/costs/families.h"
#include "hwmodel/costs/layout_sites.h"
#include "hwmodel/padding.h"

namespace segrank::hw::costs {
namespace {

// Padded extent of logical dim d of s: minor -> 128, second-minor -> 8.
double padded_dim(const hlo::Shape& s, int64_t d) {
    const auto m2m = effective_minor_to_major(s);
    const int64_t n = s.dims[static_cast<size_t>(d)];
    if (!m2m.empty() && m2m[0] == d) return static_cast<double>(round_up(n, 128));
    if (m2m.size() > 1 && m2m[1] == d) return static_cast<double>(round_up(n, 8));
    return static_cast<double>(n);
}

// Product of the padded extents of every dim.
double padded_product(const hlo::Shape& s) {
    if (s.is_tuple()) return 0;
    double p = 1;
    for (size_t d = 0; d < s.dims.size(); ++d) p *= padded_dim(s, static_cast<int64_t>(d));
    return p;
}

class MxuPadded : public LocalLayoutCost {
public:
    MxuPadded(const hlo::HloModule& module, const std::vector<int64_t>& nodes, const HwParams& hw,
              const CostOptions& opt)
        : LocalLayoutCost(module, nodes, hw, opt) {
        init();
    }

protected:
    double instruction_ns(const hlo::Instruction& ins) const override {
        return op_ns(ins, ins.shape, m_.index().operand_shapes(ins));
    }

    double site_ns(size_t k, const SiteLayout& l) const override {
        const Site& s = m_.site(k);
        std::vector<const hlo::Shape*> ops;
        for (const auto& o : l.operands) ops.push_back(&o);
        double ns = op_ns(*s.ins, l.out, ops);
        if (l.out_set) ns += relayout_ns(s.ins->shape, l.out);
        for (size_t i = 0; i < l.operands.size(); ++i)
            if (l.operand_changed(i, s)) ns += relayout_ns(s.operands[i]->shape, l.operands[i]);
        return ns;
    }

private:
    double cycles_ns(double cycles) const { return cycles / m_.hw().clock_hz * 1e9; }

    double relayout_ns(const hlo::Shape& from, const hlo::Shape& to) const {
        return cycles_ns(2 * (vreg_count(from) + vreg_count(to)));
    }

    // MACs on the padded dims / (128 x 128 per cycle per MXU).
    double mxu_ns(double macs) const {
        const double per_cycle =
            static_cast<double>(m_.hw().mxu_dim) * m_.hw().mxu_dim * std::max(1, m_.hw().n_mxu);
        return cycles_ns(macs / per_cycle);
    }

    double op_ns(const hlo::Instruction& ins, const hlo::Shape& out,
                 const std::vector<const hlo::Shape*>& ops) const {
        const OpClass k = classify_opcode(ins.opcode);
        if (k == OpClass::kDot && ops.size() >= 2 && !out.is_tuple()) {
            // No dot_dimension_numbers in module.h: batch = leading dims shared by all three (as
            // op_cost.cpp); padded MACs = sqrt(P(lhs) P(rhs) P(out) / batch), which is
            // batch x m x k x n on unpadded dims.
            double batch = 1;
            for (size_t i = 0;
                 i + 2 < out.dims.size() && i < ops[0]->dims.size() && i < ops[1]->dims.size();
                 ++i) {
                if (ops[0]->dims[i] != out.dims[i] || ops[1]->dims[i] != out.dims[i]) break;
                batch *= static_cast<double>(out.dims[i]);
            }
            return mxu_ns(std::sqrt(padded_product(*ops[0]) * padded_product(*ops[1]) *
                                    padded_product(out) / batch));
        }
        if (k == OpClass::kConvolution && ops.size() >= 2 && !out.is_tuple()) {
            // Padded MACs = P(out) x P(kernel) / padded kernel output-feature extent.
            const int64_t of =
                ins.has_convolution_dimension_numbers
                    ? ins.convolution_dimension_numbers.kernel_output_feature_dimension
                    : static_cast<int64_t>(ops[1]->dims.size()) - 1;
            const double f = of >= 0 && of < static_cast<int64_t>(ops[1]->dims.size())
                                 ? padded_dim(*ops[1], of)
                                 : 1.0;
            return mxu_ns(padded_product(out) * padded_product(*ops[1]) / std::max(1.0, f));
        }
        if (k == OpClass::kReshape) {
            if (ops.empty() || !changes_minor_dims(*ops[0], out)) return 0;
            return relayout_ns(*ops[0], out);
        }
        // Everything else: its VPU time (one pass per 8x128 vreg by cost class).
        return op_work(ins, out, ops, m_.hw(), m_.options()).vpu_ns;
    }
};

}  // namespace

std::unique_ptr<LayoutCostFamily> make_mxu_padded(const hlo::HloModule& module,
                                                  const std::vector<int64_t>& config_nodes,
                                                  const HwParams& hw, const CostOptions& options) {
    return std::make_unique<MxuPadded>(module, config_nodes, hw, options);
}

}  // namespace segrank::hw::costs
