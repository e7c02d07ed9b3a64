// The smallest model configuration the checkpoint tests build (3 features, H = 4, 2 layers).
#pragma once

#include "gnn/model.h"

namespace segrank::test {

/// ModelConfig with feat_dim 3, hidden 4, layers 2, opcode_dim 2, config_dim 2: a model of a few
/// hundred parameters, for checkpoint round trips and corruption tests.
inline ModelConfig small_model() {
    ModelConfig c;
    c.feat_dim = 3;
    c.hidden = 4;
    c.layers = 2;
    c.opcode_dim = 2;
    c.config_dim = 2;
    return c;
}

}  // namespace segrank::test
