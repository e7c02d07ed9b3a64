// Synthetic modules: structural validity (ids, storage order, edges u > v), node counts, families'
// opcodes, while trip counts found by hwmodel, configurable opcodes and random config validity.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "data/hlo/featurizer.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/module_cost.h"
#include "hwmodel/module_index.h"
#include "hwmodel/padding.h"
#include "hwmodel/synth/builder.h"
#include "hwmodel/synth/configs.h"
#include "hwmodel/synth/families.h"
#include "hwmodel/trip_count.h"

namespace segrank::synth {
namespace {

std::multiset<std::string> opcodes(const hlo::HloModule& m) {
    std::multiset<std::string> s;
    for (const auto& c : m.computations)
        for (const auto& i : c.instructions) s.insert(i.opcode);
    return s;
}

// Featurizer structure checks shared by every synthetic module.
void check_structure(const hlo::HloModule& m) {
    GraphStructure g;
    hlo::featurize_structure(m, g, m.name);  // throws on missing ids / self edges
    REQUIRE(g.num_nodes() == m.num_instructions());
    for (int64_t e = 0; e < g.num_edges(); ++e)
        REQUIRE(g.edge_index[static_cast<size_t>(2 * e)] >
                g.edge_index[static_cast<size_t>(2 * e + 1)]);
    for (int32_t op : g.node_opcode) REQUIRE(op > 0);  // every opcode is a known XLA opcode
    const hw::ModuleIndex idx(m);                      // ids unique, callees exist
    CHECK(idx.entry() == m.computations.size() - 1);
}

}  // namespace

TEST_CASE("ModuleBuilder derives XLA shapes: conv SAME padding, dot, reduce, transpose") {
    ModuleBuilder b("t");
    b.open("entry");
    const auto bf = hlo::element_type::kBF16;
    const int64_t x = b.parameter(array_shape(bf, {8, 28, 28, 64}), 0);
    const int64_t w = b.parameter(array_shape(bf, {3, 3, 64, 128}), 1);
    const int64_t c = b.conv2d(x, w, 2);
    CHECK(b.shape(c).dims == std::vector<int64_t>{8, 14, 14, 128});
    const int64_t l = b.parameter(array_shape(bf, {4, 16, 32}), 2);
    const int64_t r = b.parameter(array_shape(bf, {4, 32, 8}), 3);
    CHECK(b.shape(b.dot(l, r)).dims == std::vector<int64_t>{4, 16, 8});
    const int64_t red = b.reducer("add", bf);
    const int64_t s = b.reduce(c, b.constant(bf, 0), {0, 1, 2}, red);
    CHECK(b.shape(s).dims == std::vector<int64_t>{128});
    const int64_t t = b.transpose(l, {0, 2, 1});
    CHECK(b.shape(t).dims == std::vector<int64_t>{4, 32, 16});
    CHECK_THROWS_AS(b.dot(l, l), Error);
    const hlo::HloModule m = b.finish(t);
    REQUIRE(m.computations.size() == 2);
    CHECK(m.computations[0].name.find("add_reducer") == 0);  // callee stored first
    const auto& conv = m.at(*m.find_instruction(c));
    CHECK(conv.window[0].padding_low + conv.window[0].padding_high == 1);
    CHECK(conv.window[0].stride == 2);
    CHECK(conv.convolution_dimension_numbers.input_feature_dimension == 3);
    CHECK(conv.shape.minor_to_major == std::vector<int64_t>{3, 2, 1, 0});
    check_structure(m);
}

TEST_CASE("layout modules of both families are valid and hit the node target exactly") {
    for (Family f : {Family::kConvNet, Family::kTransformer}) {
        for (int64_t target : {300, 1500}) {
            Rng rng(17 + static_cast<uint64_t>(target));
            const hlo::HloModule m = make_layout_module(rng, f, target, "m");
            CAPTURE(target);
            CHECK(m.num_instructions() == target);
            check_structure(m);
            const auto ops = opcodes(m);
            CHECK(ops.count("reduce") > 0);
            CHECK(ops.count("dot") > 0);
            if (f == Family::kConvNet) CHECK(ops.count("convolution") > 0);
            if (f == Family::kTransformer) {
                CHECK(ops.count("transpose") > 0);
                CHECK(ops.count("exponential") > 0);
                CHECK(ops.count("divide") > 0);
            }
            const auto cfg = configurable_nodes(m);
            REQUIRE(!cfg.empty());
            CHECK(std::is_sorted(cfg.begin(), cfg.end()));
            const hw::ModuleIndex idx(m);
            for (int64_t node : cfg) {
                const auto& op = m.at(idx.ref_of_node(node)).opcode;
                CHECK((op == "convolution" || op == "dot" || op == "reshape"));
            }
        }
    }
}

TEST_CASE("synthetic while loops carry trip counts that hwmodel recognises") {
    int found = 0;
    for (uint64_t seed = 0; seed < 12 && found < 3; ++seed) {
        Rng rng(seed);
        const hlo::HloModule m =
            make_layout_module(rng, seed % 2 ? Family::kTransformer : Family::kConvNet, 1200, "w");
        const hw::ModuleIndex idx(m);
        for (const auto& c : m.computations)
            for (const auto& ins : c.instructions) {
                if (ins.opcode != "while") continue;
                const auto trips = hw::find_trip_count(idx, ins);
                REQUIRE(trips.has_value());
                CHECK(*trips >= 2);
                ++found;
            }
        // node_splits: a boundary after each while body and condition computation.
        const auto splits = hlo::node_splits(m);
        CHECK(splits.front() == 0);
        CHECK(splits.back() == m.num_instructions());
    }
    CHECK(found >= 3);
}

TEST_CASE("tile kernels of every kind are a fusion root over its fused computation") {
    for (int k = 0; k < 4; ++k) {
        for (int64_t target : {32, 400}) {
            Rng rng(100 + static_cast<uint64_t>(k));
            const hlo::HloModule m =
                make_tile_module(rng, static_cast<KernelKind>(k), target, "fusion.1");
            CAPTURE(k);
            CAPTURE(target);
            CHECK(m.num_instructions() == target);
            check_structure(m);
            const auto& entry = m.computations.back();
            const auto& root = entry.instructions.back();
            CHECK(root.id == entry.root_id);
            CHECK(root.opcode == "fusion");
            const hw::ModuleIndex idx(m);
            CHECK(m.computations[idx.computation(root.called_computation_ids.at(0))]
                      .is_fusion_computation);
            const hw::KernelModel km(m, hw::tpu_v3_core());
            CHECK(!km.iteration_units().empty());
            if (k <= 1) CHECK(!km.kernel_units().empty());  // conv/dot: weight operand found
        }
    }
}

TEST_CASE("random layout configs are permutations of each tensor's rank, or default") {
    Rng rng(5);
    int defaults = 0, partial = 0, full = 0;
    for (int i = 0; i < 300; ++i) {
        const auto node = random_node_layout(rng, {4, 4, 4});
        REQUIRE(node.tensors.size() == 3);
        for (const auto& t : node.tensors) {
            if (t.empty()) {
                ++defaults;
                continue;
            }
            std::set<int32_t> s(t.begin(), t.end());
            CHECK(s.size() == t.size());
            for (int32_t d : t) CHECK((d >= 0 && d < 4));
            (t.size() == 4 ? full : partial) += 1;
            CHECK((t.size() == 4 || t.size() == 2));
        }
    }
    CHECK(defaults > 0);
    CHECK(partial > 0);
    CHECK(full > 0);
}

TEST_CASE("random tile configs fit VMEM and stay within the iteration extents") {
    Rng mrng(9);
    const hlo::HloModule m = make_tile_module(mrng, KernelKind::kConvolution, 40, "fusion.2");
    const hw::KernelModel km(m, hw::tpu_v3_core());
    Rng rng(3);
    std::set<std::vector<int64_t>> distinct;
    for (int i = 0; i < 50; ++i) {
        const auto t = random_tile_config(rng, km);
        REQUIRE(t.output_bounds.size() == km.iteration_units().size());
        for (size_t d = 0; d < t.output_bounds.size(); ++d)
            CHECK((t.output_bounds[d] >= 1 &&
                   t.output_bounds[d] <= std::max<int64_t>(1, km.iteration_units()[d])));
        CHECK(t.kernel_bounds.size() == km.kernel_units().size());
        CHECK_FALSE(km.evaluate(t).invalid);
        distinct.insert(t.output_bounds);
    }
    CHECK(distinct.size() > 5);
}

TEST_CASE("noisy runtimes: sigma 0 is the rounded estimate, sigma > 0 varies around it") {
    Rng rng(1);
    CHECK(noisy_runtime_ns(rng, 1234.4, 0.0) == 1234);
    CHECK(noisy_runtime_ns(rng, 0.1, 0.0) == 2);
    double lo = 1e30, hi = 0;
    for (int i = 0; i < 200; ++i) {
        const auto v = static_cast<double>(noisy_runtime_ns(rng, 1e6, 0.1));
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    CHECK(lo < 0.95e6);
    CHECK(hi > 1.05e6);
    CHECK(lo > 0.5e6);
    CHECK(hi < 2e6);
    CHECK_THROWS_AS(noisy_runtime_ns(rng, std::numeric_limits<double>::infinity(), 0.1), Error);
}

}  // namespace segrank::synth
