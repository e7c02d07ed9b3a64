// Embedding lookup with a row-sparse gradient (docs/model.md#opcode-embedding).
#pragma once
#include <cstdint>
#include <span>

#include "gnn/core/tensor.h"

namespace segrank {

/// out[i] = table[ids[i]]. out: [n, D]; table: [V, D]; ids: [n] in [0, V) (checked,
/// segrank::Error).
void embedding_forward(MatrixView out, ConstMatrixView table, std::span<const int32_t> ids);
/// dtable[ids[i]] += dout[i]: only the looked-up rows are touched (row-sparse gradient).
void embedding_backward(MatrixView dtable, std::span<const int32_t> ids, ConstMatrixView dout);

}  // namespace segrank
