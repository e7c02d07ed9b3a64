// Graph instance normalization (docs/model.md#graph-instance-normalization): each column is
// normalized with a mean and variance taken over a set of node rows (the nodes of a segment), not
// over the row's own columns as LayerNorm does. Rows are split into `groups` interleaved groups
// (row r belongs to group r % groups), each with its own statistics: groups = 1 for one set of
// statistics per segment, groups = K for the [n*K] rows of K configs, one set per config.
#pragma once
#include <cstdint>
#include <span>

#include "gnn/core/tensor.h"
#include "gnn/ops/pointwise.h"

namespace segrank {

/// Per group g and column c: mean mu[g, c] and rstd[g, c] = 1 / sqrt(var + 1e-5) (population
/// variance) over the rows r of z [R, C] with r % groups == g. mu, rstd: [groups * C]. Throws
/// segrank::Error when R is not a positive multiple of groups or the spans are too small.
void instance_norm_stats(ConstMatrixView z, int64_t groups, std::span<float> mu,
                         std::span<float> rstd);

/// z <- self + act(gamma * xhat + beta), xhat = (z - mu[g]) * rstd[g] (g = r % groups), with
/// dropout (p > 0, the DropoutSpec rules of docs/model.md#sage-layers) on the act output. Saves
/// xhat [R, C] when xhat.data is non-null. z, self: [R, C]; gamma, beta: [C].
void instance_norm_act_residual_forward(MatrixView z, MatrixView xhat, ConstMatrixView self,
                                        std::span<const float> mu, std::span<const float> rstd,
                                        int64_t groups, const float* gamma, const float* beta,
                                        Activation act, float drop_p, uint64_t drop_seed,
                                        std::span<const int32_t> drop_keys, int64_t drop_group);

/// Adjoint of the normalization, act and dropout for fixed statistics (the residual is the
/// caller's): from g = dL/d(residual branch) [R, C] writes dz = a * rstd[g] (a = dL/dxhat; dz may
/// alias g), accumulates dgamma, dbeta [C] and the per-group sums s1[g, c] += sum_r a,
/// s2[g, c] += sum_r a * xhat ([groups * C], for instance_norm_stats_backward).
void instance_norm_act_backward(MatrixView dz, float* dgamma, float* dbeta, std::span<float> s1,
                                std::span<float> s2, ConstMatrixView g, ConstMatrixView xhat,
                                std::span<const float> rstd, int64_t groups, const float* gamma,
                                const float* beta, Activation act, float drop_p, uint64_t drop_seed,
                                std::span<const int32_t> drop_keys, int64_t drop_group);

/// The statistics' share of the gradient, added to the rows they were taken over: dz[r] -=
/// rstd[g] / n_g * (s1[g] + s2[g] * xhat[r]), n_g = rows of group g. s1, s2 summed over every row
/// normalized with these statistics (instance_norm_act_backward).
void instance_norm_stats_backward(MatrixView dz, ConstMatrixView xhat, std::span<const float> rstd,
                                  std::span<const float> s1, std::span<const float> s2,
                                  int64_t groups);

}  // namespace segrank
