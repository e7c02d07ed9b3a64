// node_loop_trips (hwmodel/loop_trips.h): per node, log2 of the trip product of the loops around it
// and the unknown flag, from XLA's known_trip_count or the counted-loop pattern.
#include "hwmodel/loop_trips.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include "hwmodel/synth/builder.h"

namespace segrank::hw {
namespace {

namespace et = hlo::element_type;

// entry:  x -> outer while (i < 5, counted) -> gte
//   outer_body: inner while whose condition compares against a loop-carried value (no constant
//               limit: the pattern does not match) around negate(v)
// Stored callees first: inner_body, inner_cond, outer_body, outer_cond, entry.
hlo::HloModule nested_module() {
    synth::ModuleBuilder b("nested");
    const auto s32 = synth::array_shape(et::kS32, {});
    const auto f4 = synth::array_shape(et::kF32, {4});
    const auto state = synth::tuple_shape({s32, f4, s32});

    b.open("entry");
    b.open("outer_body");
    const int64_t op = b.parameter(state, 0);
    const int64_t oi = b.get_tuple_element(op, 0);
    const int64_t ov = b.get_tuple_element(op, 1);
    const int64_t on = b.get_tuple_element(op, 2);
    b.open("inner_body");
    const int64_t ip = b.parameter(state, 0);
    const int64_t ii = b.get_tuple_element(ip, 0);
    const int64_t iv = b.get_tuple_element(ip, 1);
    const int64_t in = b.get_tuple_element(ip, 2);
    const int64_t inner_body =
        b.close(b.tuple({b.binary("add", ii, b.constant(et::kS32, 1)), b.unary("negate", iv), in}));
    b.open("inner_cond");
    const int64_t cp = b.parameter(state, 0);
    const int64_t inner_cond =
        b.close(b.compare(b.get_tuple_element(cp, 0), b.get_tuple_element(cp, 2)));
    const int64_t inner =
        b.while_loop(b.tuple({b.constant(et::kS32, 0), ov, on}), inner_body, inner_cond);
    const int64_t outer_body = b.close(
        b.tuple({b.binary("add", oi, b.constant(et::kS32, 1)), b.get_tuple_element(inner, 1), on}));
    b.open("outer_cond");
    const int64_t ocp = b.parameter(state, 0);
    const int64_t outer_cond =
        b.close(b.compare(b.get_tuple_element(ocp, 0), b.constant(et::kS32, 5)));
    const int64_t x = b.parameter(f4, 0);
    const int64_t n = b.parameter(s32, 1);
    const int64_t loop =
        b.while_loop(b.tuple({b.constant(et::kS32, 0), x, n}), outer_body, outer_cond);
    return b.finish(b.get_tuple_element(loop, 1));
}

// The (log2 trips, unknown) pair of every node, by the prefix of its computation's name.
std::map<std::string, std::pair<float, float>> by_computation(const hlo::HloModule& m) {
    const std::vector<float> t = node_loop_trips(m);
    REQUIRE(t.size() == static_cast<size_t>(m.num_instructions()) * 2);
    std::map<std::string, std::pair<float, float>> out;
    size_t v = 0;
    for (const auto& c : m.computations) {
        const std::string key = c.name.substr(0, c.name.find('.'));
        for (size_t i = 0; i < c.instructions.size(); ++i, ++v) {
            const std::pair<float, float> p{t[2 * v], t[2 * v + 1]};
            // Every node of a computation gets the computation's pair.
            if (i > 0) CHECK(out[key] == p);
            out[key] = p;
        }
    }
    return out;
}

hlo::Instruction& find_while(hlo::HloModule& m, const std::string& computation_prefix) {
    for (auto& c : m.computations)
        if (c.name.rfind(computation_prefix, 0) == 0)
            for (auto& ins : c.instructions)
                if (ins.opcode == "while") return ins;
    FAIL("no while in ", computation_prefix);
    return m.computations[0].instructions[0];
}

}  // namespace

TEST_CASE("node_loop_trips multiplies nested loops and marks a loop without a count unknown") {
    hlo::HloModule m = nested_module();
    auto t = by_computation(m);
    REQUIRE(t.size() == 5);
    const float log2_5 = static_cast<float>(std::log2(5.0));
    CHECK(t["entry"] == std::pair{0.0f, 0.0f});
    CHECK(t["outer_body"] == std::pair{log2_5, 0.0f});
    CHECK(t["outer_cond"] == std::pair{log2_5, 0.0f});
    CHECK(t["inner_body"] == std::pair{log2_5, 1.0f});  // x the unknown inner count
    CHECK(t["inner_cond"] == std::pair{log2_5, 1.0f});

    // XLA's known_trip_count (the while's backend config) gives the inner count ...
    find_while(m, "outer_body").known_trip_count = 3;
    t = by_computation(m);
    CHECK(t["inner_body"].first == doctest::Approx(std::log2(15.0)));
    CHECK(t["inner_body"].second == 0.0f);
    // ... and wins over the pattern match.
    find_while(m, "entry").known_trip_count = 7;
    t = by_computation(m);
    CHECK(t["outer_body"].first == doctest::Approx(std::log2(7.0)));
    CHECK(t["inner_cond"].first == doctest::Approx(std::log2(21.0)));
    const ModuleIndex idx(m);
    CHECK(loop_trip_count(idx, find_while(m, "entry")) == 7);
    CHECK(loop_trip_count(idx, m.computations.back().instructions.front()) == std::nullopt);
}

}  // namespace segrank::hw
