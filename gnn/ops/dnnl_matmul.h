// oneDNN context and matmul primitive cache (STYLE.md 3.5). Declared for documentation; the only
// translation unit that includes oneDNN is dnnl_matmul.cpp. Use segrank::matmul (matmul.h) instead.
#pragma once
#include "gnn/ops/matmul.h"
