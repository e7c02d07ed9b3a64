// A dot whose operand 0 (rank 3) has a higher node id than its operand 1 (rank 2): the TpuGraphs
// npz form lists operands by ascending id, so it shows them as (operand 1, operand 0). Shared by
// the hwmodel and CLI tests of operand matching.
//   node 0: rhs f32[64,32]   node 1: lhs f32[8,16,64]   node 2: dot(lhs, rhs) f32[8,16,32], root
#pragma once
#include <string>
#include <vector>

#include "data/graph.h"
#include "data/hlo/featurizer.h"
#include "data/hlo/module.h"

namespace segrank::test {

/// An f32 array shape.
inline hlo::Shape array(std::vector<int64_t> dims) {
    hlo::Shape s;
    s.element_type = hlo::element_type::kF32;
    s.dims = std::move(dims);
    return s;
}

/// An instruction with its id, opcode, name "<opcode>.<id>", shape and operand ids.
inline hlo::Instruction ins(int64_t id, const std::string& opcode, hlo::Shape shape,
                            std::vector<int64_t> ops = {}) {
    hlo::Instruction i;
    i.id = id;
    i.opcode = opcode;
    i.name = opcode + "." + std::to_string(id);
    i.shape = std::move(shape);
    i.operand_ids = std::move(ops);
    return i;
}

/// The module above (instruction ids 1, 2, 3 = nodes 0, 1, 2), true operand order.
inline hlo::HloModule dot_module() {
    hlo::HloModule m;
    m.name = "dot_order";
    hlo::Computation entry{1, "main", 3, false, {}};
    auto rhs = ins(1, "parameter", array({64, 32}));
    rhs.parameter_number = 1;
    auto lhs = ins(2, "parameter", array({8, 16, 64}));
    entry.instructions = {rhs, lhs, ins(3, "dot", array({8, 16, 32}), {2, 1})};
    m.computations = {entry};
    m.entry_computation_id = 1;
    return m;
}

/// Output and lhs with their two minor dims swapped, rhs at its default.
inline hlo::NodeLayoutConfig dot_config() { return {{{1, 2, 0}, {1, 2, 0}, {1, 0}}}; }

/// The npz form of `m` (dot_module()) with the dot configurable and one config per entry of `cfgs`.
inline LayoutGraph npz_form(const hlo::HloModule& m,
                            const std::vector<hlo::NodeLayoutConfig>& cfgs) {
    LayoutGraph g;
    hlo::featurize_structure(m, g, "dot_order");
    g.node_config_ids = {2};
    for (const auto& cfg : cfgs) {
        const auto v = hlo::layout_config_values(cfg);
        g.node_config_feat.insert(g.node_config_feat.end(), v.begin(), v.end());
        g.config_runtime.push_back(1000 + static_cast<int64_t>(g.config_runtime.size()));
    }
    g.node_splits = {0, 3};
    return g;
}

}  // namespace segrank::test
