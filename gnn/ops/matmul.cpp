// matmul dispatch (oneDNN or the portable kernel) and the Linear forward/backward built on it.
#include "gnn/ops/matmul.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"

namespace segrank {

namespace {
std::atomic<int64_t> g_matmul_flops{0};
MatmulPrecision g_precision = MatmulPrecision::kFp32;

constexpr EnumName<MatmulPrecision> kPrecisionNames[] = {
    {MatmulPrecision::kFp32, "fp32"},
    {MatmulPrecision::kBf16, "bf16"},
    {MatmulPrecision::kBf16Emulated, "bf16_emulated"}};

std::atomic<int64_t> g_roundings{0};

// One row of fp32 values as bf16 bits, rounded as round_to_bf16 does (nearest, ties to even; NaN
// stays NaN with its quiet bit set; infinities stay). Branch-free so the clones vectorize it: with
// a scalar round_to_bf16 loop, bf16 training steps ran at 0.78x (full graph) and 0.68x (segments)
// of fp32's speed; with this one at 1.27x and 1.36x (docs/model.md#precision).
SEGRANK_SIMD_CLONES void pack_row_bf16(const float* __restrict src, uint16_t* __restrict dst,
                                       int64_t n) {
    for (int64_t j = 0; j < n; ++j) dst[j] = bf16_bits(src[j]);
}

// bf16 bits [rows * cols] widened back to fp32, contiguous (the emulated product's operand).
Tensor widened(const uint16_t* bits, int64_t rows, int64_t cols) {
    Tensor out(rows, cols);
    float* dst = out.data();
    parallel_for(0, rows, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0 * cols; i < r1 * cols; ++i) {
            const uint32_t u = static_cast<uint32_t>(bits[i]) << 16;
            std::memcpy(dst + i, &u, sizeof u);
        }
    });
    return out;
}

// A copy of `x` ([rows, cols] with its stride) with every value rounded to bf16, contiguous.
Tensor rounded_copy(ConstMatrixView x) {
    std::vector<uint16_t> bits(static_cast<size_t>(x.rows * x.cols));
    detail::pack_bf16(x, bits.data());
    return widened(bits.data(), x.rows, x.cols);
}

// The live operand holds (Bf16OperandHold): the held view and, once a bf16 product read it, its
// bf16 bits. Buffers stay allocated between holds.
struct HeldOperand {
    ConstMatrixView view;
    std::vector<uint16_t> bits;
    bool active = false;
    bool packed = false;
};
HeldOperand g_held[2];

bool same_view(ConstMatrixView a, ConstMatrixView b) {
    return a.data == b.data && a.rows == b.rows && a.cols == b.cols && a.stride == b.stride;
}

// The bf16 bits of x when a hold covers it (rounded on first use), else null.
const uint16_t* held_bits(ConstMatrixView x) {
    for (HeldOperand& h : g_held) {
        if (!h.active || !same_view(h.view, x)) continue;
        if (!h.packed) {
            h.bits.resize(static_cast<size_t>(x.rows * x.cols));
            detail::pack_bf16(x, h.bits.data());
            h.packed = true;
        }
        return h.bits.data();
    }
    return nullptr;
}
}  // namespace

void detail::pack_bf16(ConstMatrixView x, uint16_t* out) {
    g_roundings.fetch_add(1, std::memory_order_relaxed);
    parallel_for(0, x.rows, 256, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) pack_row_bf16(x.row(i), out + i * x.cols, x.cols);
    });
}

Bf16OperandHold::Bf16OperandHold(ConstMatrixView x) {
    for (int i = 0; i < 2; ++i) {
        if (g_held[i].active) continue;
        g_held[i].view = x;
        g_held[i].active = true;
        g_held[i].packed = false;
        slot_ = i;
        return;
    }
}

Bf16OperandHold::~Bf16OperandHold() {
    if (slot_ >= 0) g_held[slot_].active = g_held[slot_].packed = false;
}

int64_t bf16_operand_roundings() { return g_roundings.load(std::memory_order_relaxed); }

std::span<const EnumName<MatmulPrecision>> enum_names(MatmulPrecision) { return kPrecisionNames; }
std::string_view to_string(MatmulPrecision p) { return enum_name(p); }

float round_to_bf16(float x) {
    const uint32_t u = static_cast<uint32_t>(bf16_bits(x)) << 16;
    float y = 0;
    std::memcpy(&y, &u, sizeof y);
    return y;
}

bool bf16_supported() {
#if defined(SEGRANK_WITH_DNNL)
    return detail::dnnl_bf16_native();
#else
    return false;
#endif
}

MatmulPrecision resolve_matmul_precision(MatmulPrecision requested) {
    return requested == MatmulPrecision::kBf16 && !bf16_supported() ? MatmulPrecision::kFp32
                                                                    : requested;
}

void set_matmul_precision(MatmulPrecision p) {
    SEGRANK_CHECK(p != MatmulPrecision::kBf16 || bf16_supported(),
                  "matmul precision bf16: this CPU or build has no native bf16 products (needs "
                  "oneDNN and avx512_core_bf16); resolve_matmul_precision gives the fallback");
    g_precision = p;
}

MatmulPrecision matmul_precision() { return g_precision; }

int64_t matmul_flops() { return g_matmul_flops.load(std::memory_order_relaxed); }
void reset_matmul_flops() {
    g_matmul_flops.store(0, std::memory_order_relaxed);
    g_roundings.store(0, std::memory_order_relaxed);
}

namespace {
void fp32_matmul(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args,
                 [[maybe_unused]] int64_t m, [[maybe_unused]] int64_t k,
                 [[maybe_unused]] int64_t n) {
#if defined(SEGRANK_WITH_DNNL)
    detail::dnnl_matmul(c, a, b, args, m, k, n);
#else
    matmul_portable(c, a, b, args);
#endif
}
}  // namespace

void matmul(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args) {
    const OpScope op_scope(OpCategory::kGemm);
    const int64_t m = args.trans_a ? a.cols : a.rows;
    const int64_t k = args.trans_a ? a.rows : a.cols;
    const int64_t kb = args.trans_b ? b.cols : b.rows;
    const int64_t n = args.trans_b ? b.rows : b.cols;
    SEGRANK_CHECK(k == kb && c.rows == m && c.cols == n, "matmul: shapes C[", c.rows, ",", c.cols,
                  "] A", args.trans_a ? "^T" : "", "[", a.rows, ",", a.cols, "] B",
                  args.trans_b ? "^T" : "", "[", b.rows, ",", b.cols, "] do not agree");
    if (m == 0 || n == 0) return;
    g_matmul_flops.fetch_add(2 * m * n * k, std::memory_order_relaxed);
    if (k == 0) {  // empty reduction: C = bias (+ C)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
                const float add = args.bias ? args.bias[j] : 0.0f;
                c.at(i, j) = args.accumulate ? c.at(i, j) + add : add;
            }
        return;
    }
    if (g_precision != MatmulPrecision::kFp32 && 2 * m * n * k >= kBf16MinFlops) {
        const uint16_t* a_bits = held_bits(a);
        const uint16_t* b_bits = held_bits(b);
        if (g_precision == MatmulPrecision::kBf16Emulated) {
            const Tensor ar = a_bits ? widened(a_bits, a.rows, a.cols) : rounded_copy(a);
            const Tensor br = b_bits ? widened(b_bits, b.rows, b.cols) : rounded_copy(b);
            fp32_matmul(c, ar.cview(), br.cview(), args, m, k, n);
            return;
        }
#if defined(SEGRANK_WITH_DNNL)
        detail::dnnl_matmul_bf16(c, a, b, args, m, k, n, a_bits, b_bits);
        return;
#endif
    }
    fp32_matmul(c, a, b, args, m, k, n);
}

void linear_forward(MatrixView y, ConstMatrixView x, ConstMatrixView w, const float* b,
                    bool accumulate) {
    MatmulArgs args;
    args.trans_b = true;
    args.accumulate = accumulate;
    args.bias = b;
    matmul(y, x, w, args);
}

void linear_backward(MatrixView dx, MatrixView dw, float* db, ConstMatrixView dy, ConstMatrixView x,
                     ConstMatrixView w) {
    const OpScope op_scope(OpCategory::kGemm);
    SEGRANK_CHECK(dy.rows == x.rows && dy.cols == w.rows && x.cols == w.cols,
                  "linear_backward: dy[", dy.rows, ",", dy.cols, "] x[", x.rows, ",", x.cols,
                  "] w[", w.rows, ",", w.cols, "] do not agree");
    if (dx.data) {
        MatmulArgs args;
        args.accumulate = true;
        matmul(dx, dy, w, args);
    }
    if (dw.data) {
        MatmulArgs args;
        args.trans_a = true;
        args.accumulate = true;
        matmul(dw, dy, x, args);
    }
    if (db) {
        const int64_t n = dy.cols;
        // Column sums, serial: O(M N) next to the O(M N K) products above.
        for (int64_t i = 0; i < dy.rows; ++i) {
            const float* r = dy.row(i);
            for (int64_t j = 0; j < n; ++j) db[j] += r[j];
        }
    }
}

}  // namespace segrank
