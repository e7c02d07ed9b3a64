// Id lookups over an HLO module.
#include "hwmodel/module_index.h"

#include <algorithm>

#include "gnn/core/check.h"

namespace segrank::hw {

ModuleIndex::ModuleIndex(const hlo::HloModule& module) : module_(&module) {
    SEGRANK_CHECK(!module.computations.empty(), "module '", module.name, "' has no computations");
    int64_t offset = 0;
    for (size_t c = 0; c < module.computations.size(); ++c) {
        const auto& comp = module.computations[c];
        SEGRANK_CHECK(comp_by_id_.emplace(comp.id, c).second, "module '", module.name,
                      "': computation id ", comp.id, " repeats");
        comp_offset_.push_back(offset);
        offset += static_cast<int64_t>(comp.instructions.size());
        for (size_t i = 0; i < comp.instructions.size(); ++i)
            SEGRANK_CHECK(by_id_.emplace(comp.instructions[i].id, hlo::InstructionRef{c, i}).second,
                          "module '", module.name, "': instruction id ", comp.instructions[i].id,
                          " repeats");
    }
    for (const auto& comp : module.computations)
        for (const auto& ins : comp.instructions) {
            for (int64_t op : ins.operand_ids)
                SEGRANK_CHECK(by_id_.count(op), "module '", module.name, "': instruction '",
                              ins.name, "' has unknown operand id ", op);
            for (int64_t cc : ins.called_computation_ids)
                SEGRANK_CHECK(comp_by_id_.count(cc), "module '", module.name, "': instruction '",
                              ins.name, "' calls unknown computation id ", cc);
        }
    entry_ = module.computations.size() - 1;
    if (const auto it = comp_by_id_.find(module.entry_computation_id);
        module.entry_computation_id != 0 && it != comp_by_id_.end())
        entry_ = it->second;
}

hlo::InstructionRef ModuleIndex::ref(int64_t id) const {
    const auto it = by_id_.find(id);
    SEGRANK_CHECK(it != by_id_.end(), "module '", module_->name, "': no instruction with id ", id);
    return it->second;
}

size_t ModuleIndex::computation(int64_t id) const {
    const auto it = comp_by_id_.find(id);
    SEGRANK_CHECK(it != comp_by_id_.end(), "module '", module_->name, "': no computation with id ",
                  id);
    return it->second;
}

const hlo::Instruction& ModuleIndex::root(size_t c) const {
    const auto& comp = module_->computations[c];
    SEGRANK_CHECK(!comp.instructions.empty(), "module '", module_->name, "': computation '",
                  comp.name, "' is empty");
    if (const auto i = comp.find_instruction(comp.root_id)) return comp.instructions[*i];
    return comp.instructions.back();
}

hlo::InstructionRef ModuleIndex::ref_of_node(int64_t node) const {
    SEGRANK_CHECK(node >= 0 && !comp_offset_.empty(), "node index ", node, " out of range");
    const auto it = std::upper_bound(comp_offset_.begin(), comp_offset_.end(), node);
    const size_t c = static_cast<size_t>(it - comp_offset_.begin()) - 1;
    const size_t i = static_cast<size_t>(node - comp_offset_[c]);
    SEGRANK_CHECK(i < module_->computations[c].instructions.size(), "node index ", node,
                  " out of range for module '", module_->name, "'");
    return {c, i};
}

std::vector<const hlo::Shape*> ModuleIndex::operand_shapes(const hlo::Instruction& ins) const {
    std::vector<const hlo::Shape*> out;
    out.reserve(ins.operand_ids.size());
    for (int64_t op : ins.operand_ids) out.push_back(&instruction(op).shape);
    return out;
}

}  // namespace segrank::hw
