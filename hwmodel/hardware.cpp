// TPU hardware tables (docs/hwmodel.md#hardware-table).
#include "hwmodel/hardware.h"

#include "gnn/core/check.h"

namespace segrank::hw {

HwParams tpu_v3_core() {
    HwParams p;  // in-class defaults are the v3 Cloud numbers (docs/hwmodel.md#hardware-table)
    p.name = "tpu_v3_core";
    return p;
}

HwParams tpu_v3_core_jax() {
    HwParams p = tpu_v3_core();
    p.name = "tpu_v3_core_jax";
    std::swap(p.peak_mxu_flops_per_s, p.alt_peak_mxu_flops_per_s);
    std::swap(p.hbm_bytes_per_s, p.alt_hbm_bytes_per_s);
    return p;
}

HwParams tpu_v2_core() {
    HwParams p;
    p.name = "tpu_v2_core";
    p.peak_mxu_flops_per_s = 23e12;
    p.alt_peak_mxu_flops_per_s = 22.5e12;
    p.n_mxu = 1;
    p.clock_hz = 0.7e9;
    p.hbm_bytes_per_s = 358e9;
    p.alt_hbm_bytes_per_s = 358e9;
    p.ici_bytes_per_s = 0.5e11;  // not published per link for v2; assumption (half of v3)
    return p;
}

HwParams tpu_v4_megacore() {
    HwParams p;
    p.name = "tpu_v4_megacore";
    p.peak_mxu_flops_per_s = 137.5e12;
    p.alt_peak_mxu_flops_per_s = 137.5e12;
    p.n_mxu = 4;
    p.clock_hz = 1.05e9;
    p.hbm_bytes_per_s = 600e9;
    p.alt_hbm_bytes_per_s = 615e9;
    p.ici_bytes_per_s = 4.5e10;
    return p;
}

std::vector<std::string> hardware_names() {
    return {"tpu_v3_core", "tpu_v3_core_jax", "tpu_v2_core", "tpu_v4_megacore"};
}

HwParams hardware_by_name(std::string_view name) {
    if (name == "tpu_v3_core") return tpu_v3_core();
    if (name == "tpu_v3_core_jax") return tpu_v3_core_jax();
    if (name == "tpu_v2_core") return tpu_v2_core();
    if (name == "tpu_v4_megacore") return tpu_v4_megacore();
    std::string valid;
    for (const auto& n : hardware_names()) valid += (valid.empty() ? "" : ", ") + n;
    throw Error(str("unknown hardware '", name, "'; valid names: ", valid));
}

}  // namespace segrank::hw
