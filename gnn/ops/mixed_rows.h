// Kernels for the config-independence layout (docs/model.md#config-independence): a layer state
// where dependent nodes carry K config rows ([m, K*H], "dep") and independent nodes one row
// broadcast over the K configs ([n, H], "base"). pos[v] = row of v in dep, or -1 when v is
// independent (then base row v is used). With every node dependent these reduce to the plain
// kernels (the naive path).
#pragma once
#include <cstdint>
#include <span>

#include "gnn/core/csr.h"
#include "gnn/core/tensor.h"

namespace segrank {

/// Read-only mixed state. base: [n, H] (may be empty when every pos >= 0); dep: [m, K*H]; pos: [n].
struct MixedRows {
    ConstMatrixView base;
    ConstMatrixView dep;
    std::span<const int32_t> pos;
    int64_t k = 1;
    int64_t h = 0;
};

/// Gradient of a mixed state, same layout: backward kernels accumulate into dbase / ddep.
struct MixedGrads {
    MatrixView dbase;
    MatrixView ddep;
    std::span<const int32_t> pos;
    int64_t k = 1;
    int64_t h = 0;
};

/// out[i] = row of node out_nodes[i] as K*H values (dep row, or base row repeated K times).
/// out: [out_nodes.size(), K*H].
void mixed_gather_forward(MatrixView out, std::span<const int32_t> out_nodes, const MixedRows& in);
/// Adjoint of mixed_gather_forward (out_nodes distinct): dep rows += dout, base rows += sum over k.
void mixed_gather_backward(const MixedGrads& din, std::span<const int32_t> out_nodes,
                           ConstMatrixView dout);

/// Mean aggregation: out[i] = 1/deg(v) sum_{u in adj.row(v)} row(u), v = out_nodes[i] (0 if no
/// neighbours). out: [out_nodes.size(), K*H]; adj: [n x n].
void mixed_spmm_forward(MatrixView out, std::span<const int32_t> out_nodes, const Csr& adj,
                        const MixedRows& in);
/// The three inputs of a SAGE layer for out_nodes in one parallel region instead of three: self =
/// mixed_gather_forward, agg_fwd = mixed_spmm_forward over operands, agg_bwd = over users, with
/// the same bits. self, agg_fwd, agg_bwd: [out_nodes.size(), K*H]; operands, users: [n x n].
/// Throws segrank::Error on shapes.
void mixed_inputs_forward(MatrixView self, MatrixView agg_fwd, MatrixView agg_bwd,
                          std::span<const int32_t> out_nodes, const Csr& operands, const Csr& users,
                          const MixedRows& in);
/// Adjoint: for every node u and every v in adj_t.row(u) with out_pos[v] >= 0, row(u) +=
/// dout[out_pos[v]]/deg(v) (summed over k into base rows). adj_t = adj.transpose(); fwd_inv_deg =
/// adj.inverse_degrees(); out_pos: [n].
void mixed_spmm_backward(const MixedGrads& din, const Csr& adj_t, std::span<const int32_t> out_pos,
                         std::span<const float> fwd_inv_deg, ConstMatrixView dout);

/// Adjoint of mixed_inputs_forward in one parallel region over the source rows instead of three:
/// mixed_gather_backward of d_self, then mixed_spmm_backward of d_fwd (through users, the operands'
/// transpose) and of d_bwd (through operands), each row in that order, so the same bits. out_pos
/// [n]: the row of a node in the three gradients [r, K*H] (-1: none; out_nodes distinct).
/// Throws segrank::Error on shapes.
void mixed_inputs_backward(const MixedGrads& din, std::span<const int32_t> out_pos,
                           const Csr& operands, const Csr& users, ConstMatrixView d_self,
                           ConstMatrixView d_fwd, ConstMatrixView d_bwd);

/// The projected-rows aggregation of a SAGE layer's dep rows (docs/model.md#projection-first):
/// with y the dep rows of layer l-1 already multiplied by one weight ([m_prev, K*H], row p = the
/// node at position p of layer l-1, located by in_pos [n]), accumulates for every output node v =
/// out_nodes[i] (one writer per row): adj null (the self term): out[i] += y[in_pos[v]] when
/// in_pos[v] >= 0; else out[i] += inv_deg(v) * y[in_pos[u]] for every u in adj.row(v) with
/// in_pos[u] >= 0 (inv_deg = adj.inverse_degrees()). Rows of independent inputs (in_pos < 0) are
/// not read: the caller adds their config-independent part once per node. out: [out_nodes.size(),
/// K*H]. Throws segrank::Error on shapes.
void dep_spmm_accumulate(MatrixView out, std::span<const int32_t> out_nodes, const Csr* adj,
                         ConstMatrixView y, std::span<const int32_t> in_pos);
/// Adjoint of dep_spmm_accumulate for the dep inputs: writes (does not accumulate) dy[p] for every
/// input node u = in_nodes[p] (the nodes of layer l-1, in_nodes[p] has in_pos p): adj_t null: dy[p]
/// = dout[out_pos[u]] (out_pos[u] >= 0 is required: every dep node of layer l-1 is one of layer
/// l); else dy[p] = sum over v in adj_t.row(u) with out_pos[v] >= 0 of fwd_inv_deg[v] *
/// dout[out_pos[v]], adj_t = adj.transpose(), fwd_inv_deg = adj.inverse_degrees(). dy:
/// [in_nodes.size(), K*H]; dout: [m, K*H]; out_pos: [n]. Throws segrank::Error on shapes.
void dep_spmm_adjoint(MatrixView dy, std::span<const int32_t> in_nodes, const Csr* adj_t,
                      std::span<const float> fwd_inv_deg, ConstMatrixView dout,
                      std::span<const int32_t> out_pos);

/// Readout over the first num_pooled nodes, per config k: out[k] = [mean_v row_k(v), max_v
/// row_k(v)] when out is [K, 2H] (mean_max), out[k] = mean_v row_k(v) when out is [K, H] (mean;
/// no max is computed). argmax: [K*H] node ids of the max (saved for the backward) for mean_max,
/// empty for mean. num_pooled >= 1. Throws segrank::Error on other shapes.
void mixed_readout_forward(MatrixView out, std::span<int32_t> argmax, int64_t num_pooled,
                           const MixedRows& in);
/// Adjoint of mixed_readout_forward: mean part spread over the pooled nodes, max part (dout
/// [K, 2H]) to the argmax node; dout [K, H] is the mean alone (argmax empty).
void mixed_readout_backward(const MixedGrads& din, std::span<const int32_t> argmax,
                            int64_t num_pooled, ConstMatrixView dout);

namespace detail {
/// d[c] += s[c], c < n: the row sum of the mixed kernels (one compiled copy, so fused kernels
/// that call it give the same bits as the unfused ones).
void add_to(float* __restrict d, const float* __restrict s, int64_t n);
/// d[c] += a * s[c], c < n: the scaled row sum of the mixed kernels.
void axpy_to(float* __restrict d, float a, const float* __restrict s, int64_t n);
}  // namespace detail

}  // namespace segrank
