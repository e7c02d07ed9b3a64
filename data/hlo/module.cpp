// Helpers of the in-memory HLO module model (lookups, element sizes).
#include "data/hlo/module.h"

#include <iterator>

#include "gnn/core/check.h"

namespace segrank::hlo {

int64_t element_byte_size(int32_t type) {
    namespace et = element_type;
    switch (type) {
        case et::kPred:
        case et::kS8:
        case et::kU8:
            return 1;
        case et::kS16:
        case et::kU16:
        case et::kF16:
        case et::kBF16:
            return 2;
        case et::kS32:
        case et::kU32:
        case et::kF32:
            return 4;
        case et::kS64:
        case et::kU64:
        case et::kF64:
        case et::kC64:
            return 8;
        case et::kC128:
            return 16;
        default:
            return 0;
    }
}

std::string element_type_name(int32_t type) {
    static const char* const kNames[] = {"invalid", "pred", "s8",   "s16",   "s32", "s64", "u8",
                                         "u16",     "u32",  "u64",  "f16",   "f32", "f64", "tuple",
                                         "opaque",  "c64",  "bf16", "token", "c128"};
    if (type >= 0 && type < static_cast<int32_t>(std::size(kNames))) return kNames[type];
    return str("type", type);
}

int64_t Shape::num_elements() const {
    if (is_tuple() || element_type == element_type::kToken) return 0;
    uint64_t p =
        1;  // unsigned: wraps instead of UB, like the reference's int64 products in practice
    for (int64_t d : dims) p *= static_cast<uint64_t>(d);
    return static_cast<int64_t>(p);
}

int64_t Shape::byte_size() const {
    if (is_tuple()) {
        int64_t total = 0;
        for (const Shape& s : tuple_shapes) total += s.byte_size();
        return total;
    }
    return num_elements() * element_byte_size(element_type);
}

std::optional<size_t> Computation::find_instruction(int64_t iid) const {
    for (size_t i = 0; i < instructions.size(); ++i)
        if (instructions[i].id == iid) return i;
    return std::nullopt;
}

int64_t HloModule::num_instructions() const {
    int64_t n = 0;
    for (const Computation& c : computations) n += static_cast<int64_t>(c.instructions.size());
    return n;
}

std::optional<InstructionRef> HloModule::find_instruction(int64_t iid) const {
    for (size_t c = 0; c < computations.size(); ++c)
        if (auto i = computations[c].find_instruction(iid)) return InstructionRef{c, *i};
    return std::nullopt;
}

const Instruction& HloModule::at(InstructionRef ref) const {
    SEGRANK_ASSERT(ref.computation < computations.size());
    SEGRANK_ASSERT(ref.instruction < computations[ref.computation].instructions.size());
    return computations[ref.computation].instructions[ref.instruction];
}

}  // namespace segrank::hlo
