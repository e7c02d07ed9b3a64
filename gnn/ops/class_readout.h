// The readout of a deduplicated inference state (docs/model.md#row-deduplication): the K config
// rows of a dep node are read through its classes, and runs of pooled nodes are pre-summed once per
// distinct class tuple.
#pragma once
#include <cstdint>
#include <span>

#include "gnn/core/tensor.h"

namespace segrank {

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
}  // namespace segrank
