// While-loop trip counts by pattern matching (docs/hwmodel.md#trip-counts).
#include "hwmodel/trip_count.h"

#include <cmath>

namespace segrank::hw {
namespace {

std::optional<double> constant_value(const ModuleIndex& idx, int64_t id) {
    const auto& ins = idx.instruction(id);
    if (ins.opcode == "constant") return ins.scalar_constant;
    // A constant may be wrapped in a scalar reshape/convert/copy.
    if ((ins.opcode == "reshape" || ins.opcode == "convert" || ins.opcode == "copy") &&
        ins.operand_ids.size() == 1)
        return constant_value(idx, ins.operand_ids[0]);
    return std::nullopt;
}

// Tuple index i when `id` is get-tuple-element(parameter, i).
std::optional<int64_t> gte_of_parameter(const ModuleIndex& idx, int64_t id) {
    const auto& ins = idx.instruction(id);
    if (ins.opcode != "get-tuple-element" || ins.operand_ids.size() != 1) return std::nullopt;
    if (idx.instruction(ins.operand_ids[0]).opcode != "parameter") return std::nullopt;
    return ins.tuple_index;
}

}  // namespace

std::optional<WhileParts> while_parts(const ModuleIndex& idx, const hlo::Instruction& w) {
    if (w.opcode != "while" || w.called_computation_ids.size() != 2) return std::nullopt;
    // XLA: kBodyComputationIndex = 0, kConditionComputationIndex = 1.
    return WhileParts{idx.computation(w.called_computation_ids[1]),
                      idx.computation(w.called_computation_ids[0])};
}

std::optional<int64_t> find_trip_count(const ModuleIndex& idx, const hlo::Instruction& w) {
    const auto parts = while_parts(idx, w);
    if (!parts) return std::nullopt;
    const auto& cmp = idx.root(parts->condition);
    if (cmp.opcode != "compare" || cmp.operand_ids.size() != 2) return std::nullopt;
    std::optional<int64_t> counter = gte_of_parameter(idx, cmp.operand_ids[0]);
    std::optional<double> limit = constant_value(idx, cmp.operand_ids[1]);
    if (!counter || !limit) {
        counter = gte_of_parameter(idx, cmp.operand_ids[1]);
        limit = constant_value(idx, cmp.operand_ids[0]);
    }
    if (!counter || !limit) return std::nullopt;
    // Body: element `counter` of the root tuple must be counter + 1.
    const auto& body_root = idx.root(parts->body);
    if (body_root.opcode != "tuple" ||
        *counter >= static_cast<int64_t>(body_root.operand_ids.size()))
        return std::nullopt;
    const auto& inc = idx.instruction(body_root.operand_ids[static_cast<size_t>(*counter)]);
    if (inc.opcode != "add" || inc.operand_ids.size() != 2) return std::nullopt;
    bool is_increment = false;
    for (int k = 0; k < 2; ++k) {
        const auto g = gte_of_parameter(idx, inc.operand_ids[static_cast<size_t>(k)]);
        const auto one = constant_value(idx, inc.operand_ids[static_cast<size_t>(1 - k)]);
        if (g && *g == *counter && one && *one == 1.0) is_increment = true;
    }
    if (!is_increment) return std::nullopt;
    double init = 0;
    if (w.operand_ids.size() == 1) {
        const auto& init_tuple = idx.instruction(w.operand_ids[0]);
        if (init_tuple.opcode == "tuple" &&
            *counter < static_cast<int64_t>(init_tuple.operand_ids.size()))
            if (const auto c =
                    constant_value(idx, init_tuple.operand_ids[static_cast<size_t>(*counter)]))
                init = *c;
    }
    const double trips = std::ceil(*limit - init);
    if (!(trips >= 1) || trips > 1e12) return std::nullopt;
    return static_cast<int64_t>(trips);
}

}  // namespace segrank::hw
