// Row-wise and element-wise ops with forward and backward side by side
// (docs/style.md#forward-and-backward): activations (GELU exact erf, ReLU, LeakyReLU 0.01), dropout
// with hashed masks, LayerNorm, add. Backward functions accumulate (+=) into their gradient
// outputs.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "gnn/core/enum_names.h"
#include "gnn/core/tensor.h"

namespace segrank {

/// `model.activation` (docs/model.md#sage-layers).
enum class Activation { kGelu, kRelu, kLeakyRelu };
/// Names: "gelu", "relu", "leaky_relu".
std::span<const EnumName<Activation>> enum_names(Activation);
/// Parses "gelu" | "relu" | "leaky_relu"; throws segrank::Error listing the valid names.
Activation parse_activation(std::string_view s);
std::string_view to_string(Activation a);

/// y = act(x), element-wise; y and x: [R, C] (may alias).
void activation_forward(MatrixView y, ConstMatrixView x, Activation act);
/// dx += dy * act'(x); x is the saved pre-activation. All [R, C].
void activation_backward(MatrixView dx, ConstMatrixView dy, ConstMatrixView x, Activation act);

/// Inverted dropout with a deterministic hashed mask: element (r, c) is kept iff
/// hash(seed, keys[r / group], c) >= p, and scaled by 1/(1-p). Rows sharing a key (e.g. the K
/// config rows of one node) share the mask, which keeps config-independent rows independent
/// (docs/model.md#sage-layers). y, x: [R, C]; keys: [R / group] (empty = key r / group). p in [0,
/// 1).
void dropout_forward(MatrixView y, ConstMatrixView x, float p, uint64_t seed,
                     std::span<const int32_t> keys, int64_t group);
/// dx += dy * mask / (1 - p), the same mask as the forward.
void dropout_backward(MatrixView dx, ConstMatrixView dy, float p, uint64_t seed,
                      std::span<const int32_t> keys, int64_t group);

inline constexpr float kLayerNormEps = 1e-5f;  ///< docs/model.md#sage-layers

/// Row-wise LayerNorm over the C columns: y = gamma * xhat + beta, xhat = (x - mean) * rstd,
/// rstd = 1 / sqrt(var + 1e-5) (population variance). x, y, xhat: [R, C]; rstd: [R]; gamma, beta:
/// [C]. xhat/rstd are the saved state (pass xhat.data == nullptr and empty rstd for inference).
void layernorm_forward(MatrixView y, MatrixView xhat, std::span<float> rstd, ConstMatrixView x,
                       const float* gamma, const float* beta);
/// dx += LN'(dy); dgamma += sum_r dy*xhat; dbeta += sum_r dy. dx may be null (data == nullptr).
void layernorm_backward(MatrixView dx, float* dgamma, float* dbeta, ConstMatrixView dy,
                        ConstMatrixView xhat, std::span<const float> rstd, const float* gamma);

/// The rows [r0, r1) of layernorm_act_backward for a caller inside its own parallel region (no
/// region, scope or checks), the same arithmetic row by row: dz rows from g rows (dz may alias g),
/// and acc [3C] += the rows' terms of [dgamma | dbeta | dbias], added in row order (the partial
/// row of one BlockPartials block of layernorm_act_backward). dy: [C] scratch.
void layernorm_act_backward_rows(MatrixView dz, ConstMatrixView g, ConstMatrixView xhat,
                                 std::span<const float> rstd, const float* gamma, const float* beta,
                                 Activation act, int64_t r0, int64_t r1, float* dy, float* acc);

/// y += x, element-wise, [R, C].
void add_inplace(MatrixView y, ConstMatrixView x);

/// SAGEConv epilogue without dropout, fused (one pass per row, docs/model.md#sage-layers):
/// z <- self + act(gamma * LN(z) + beta). z, self: [R, C]; saves xhat [R, C] and rstd [R] when
/// xhat.data is non-null (training). Equals layernorm_forward + activation_forward + add_inplace.
void layernorm_act_residual_forward(MatrixView z, MatrixView xhat, std::span<float> rstd,
                                    ConstMatrixView self, const float* gamma, const float* beta,
                                    Activation act);
/// The rows of layernorm_act_residual_forward for a caller inside its own parallel region (no
/// region, no timing scope, no checks): the same arithmetic, so the same bits, row by row. z, self
/// (any stride, 0 allowed for a repeated row): [R, C]; xhat [R, C] and rstd [R] written when
/// xhat.data is non-null; hrow: [C] scratch.
void layernorm_act_residual_rows(MatrixView z, MatrixView xhat, std::span<float> rstd,
                                 ConstMatrixView self, const float* gamma, const float* beta,
                                 Activation act, float* hrow);
/// Adjoint of the epilogue's LN + act (the residual is the caller's): from g = dL/d act-output [R,
/// C], writes dz = dL/dz [R, C] (dz may alias g) and accumulates dgamma, dbeta [C] and, when
/// non-null, dbias [C] += column sums of dz (the bias of the GEMMs that produced z).
void layernorm_act_backward(MatrixView dz, float* dgamma, float* dbeta, float* dbias,
                            ConstMatrixView g, ConstMatrixView xhat, std::span<const float> rstd,
                            const float* gamma, const float* beta, Activation act);

}  // namespace segrank
