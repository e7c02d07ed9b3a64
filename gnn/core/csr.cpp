// Csr construction, validation and transposition (counting sort, O(nnz + rows)).
#include "gnn/core/csr.h"

#include <algorithm>
#include <limits>

#include "gnn/core/check.h"

namespace segrank {

Csr::Csr(int64_t num_rows, int64_t num_cols, std::vector<int64_t> indptr,
         std::vector<int32_t> indices)
    : num_rows_(num_rows),
      num_cols_(num_cols),
      indptr_(std::move(indptr)),
      indices_(std::move(indices)) {
    SEGRANK_CHECK(num_rows >= 0 && num_cols >= 0, "Csr: negative shape [", num_rows, " x ",
                  num_cols, "]");
    SEGRANK_CHECK(num_cols <= std::numeric_limits<int32_t>::max(), "Csr: num_cols ", num_cols,
                  " exceeds int32 column ids");
    SEGRANK_CHECK(static_cast<int64_t>(indptr_.size()) == num_rows + 1, "Csr: indptr has ",
                  indptr_.size(), " entries, expected num_rows + 1 = ", num_rows + 1);
    SEGRANK_CHECK(indptr_[0] == 0, "Csr: indptr[0] = ", indptr_[0], ", expected 0");
    for (int64_t r = 0; r < num_rows; ++r)
        SEGRANK_CHECK(indptr_[r + 1] >= indptr_[r], "Csr: indptr decreases at row ", r, " (",
                      indptr_[r], " -> ", indptr_[r + 1], ")");
    SEGRANK_CHECK(indptr_.back() == static_cast<int64_t>(indices_.size()),
                  "Csr: indptr.back() = ", indptr_.back(), " but indices has ", indices_.size(),
                  " entries");
    for (size_t i = 0; i < indices_.size(); ++i)
        SEGRANK_CHECK(indices_[i] >= 0 && indices_[i] < num_cols, "Csr: indices[", i,
                      "] = ", indices_[i], " outside [0, ", num_cols, ")");
    inv_degree_.resize(static_cast<size_t>(num_rows));
    for (int64_t r = 0; r < num_rows; ++r) {
        const int64_t d = indptr_[r + 1] - indptr_[r];
        inv_degree_[r] = d > 0 ? 1.0f / static_cast<float>(d) : 0.0f;
    }
}

Csr Csr::from_edges(int64_t num_rows, int64_t num_cols, std::span<const int32_t> rows,
                    std::span<const int32_t> cols) {
    SEGRANK_CHECK(rows.size() == cols.size(), "Csr::from_edges: ", rows.size(), " row ids but ",
                  cols.size(), " column ids");
    SEGRANK_CHECK(num_rows >= 0 && num_cols >= 0, "Csr::from_edges: negative shape");
    std::vector<int64_t> indptr(static_cast<size_t>(num_rows) + 1, 0);
    for (size_t i = 0; i < rows.size(); ++i) {
        SEGRANK_CHECK(rows[i] >= 0 && rows[i] < num_rows, "Csr::from_edges: edge ", i, " row id ",
                      rows[i], " outside [0, ", num_rows, ")");
        SEGRANK_CHECK(cols[i] >= 0 && cols[i] < num_cols, "Csr::from_edges: edge ", i,
                      " column id ", cols[i], " outside [0, ", num_cols, ")");
        ++indptr[static_cast<size_t>(rows[i]) + 1];
    }
    for (int64_t r = 0; r < num_rows; ++r) indptr[r + 1] += indptr[r];
    std::vector<int64_t> fill(indptr.begin(), indptr.end() - 1);
    std::vector<int32_t> indices(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) indices[fill[rows[i]]++] = cols[i];
    for (int64_t r = 0; r < num_rows; ++r)
        std::sort(indices.begin() + indptr[r], indices.begin() + indptr[r + 1]);
    return Csr(num_rows, num_cols, std::move(indptr), std::move(indices));
}

Csr Csr::transpose() const {
    std::vector<int64_t> indptr(static_cast<size_t>(num_cols_) + 1, 0);
    for (int32_t c : indices_) ++indptr[static_cast<size_t>(c) + 1];
    for (int64_t c = 0; c < num_cols_; ++c) indptr[c + 1] += indptr[c];
    std::vector<int64_t> fill(indptr.begin(), indptr.end() - 1);
    std::vector<int32_t> indices(indices_.size());
    // Rows are visited in ascending order, so each transposed row comes out sorted.
    for (int64_t r = 0; r < num_rows_; ++r)
        for (int64_t i = indptr_[r]; i < indptr_[r + 1]; ++i)
            indices[fill[indices_[i]]++] = static_cast<int32_t>(r);
    return Csr(num_cols_, num_rows_, std::move(indptr), std::move(indices));
}

GraphCsr build_graph_csr(int64_t num_nodes, std::span<const int32_t> user,
                         std::span<const int32_t> producer) {
    SEGRANK_CHECK(user.size() == producer.size(), "build_graph_csr: ", user.size(),
                  " user ids but ", producer.size(), " producer ids");
    GraphCsr g;
    g.operands = Csr::from_edges(num_nodes, num_nodes, user, producer);
    g.users = g.operands.transpose();
    return g;
}

GraphCsr build_graph_csr(int64_t num_nodes, std::span<const int64_t> edge_index) {
    SEGRANK_CHECK(edge_index.size() % 2 == 0, "build_graph_csr: edge_index has ", edge_index.size(),
                  " values, expected [m, 2]");
    SEGRANK_CHECK(num_nodes >= 0 && num_nodes <= std::numeric_limits<int32_t>::max(),
                  "build_graph_csr: num_nodes ", num_nodes, " outside int32 range");
    const size_t m = edge_index.size() / 2;
    std::vector<int32_t> u(m), v(m);
    for (size_t i = 0; i < m; ++i) {
        const int64_t a = edge_index[2 * i], b = edge_index[2 * i + 1];
        SEGRANK_CHECK(a >= 0 && a < num_nodes && b >= 0 && b < num_nodes,
                      "build_graph_csr: edge_index[", i, "] = (", a, ", ", b, ") outside [0, ",
                      num_nodes, ")");
        u[i] = static_cast<int32_t>(a);
        v[i] = static_cast<int32_t>(b);
    }
    return build_graph_csr(num_nodes, u, v);
}

}  // namespace segrank
