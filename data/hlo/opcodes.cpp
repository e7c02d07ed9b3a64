// The opcode id table (docs/files.md#opcode-ids; upstream hlo_opcode.h order; 0 = unknown).
#include <string>
#include <unordered_map>

#include "data/hlo/featurizer.h"

namespace segrank::hlo {
namespace {

// Index = opcode id. Ids 97 and 101 are tombstones kept so later ids stay put.
constexpr std::string_view kOpcodes[] = {"unknown",
                                         "abs",
                                         "add",
                                         "add-dependency",
                                         "after-all",
                                         "all-reduce",
                                         "all-to-all",
                                         "atan2",
                                         "batch-norm-grad",
                                         "batch-norm-inference",
                                         "batch-norm-training",
                                         "bitcast",
                                         "bitcast-convert",
                                         "broadcast",
                                         "call",
                                         "ceil",
                                         "cholesky",
                                         "clamp",
                                         "collective-permute",
                                         "count-leading-zeros",
                                         "compare",
                                         "complex",
                                         "concatenate",
                                         "conditional",
                                         "constant",
                                         "convert",
                                         "convolution",
                                         "copy",
                                         "copy-done",
                                         "copy-start",
                                         "cosine",
                                         "custom-call",
                                         "divide",
                                         "domain",
                                         "dot",
                                         "dynamic-slice",
                                         "dynamic-update-slice",
                                         "exponential",
                                         "exponential-minus-one",
                                         "fft",
                                         "floor",
                                         "fusion",
                                         "gather",
                                         "get-dimension-size",
                                         "set-dimension-size",
                                         "get-tuple-element",
                                         "imag",
                                         "infeed",
                                         "iota",
                                         "is-finite",
                                         "log",
                                         "log-plus-one",
                                         "and",
                                         "not",
                                         "or",
                                         "xor",
                                         "map",
                                         "maximum",
                                         "minimum",
                                         "multiply",
                                         "negate",
                                         "outfeed",
                                         "pad",
                                         "parameter",
                                         "partition-id",
                                         "popcnt",
                                         "power",
                                         "real",
                                         "recv",
                                         "recv-done",
                                         "reduce",
                                         "reduce-precision",
                                         "reduce-window",
                                         "remainder",
                                         "replica-id",
                                         "reshape",
                                         "reverse",
                                         "rng",
                                         "rng-get-and-update-state",
                                         "rng-bit-generator",
                                         "round-nearest-afz",
                                         "rsqrt",
                                         "scatter",
                                         "select",
                                         "select-and-scatter",
                                         "send",
                                         "send-done",
                                         "shift-left",
                                         "shift-right-arithmetic",
                                         "shift-right-logical",
                                         "sign",
                                         "sine",
                                         "slice",
                                         "sort",
                                         "sqrt",
                                         "subtract",
                                         "tanh",
                                         "trace",
                                         "transpose",
                                         "triangular-solve",
                                         "tuple",
                                         "tuple-select",
                                         "while",
                                         "cbrt",
                                         "all-gather",
                                         "collective-permute-start",
                                         "collective-permute-done",
                                         "logistic",
                                         "dynamic-reshape",
                                         "all-reduce-start",
                                         "all-reduce-done",
                                         "reduce-scatter",
                                         "all-gather-start",
                                         "all-gather-done",
                                         "opt-barrier",
                                         "async-start",
                                         "async-update",
                                         "async-done",
                                         "round-nearest-even",
                                         "stochastic-convert",
                                         "tan"};
static_assert(std::size(kOpcodes) == kNumOpcodes, "opcode table must hold ids 0..120");

const std::unordered_map<std::string_view, int32_t>& opcode_map() {
    static const auto* const map = [] {
        auto* m = new std::unordered_map<std::string_view, int32_t>();
        for (int32_t i = 1; i < kNumOpcodes; ++i) m->emplace(kOpcodes[i], i);
        return m;
    }();
    return *map;
}

}  // namespace

int32_t opcode_id(std::string_view opcode) {
    const auto& m = opcode_map();
    auto it = m.find(opcode);
    return it == m.end() ? 0 : it->second;
}

std::string_view opcode_name(int32_t id) {
    if (id <= 0 || id >= kNumOpcodes) return kOpcodes[0];
    return kOpcodes[id];
}

}  // namespace segrank::hlo
