// The two matmuls that need no oneDNN: the naive double-accumulating reference (the test oracle)
// and the portable blocked fp32 kernel (what `matmul` runs when built without oneDNN, e.g. by
// scripts/sanitize.sh).
#include <algorithm>
#include <vector>

#include "gnn/core/parallel.h"
#include "gnn/ops/matmul.h"

namespace segrank {

namespace {
struct Dims {
    int64_t m, k, n;
};

Dims checked_dims(const char* who, MatrixView c, ConstMatrixView a, ConstMatrixView b,
                  const MatmulArgs& args) {
    const int64_t m = args.trans_a ? a.cols : a.rows;
    const int64_t k = args.trans_a ? a.rows : a.cols;
    const int64_t kb = args.trans_b ? b.cols : b.rows;
    const int64_t n = args.trans_b ? b.rows : b.cols;
    SEGRANK_CHECK(k == kb && c.rows == m && c.cols == n, who, ": shapes C[", c.rows, ",", c.cols,
                  "] A", args.trans_a ? "^T" : "", "[", a.rows, ",", a.cols, "] B",
                  args.trans_b ? "^T" : "", "[", b.rows, ",", b.cols, "] do not agree");
    return {m, k, n};
}
}  // namespace

void matmul_reference(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args) {
    // Plain variables, not a structured binding: clang cannot capture those in OpenMP regions.
    const Dims d = checked_dims("matmul_reference", c, a, b, args);
    const int64_t m = d.m, k = d.k, n = d.n;
    parallel_for(0, m, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) {
            for (int64_t j = 0; j < n; ++j) {
                double s = 0.0;
                for (int64_t p = 0; p < k; ++p) {
                    const float av = args.trans_a ? a.at(p, i) : a.at(i, p);
                    const float bv = args.trans_b ? b.at(j, p) : b.at(p, j);
                    s += static_cast<double>(av) * bv;
                }
                if (args.bias) s += args.bias[j];
                float& out = c.at(i, j);
                out = args.accumulate ? out + static_cast<float>(s) : static_cast<float>(s);
            }
        }
    });
}

void matmul_portable(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args) {
    // Plain variables, not a structured binding: clang cannot capture those in OpenMP regions.
    const Dims d = checked_dims("matmul_portable", c, a, b, args);
    const int64_t m = d.m, k = d.k, n = d.n;
    if (m == 0 || n == 0) return;
    // B as row-major [K, N], so the inner loop is a unit-stride axpy over a row of B and of C.
    Tensor b_packed;
    ConstMatrixView bk = b;
    if (args.trans_b) {
        b_packed = Tensor(k, n);
        for (int64_t j = 0; j < n; ++j) {
            const float* src = b.row(j);
            for (int64_t p = 0; p < k; ++p) b_packed.data()[p * n + j] = src[p];
        }
        bk = b_packed.cview();
    }
    // Each task owns kRows rows of C, accumulated in a local [rows, N] tile while a block of kDepth
    // rows of B stays in cache; the sum over p runs in order, so results do not depend on threads.
    constexpr int64_t kRows = 16, kDepth = 256;
    parallel_for(0, m, kRows, [&](int64_t r0, int64_t r1) {
        std::vector<float> tile(static_cast<size_t>((r1 - r0) * n), 0.0f);
        for (int64_t p0 = 0; p0 < k; p0 += kDepth) {
            const int64_t p1 = std::min(k, p0 + kDepth);
            for (int64_t i = r0; i < r1; ++i) {
                float* acc = tile.data() + (i - r0) * n;
                for (int64_t p = p0; p < p1; ++p) {
                    const float av = args.trans_a ? a.at(p, i) : a.at(i, p);
                    const float* brow = bk.row(p);
                    for (int64_t j = 0; j < n; ++j) acc[j] += av * brow[j];
                }
            }
        }
        for (int64_t i = r0; i < r1; ++i) {
            const float* acc = tile.data() + (i - r0) * n;
            float* out = c.row(i);
            for (int64_t j = 0; j < n; ++j) {
                const float v = args.bias ? acc[j] + args.bias[j] : acc[j];
                out[j] = args.accumulate ? out[j] + v : v;
            }
        }
    });
}

}  // namespace segrank
