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
/// Adjoint: for every node u and every v in adj_t.row(u) with out_pos[v] >= 0, row(u) +=
/// dout[out_pos[v]]/deg(v) (summed over k into base rows). adj_t = adj.transpose(); fwd_inv_deg =
/// adj.inverse_degrees(); out_pos: [n].
void mixed_spmm_backward(const MixedGrads& din, const Csr& adj_t, std::span<const int32_t> out_pos,
                         std::span<const float> fwd_inv_deg, ConstMatrixView dout);

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

/// Read-only deduplicated layer state of an inference encode (docs/model.md#row-deduplication):
/// the K config rows of dep node p are the rows uniq[off[p] + cls[p * K + k]], so configs whose
/// row is the same share one stored row; independent nodes read base. base: [n, H] (may be empty
/// when every pos >= 0); uniq: [U, H]; off: [m + 1] (off[m] <= U); count: [m] classes of node p
/// (cls values are below it, count[p] <= off[p + 1] - off[p]); cls: [m * K]; pos: [n].
struct ClassRows {
    ConstMatrixView base;
    ConstMatrixView uniq;
    std::span<const int64_t> off;
    std::span<const int32_t> count;
    std::span<const int32_t> cls;
    std::span<const int32_t> pos;
    int64_t k = 1;
    int64_t h = 0;

    /// Row of dep node p (its dep position) for config k: H values.
    const float* row(int32_t p, int64_t k_index) const {
        return uniq.row(off[p] + cls[static_cast<size_t>(p * k + k_index)]);
    }
};

/// Work of one class_readout_forward, in H-wide row additions (each also a max step for mean_max).
struct ClassReadoutStats {
    int64_t dense_adds = 0;     ///< without grouping: pooled dep nodes x K
    int64_t adds = 0;           ///< done: partial rows x their group length, plus groups x K
    int64_t groups = 0;         ///< groups of pooled dep nodes (a lone node is a group)
    int64_t grouped_nodes = 0;  ///< pooled dep nodes in groups of two or more
    int64_t partial_rows = 0;   ///< distinct tuples pre-summed, over all groups
    int64_t windows = 0;        ///< passes over the K configs (partial rows held <= K per pass)
};

/// Readout over the first num_pooled nodes, per config k: out[k] = [mean_v row_k(v), max_v
/// row_k(v)] when out is [K, 2H] (mean_max), out[k] = mean_v row_k(v) when out is [K, H] (mean;
/// no max is computed). argmax: [K*H] node ids of the max (saved for the backward) for mean_max,
/// empty for mean. num_pooled >= 1. Throws segrank::Error on other shapes.
void mixed_readout_forward(MatrixView out, std::span<int32_t> argmax, int64_t num_pooled,
                           const MixedRows& in);
/// mixed_readout_forward of a deduplicated state, for inference (no argmax): out [K, 2H] or
/// [K, H]. Runs of consecutive pooled dep nodes whose class tuples few enough configs tell apart
/// (at most K/16 distinct tuples per run) are summed once per distinct tuple
/// (docs/model.md#row-deduplication), so the double sums are reassociated: the mean equals
/// mixed_readout_forward's on the expanded rows up to double rounding (after the cast to float
/// almost always bit for bit, not always); the max is equal bit for bit (rows without NaN). The
/// groups do not depend on the thread count. Extra memory: at most K partial rows (H doubles and H
/// floats each) at a time, K int32 tuple ids per run of two or more nodes, and K*H doubles of
/// running sums when the partial rows take more than one pass. Throws segrank::Error on shapes;
/// stats (optional) receives the work done.
void class_readout_forward(MatrixView out, int64_t num_pooled, const ClassRows& in,
                           ClassReadoutStats* stats = nullptr);
/// Adjoint of mixed_readout_forward: mean part spread over the pooled nodes, max part (dout
/// [K, 2H]) to the argmax node; dout [K, H] is the mean alone (argmax empty).
void mixed_readout_backward(const MixedGrads& din, std::span<const int32_t> argmax,
                            int64_t num_pooled, ConstMatrixView dout);

}  // namespace segrank
