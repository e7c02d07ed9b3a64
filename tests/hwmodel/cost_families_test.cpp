// Cost families (docs/hwmodel.md#cost-families) on hand-sized modules: each family's cost of a
// layout / tile choice worked out by hand, families that rank a config pair differently, and the
// registry's names and errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "gnn/core/check.h"
#include "hwmodel/costs/cost_family.h"
#include "hwmodel/costs/families.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/synth/synth.h"

using namespace segrank;
namespace et = segrank::hlo::element_type;

namespace {

hlo::Shape array(int32_t type, std::vector<int64_t> dims) {
    hlo::Shape s;
    s.element_type = type;
    s.dims = std::move(dims);
    return s;
}

hlo::Instruction ins(int64_t id, const std::string& opcode, hlo::Shape shape,
                     std::vector<int64_t> ops = {}) {
    hlo::Instruction i;
    i.id = id;
    i.opcode = opcode;
    i.name = opcode + "." + std::to_string(id);
    i.shape = std::move(shape);
    i.operand_ids = std::move(ops);
    return i;
}

// x: f32[64,256], w: f32[256,128]; d = dot(x, w): f32[64,128] (node 2, configurable);
// e = exp(d); n = negate(e) (root). Default layouts {1,0}.
hlo::HloModule dot_chain() {
    hlo::HloModule m;
    m.name = "dot_chain";
    hlo::Computation c{1, "main", 5, false, {}};
    c.instructions = {ins(1, "parameter", array(et::kF32, {64, 256})),
                      ins(2, "parameter", array(et::kF32, {256, 128})),
                      ins(3, "dot", array(et::kF32, {64, 128}), {1, 2}),
                      ins(4, "exponential", array(et::kF32, {64, 128}), {3}),
                      ins(5, "negate", array(et::kF32, {64, 128}), {4})};
    c.instructions[1].parameter_number = 1;
    m.computations = {c};
    m.entry_computation_id = 1;
    return m;
}

// x: f32[2048,256], w: f32[256,8]; d = dot(x, w): f32[2048,8] (node 2, configurable);
// e = exp(d); r = reduce(e, zero) over {0,1}: f32[] (root). A narrow minor dim: {0,1} pads less.
hlo::HloModule narrow_dot() {
    hlo::HloModule m;
    m.name = "narrow_dot";
    hlo::Computation c{1, "main", 6, false, {}};
    auto r = ins(6, "reduce", array(et::kF32, {}), {4, 5});
    r.dimensions = {0, 1};
    c.instructions = {ins(1, "parameter", array(et::kF32, {2048, 256})),
                      ins(2, "parameter", array(et::kF32, {256, 8})),
                      ins(3, "dot", array(et::kF32, {2048, 8}), {1, 2}),
                      ins(4, "exponential", array(et::kF32, {2048, 8}), {3}),
                      ins(5, "constant", array(et::kF32, {})),
                      r};
    c.instructions[1].parameter_number = 1;
    m.computations = {c};
    m.entry_computation_id = 1;
    return m;
}

// 18 layout values: tensor t lists `dims` (minor first), the rest -1.
std::array<int8_t, 18> row(std::vector<int8_t> out, std::vector<int8_t> in = {},
                           std::vector<int8_t> kernel = {}) {
    std::array<int8_t, 18> v;
    v.fill(-1);
    for (size_t d = 0; d < out.size() && d < 6; ++d) v[d] = out[d];
    for (size_t d = 0; d < in.size() && d < 6; ++d) v[6 + d] = in[d];
    for (size_t d = 0; d < kernel.size() && d < 6; ++d) v[12 + d] = kernel[d];
    return v;
}

// Cost of `config` minus the default's (every value -1), one configurable node.
double delta(hw::CostFamily f, const hlo::HloModule& m, const std::array<int8_t, 18>& config,
             std::vector<int64_t> nodes = {2}) {
    auto cost = hw::make_layout_cost(f, m, nodes, hw::tpu_v3_core());
    const std::array<int8_t, 18> unset = row({});
    return cost->evaluate_ns(config.data()) - cost->evaluate_ns(unset.data());
}

constexpr double kHbm = 450e9 * 0.9 / 1e9;  // tpu_v3 effective bytes per ns
constexpr double kClock = 0.94;             // cycles per ns

}  // namespace

TEST_CASE("copy_bound charges a transposing copy by 64-byte granules") {
    const auto m = dot_chain();
    // d's output {0,1}: no common minor dim, runs of 1 element (4 B) rounded to 64 B, read and
    // written: 2 x 8192 x 64 B = 1048576 B, plus the 1 us DMA setup.
    CHECK(delta(hw::CostFamily::kCopyBound, m, row({0, 1})) ==
          doctest::Approx(1048576 / kHbm + 1000));
    // x read as {0,1}: 2 x 16384 x 64 B.
    CHECK(delta(hw::CostFamily::kCopyBound, m, row({}, {0, 1})) ==
          doctest::Approx(2097152 / kHbm + 1000));
    // The node's own layout listed explicitly: nothing changes.
    CHECK(delta(hw::CostFamily::kCopyBound, m, row({1, 0}, {1, 0}, {1, 0})) == 0);
}

TEST_CASE("mxu_padded pads dims by their layout position and relayouts on the XLU") {
    const auto m = dot_chain();
    // Default: P(x) = 64 x 256, P(w) = 256 x 128, P(d) = 64 x 128; MACs = sqrt of the product =
    // 2^21 = 64 x 256 x 128; / (128 x 128 x 2 MXUs) = 64 cycles.
    // d {0,1}: its minor dim 0 pads 64 -> 128: P(d) = 128 x 128 = 2^14, MACs = 2^21.5, so
    // 2^21.5 / 2^15 cycles. Relayout: 2 cycles x (8 vregs of {1,0} + 16 of {0,1}).
    const double mxu = (std::pow(2.0, 21.5) - std::pow(2.0, 21)) / 32768 / kClock;
    CHECK(delta(hw::CostFamily::kMxuPadded, m, row({0, 1})) ==
          doctest::Approx(mxu + 2 * (8 + 16) / kClock));
    // x {0,1}: minor dim 0 pads 64 -> 128: P(x) = 2^15, the same MACs; relayout 16 + 32 vregs.
    CHECK(delta(hw::CostFamily::kMxuPadded, m, row({}, {0, 1})) ==
          doctest::Approx(mxu + 2 * (16 + 32) / kClock));
}

TEST_CASE("memory_v5 costs bytes under its own tiling at 819 GB/s") {
    constexpr double v5 = 819e9 * 0.85 / 1e9;
    const auto m = dot_chain();
    // d {0,1}: physical [128, 64] -> 128 x roundup(64, 128) x 4 B = 65536 B instead of 32768 B:
    // the dot writes 32768 B more, and a copy kernel reads 32768 + writes 65536 B (+ 400 ns).
    CHECK(delta(hw::CostFamily::kMemoryV5, m, row({0, 1})) ==
          doctest::Approx(32768 / v5 + (32768 + 65536) / v5 + 400));
    // Its tiling: bf16 pads the second-minor dim to 16 (tpu_v3: 8), f32 rank-1 to 1024.
    CHECK(hw::costs::v5_tiled_bytes(array(et::kBF16, {9, 128})) == 16 * 128 * 2);
    CHECK(hw::costs::v5_tiled_bytes(array(et::kF32, {3, 100})) == 8 * 128 * 4);
    CHECK(hw::costs::v5_tiled_bytes(array(et::kF32, {1000})) == 1024 * 4);
}

TEST_CASE("propagate carries a configured output layout through its elementwise users") {
    const auto m = dot_chain();
    // d {0,1}: d writes 65536 B instead of 32768 B (the dot is HBM-bound: 229376 B = 566 ns vs
    // 192 MXU cycles = 204 ns); exp and negate adopt {0,1}: each writes and is read in it,
    // 2 x 32768 B more each; negate is the root (a fixed layout): one copy back,
    // 32768 + 65536 B + 700 ns.
    CHECK(delta(hw::CostFamily::kPropagate, m, row({0, 1})) ==
          doctest::Approx(32768 / kHbm + 2 * 2 * 32768 / kHbm + (32768 + 65536) / kHbm + 700));
}

TEST_CASE("propagate copies between two configured nodes only when both choose and differ") {
    // x: f32[64,128]; d1 = dot(x, w1): f32[64,128] (node 2); d2 = dot(d1, w2) (node 4).
    hlo::HloModule m;
    m.name = "two_dots";
    hlo::Computation c{1, "main", 5, false, {}};
    const auto s = array(et::kF32, {64, 128}), w = array(et::kF32, {128, 128});
    c.instructions = {ins(1, "parameter", s), ins(2, "parameter", w), ins(3, "dot", s, {1, 2}),
                      ins(6, "parameter", w), ins(5, "dot", s, {3, 6})};
    c.instructions[1].parameter_number = 1;
    c.instructions[3].parameter_number = 2;
    m.computations = {c};
    m.entry_computation_id = 1;
    auto cost = hw::make_layout_cost(hw::CostFamily::kPropagate, m, {2, 4}, hw::tpu_v3_core());
    auto eval = [&](std::array<int8_t, 18> a, std::array<int8_t, 18> b) {
        std::vector<int8_t> v(a.begin(), a.end());
        v.insert(v.end(), b.begin(), b.end());
        return cost->evaluate_ns(v.data());
    };
    const double out_only = eval(row({0, 1}), row({}));
    // d2 asks for d1 in {1,0} while d1 chose {0,1}: one copy, 65536 + 32768 B + 700 ns (d2's own
    // bytes do not change: {1,0} is d1's layout in the module).
    CHECK(eval(row({0, 1}), row({}, {1, 0})) - out_only ==
          doctest::Approx((65536 + 32768) / kHbm + 700));
    // d2 asks for what d1 chose: no copy; d2 reads the 65536 B of {0,1} instead of 32768 B.
    CHECK(eval(row({0, 1}), row({}, {0, 1})) - out_only == doctest::Approx(32768 / kHbm));
    // d2 alone asks for {0,1}: d1 is left to the compiler and adopts it (no copy).
    CHECK(eval(row({}), row({}, {0, 1})) - eval(row({}), row({})) == doctest::Approx(32768 / kHbm));
}

TEST_CASE("fusion_aware absorbs a relayout into the fused elementwise consumer") {
    const auto m = dot_chain();
    // exp + negate are one kernel: VPU 8 vregs x (8 + 1) ops / 2 per cycle = 36 cycles; boundary
    // bytes: reads d (32768 B), writes negate (32768 B) = 65536 B = 161.8 ns: HBM-bound.
    // d {0,1}: the dot writes 32768 B more; the fused kernel transposes on the XLU
    // (2 x (8 + 16) vregs = 48 cycles, VPU 84 cycles = 89 ns: still HBM-bound) and reads the
    // 65536 B of {0,1}: 32768 B more. No copy kernel.
    CHECK(delta(hw::CostFamily::kFusionAware, m, row({0, 1})) ==
          doctest::Approx(32768 / kHbm + 32768 / kHbm));
    // x (a parameter, not fusible) read as {0,1}: a copy kernel, 65536 + 131072 B + 700 ns, and
    // the dot reads 65536 B more.
    CHECK(delta(hw::CostFamily::kFusionAware, m, row({}, {0, 1})) ==
          doctest::Approx(65536 / kHbm + (65536 + 131072) / kHbm + 700));
}

TEST_CASE("propagate and copy_bound rank a narrow layout against the default oppositely") {
    const auto m = narrow_dot();
    // d: f32[2048,8] {1,0} pads its minor 8 to 128: 2048 x 128 x 4 = 1048576 B; {0,1} pads
    // nothing: 8 x 2048 x 4 = 65536 B. propagate: d and exp are produced in {0,1} and the reduce
    // accepts any layout, so no copy: d writes 983040 B less, exp writes and is read
    // 2 x 983040 B less. copy_bound (dense bytes, no padding): only the copy, 2 x 16384 x 64 B.
    const double prop = delta(hw::CostFamily::kPropagate, m, row({0, 1}));
    const double copy = delta(hw::CostFamily::kCopyBound, m, row({0, 1}));
    CHECK(prop == doctest::Approx(-3 * 983040 / kHbm));
    CHECK(copy == doctest::Approx(2097152 / kHbm + 1000));
    CHECK(prop < 0);
    CHECK(copy > 0);
}

namespace {

// One loop fusion exp(p): f32[rows,1024] -> f32[rows,1024] (a tile kernel).
hlo::HloModule exp_kernel(int64_t rows, int64_t cols = 1024) {
    const auto s = array(et::kF32, {rows, cols});
    hlo::HloModule m;
    m.name = "exp_kernel";
    hlo::Computation f{1, "fused", 11, true, {}};
    f.instructions = {ins(10, "parameter", s), ins(11, "exponential", s, {10})};
    hlo::Computation e{2, "main", 21, false, {}};
    auto fu = ins(21, "fusion", s, {20});
    fu.called_computation_ids = {1};
    e.instructions = {ins(20, "parameter", s), fu};
    m.computations = {f, e};
    m.entry_computation_id = 2;
    return m;
}

hlo::TileSizeConfig tile(std::vector<int64_t> out) {
    hlo::TileSizeConfig t;
    t.output_bounds = std::move(out);
    return t;
}

double tile_ns(hw::CostFamily f, const hw::KernelModel& k, const hlo::TileSizeConfig& t) {
    return hw::make_tile_cost(f, k, hw::tpu_v3_core())->evaluate_ns(t);
}

}  // namespace

TEST_CASE("tile families on a hand-sized exp kernel") {
    // f32[512,512]: tile units [64, 4]; bounds [8, 4] = 8 blocks of 64 x 512 (131072 B in, 131072
    // B out), no waste. VPU: 256 vregs x 8 ops / 2 per cycle = 1024 cycles = 1089.4 ns; HBM:
    // 2 MiB once = 5178 ns.
    const auto m = exp_kernel(512, 512);
    const hw::KernelModel k(m, hw::tpu_v3_core());
    const double vpu = 1024 / kClock, hbm = 2097152 / kHbm;
    // vmem_spill: 2 x 262144 B fits VMEM: roofline + launch.
    CHECK(tile_ns(hw::CostFamily::kVmemSpill, k, tile({8, 4})) ==
          doctest::Approx(std::max(vpu, hbm) + 700));
    // pipeline: per output tile load (131072 B + 500 ns), compute (vpu / 8), store (131072 B +
    // 500 ns); 8 tiles + launch.
    const double io = 131072 / kHbm + 500;
    CHECK(tile_ns(hw::CostFamily::kPipeline, k, tile({8, 4})) ==
          doctest::Approx(8 * (io + vpu / 8 + io) + 700));
    // step_overhead: launch + 8 x 1.5 us + VPU + HBM, nothing overlapped.
    CHECK(tile_ns(hw::CostFamily::kStepOverhead, k, tile({8, 4})) ==
          doctest::Approx(700 + 8 * 1500 + vpu + hbm));
    // tpu_v3 through the registry is the KernelModel.
    CHECK(tile_ns(hw::CostFamily::kTpuV3, k, tile({8, 4})) ==
          doctest::Approx(k.evaluate(tile({8, 4})).total_ns));
}

TEST_CASE("vmem_spill and step_overhead rank one big tile against two halves oppositely") {
    // f32[2048,1024] (8 MiB in, 8 MiB out): units [256, 8]. One block: double-buffered 32 MiB,
    // 16 MiB over VMEM, spilled out and back once: 16 + 32 MiB of HBM traffic. Two blocks of
    // [128, 8]: exactly 16 MiB, no spill. step_overhead charges 1.5 us per step and no spill.
    const auto m = exp_kernel(2048);
    const hw::KernelModel k(m, hw::tpu_v3_core());
    const double mib = 1048576;
    CHECK(tile_ns(hw::CostFamily::kVmemSpill, k, tile({256, 8})) ==
          doctest::Approx(48 * mib / kHbm + 700));
    CHECK(tile_ns(hw::CostFamily::kVmemSpill, k, tile({128, 8})) ==
          doctest::Approx(16 * mib / kHbm + 700));
    const double vpu = 2048 * 8 / 2 / kClock;
    CHECK(tile_ns(hw::CostFamily::kStepOverhead, k, tile({256, 8})) ==
          doctest::Approx(700 + 1500 + vpu + 16 * mib / kHbm));
    CHECK(tile_ns(hw::CostFamily::kStepOverhead, k, tile({128, 8})) ==
          doctest::Approx(700 + 2 * 1500 + vpu + 16 * mib / kHbm));
}

TEST_CASE("cost family names parse, and unknown names and wrong kinds are refused") {
    CHECK(hw::cost_family_names().front() == "tpu_v3");
    CHECK(hw::cost_family_names().size() == 9);
    for (const auto& n : hw::cost_family_names())
        CHECK(hw::cost_family_name(hw::parse_cost_family(n)) == n);
    CHECK_THROWS_WITH_AS(hw::parse_cost_family("tpu_v9"),
                         doctest::Contains("valid names: tpu_v3 (layout, tile), propagate"), Error);
    const auto m = dot_chain();
    CHECK_THROWS_WITH_AS(hw::make_layout_cost(hw::CostFamily::kPipeline, m, {2}, hw::tpu_v3_core()),
                         doctest::Contains("is a tile cost"), Error);
    const auto t = exp_kernel(64, 128);
    const hw::KernelModel k(t, hw::tpu_v3_core());
    CHECK_THROWS_WITH_AS(hw::make_tile_cost(hw::CostFamily::kCopyBound, k, hw::tpu_v3_core()),
                         doctest::Contains("is a layout cost"), Error);
}

TEST_CASE("synth labels the same graphs and configs under every cost family, noise included") {
    synth::SynthOptions opt;
    opt.seed = 11;
    opt.min_nodes = 60;
    opt.max_nodes = 150;
    opt.configs = 6;
    opt.noise_sigma = 0.05;
    const synth::SynthLayout ref = synth::synth_layout(opt, 0);
    const synth::SynthTile tref = synth::synth_tile(opt, 0);
    for (const auto& name : hw::cost_family_names()) {
        INFO(name);
        opt.cost_family = hw::parse_cost_family(name);
        if (hw::cost_family_kind(opt.cost_family) == hw::CostKind::kTile) {
            CHECK_THROWS_WITH_AS(synth::synth_layout(opt, 0), doctest::Contains("is a tile cost"),
                                 Error);
            const synth::SynthTile t = synth::synth_tile(opt, 0);
            CHECK(std::equal(t.graph.config_feat.span().begin(), t.graph.config_feat.span().end(),
                             tref.graph.config_feat.span().begin()));
            CHECK(t.graph.config_runtime != tref.graph.config_runtime);
            for (auto ns : t.graph.config_runtime) CHECK(ns >= 2);
            continue;
        }
        if (hw::cost_family_kind(opt.cost_family) == hw::CostKind::kLayout)
            CHECK_THROWS_WITH_AS(synth::synth_tile(opt, 0), doctest::Contains("is a layout cost"),
                                 Error);
        const synth::SynthLayout g = synth::synth_layout(opt, 0);
        CHECK(g.graph.node_config_feat == ref.graph.node_config_feat);
        CHECK(g.graph.edge_index == ref.graph.edge_index);
        for (auto ns : g.graph.config_runtime) CHECK(ns >= 2);
        if (opt.cost_family != hw::CostFamily::kTpuV3)
            CHECK(g.graph.config_runtime != ref.graph.config_runtime);
    }
}
