// Per-op formulas on hand-computed shapes (docs/hwmodel.md#per-op-costs) and the hardware tables
// (5.2).
#include "hwmodel/op_cost.h"

#include <doctest/doctest.h>

#include <string>

#include "gnn/core/check.h"
#include "hwmodel/hardware.h"

using namespace segrank;
namespace et = segrank::hlo::element_type;

namespace {

hlo::Shape array(int32_t type, std::vector<int64_t> dims, std::vector<int64_t> m2m = {}) {
    hlo::Shape s;
    s.element_type = type;
    s.dims = std::move(dims);
    s.has_layout = !m2m.empty();
    s.minor_to_major = std::move(m2m);
    return s;
}

hlo::Instruction op(const std::string& opcode, hlo::Shape shape) {
    hlo::Instruction i;
    i.opcode = opcode;
    i.name = opcode;
    i.shape = std::move(shape);
    return i;
}

}  // namespace

TEST_CASE("hardware tables: v3 default numbers, the JAX variant swaps peak and bandwidth") {
    const auto v3 = hw::tpu_v3_core();
    CHECK(v3.peak_mxu_flops_per_s == 61.5e12);
    CHECK(v3.hbm_bytes_per_s == 450e9);
    CHECK(v3.vmem_bytes == 16LL << 20);
    const auto jax = hw::hardware_by_name("tpu_v3_core_jax");
    CHECK(jax.peak_mxu_flops_per_s == 70e12);
    CHECK(jax.hbm_bytes_per_s == 412.5e9);
    CHECK(hw::hardware_by_name("tpu_v2_core").n_mxu == 1);
    CHECK(hw::hardware_by_name("tpu_v4_megacore").n_mxu == 4);
    // 2 MXUs x 128 x 128 MACs x 2 flops x 0.94 GHz = the published 61.5 TF.
    CHECK(2.0 * v3.n_mxu * v3.mxu_dim * v3.mxu_dim * v3.clock_hz ==
          doctest::Approx(61.6e12).epsilon(0.01));
}

TEST_CASE("unknown hardware names are rejected with the list of valid names") {
    try {
        hw::hardware_by_name("tpu_v9");
        FAIL("expected an error");
    } catch (const Error& e) {
        const std::string msg = e.what();
        CHECK(msg.find("tpu_v9") != std::string::npos);
        CHECK(msg.find("tpu_v3_core, tpu_v3_core_jax, tpu_v2_core, tpu_v4_megacore") !=
              std::string::npos);
    }
}

TEST_CASE("matmul MXU time: rows pad to 8, K and N pad to 128, plus weight loads") {
    const auto hw = hw::tpu_v3_core();
    const double ns_per_cycle = 1e9 / hw.clock_hz;
    // [8,128] x [128,128]: one block: (8 rows + 128 load cycles) / 2 MXUs.
    CHECK(hw::matmul_mxu_ns(1, 8, 128, 128, hw) == doctest::Approx((8 + 128) / 2.0 * ns_per_cycle));
    // m = 9 pads to 16; k = 129 -> 2 blocks; n = 200 -> 2 blocks.
    CHECK(hw::matmul_mxu_ns(1, 9, 129, 200, hw) ==
          doctest::Approx((16 + 128) * 2 * 2 / 2.0 * ns_per_cycle));
    // Padding makes k = 129 cost as much as k = 256.
    CHECK(hw::matmul_mxu_ns(4, 64, 129, 128, hw) == hw::matmul_mxu_ns(4, 64, 256, 128, hw));
    CHECK(hw::matmul_mxu_ns(4, 64, 129, 128, hw, false) < hw::matmul_mxu_ns(4, 64, 129, 128, hw));
}

TEST_CASE(
    "VPU time: vregs x ops / 2 vreg-ops per cycle, cost classes order cheap < medium < expensive") {
    const auto hw = hw::tpu_v3_core();
    CHECK(hw::vpu_ns(1024, 1.0, hw) == doctest::Approx(512 / hw.clock_hz * 1e9));
    CHECK(hw::vpu_ops_per_element("add", hw) < hw::vpu_ops_per_element("exponential", hw));
    CHECK(hw::vpu_ops_per_element("exponential", hw) < hw::vpu_ops_per_element("sine", hw));
    const auto e = op("exponential", array(et::kF32, {8, 128}, {1, 0}));
    const hlo::Shape in = e.shape;
    const auto w = hw::op_work(e, e.shape, {&in}, hw, {});
    CHECK(w.vpu_ns == doctest::Approx(hw.cost_medium / 2.0 / hw.clock_hz * 1e9));
    CHECK(w.mxu_ns == 0);
}

TEST_CASE("collective time: ring 2(p-1)/p bytes over the links plus latency, 0 for one replica") {
    const auto hw = hw::tpu_v3_core();
    CHECK(hw::collective_ns(1000000, 1, hw) == 0);
    CHECK(hw::collective_ns(1000000, 8, hw) ==
          doctest::Approx(2.0 * 7 / 8 * 1e6 / (hw.ici_links * hw.ici_bytes_per_s) * 1e9 +
                          hw.collective_latency_ns));
}

TEST_CASE("convolution as implicit GEMM: fusion.191's 3x3 conv on hand-computed numbers") {
    const auto hw = hw::tpu_v3_core();
    auto conv = op("convolution", array(et::kF32, {32, 12, 12, 384}, {3, 0, 2, 1}));
    conv.has_convolution_dimension_numbers = true;
    auto& dn = conv.convolution_dimension_numbers;
    dn.input_batch_dimension = 0;
    dn.input_feature_dimension = 3;
    dn.input_spatial_dimensions = {1, 2};
    dn.kernel_input_feature_dimension = 2;
    dn.kernel_output_feature_dimension = 3;
    dn.kernel_spatial_dimensions = {0, 1};
    dn.output_batch_dimension = 0;
    dn.output_feature_dimension = 3;
    dn.output_spatial_dimensions = {1, 2};
    conv.window = {{3, 1, 1, 1, 1, 1, false}, {3, 1, 1, 1, 1, 1, false}};
    const auto lhs = array(et::kBF16, {32, 12, 12, 192}, {3, 0, 2, 1});
    const auto rhs = array(et::kF32, {3, 3, 192, 384}, {3, 2, 1, 0});
    const auto w = hw::op_work(conv, conv.shape, {&lhs, &rhs}, hw, {});
    // M = 32*12*12 = 4608 rows, K = 9 taps x 256 (192 padded) -> 18 blocks, N = 384 -> 3 blocks.
    const double cycles = (4608 + 128) * 18.0 * 3 / 2;
    CHECK(w.mxu_ns == doctest::Approx(cycles / hw.clock_hz * 1e9));
    CHECK(w.flops == doctest::Approx(2.0 * 32 * 12 * 12 * 384 * 9 * 192));
    CHECK(w.vpu_ns == 0);  // every feature dim is minor: no relayout
    // Same conv with the input's feature dim moved major needs an XLU relayout.
    const auto lhs_t = array(et::kBF16, {32, 12, 12, 192}, {2, 3, 1, 0});
    CHECK(hw::op_work(conv, conv.shape, {&lhs_t, &rhs}, hw, {}).vpu_ns > 0);
}

TEST_CASE("reduce over the lane (sublane) dim pays the XLU penalty, over a major dim it does not") {
    const auto hw = hw::tpu_v3_core();
    const auto in = array(et::kF32, {4, 64, 256}, {2, 1, 0});
    auto lane = op("reduce", array(et::kF32, {4, 64}, {1, 0}));
    lane.dimensions = {2};
    auto major = op("reduce", array(et::kF32, {64, 256}, {1, 0}));
    major.dimensions = {0};
    auto sublane = op("reduce", array(et::kF32, {4, 256}, {1, 0}));
    sublane.dimensions = {1};
    const hlo::Shape init = array(et::kF32, {});
    const double t_lane = hw::op_work(lane, lane.shape, {&in, &init}, hw, {}).vpu_ns;
    const double t_major = hw::op_work(major, major.shape, {&in, &init}, hw, {}).vpu_ns;
    CHECK(t_lane == doctest::Approx(t_major * hw.lane_reduce_penalty));
    CHECK(hw::op_work(sublane, sublane.shape, {&in, &init}, hw, {}).vpu_ns ==
          doctest::Approx(t_major * hw.sublane_reduce_penalty));
}

TEST_CASE("transposes and copies move data only when the two minor dims change") {
    const auto hw = hw::tpu_v3_core();
    const auto in = array(et::kF32, {4, 8, 128}, {2, 1, 0});
    auto swap_major = op("transpose", array(et::kF32, {8, 4, 128}, {2, 1, 0}));
    swap_major.dimensions = {1, 0, 2};
    // Default layout: the second-minor position now holds in dim 0 (size 4) instead of in dim 1:
    // data moves. Layout {2,0,1} keeps in dims 2 and 1 minor: a free (bitcast) transpose.
    auto keep = op("transpose", array(et::kF32, {8, 4, 128}, {2, 0, 1}));
    keep.dimensions = {1, 0, 2};
    CHECK(hw::op_work(keep, keep.shape, {&in}, hw, {}).vpu_ns == 0);
    CHECK(hw::op_work(swap_major, swap_major.shape, {&in}, hw, {}).vpu_ns > 0);
    auto copy = op("copy", array(et::kBF16, {32, 5, 5, 256}, {3, 2, 1, 0}));
    const auto copy_in = array(et::kBF16, {32, 5, 5, 256}, {3, 0, 2, 1});
    CHECK(hw::op_work(copy, copy.shape, {&copy_in}, hw, {}).vpu_ns > 0);
    CHECK(hw::changes_minor_dims(array(et::kF32, {32, 6400}, {1, 0}),
                                 array(et::kF32, {32, 5, 5, 256}, {3, 2, 1, 0})));
    CHECK_FALSE(hw::changes_minor_dims(array(et::kF32, {4, 8, 128}, {2, 1, 0}),
                                       array(et::kF32, {2, 2, 8, 128}, {3, 2, 1, 0})));
}
