// Whole-module model (docs/hwmodel.md#modules-under-a-layout-config) on hand-built modules: control
// flow, trip counts, layout configs, copies and incremental evaluation.
#include "hwmodel/module_cost.h"

#include <doctest/doctest.h>

#include "gnn/core/check.h"
#include "hwmodel/module_index.h"
#include "hwmodel/trip_count.h"

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

hlo::Instruction constant(int64_t id, double v) {
    auto c = ins(id, "constant", array(et::kS32, {}));
    c.scalar_constant = v;
    return c;
}

// while (i < trips) { x = exp(x); i += 1 } over x: f32[512,512], then a dot after the loop.
//   body (comp 1):  p=param; i=gte(p,0); x=gte(p,1); one; i+1; exp(x); tuple
//   cond (comp 2):  p=param; i=gte(p,0); limit; compare
//   entry (comp 3): x=param; zero; tuple(zero, x); while; gte(w,1); dot(y, y)
hlo::HloModule loop_module(double trips, double init = 0) {
    const auto x = array(et::kF32, {512, 512});
    hlo::Shape state;
    state.element_type = et::kTuple;
    state.tuple_shapes = {array(et::kS32, {}), x};
    hlo::HloModule m;
    m.name = "loop";
    hlo::Computation body{1, "while_body", 17, false, {}};
    body.instructions = {ins(10, "parameter", state),
                         ins(11, "get-tuple-element", array(et::kS32, {}), {10}),
                         ins(12, "get-tuple-element", x, {10}),
                         constant(13, 1),
                         ins(14, "add", array(et::kS32, {}), {11, 13}),
                         ins(15, "exponential", x, {12}),
                         ins(17, "tuple", state, {14, 15})};
    body.instructions[2].tuple_index = 1;
    hlo::Computation cond{2, "while_cond", 23, false, {}};
    cond.instructions = {ins(20, "parameter", state),
                         ins(21, "get-tuple-element", array(et::kS32, {}), {20}),
                         constant(22, trips), ins(23, "compare", array(et::kPred, {}), {21, 22})};
    hlo::Computation entry{3, "main", 36, false, {}};
    auto w = ins(34, "while", state, {33});
    w.called_computation_ids = {1, 2};  // XLA order: body, condition
    auto y = ins(35, "get-tuple-element", x, {34});
    y.tuple_index = 1;
    entry.instructions = {
        ins(30, "parameter", x),    constant(31, init), ins(33, "tuple", state, {31, 30}), w, y,
        ins(36, "dot", x, {35, 35})};
    m.computations = {body, cond, entry};
    m.entry_computation_id = 3;
    return m;
}

}  // namespace

TEST_CASE("trip counts are pattern-matched from compare(gte, constant) and the init tuple") {
    for (double trips : {1.0, 2.0, 7.0}) {
        const auto m = loop_module(trips);
        const hw::ModuleIndex idx(m);
        const auto t = hw::find_trip_count(idx, idx.instruction(34));
        REQUIRE(t.has_value());
        CHECK(*t == static_cast<int64_t>(trips));
    }
    const auto from3 = loop_module(10, 3);
    const hw::ModuleIndex idx(from3);
    CHECK(hw::find_trip_count(idx, idx.instruction(34)).value() == 7);
}

TEST_CASE("a larger trip count is slower: while = trips x (body + condition)") {
    const auto hw = hw::tpu_v3_core();
    const auto m2 = loop_module(2), m3 = loop_module(3), m10 = loop_module(10);
    hw::LayoutModel a(m2, {}, hw), b(m3, {}, hw), c(m10, {}, hw);
    CHECK(a.default_cost().total_ns < b.default_cost().total_ns);
    CHECK(b.default_cost().total_ns < c.default_cost().total_ns);
    // The per-iteration cost is constant: t(10) - t(3) = 7 x (t(3) - t(2)).
    CHECK(c.default_cost().total_ns - b.default_cost().total_ns ==
          doctest::Approx(7 * (b.default_cost().total_ns - a.default_cost().total_ns)));
    // Ablation: without trip counts every loop runs once.
    hw::CostOptions no_trips;
    no_trips.trip_counts = false;
    hw::LayoutModel d(m10, {}, hw, no_trips), e(m2, {}, hw, no_trips);
    CHECK(d.default_cost().total_ns == doctest::Approx(e.default_cost().total_ns));
    // ... or default_trip_count times, as when no trip count is found: 3 gives the 3-trip cost.
    auto hw3 = hw;
    hw3.default_trip_count = 3;
    hw::LayoutModel f(m10, {}, hw3, no_trips), g(m2, {}, hw3, no_trips);
    CHECK(f.default_cost().total_ns == doctest::Approx(b.default_cost().total_ns));
    CHECK(g.default_cost().total_ns == doctest::Approx(b.default_cost().total_ns));
    // A found trip count wins over default_trip_count when trip counts are on.
    hw::LayoutModel h(m10, {}, hw3);
    CHECK(h.default_cost().total_ns == doctest::Approx(c.default_cost().total_ns));
}

TEST_CASE("layout configs: default values reproduce the default cost, a padded layout is slower") {
    const auto hw = hw::tpu_v3_core();
    const auto m = loop_module(2);
    // Configurable node: the dot (node index of id 36 = 7 + 4 + 5 = 16).
    const hw::ModuleIndex idx(m);
    const int64_t dot_node = 16;
    CHECK(m.at(idx.ref_of_node(dot_node)).id == 36);
    hw::LayoutModel model(m, {dot_node}, hw);
    hw::LayoutValues unset;
    unset.fill(-1);
    CHECK(model.evaluate(std::vector<hw::LayoutValues>{unset}).total_ns ==
          doctest::Approx(model.default_cost().total_ns));
    // Transposed output layout {0,1}: same padding for 512x512, but a copy back is inserted.
    hw::LayoutValues transposed = unset;
    transposed[0] = 0;
    transposed[1] = 1;
    const auto t = model.evaluate(std::vector<hw::LayoutValues>{transposed});
    CHECK(t.copy_ns > 0);
    CHECK(t.total_ns > model.default_cost().total_ns);
    // Incremental evaluation is exact and repeatable (memoised), and evaluate_ns agrees.
    CHECK(model.evaluate(std::vector<hw::LayoutValues>{transposed}).total_ns ==
          doctest::Approx(t.total_ns));
    CHECK(model.evaluate_ns(transposed.data()) == doctest::Approx(t.total_ns));
    // Without the copies ablation the same config costs only its own relayout.
    hw::CostOptions no_copies;
    no_copies.copies = false;
    hw::LayoutModel nc(m, {dot_node}, hw, no_copies);
    CHECK(nc.evaluate(std::vector<hw::LayoutValues>{transposed}).copy_ns == 0);
    // A layout config naming a dim the tensor lacks is an error naming the node.
    hw::LayoutValues bad = unset;
    bad[0] = 5;
    CHECK_THROWS_WITH_AS(model.evaluate(std::vector<hw::LayoutValues>{bad}),
                         doctest::Contains("dot.36"), Error);
    CHECK_THROWS_AS(model.evaluate(std::vector<hw::LayoutValues>{}), Error);
}

TEST_CASE("kernel listing covers the loop body with its multiplicity and skips the reducers") {
    const auto hw = hw::tpu_v3_core();
    const auto m = loop_module(4);
    hw::LayoutModel model(m, {}, hw);
    const auto rows = model.kernels();
    bool saw_exp = false, saw_dot = false;
    for (const auto& r : rows) {
        if (r.opcode == "exponential") {
            saw_exp = true;
            CHECK(r.multiplicity == 4);
        }
        if (r.opcode == "dot") {
            saw_dot = true;
            CHECK(r.multiplicity == 1);
            CHECK(hw::bottleneck(r.cost) == hw::Bottleneck::kMxu);
        }
    }
    CHECK(saw_exp);
    CHECK(saw_dot);
}

TEST_CASE("malformed modules are rejected with the module and instruction named") {
    auto m = loop_module(2);
    m.computations[2].instructions.back().operand_ids = {999};
    CHECK_THROWS_WITH_AS(hw::ModuleIndex{m}, doctest::Contains("unknown operand id 999"), Error);
}
