// Per-op costs of the analytical TPU model (docs/hwmodel.md#per-op-costs): MXU for dot/convolution
// with padding to 128, VPU by cost class, XLU/data movement for copies/transposes/slices, ICI for
// collectives. Everything inside a fused kernel is in VMEM; HBM traffic is charged per kernel by
// the callers.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/hlo/module.h"
#include "hwmodel/hardware.h"

namespace segrank::hw {

/// Ablation switches of the model (docs/hwmodel.md#validation); all on = the full model.
struct CostOptions {
    bool padding = true;        ///< tiled-layout padding (off: dense bytes/elements)
    bool step_overhead = true;  ///< per-grid-step cost c_step in tile kernels
    bool copies = true;         ///< layout-change copies inserted by layout configs
    /// while = trip count x body; off: every while runs HwParams::default_trip_count times (1 in
    /// the hardware tables), as when no trip count is found.
    bool trip_counts = true;
};

/// How an opcode is costed (docs/hwmodel.md#per-op-costs).
enum class OpClass {
    kFree,          ///< parameter, tuple, get-tuple-element, bitcast, after-all, constant, ...
    kElementwise,   ///< VPU by cost class (add, exp, select, convert, compare, ...)
    kBroadcast,     ///< broadcast, iota: VregCount(out)
    kDot,           ///< MXU
    kConvolution,   ///< MXU (implicit GEMM) or VPU (depthwise)
    kReduce,        ///< reduce: VregCount(in) x reducer ops x lane/sublane penalty
    kReduceWindow,  ///< reduce-window, select-and-scatter: x window size
    kTranspose,     ///< transpose, copy: XLU when the two minor dims move, else free
    kReshape,       ///< free when bitcast-equivalent, else like a transpose
    kDataMovement,  ///< slice, dynamic-slice, dynamic-update-slice, concatenate, pad, gather, ...
    kSort,          ///< n log2 n compare-exchanges
    kRng,           ///< rng*: medium cost class
    kCollective,    ///< all-reduce, all-gather, reduce-scatter, collective-permute, all-to-all
    kFusion,        ///< fusion: cost of its fused computation
    kWhile,         ///< trip count x (body + condition)
    kConditional,   ///< max over branches
    kCall,          ///< inlined callee
    kCustomCall,    ///< opaque: charged as data movement
};

/// Classifies an XLA opcode string ("convolution", "get-tuple-element", ...). Unknown opcodes are
/// kElementwise (a cheap VPU pass), the conservative choice.
OpClass classify_opcode(std::string_view opcode);

/// VPU operations per element of an elementwise opcode (docs/hwmodel.md#per-op-costs,
/// docs/hwmodel.md#hardware-table): hw.cost_cheap, hw.cost_medium (divide, exp, log, tanh, rsqrt,
/// sqrt, power, logistic, ...) or hw.cost_expensive (sine, cosine, tan, atan2, erf-like).
double vpu_ops_per_element(std::string_view opcode, const HwParams& hw);

/// What one op costs inside a kernel (ns on each unit; units overlap, the kernel takes the max).
struct OpWork {
    double mxu_ns = 0;  ///< systolic-array time incl. padding to 128 and weight loads
    double vpu_ns = 0;  ///< vector unit time (incl. XLU relayouts)
    double ici_ns = 0;  ///< inter-chip time of collectives (serial with the kernel)
    double flops = 0;   ///< useful (unpadded) flops of dot/convolution, for reports
};

/// MXU time of a batched matmul [batch, m, k] x [batch, k, n] (docs/hwmodel.md#per-op-costs):
/// cycles = batch x (roundup(m, 8) + weight_load) x ceil(k/128) x ceil(n/128) / n_mxu; ns.
double matmul_mxu_ns(int64_t batch, int64_t m, int64_t k, int64_t n, const HwParams& hw,
                     bool apply_padding = true);

/// VPU time of `vregs` 8x128 registers times `ops_per_element` operations (ns).
double vpu_ns(double vregs, double ops_per_element, const HwParams& hw);

/// Ring collective time (docs/hwmodel.md#per-op-costs): 2(p-1)/p x bytes / (links x ici_bw) +
/// latency; 0 if p <= 1.
double collective_ns(int64_t bytes, int64_t group_size, const HwParams& hw);

/// HBM transfer time of `bytes` at hw.hbm_bytes_per_s x hw.hbm_efficiency (ns).
double hbm_ns(double bytes, const HwParams& hw);

/// Whether a reshape/transpose/copy from `in` to `out` moves data: false when the physical
/// (major-to-minor) sequences only regroup major dims and keep the two minor dims (a bitcast).
bool changes_minor_dims(const hlo::Shape& in, const hlo::Shape& out);

/// Work of one instruction given its (possibly re-laid-out) output and operand shapes
/// (docs/hwmodel.md#per-op-costs). Fusion/while/conditional/call return zero here: callers recurse.
/// Collectives assume a replica group of hw-independent size `collective_group_size`.
OpWork op_work(const hlo::Instruction& ins, const hlo::Shape& out,
               const std::vector<const hlo::Shape*>& operands, const HwParams& hw,
               const CostOptions& options, int64_t collective_group_size = 8);

}  // namespace segrank::hw
