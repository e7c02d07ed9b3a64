// Opcode embedding over embedding_forward/backward.
#include "gnn/layers/op_embedding.h"

#include "gnn/ops/embedding.h"

namespace segrank {

OpEmbedding OpEmbedding::create(ParamStore& store, const std::string& name, int64_t dim) {
    OpEmbedding e;
    e.dim = dim;
    e.table = store.add(name + ".weight", kNumOpcodes, dim, /*decay=*/false, ParamInit::kNormal);
    return e;
}

void OpEmbedding::forward(const ParamStore& store, MatrixView out,
                          std::span<const int32_t> ids) const {
    embedding_forward(out, store.value(table), ids);
}

void OpEmbedding::backward(ParamStore& store, std::span<const int32_t> ids,
                           ConstMatrixView dout) const {
    embedding_backward(store.grad(table), ids, dout);
}

}  // namespace segrank
