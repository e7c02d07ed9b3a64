// TPU hardware parameter tables for the analytical timing model (docs/hwmodel.md#hardware-table).
// Every knob of the model lives in HwParams so a calibration on measured runs
// (docs/hwmodel.md#validation) can overwrite it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace segrank::hw {

/// One TensorCore as seen by one TpuGraphs measurement (docs/hwmodel.md#hardware-table).
/// Units are in the field names; "alt" fields hold the second published variant (JAX's
/// tpu_info table vs Cloud docs) so `tpu_v3_core_jax` can swap them in.
struct HwParams {
    std::string name;
    double peak_mxu_flops_per_s = 61.5e12;  ///< bf16 MXU peak per core (flop = 2 per MAC)
    double alt_peak_mxu_flops_per_s = 70e12;
    int32_t n_mxu = 2;              ///< MXUs per core
    int32_t mxu_dim = 128;          ///< systolic array side (K and N pad to this)
    int32_t lhs_rows_per_push = 8;  ///< LHS rows streamed per push (M pads to this)
    double clock_hz = 0.94e9;
    double vpu_ops_per_cycle = 2048;  ///< f32 ALU ops per cycle (8 sublanes x 128 lanes x 2)
    double hbm_bytes_per_s = 450e9;   ///< HBM bandwidth per core
    double alt_hbm_bytes_per_s = 412.5e9;
    double hbm_efficiency = 0.9;  ///< achievable fraction of hbm_bytes_per_s (fit: fixture copies)
    int64_t vmem_bytes = 16LL << 20;      ///< VMEM per core (tile working set limit)
    double ici_bytes_per_s = 1e11;        ///< one ICI link, one way
    int32_t ici_links = 4;                ///< links used by a ring collective
    double collective_latency_ns = 5000;  ///< fixed latency per collective
    double kernel_overhead_ns = 700;      ///< c_kernel: fixed cost per launched kernel [D]
    double step_overhead_ns = 200;        ///< c_step: fixed cost per tile grid step [D]
    double mxu_weight_load_cycles = 128;  ///< cycles to load one 128x128 weight block
    double cost_cheap = 1;                ///< VPU ops per element: add/mul/select/compare/convert
    double cost_medium = 8;               ///< divide/exp/log/tanh/rsqrt/power
    double cost_expensive = 30;           ///< sin/cos/atan2/erf-like
    double lane_reduce_penalty = 4;       ///< reduce over the minor (lane) dim, via the XLU
    double sublane_reduce_penalty = 2;    ///< reduce over the second-minor (sublane) dim
    double default_trip_count =
        1;  ///< while trip count when none is found (docs/hwmodel.md#trip-counts)
};

/// TPU v3 TensorCore with Cloud numbers (61.5 TF bf16, 450 GB/s): the TpuGraphs target and default.
HwParams tpu_v3_core();
/// TPU v3 TensorCore with JAX tpu_info numbers (70 TF, 412.5 GB/s).
HwParams tpu_v3_core_jax();
/// TPU v2 TensorCore (1 MXU, ~23 TF, ~358 GB/s, 700 MHz).
HwParams tpu_v2_core();
/// TPU v4 megacore (4 MXUs, 137.5 TF, 600 GB/s, 1.05 GHz).
HwParams tpu_v4_megacore();

/// Valid names for hardware_by_name, default first.
std::vector<std::string> hardware_names();
/// Looks a table up by name ("tpu_v3_core", "tpu_v3_core_jax", "tpu_v2_core", "tpu_v4_megacore").
/// Throws segrank::Error listing the valid names when `name` is unknown.
HwParams hardware_by_name(std::string_view name);

}  // namespace segrank::hw
