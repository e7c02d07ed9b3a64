// matmul dispatch (oneDNN or reference) and the Linear forward/backward built on it.
#include "gnn/ops/matmul.h"

#include <atomic>

#include "gnn/core/parallel.h"

namespace segrank {

namespace {
std::atomic<int64_t> g_matmul_flops{0};
}  // namespace

int64_t matmul_flops() { return g_matmul_flops.load(std::memory_order_relaxed); }
void reset_matmul_flops() { g_matmul_flops.store(0, std::memory_order_relaxed); }

void matmul(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args) {
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
#if defined(SEGRANK_WITH_DNNL)
    detail::dnnl_matmul(c, a, b, args, m, k, n);
#else
    matmul_reference(c, a, b, args);
#endif
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
