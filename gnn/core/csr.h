// Csr: validated compressed-sparse-row adjacency (docs/style.md#core-types, DGL-like aggregate) and
// the two-direction graph adjacency every SAGE layer consumes (docs/model.md#sage-layers,
// docs/model.md#kernels).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace segrank {

/// Compressed sparse rows with unit weights. Row r holds the column ids
/// indices[indptr[r]..indptr[r+1]). Invariants (checked on construction, segrank::Error otherwise):
/// indptr.size() == num_rows + 1, indptr[0] == 0, non-decreasing, indptr.back() == indices.size(),
/// 0 <= indices[i] < num_cols. Duplicate entries are allowed (a multigraph: they count twice in
/// sums and degrees). Immutable once built; the inverse degrees (1/deg, 0 for empty rows) are
/// precomputed.
class Csr {
public:
    /// Empty 0 x 0 matrix.
    Csr() : indptr_(1, 0) {}
    /// Takes ownership of the arrays and validates them. Throws segrank::Error naming the field.
    Csr(int64_t num_rows, int64_t num_cols, std::vector<int64_t> indptr,
        std::vector<int32_t> indices);

    /// Builds from coordinate pairs (rows[i], cols[i]); within a row, columns are sorted ascending.
    /// Throws segrank::Error when the spans differ in length or an id is out of range.
    static Csr from_edges(int64_t num_rows, int64_t num_cols, std::span<const int32_t> rows,
                          std::span<const int32_t> cols);

    /// The transposed matrix [num_cols x num_rows] (columns sorted within rows).
    Csr transpose() const;

    int64_t num_rows() const { return num_rows_; }
    int64_t num_cols() const { return num_cols_; }
    int64_t nnz() const { return static_cast<int64_t>(indices_.size()); }
    std::span<const int64_t> indptr() const { return indptr_; }
    std::span<const int32_t> indices() const { return indices_; }
    /// Column ids of row r.
    std::span<const int32_t> row(int64_t r) const {
        return {indices_.data() + indptr_[r], static_cast<size_t>(indptr_[r + 1] - indptr_[r])};
    }
    int64_t degree(int64_t r) const { return indptr_[r + 1] - indptr_[r]; }
    /// [num_rows] 1/degree, 0 for rows without entries (docs/model.md#sage-layers: the mean over no
    /// neighbours is 0).
    std::span<const float> inverse_degrees() const { return inv_degree_; }

private:
    int64_t num_rows_ = 0;
    int64_t num_cols_ = 0;
    std::vector<int64_t> indptr_;
    std::vector<int32_t> indices_;
    std::vector<float> inv_degree_;
};

/// Both directions of a (sub)graph with n nodes: operands(v) = producers v consumes,
/// users(v) = consumers of v. users == operands.transpose().
struct GraphCsr {
    Csr operands;  ///< [n x n]: row v lists the nodes v reads (its operands)
    Csr users;     ///< [n x n]: row v lists the nodes that read v
};

/// Builds both directions from "user -> producer" edges: edge i is (user[i], producer[i]), so
/// operands(user) contains producer and users(producer) contains user (docs/files.md, edge_index
/// rows). Throws segrank::Error when the spans differ in length or an id is outside [0, num_nodes).
GraphCsr build_graph_csr(int64_t num_nodes, std::span<const int32_t> user,
                         std::span<const int32_t> producer);

/// Same from a flattened [m, 2] int64 edge_index (row (u, v): u consumes v), as stored in
/// GraphStructure::edge_index. Throws segrank::Error on odd length or ids outside [0, num_nodes).
GraphCsr build_graph_csr(int64_t num_nodes, std::span<const int64_t> edge_index);

}  // namespace segrank
