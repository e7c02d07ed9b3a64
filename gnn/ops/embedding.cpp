// Embedding kernels; the backward is serial because ids repeat (scatter-add with conflicts).
#include "gnn/ops/embedding.h"

#include <cstring>

#include "gnn/core/op_timer.h"

namespace segrank {

void embedding_forward(MatrixView out, ConstMatrixView table, std::span<const int32_t> ids) {
    const OpScope op_scope(OpCategory::kGatherScatter);
    SEGRANK_CHECK(out.rows == static_cast<int64_t>(ids.size()) && out.cols == table.cols,
                  "embedding_forward: out[", out.rows, ",", out.cols, "] for ", ids.size(),
                  " ids of a [", table.rows, ",", table.cols, "] table");
    for (size_t i = 0; i < ids.size(); ++i) {
        SEGRANK_CHECK(ids[i] >= 0 && ids[i] < table.rows, "embedding_forward: id[", i,
                      "] = ", ids[i], " outside [0, ", table.rows, ")");
        std::memcpy(out.row(static_cast<int64_t>(i)), table.row(ids[i]),
                    sizeof(float) * static_cast<size_t>(table.cols));
    }
}

void embedding_backward(MatrixView dtable, std::span<const int32_t> ids, ConstMatrixView dout) {
    const OpScope op_scope(OpCategory::kGatherScatter);
    SEGRANK_CHECK(dout.rows == static_cast<int64_t>(ids.size()) && dout.cols == dtable.cols,
                  "embedding_backward: dout[", dout.rows, ",", dout.cols, "] for ", ids.size(),
                  " ids");
    for (size_t i = 0; i < ids.size(); ++i) {
        SEGRANK_CHECK(ids[i] >= 0 && ids[i] < dtable.rows, "embedding_backward: id[", i,
                      "] = ", ids[i], " outside [0, ", dtable.rows, ")");
        float* d = dtable.row(ids[i]);
        const float* g = dout.row(static_cast<int64_t>(i));
        for (int64_t c = 0; c < dout.cols; ++c) d[c] += g[c];
    }
}

}  // namespace segrank
