// Naive reference matmul: the test oracle, and the fallback when built without oneDNN.
// Accumulates each output in double so it is a trustworthy oracle.
#include "gnn/core/parallel.h"
#include "gnn/ops/matmul.h"

namespace segrank {

void matmul_reference(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args) {
    const int64_t m = args.trans_a ? a.cols : a.rows;
    const int64_t k = args.trans_a ? a.rows : a.cols;
    const int64_t kb = args.trans_b ? b.cols : b.rows;
    const int64_t n = args.trans_b ? b.rows : b.cols;
    SEGRANK_CHECK(k == kb && c.rows == m && c.cols == n, "matmul_reference: shapes C[", c.rows, ",",
                  c.cols, "] A", args.trans_a ? "^T" : "", "[", a.rows, ",", a.cols, "] B",
                  args.trans_b ? "^T" : "", "[", b.rows, ",", b.cols, "] do not agree");
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

}  // namespace segrank
