// Breakdown arithmetic and bottleneck labels (docs/hwmodel.md#modules-under-a-layout-config).
#include "hwmodel/breakdown.h"

namespace segrank::hw {

void Breakdown::add(const Breakdown& o, double times) {
    mxu_ns += o.mxu_ns * times;
    vpu_ns += o.vpu_ns * times;
    hbm_ns += o.hbm_ns * times;
    overhead_ns += o.overhead_ns * times;
    copy_ns += o.copy_ns * times;
    ici_ns += o.ici_ns * times;
    total_ns += o.total_ns * times;
    hbm_bytes += o.hbm_bytes * times;
    steps += static_cast<int64_t>(static_cast<double>(o.steps) * times);
    invalid = invalid || o.invalid;
}

Bottleneck bottleneck(const Breakdown& b) {
    if (b.invalid) return Bottleneck::kInvalid;
    Bottleneck best = Bottleneck::kMxu;
    double v = b.mxu_ns;
    const auto consider = [&](double x, Bottleneck k) {
        if (x > v) {
            v = x;
            best = k;
        }
    };
    consider(b.vpu_ns, Bottleneck::kVpu);
    consider(b.hbm_ns, Bottleneck::kHbm);
    consider(b.overhead_ns, Bottleneck::kOverhead);
    consider(b.copy_ns, Bottleneck::kCopy);
    consider(b.ici_ns, Bottleneck::kIci);
    return best;
}

std::string_view bottleneck_name(Bottleneck b) {
    switch (b) {
        case Bottleneck::kMxu:
            return "mxu";
        case Bottleneck::kVpu:
            return "vpu";
        case Bottleneck::kHbm:
            return "hbm";
        case Bottleneck::kOverhead:
            return "overhead";
        case Bottleneck::kCopy:
            return "copy";
        case Bottleneck::kIci:
            return "ici";
        case Bottleneck::kInvalid:
            return "invalid";
    }
    return "?";
}

}  // namespace segrank::hw
