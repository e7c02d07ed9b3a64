// While-loop trip counts (docs/hwmodel.md#trip-counts): pattern-matched from the loop condition and
// body.
#pragma once
#include <cstdint>
#include <optional>

#include "data/hlo/module.h"
#include "hwmodel/module_index.h"

namespace segrank::hw {

/// Trip count of `while_ins` (opcode "while", called computations {body, condition} in XLA's
/// order) by the pattern of XLA's while_loop_trip_count_annotator: the condition's root is
/// compare(get-tuple-element(param, i), constant N) (either operand order), the body's root tuple
/// sets element i to add(get-tuple-element(param, i), constant 1), and the while's init tuple
/// element i is a scalar constant c0 (0 when it is not a constant). Returns N - c0 when positive;
/// nullopt when the pattern does not match or a literal is unknown (e.g. graphs read from npz).
/// The comparison direction is not in module.h and is assumed to be LT.
std::optional<int64_t> find_trip_count(const ModuleIndex& index, const hlo::Instruction& while_ins);

/// The condition and body computation indices of a while (XLA stores the body first); nullopt
/// when it does not call exactly two computations.
struct WhileParts {
    size_t condition = 0;
    size_t body = 0;
};
std::optional<WhileParts> while_parts(const ModuleIndex& index, const hlo::Instruction& while_ins);

}  // namespace segrank::hw
