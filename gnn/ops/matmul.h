// Dense matmul on strided views (docs/model.md#kernels): C = op(A) op(B) [+ C] [+ bias]. Dispatches
// to oneDNN (gnn/ops/dnnl_matmul.cpp, built when SEGRANK_WITH_DNNL=1) or to the naive reference
// kernel.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "gnn/core/enum_names.h"
#include "gnn/core/tensor.h"

namespace segrank {

/// Arguments of one product. op(A) is A or A^T (A stored [K, M] when transposed), op(B) likewise
/// (B stored [N, K] when transposed). Transposes are expressed through strides, never materialized.
struct MatmulArgs {
    bool trans_a = false;
    bool trans_b = false;
    bool accumulate = false;      ///< C += product (else C = product)
    const float* bias = nullptr;  ///< optional [N], added to every row of C
};

/// c: [M, N]; a: [M, K] (or [K, M] with trans_a); b: [K, N] (or [N, K] with trans_b).
/// Throws segrank::Error with the shapes when they disagree or when oneDNN fails.
/// Must be called from the main compute thread, outside any parallel region (oneDNN rule).
void matmul(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args = {});

/// The naive OpenMP reference, accumulating in double: the test oracle. Same contract as `matmul`.
void matmul_reference(MatrixView c, ConstMatrixView a, ConstMatrixView b,
                      const MatmulArgs& args = {});

/// Portable blocked fp32 matmul (unit-stride axpy over rows of B, blocks of 16 rows of C and 256
/// of K; a transposed B is first packed to [K, N]): what `matmul` runs in a build without oneDNN,
/// such as the sanitizer build. Same contract as `matmul`; results do not depend on the thread
/// count.
void matmul_portable(MatrixView c, ConstMatrixView a, ConstMatrixView b,
                     const MatmulArgs& args = {});

/// Linear forward: y[M, N] = x[M, K] w[N, K]^T + b[N] (torch layout); accumulate adds into y.
void linear_forward(MatrixView y, ConstMatrixView x, ConstMatrixView w, const float* b,
                    bool accumulate = false);
/// Linear backward, accumulating: dx[M, K] += dy w (if dx.data); dw[N, K] += dy^T x; db[N] +=
/// colsum(dy) (if db). dy: [M, N].
void linear_backward(MatrixView dx, MatrixView dw, float* db, ConstMatrixView dy, ConstMatrixView x,
                     ConstMatrixView w);

/// `model.precision` (docs/model.md#precision): the operand type of large products. kBf16: A and B
/// rounded to bfloat16 (round to nearest even), products accumulated in fp32, C, bias and every
/// other tensor fp32 (master weights and optimizer state stay fp32). kBf16Emulated: the same
/// rounding followed by the fp32 kernel: bf16 numerics on any CPU, for tests (not faster).
enum class MatmulPrecision { kFp32, kBf16, kBf16Emulated };
/// Names: "fp32", "bf16" ("bf16_emulated" is not a config value).
std::span<const EnumName<MatmulPrecision>> enum_names(MatmulPrecision);
std::string_view to_string(MatmulPrecision p);

/// True when this build and CPU run bf16 products natively: oneDNN and avx512_core_bf16 (or newer:
/// AMX). False without oneDNN.
bool bf16_supported();
/// The precision matmul() uses for `requested`: kBf16 falls back to kFp32 when !bf16_supported().
MatmulPrecision resolve_matmul_precision(MatmulPrecision requested);
/// Sets the precision of every later matmul() of this process whose 2 m n k is at least
/// kBf16MinFlops (smaller products stay fp32). Call with a resolved precision; kBf16 on a CPU
/// without support throws segrank::Error. Default kFp32.
void set_matmul_precision(MatmulPrecision p);
MatmulPrecision matmul_precision();
/// Products below this many FLOPs keep fp32 operands under kBf16 (conversion would cost more
/// than it saves).
constexpr int64_t kBf16MinFlops = int64_t{1} << 20;

/// The bfloat16 bits of x: round to nearest even; NaN stays NaN (quiet bit set), infinities stay
/// infinite. Branch-free, so loops over it vectorize (the bf16 operand packing).
inline uint16_t bf16_bits(float x) {
    uint32_t u = 0;
    std::memcpy(&u, &x, sizeof u);
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>((nan ? (u | 0x00400000u) : rounded) >> 16);
}
/// fp32 -> bfloat16 -> fp32 (bf16_bits widened back).
float round_to_bf16(float x);

/// Declares that the values of `x` do not change while the hold lives, so that under bf16 (native
/// or emulated) every product that reads exactly this view (same data pointer, shape and stride)
/// as A or B rounds it to bf16 once and reuses the rounded copy (docs/model.md#precision). Up to
/// two holds live at a time (a third is inert: its products round as usual); under fp32 a hold
/// does nothing. The rounded copy's buffer is kept for the next hold (no page faults per step).
/// Results are bit for bit those without the hold. Compute thread only, like matmul().
class Bf16OperandHold {
public:
    explicit Bf16OperandHold(ConstMatrixView x);
    ~Bf16OperandHold();
    Bf16OperandHold(const Bf16OperandHold&) = delete;
    Bf16OperandHold& operator=(const Bf16OperandHold&) = delete;

private:
    int slot_ = -1;
};
/// Number of operand roundings (bf16 packs of A or B, native or emulated) since the last
/// reset_matmul_flops(), for tests and benchmarks.
int64_t bf16_operand_roundings();

/// Floating-point operations (2 m n k per product, bias and accumulation not counted) of every
/// matmul() call of this process since the last reset (relaxed atomic; for benchmarks).
int64_t matmul_flops();
/// Sets the matmul_flops() counter to 0.
void reset_matmul_flops();

namespace detail {
/// oneDNN implementation (dnnl_matmul.cpp); shapes already validated.
void dnnl_matmul(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args,
                 int64_t m, int64_t k, int64_t n);
/// Number of cached oneDNN primitives (for tests of the cache).
int64_t dnnl_cache_size();
/// The bf16 oneDNN product (operands converted to packed bf16 buffers, fp32 C); shapes validated.
/// a_bits / b_bits: the operand already packed (pack_bf16), or null to pack it here.
void dnnl_matmul_bf16(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args,
                      int64_t m, int64_t k, int64_t n, const uint16_t* a_bits = nullptr,
                      const uint16_t* b_bits = nullptr);
/// The stored [rows, cols] operand x (any stride) as contiguous bf16 bits (bf16_bits of every
/// value) in out [rows * cols]: vectorized and parallel, the bf16 operand packing.
void pack_bf16(ConstMatrixView x, uint16_t* out);
/// Whether the CPU has avx512_core_bf16 (oneDNN's effective ISA).
bool dnnl_bf16_native();
}  // namespace detail

}  // namespace segrank
