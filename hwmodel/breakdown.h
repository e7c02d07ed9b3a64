// Cost breakdown of a kernel or a module (docs/hwmodel.md#breakdown) and its bottleneck label.
#pragma once
#include <cstdint>
#include <string_view>

namespace segrank::hw {

/// Where the time of a kernel/module goes (ns). Per kernel, total = max(mxu, vpu, hbm) + overhead
/// (+ copy + ici, which do not overlap); sums over kernels add field by field, so for a module
/// total <= mxu + vpu + hbm + overhead + copy + ici.
struct Breakdown {
    double mxu_ns = 0;       ///< systolic-array time
    double vpu_ns = 0;       ///< vector/XLU time
    double hbm_ns = 0;       ///< HBM traffic time (bytes / effective bandwidth)
    double overhead_ns = 0;  ///< per-kernel + per-step fixed costs + pipeline bubble
    double copy_ns = 0;      ///< layout-change copies inserted by a layout config
    double ici_ns = 0;       ///< collectives
    double total_ns = 0;     ///< the estimate
    double hbm_bytes = 0;    ///< padded bytes moved to/from HBM
    int64_t steps = 0;       ///< tile grid steps (kernels) or kernels launched (modules)
    bool invalid = false;    ///< the tile working set exceeds VMEM: compilation would fail

    /// Adds `other` scaled by `times` (e.g. a while body x trip count); invalid is sticky.
    void add(const Breakdown& other, double times = 1.0);
};

/// The dominant component of a breakdown.
enum class Bottleneck { kMxu, kVpu, kHbm, kOverhead, kCopy, kIci, kInvalid };

/// Largest of the components (kInvalid when invalid).
Bottleneck bottleneck(const Breakdown& b);
/// Lower-case label: "mxu", "vpu", "hbm", "overhead", "copy", "ici", "invalid".
std::string_view bottleneck_name(Bottleneck b);

}  // namespace segrank::hw
