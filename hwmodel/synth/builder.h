// ModuleBuilder: constructs valid hlo::HloModule objects (docs/files.md#hlo-module-model) for the
// synthetic generator, with XLA's storage rules: ids unique across the module, operands before
// users, callees before callers, entry last. Shapes get XLA's default (descending) minor_to_major
// unless given.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/hlo/module.h"

namespace segrank::synth {

/// An array shape with a default layout (minor_to_major = rank-1, ..., 0; has_layout = true).
/// `dims` in elements; an empty `dims` is a scalar.
hlo::Shape array_shape(int32_t element_type, std::vector<int64_t> dims);
/// A tuple shape of `elements` (element_type TUPLE).
hlo::Shape tuple_shape(std::vector<hlo::Shape> elements);

/// Builds one module. Computations are "opened" (a stack), filled, and "closed": closing appends
/// the computation to the module, so a callee opened and closed while its caller is still open is
/// stored before the caller (XLA's callees-first order). Every add_* returns the new instruction
/// id. Throws segrank::Error (SEGRANK_CHECK) on shape errors the synthetic families should never
/// make: a bug in a family surfaces as an error, not as an invalid module.
class ModuleBuilder {
public:
    explicit ModuleBuilder(std::string module_name);

    /// Opens a computation named `name` + "." + a unique number (e.g. "while_body.7").
    void open(const std::string& name, bool fusion = false);
    /// Closes the innermost open computation with root `root_id`; returns its computation id.
    int64_t close(int64_t root_id);
    /// Closes the last open computation as the entry and returns the module (builder is then
    /// empty). Throws when computations other than the entry are still open.
    hlo::HloModule finish(int64_t root_id);

    /// Appends `ins` to the innermost open computation; assigns a fresh id and, when empty, the
    /// name opcode + "." + id. Operands must already exist. Returns the id.
    int64_t add(hlo::Instruction ins);
    /// Shape of instruction `id` (any computation).
    const hlo::Shape& shape(int64_t id) const;
    /// Instructions created so far over all computations (open and closed).
    int64_t num_instructions() const { return count_; }

    // --- Instruction helpers (XLA semantics; shapes derived from the operands) ---
    int64_t parameter(const hlo::Shape& s, int64_t number);
    /// Scalar constant of `type` with value `v` (scalar_constant set, as the proto reader does).
    int64_t constant(int32_t type, double v);
    /// Elementwise op of one operand ("exponential", "rsqrt", "negate", "tanh", "copy", ...).
    int64_t unary(const std::string& opcode, int64_t x);
    /// Elementwise op of two operands of identical dims ("add", "multiply", "maximum", ...).
    int64_t binary(const std::string& opcode, int64_t a, int64_t b);
    /// compare(a, b) -> PRED of the same dims.
    int64_t compare(int64_t a, int64_t b);
    int64_t select(int64_t pred, int64_t a, int64_t b);
    int64_t convert(int64_t x, int32_t type);
    /// broadcast x into `dims`; operand dim i maps to output dim `mapping[i]` (strictly
    /// increasing).
    int64_t broadcast(int64_t x, std::vector<int64_t> dims, std::vector<int64_t> mapping);
    /// reduce(x, init) over `dims` with computation `reducer` (x's element type).
    int64_t reduce(int64_t x, int64_t init, std::vector<int64_t> dims, int64_t reducer);
    /// A closed scalar reducer computation "<kind>_reducer" (kind "add" or "maximum"); returns its
    /// id.
    int64_t reducer(const std::string& kind, int32_t type);
    int64_t reshape(int64_t x, std::vector<int64_t> dims);
    /// transpose: output dim i = operand dim perm[i].
    int64_t transpose(int64_t x, std::vector<int64_t> perm);
    /// dot [B..., M, K] x [B..., K, N] -> [B..., M, N] (lhs contracts its last dim, rhs its
    /// second-to-last; module.h carries no dot dimension numbers).
    int64_t dot(int64_t lhs, int64_t rhs);
    /// 2-D convolution, NHWC input, HWIO kernel, NHWC output; `stride` and SAME padding per
    /// spatial dim; window/dnums/feature_group_count = batch_group_count = 1 set as XLA does.
    int64_t conv2d(int64_t input, int64_t kernel, int64_t stride);
    /// reduce-window max over the two spatial dims of an NHWC tensor (window k, stride s, VALID).
    int64_t max_pool(int64_t x, int64_t window, int64_t stride, int64_t reducer);
    int64_t tuple(std::vector<int64_t> elements);
    int64_t get_tuple_element(int64_t t, int64_t index);
    /// all-reduce(x) with a `reducer` computation; same shape.
    int64_t all_reduce(int64_t x, int64_t reducer);
    /// while(init) with computations {body, condition} (XLA's order); shape = init's shape.
    int64_t while_loop(int64_t init, int64_t body, int64_t condition);
    /// fusion(operands) of fused computation `fused` (kind "kLoop"/"kOutput"); shape = fused root.
    int64_t fusion(std::vector<int64_t> operands, int64_t fused, const std::string& kind);

private:
    hlo::HloModule m_;
    std::vector<hlo::Computation> open_;
    // Instruction id -> (computation id, index in it); computation id -> (open?, index in open_ or
    // m_.computations). Ids are dense from 1, so plain vectors (no per-node shape copies).
    struct InsLoc {
        int64_t comp = 0;
        size_t index = 0;
    };
    struct CompLoc {
        bool open = false;
        size_t index = 0;
    };
    std::vector<InsLoc> ins_loc_;
    std::vector<CompLoc> comp_loc_;
    int64_t next_id_ = 1;
    int64_t next_comp_id_ = 1;
    int64_t count_ = 0;
};

}  // namespace segrank::synth
