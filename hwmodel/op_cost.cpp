// Per-op cost formulas (docs/hwmodel.md#per-op-costs).
#include "hwmodel/op_cost.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "gnn/core/check.h"
#include "hwmodel/padding.h"

namespace segrank::hw {
namespace {

const std::unordered_map<std::string_view, OpClass>& opcode_table() {
    static const std::unordered_map<std::string_view, OpClass> table = {
        {"parameter", OpClass::kFree},
        {"tuple", OpClass::kFree},
        {"get-tuple-element", OpClass::kFree},
        {"bitcast", OpClass::kFree},
        {"after-all", OpClass::kFree},
        {"constant", OpClass::kFree},
        {"add-dependency", OpClass::kFree},
        {"domain", OpClass::kFree},
        {"opt-barrier", OpClass::kFree},
        {"partition-id", OpClass::kFree},
        {"replica-id", OpClass::kFree},
        {"get-dimension-size", OpClass::kFree},
        {"copy-done", OpClass::kFree},
        {"recv-done", OpClass::kFree},
        {"send-done", OpClass::kFree},
        {"all-reduce-done", OpClass::kFree},
        {"all-gather-done", OpClass::kFree},
        {"collective-permute-done", OpClass::kFree},
        {"async-done", OpClass::kFree},
        {"async-update", OpClass::kFree},
        {"broadcast", OpClass::kBroadcast},
        {"iota", OpClass::kBroadcast},
        {"dot", OpClass::kDot},
        {"convolution", OpClass::kConvolution},
        {"reduce", OpClass::kReduce},
        {"reduce-window", OpClass::kReduceWindow},
        {"select-and-scatter", OpClass::kReduceWindow},
        {"transpose", OpClass::kTranspose},
        {"copy", OpClass::kTranspose},
        {"copy-start", OpClass::kTranspose},
        {"reshape", OpClass::kReshape},
        {"dynamic-reshape", OpClass::kReshape},
        {"slice", OpClass::kDataMovement},
        {"dynamic-slice", OpClass::kDataMovement},
        {"dynamic-update-slice", OpClass::kDataMovement},
        {"concatenate", OpClass::kDataMovement},
        {"pad", OpClass::kDataMovement},
        {"gather", OpClass::kDataMovement},
        {"scatter", OpClass::kDataMovement},
        {"reverse", OpClass::kDataMovement},
        {"infeed", OpClass::kDataMovement},
        {"outfeed", OpClass::kDataMovement},
        {"send", OpClass::kDataMovement},
        {"recv", OpClass::kDataMovement},
        {"sort", OpClass::kSort},
        {"rng", OpClass::kRng},
        {"rng-bit-generator", OpClass::kRng},
        {"rng-get-and-update-state", OpClass::kFree},
        {"all-reduce", OpClass::kCollective},
        {"all-gather", OpClass::kCollective},
        {"reduce-scatter", OpClass::kCollective},
        {"collective-permute", OpClass::kCollective},
        {"all-to-all", OpClass::kCollective},
        {"all-reduce-start", OpClass::kCollective},
        {"all-gather-start", OpClass::kCollective},
        {"collective-permute-start", OpClass::kCollective},
        {"fusion", OpClass::kFusion},
        {"while", OpClass::kWhile},
        {"conditional", OpClass::kConditional},
        {"call", OpClass::kCall},
        {"async-start", OpClass::kCall},
        {"map", OpClass::kCall},
        {"custom-call", OpClass::kCustomCall},
        {"fft", OpClass::kCustomCall},
        {"cholesky", OpClass::kCustomCall},
        {"triangular-solve", OpClass::kCustomCall},
    };
    return table;
}

bool is_medium(std::string_view op) {
    static const std::string_view kMedium[] = {"divide", "exponential",  "exponential-minus-one",
                                               "log",    "log-plus-one", "tanh",
                                               "rsqrt",  "sqrt",         "cbrt",
                                               "power",  "logistic",     "remainder",
                                               "atan2"};
    return std::find(std::begin(kMedium), std::end(kMedium), op) != std::end(kMedium);
}

bool is_expensive(std::string_view op) {
    return op == "sine" || op == "cosine" || op == "tan" || op == "erf";
}

int64_t minor_dim(const hlo::Shape& s) {
    const auto m2m = effective_minor_to_major(s);
    return m2m.empty() ? -1 : m2m[0];
}

int64_t product(const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t x : v) p *= x;
    return p;
}

}  // namespace

OpClass classify_opcode(std::string_view opcode) {
    const auto& t = opcode_table();
    const auto it = t.find(opcode);
    return it == t.end() ? OpClass::kElementwise : it->second;
}

double vpu_ops_per_element(std::string_view opcode, const HwParams& hw) {
    if (is_expensive(opcode)) return hw.cost_expensive;
    if (is_medium(opcode)) return hw.cost_medium;
    return hw.cost_cheap;
}

double matmul_mxu_ns(int64_t batch, int64_t m, int64_t k, int64_t n, const HwParams& hw,
                     bool apply_padding) {
    if (batch <= 0 || m <= 0 || k <= 0 || n <= 0) return 0;
    const double d = hw.mxu_dim;
    const double rows = apply_padding ? static_cast<double>(round_up(m, hw.lhs_rows_per_push))
                                      : static_cast<double>(m);
    const double kb =
        apply_padding ? std::ceil(static_cast<double>(k) / d) : static_cast<double>(k) / d;
    const double nb =
        apply_padding ? std::ceil(static_cast<double>(n) / d) : static_cast<double>(n) / d;
    // One LHS row per cycle per MXU against a stationary 128x128 weight block; each weight block
    // is loaded once per batch element (docs/hwmodel.md#per-op-costs).
    const double cycles =
        static_cast<double>(batch) * (rows + hw.mxu_weight_load_cycles) * kb * nb / hw.n_mxu;
    return cycles / hw.clock_hz * 1e9;
}

double vpu_ns(double vregs, double ops_per_element, const HwParams& hw) {
    const double vreg_ops_per_cycle = hw.vpu_ops_per_cycle / 1024.0;
    return vregs * ops_per_element / vreg_ops_per_cycle / hw.clock_hz * 1e9;
}

double collective_ns(int64_t bytes, int64_t group_size, const HwParams& hw) {
    if (group_size <= 1 || bytes <= 0) return 0;
    const double p = static_cast<double>(group_size);
    return 2.0 * (p - 1) / p * static_cast<double>(bytes) / (hw.ici_links * hw.ici_bytes_per_s) *
               1e9 +
           hw.collective_latency_ns;
}

double hbm_ns(double bytes, const HwParams& hw) {
    return bytes / (hw.hbm_bytes_per_s * hw.hbm_efficiency) * 1e9;
}

bool changes_minor_dims(const hlo::Shape& in, const hlo::Shape& out) {
    if (in.is_tuple() || out.is_tuple()) return false;
    const auto a = physical_dims(in);
    const auto b = physical_dims(out);
    auto minor2 = [](const std::vector<int64_t>& p, size_t i) -> int64_t {
        return p.size() > i ? p[p.size() - 1 - i] : 1;
    };
    // Same element count per physical position of the two minor dims = same tiles, a bitcast.
    if (minor2(a, 0) != minor2(b, 0)) return true;
    if (minor2(a, 1) != minor2(b, 1)) return in.num_elements() > minor2(a, 0);
    // For a transpose/copy the data moves iff the logical->physical map differs (same dims order).
    return false;
}

namespace {

// Transpose/copy: out dim i is in dim perm[i] (identity for copy). Data moves iff one of the two
// most-minor physical positions holds a different logical dim
// (docs/hwmodel.md#tiled-layouts-and-padding: transposes of all but the last two dims are free).
bool transpose_moves_minor_dims(const hlo::Shape& in, const hlo::Shape& out,
                                const std::vector<int64_t>& perm) {
    if (in.is_tuple() || out.is_tuple()) return false;
    const auto im = effective_minor_to_major(in);
    const auto om = effective_minor_to_major(out);
    if (im.size() != om.size()) return true;
    for (size_t j = 0; j < std::min<size_t>(2, om.size()); ++j) {
        const int64_t o = om[j];
        const int64_t mapped = perm.size() == om.size() ? perm[static_cast<size_t>(o)] : o;
        if (mapped != im[j]) {
            const auto& d = out.dims;  // a size-1 dim can move for free
            if (d[static_cast<size_t>(o)] != 1) return true;
        }
    }
    return false;
}

OpWork conv_work(const hlo::Instruction& ins, const hlo::Shape& out,
                 const std::vector<const hlo::Shape*>& ops, const HwParams& hw,
                 const CostOptions& opt) {
    OpWork w;
    if (ops.size() < 2 || out.is_tuple()) return w;
    const hlo::Shape& lhs = *ops[0];
    const hlo::Shape& rhs = *ops[1];
    const auto& dn = ins.convolution_dimension_numbers;
    const auto rank_ok = [](const hlo::Shape& s, int64_t d) {
        return d >= 0 && d < static_cast<int64_t>(s.dims.size());
    };
    if (!ins.has_convolution_dimension_numbers || !rank_ok(out, dn.output_feature_dimension) ||
        !rank_ok(rhs, dn.kernel_input_feature_dimension) ||
        !rank_ok(rhs, dn.kernel_output_feature_dimension))
        return w;
    const int64_t groups =
        std::max<int64_t>(1, ins.feature_group_count) * std::max<int64_t>(1, ins.batch_group_count);
    const int64_t cout = out.dims[static_cast<size_t>(dn.output_feature_dimension)];
    const int64_t cin_g = rhs.dims[static_cast<size_t>(dn.kernel_input_feature_dimension)];
    int64_t taps = 1;
    for (const auto& wd : ins.window) taps *= std::max<int64_t>(1, wd.size);
    const int64_t m = out.num_elements() / std::max<int64_t>(1, cout);
    const int64_t cout_g = std::max<int64_t>(1, cout / groups);
    w.flops = 2.0 * static_cast<double>(out.num_elements()) * static_cast<double>(taps * cin_g);
    if (groups > 1 && cin_g == 1) {  // depthwise: the MXU would be 1/128 used; runs on the VPU
        w.vpu_ns = vpu_ns(vreg_count(out, opt.padding) * static_cast<double>(taps), 2.0, hw);
    } else {
        // Implicit GEMM per tap; a small Cin (< 64) is packed across taps (im2col) instead of
        // padding each tap to 128 (assumption; the compiler's choice is private).
        const int64_t k = cin_g >= 64 ? taps * round_up(cin_g, hw.mxu_dim) : taps * cin_g;
        w.mxu_ns = matmul_mxu_ns(groups, m, k, cout_g, hw, opt.padding);
    }
    // Operands whose feature dim is not the minor (lane) dim need an XLU relayout into VMEM.
    double relayout = 0;
    if (minor_dim(lhs) != dn.input_feature_dimension) relayout += vreg_count(lhs, opt.padding);
    if (minor_dim(rhs) != dn.kernel_output_feature_dimension &&
        minor_dim(rhs) != dn.kernel_input_feature_dimension)
        relayout += vreg_count(rhs, opt.padding);
    if (minor_dim(out) != dn.output_feature_dimension) relayout += vreg_count(out, opt.padding);
    w.vpu_ns += vpu_ns(relayout, 2.0, hw);
    return w;
}

OpWork dot_work(const hlo::Shape& out, const std::vector<const hlo::Shape*>& ops,
                const HwParams& hw, const CostOptions& opt) {
    OpWork w;
    if (ops.size() < 2 || out.is_tuple()) return w;
    const auto& l = ops[0]->dims;
    const auto& r = ops[1]->dims;
    // module.h carries no dot_dimension_numbers: batch = leading dims shared by lhs, rhs and the
    // output; then lhs*rhs/out = batch * k^2.
    int64_t batch = 1;
    for (size_t i = 0; i + 2 < out.dims.size() && i < l.size() && i < r.size(); ++i) {
        if (l[i] != out.dims[i] || r[i] != out.dims[i]) break;
        batch *= out.dims[i];
    }
    const double le = static_cast<double>(product(l));
    const double re = static_cast<double>(product(r));
    const double oe = std::max(1.0, static_cast<double>(out.num_elements()));
    const int64_t k = std::max<int64_t>(1, std::llround(std::sqrt(le * re / (oe * batch))));
    const int64_t m = std::max<int64_t>(1, std::llround(le / (batch * k)));
    const int64_t n = std::max<int64_t>(1, std::llround(re / (batch * k)));
    w.flops = 2.0 * static_cast<double>(batch * m) * static_cast<double>(k * n);
    w.mxu_ns = matmul_mxu_ns(batch, m, k, n, hw, opt.padding);
    return w;
}

}  // namespace

OpWork op_work(const hlo::Instruction& ins, const hlo::Shape& out,
               const std::vector<const hlo::Shape*>& operands, const HwParams& hw,
               const CostOptions& opt, int64_t collective_group_size) {
    OpWork w;
    const bool pad = opt.padding;
    switch (classify_opcode(ins.opcode)) {
        case OpClass::kFree:
        case OpClass::kFusion:
        case OpClass::kWhile:
        case OpClass::kConditional:
        case OpClass::kCall:
            return w;
        case OpClass::kElementwise:
            w.vpu_ns = vpu_ns(vreg_count(out, pad), vpu_ops_per_element(ins.opcode, hw), hw);
            return w;
        case OpClass::kBroadcast:
            w.vpu_ns = vpu_ns(vreg_count(out, pad), 1.0, hw);
            return w;
        case OpClass::kDot:
            return dot_work(out, operands, hw, opt);
        case OpClass::kConvolution:
            return conv_work(ins, out, operands, hw, opt);
        case OpClass::kReduce: {
            if (operands.empty()) return w;
            const hlo::Shape& in = *operands[0];
            double penalty = 1.0;
            const auto m2m = effective_minor_to_major(in);
            for (int64_t d : ins.dimensions) {
                if (!m2m.empty() && d == m2m[0])
                    penalty = std::max(penalty, hw.lane_reduce_penalty);
                if (m2m.size() > 1 && d == m2m[1])
                    penalty = std::max(penalty, hw.sublane_reduce_penalty);
            }
            // Variadic reduces apply the reducer to each input.
            const double inputs = std::max<double>(1.0, static_cast<double>(operands.size()) / 2.0);
            w.vpu_ns = vpu_ns(vreg_count(in, pad) * inputs, hw.cost_cheap * penalty, hw);
            return w;
        }
        case OpClass::kReduceWindow: {
            int64_t window = 1;
            for (const auto& wd : ins.window) window *= std::max<int64_t>(1, wd.size);
            const hlo::Shape& big = operands.empty() ? out : *operands[0];
            w.vpu_ns = vpu_ns(std::max(vreg_count(out, pad), vreg_count(big, pad)),
                              hw.cost_cheap * static_cast<double>(window), hw);
            return w;
        }
        case OpClass::kTranspose:
        case OpClass::kReshape: {
            if (operands.empty()) return w;
            const hlo::Shape& in = *operands[0];
            const bool moves =
                ins.opcode == "reshape" || ins.opcode == "dynamic-reshape"
                    ? changes_minor_dims(in, out)
                    : transpose_moves_minor_dims(
                          in, out,
                          ins.opcode == "transpose" ? ins.dimensions : std::vector<int64_t>{});
            if (moves) w.vpu_ns = vpu_ns(vreg_count(in, pad) + vreg_count(out, pad), 1.0, hw);
            return w;
        }
        case OpClass::kDataMovement:
        case OpClass::kCustomCall:
            w.vpu_ns = vpu_ns(vreg_count(out, pad), 1.0, hw);
            return w;
        case OpClass::kSort: {
            const double n =
                out.is_tuple() || out.dims.empty()
                    ? 1.0
                    : static_cast<double>(out.dims[static_cast<size_t>(
                          ins.dimensions.empty() ? out.dims.size() - 1 : ins.dimensions[0])]);
            w.vpu_ns =
                vpu_ns(vreg_count(out, pad), 2.0 * std::max(1.0, std::log2(n)) * hw.cost_cheap, hw);
            return w;
        }
        case OpClass::kRng:
            w.vpu_ns = vpu_ns(vreg_count(out, pad), hw.cost_medium, hw);
            return w;
        case OpClass::kCollective:
            w.ici_ns = collective_ns(padded_bytes(out, pad), collective_group_size, hw);
            return w;
    }
    return w;
}

}  // namespace segrank::hw
