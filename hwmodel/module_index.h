// Id lookups over an hlo::HloModule built once (instruction id -> location, computation id ->
// index), shared by the kernel and module cost models.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "data/hlo/module.h"

namespace segrank::hw {

/// Borrowing index of a module; the module must outlive it and must not change.
class ModuleIndex {
public:
    /// Throws segrank::Error naming the module when instruction or computation ids repeat, an
    /// operand id or a called computation id is missing, or the module has no computations.
    explicit ModuleIndex(const hlo::HloModule& module);

    const hlo::HloModule& module() const { return *module_; }
    /// Location of instruction `id` (checked to exist on construction for every operand).
    hlo::InstructionRef ref(int64_t id) const;
    const hlo::Instruction& instruction(int64_t id) const { return module_->at(ref(id)); }
    /// Index into module().computations of computation `id`.
    size_t computation(int64_t id) const;
    /// Entry computation index (entry_computation_id when present and found, else the last).
    size_t entry() const { return entry_; }
    /// Root instruction of computation `c` (root_id, else its last instruction).
    const hlo::Instruction& root(size_t c) const;
    /// Instruction at flattened node index `node`.
    hlo::InstructionRef ref_of_node(int64_t node) const;
    /// Flattened node index of the instruction at `r` (the inverse of ref_of_node; unchecked
    /// beyond the computation index).
    int64_t node_of(hlo::InstructionRef r) const {
        return comp_offset_.at(r.computation) + static_cast<int64_t>(r.instruction);
    }
    /// Shapes of the operands of `ins`, in operand order (pointers into the module).
    std::vector<const hlo::Shape*> operand_shapes(const hlo::Instruction& ins) const;

private:
    const hlo::HloModule* module_;
    std::unordered_map<int64_t, hlo::InstructionRef> by_id_;
    std::unordered_map<int64_t, size_t> comp_by_id_;
    std::vector<int64_t> comp_offset_;  // first node index of each computation
    size_t entry_ = 0;
};

}  // namespace segrank::hw
