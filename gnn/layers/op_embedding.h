// Opcode embedding (docs/model.md#opcode-embedding): 121 ids (0 = unknown) -> opcode_dim, N(0,1)
// init, no decay.
#pragma once
#include <span>
#include <string>

#include "gnn/core/format.h"
#include "gnn/param_store.h"

namespace segrank {

/// Parameter "<name>.weight" [kNumOpcodes = 121, dim].
struct OpEmbedding {
    ParamId table = -1;
    int64_t dim = 0;

    static OpEmbedding create(ParamStore& store, const std::string& name, int64_t dim);
    /// out: [n, dim]; ids: [n] in 0..120 (segrank::Error otherwise).
    void forward(const ParamStore& store, MatrixView out, std::span<const int32_t> ids) const;
    /// Row-sparse: only the rows of the given ids receive gradient.
    void backward(ParamStore& store, std::span<const int32_t> ids, ConstMatrixView dout) const;
};

}  // namespace segrank
