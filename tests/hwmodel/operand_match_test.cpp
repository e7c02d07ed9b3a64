// Layout tensors of a configured node meet operands by rank (module_cost.h match_layout_operands):
// npz graphs list operands by ascending node id, so operand order is lost.
#include <doctest/doctest.h>

#include "gnn/core/check.h"
#include "hwmodel/from_graph.h"
#include "hwmodel/module_cost.h"
#include "tests/support/dot_order_graph.h"

using namespace segrank;
using segrank::test::array;
using segrank::test::dot_config;
using segrank::test::dot_module;
using segrank::test::npz_form;

namespace {

std::vector<const hlo::Shape*> ptrs(const std::vector<hlo::Shape>& s) {
    std::vector<const hlo::Shape*> p;
    for (const auto& x : s) p.push_back(&x);
    return p;
}

}  // namespace

TEST_CASE(
    "a dot whose rank-3 operand 0 has the higher id is costed from npz like the true module") {
    const hlo::HloModule m = dot_module();
    const LayoutGraph g = npz_form(m, {dot_config()});
    CHECK(g.edge_index == std::vector<int64_t>{2, 0, 2, 1});  // sorted by id: operand order is lost
    const hlo::HloModule rebuilt = hw::module_from_graph(g);
    REQUIRE(rebuilt.computations.at(0).instructions.at(2).operand_ids ==
            std::vector<int64_t>{1, 2});
    const auto hw = hw::tpu_v3_core();
    hw::LayoutModel from_npz(rebuilt, {2}, hw), exact(m, {2}, hw);
    const hw::LayoutValues v = hw::layout_values(dot_config());
    // Before: "layout config of 'dot.2' tensor 1: layout lists 3 dims but the array has rank 2".
    const hw::Breakdown a = from_npz.evaluate(std::vector<hw::LayoutValues>{v});
    const hw::Breakdown b = exact.evaluate(std::vector<hw::LayoutValues>{v});
    // The copies the layouts insert depend only on which operand gets which layout.
    CHECK(a.copy_ns > 0);
    CHECK(a.copy_ns == doctest::Approx(b.copy_ns).epsilon(1e-12));
    CHECK(a.copy_ns > from_npz.default_cost().copy_ns);
}

TEST_CASE("layout tensors go to the operand of the listed rank, ties keep id order") {
    const auto r2 = array({4, 5}), r3 = array({2, 4, 5}), r4 = array({2, 2, 4, 5});
    auto values = [](int in_dims, int kernel_dims) {
        hw::LayoutValues v;
        v.fill(-1);
        for (int d = 0; d < in_dims; ++d)
            v[static_cast<size_t>(6 + d)] = static_cast<int8_t>(in_dims - 1 - d);
        for (int d = 0; d < kernel_dims; ++d)
            v[static_cast<size_t>(12 + d)] = static_cast<int8_t>(kernel_dims - 1 - d);
        return v;
    };
    using P = std::array<int, 2>;
    CHECK(hw::match_layout_operands(values(3, 2), ptrs({r2, r3})) == P{1, 0});  // swapped by rank
    CHECK(hw::match_layout_operands(values(3, 2), ptrs({r3, r2})) == P{0, 1});
    CHECK(hw::match_layout_operands(values(2, 2), ptrs({r2, r2})) == P{0, 1});  // tie: id order
    CHECK(hw::match_layout_operands(values(0, 0), ptrs({r2, r3})) == P{0, 1});  // unset: id order
    CHECK(hw::match_layout_operands(values(2, 0), ptrs({r3, r2})) == P{1, 0});  // the full fit wins
    CHECK(hw::match_layout_operands(values(4, 0), ptrs({r2, r3, r4})) == P{2, 0});
    CHECK(hw::match_layout_operands(values(4, 4), ptrs({r2, r3})) == P{0, 1});  // nothing fits
    // Partial lists (as in the real layout files): {0, 2} names dim 2, so only the rank-3 operand.
    hw::LayoutValues partial;
    partial.fill(-1);
    partial[6] = 0, partial[7] = 2, partial[12] = 0, partial[13] = 1;
    CHECK(hw::match_layout_operands(partial, ptrs({r2, r3})) == P{1, 0});
    CHECK(hw::match_layout_operands(partial, ptrs({r3, r3})) == P{0, 1});
    CHECK(hw::match_layout_operands(values(2, 2), ptrs({r2})) == P{0, -1});
    CHECK(hw::match_layout_operands(values(2, 2), {}) == P{-1, -1});
}

TEST_CASE("a layout no operand can take is still an error naming the node and the tensor") {
    const hlo::HloModule m = dot_module();
    const hlo::NodeLayoutConfig four{{{}, {3, 2, 1, 0}, {}}};
    const hlo::HloModule rebuilt = hw::module_from_graph(npz_form(m, {four}));
    hw::LayoutModel model(rebuilt, {2}, hw::tpu_v3_core());
    CHECK_THROWS_WITH_AS(
        model.evaluate(std::vector<hw::LayoutValues>{hw::layout_values(four)}),
        doctest::Contains(
            "layout config of 'dot.2' tensor 1: layout lists 4 dims but the array has rank 2"),
        Error);
}
