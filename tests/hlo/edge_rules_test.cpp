// Edge, node-order and node_splits rules (docs/files.md#node-order-and-edges,
// docs/files.md#computation-boundaries) on hand-built modules.
#include <doctest/doctest.h>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"

using namespace segrank;
using hlo::Computation;
using hlo::HloModule;
using hlo::Instruction;

namespace {

Instruction ins(int64_t id, const char* opcode, std::vector<int64_t> operands = {},
                std::vector<int64_t> calls = {}) {
    Instruction i;
    i.id = id;
    i.name = std::string(opcode) + "." + std::to_string(id);
    i.opcode = opcode;
    i.shape.element_type = hlo::element_type::kF32;
    i.operand_ids = std::move(operands);
    i.called_computation_ids = std::move(calls);
    return i;
}

Computation comp(int64_t id, const char* name, int64_t root, std::vector<Instruction> is) {
    Computation c;
    c.id = id;
    c.name = name;
    c.root_id = root;
    c.instructions = std::move(is);
    return c;
}

std::vector<int64_t> edges_of(const HloModule& m) {
    GraphStructure g;
    hlo::featurize_structure(m, g, "test");
    return g.edge_index;
}

}  // namespace

TEST_CASE("fusion links to its fused root, fused parameters get no edge to the caller's operands") {
    // fused_computation: 0 p0, 1 p1, 2 add(p0,p1)=root | entry: 3 a, 4 b, 5 fusion(a,b) calls fused
    HloModule m;
    m.computations.push_back(
        comp(1, "fused_computation", 12,
             {ins(10, "parameter"), ins(11, "parameter"), ins(12, "add", {10, 11})}));
    m.computations.push_back(
        comp(2, "main", 22,
             {ins(20, "parameter"), ins(21, "parameter"), ins(22, "fusion", {20, 21}, {1})}));
    CHECK(edges_of(m) == std::vector<int64_t>{2, 0, 2, 1, 5, 2, 5, 3, 5, 4});
}

TEST_CASE(
    "while links to both its condition root and its body root (condition first in sort order)") {
    // cond: 0 p, 1 compare(p)=root | body: 2 p, 3 negate(p)=root | entry: 4 init, 5 while(init)
    HloModule m;
    m.computations.push_back(comp(1, "cond", 11, {ins(10, "parameter"), ins(11, "compare", {10})}));
    m.computations.push_back(comp(2, "body", 21, {ins(20, "parameter"), ins(21, "negate", {20})}));
    m.computations.push_back(
        comp(3, "main", 31, {ins(30, "parameter"), ins(31, "while", {30}, {1, 2})}));
    CHECK(edges_of(m) == std::vector<int64_t>{1, 0, 3, 2, 5, 1, 5, 3, 5, 4});
}

TEST_CASE("conditional links to every branch root and to its operands") {
    // b0: 0 p, 1 abs=root | b1: 2 p, 3 neg=root | entry: 4 pred, 5 x, 6 conditional(pred,x,x)
    HloModule m;
    m.computations.push_back(comp(1, "branch0", 11, {ins(10, "parameter"), ins(11, "abs", {10})}));
    m.computations.push_back(
        comp(2, "branch1", 21, {ins(20, "parameter"), ins(21, "negate", {20})}));
    m.computations.push_back(comp(3, "main", 32,
                                  {ins(30, "parameter"), ins(31, "parameter"),
                                   ins(32, "conditional", {30, 31, 31}, {1, 2})}));
    CHECK(edges_of(m) == std::vector<int64_t>{1, 0, 3, 2, 6, 1, 6, 3, 6, 4, 6, 5});
}

TEST_CASE("duplicate operands give one edge, edges are sorted by (user, producer)") {
    // 0 x, 1 y, 2 multiply(y, x, y, x) -> edges (2,0), (2,1) only
    HloModule m;
    m.computations.push_back(
        comp(1, "main", 3,
             {ins(5, "parameter"), ins(4, "parameter"), ins(3, "multiply", {4, 5, 4, 5})}));
    CHECK(edges_of(m) == std::vector<int64_t>{2, 0, 2, 1});
}

TEST_CASE("a repeated called computation id yields a single edge") {
    HloModule m;
    m.computations.push_back(comp(1, "f", 10, {ins(10, "constant")}));
    m.computations.push_back(comp(2, "main", 20, {ins(20, "call", {}, {1, 1})}));
    CHECK(edges_of(m) == std::vector<int64_t>{1, 0});
}

TEST_CASE("node order is computations then instructions in stored order, opcodes map by name") {
    HloModule m;
    m.computations.push_back(comp(1, "a", 2, {ins(1, "parameter"), ins(2, "tanh", {1})}));
    m.computations.push_back(comp(2, "b", 3, {ins(3, "no-such-op")}));
    GraphStructure g;
    hlo::featurize_structure(m, g, "test");
    CHECK(g.node_opcode == std::vector<int32_t>{63, 96, 0});
    CHECK(g.node_feat.at(0, 0) == 0.0f);  // is_root
    CHECK(g.node_feat.at(1, 0) == 1.0f);
    CHECK(g.node_feat.at(2, 0) == 1.0f);
}

TEST_CASE("missing operands, missing callees and self edges are data errors") {
    HloModule m;
    m.computations.push_back(comp(1, "main", 2, {ins(1, "parameter"), ins(2, "add", {1, 9})}));
    CHECK_THROWS_WITH_AS(edges_of(m), doctest::Contains("operand id 9 missing"), Error);
    m.computations[0].instructions[1].operand_ids = {1, 2};
    CHECK_THROWS_WITH_AS(edges_of(m), doctest::Contains("self edge"), Error);
    m.computations[0].instructions[1].operand_ids = {1};
    m.computations[0].instructions[1].called_computation_ids = {4};
    CHECK_THROWS_WITH_AS(edges_of(m), doctest::Contains("calls computation id 4"), Error);
}

TEST_CASE("node_splits close a segment after computations named *cluster*, *while* or *cond*") {
    HloModule m;
    m.computations.push_back(comp(1, "reducer", 1, {ins(1, "add")}));
    m.computations.push_back(comp(2, "while_body", 2, {ins(2, "add"), ins(3, "add")}));
    m.computations.push_back(comp(3, "Cond_upper_is_not_matched", 4, {ins(4, "add")}));
    m.computations.push_back(comp(4, "my_cond", 5, {ins(5, "add")}));
    m.computations.push_back(comp(5, "main", 6, {ins(6, "add"), ins(7, "add")}));
    CHECK(hlo::node_splits(m) == std::vector<int64_t>{0, 3, 5, 7});
    m.computations.back().name = "cluster_main";  // ends on a keyword: n is not appended twice
    CHECK(hlo::node_splits(m) == std::vector<int64_t>{0, 3, 5, 7});
}

TEST_CASE("opcode table: 120 ids with tombstones and round trip") {
    CHECK(hlo::opcode_id("abs") == 1);
    CHECK(hlo::opcode_id("fusion") == 41);
    CHECK(hlo::opcode_id("parameter") == 63);
    CHECK(hlo::opcode_id("trace") == 97);
    CHECK(hlo::opcode_id("while") == 102);
    CHECK(hlo::opcode_id("tan") == 120);
    CHECK(hlo::opcode_id("Add") == 0);
    for (int32_t id = 1; id < kNumOpcodes; ++id) CHECK(hlo::opcode_id(hlo::opcode_name(id)) == id);
}
