// Node-feature normalizer (docs/model.md#node-features-and-the-normalizer): fitted on the train
// split, stored in the checkpoint.
// Fit: drop columns constant over train; signed log sign(x)*log1p(|x|); z-score with the population
// std (ddof 0) of the signed-log values. Statistics accumulate in double, one graph at a time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gnn/core/tensor.h"

namespace segrank {

/// sign(x) * log1p(|x|), the signed log (docs/model.md#node-features-and-the-normalizer).
double signed_log(double x);

/// Fitted statistics: for each kept input column (ascending ids), the mean and population std of
/// its signed-log values over the train split. Immutable once built; invariants validated.
class Normalizer {
public:
    Normalizer() = default;

    /// Rebuilds a normalizer from stored vectors (checkpoint). kept_columns: [F'] strictly
    /// increasing ids in [0, input_dim); means, stds: [F'] finite, stds > 0. Throws segrank::Error
    /// prefixed with `where` (e.g. the checkpoint path) naming the offending field and index.
    static Normalizer from_vectors(int64_t input_dim, std::vector<int32_t> kept_columns,
                                   std::vector<double> means, std::vector<double> stds,
                                   const std::string& where);

    /// node_feat: [n, input_dim] raw features -> returns [n, F'] float32 normalized features.
    /// Throws segrank::Error (prefixed with `where`) when the column count differs from input_dim.
    Tensor apply(ConstMatrixView node_feat, const std::string& where) const;

    int64_t input_dim() const { return input_dim_; }
    /// F' = number of kept columns (the model's node-feature width).
    int64_t output_dim() const { return static_cast<int64_t>(kept_columns_.size()); }
    const std::vector<int32_t>& kept_columns() const { return kept_columns_; }
    const std::vector<double>& means() const { return means_; }
    const std::vector<double>& stds() const { return stds_; }

private:
    int64_t input_dim_ = 0;
    std::vector<int32_t> kept_columns_;
    std::vector<double> means_;
    std::vector<double> stds_;
};

/// Streams the train split's node_feat graph by graph and fits a Normalizer.
/// Per column it keeps the raw min/max (constant detection) and the count, mean and M2 of the
/// signed-log values, merged per graph with Chan et al.'s parallel update (stable in double).
class NormalizerFitter {
public:
    /// input_dim: feature columns (140 for TpuGraphs node_feat).
    explicit NormalizerFitter(int64_t input_dim);

    /// Adds one graph's node_feat [n, input_dim]. Throws segrank::Error prefixed with `where`
    /// (the graph's file) on a column-count mismatch or a non-finite value (row and column named).
    void add(ConstMatrixView node_feat, const std::string& where);

    /// Nodes added so far.
    int64_t num_rows() const { return rows_; }

    /// The fitted normalizer: a column is kept iff its raw values are not all equal over the
    /// train split and its signed-log std is > 0. Throws segrank::Error if no rows were added.
    Normalizer finish() const;

private:
    int64_t input_dim_;
    int64_t rows_ = 0;
    std::vector<double> min_, max_, mean_, m2_;
};

}  // namespace segrank
