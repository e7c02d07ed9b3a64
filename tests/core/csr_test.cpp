// Csr validation, from_edges, transpose, inverse degrees and the two-direction graph helper.
#include "gnn/core/csr.h"

#include <doctest/doctest.h>

#include <vector>

#include "gnn/core/check.h"

using namespace segrank;

// Diamond "user -> producer" graph: 3 consumes 1 and 2; 1 and 2 consume 0.
//      0
//     / \        operands(1) = {0}, operands(2) = {0}, operands(3) = {1, 2}
//    1   2       users(0) = {1, 2}, users(1) = {3}, users(2) = {3}
//     \ /
//      3
TEST_CASE("graph csr of the diamond lists operands and users in both directions") {
    std::vector<int32_t> u = {3, 1, 2, 3};
    std::vector<int32_t> v = {2, 0, 0, 1};
    GraphCsr g = build_graph_csr(4, u, v);
    CHECK(g.operands.num_rows() == 4);
    CHECK(g.operands.nnz() == 4);
    CHECK(g.operands.degree(0) == 0);
    REQUIRE(g.operands.row(3).size() == 2);
    CHECK(g.operands.row(3)[0] == 1);
    CHECK(g.operands.row(3)[1] == 2);
    REQUIRE(g.users.row(0).size() == 2);
    CHECK(g.users.row(0)[0] == 1);
    CHECK(g.users.row(0)[1] == 2);
    CHECK(g.users.row(1)[0] == 3);
    CHECK(g.users.degree(3) == 0);
    CHECK(g.operands.inverse_degrees()[0] == 0.0f);
    CHECK(g.operands.inverse_degrees()[3] == 0.5f);
    CHECK(g.users.inverse_degrees()[2] == 1.0f);
}

TEST_CASE("graph csr from int64 edge_index pairs equals the int32 form") {
    std::vector<int64_t> ei = {3, 2, 1, 0, 2, 0, 3, 1};
    GraphCsr g = build_graph_csr(4, ei);
    CHECK(g.operands.row(3).size() == 2);
    CHECK(g.users.row(0).size() == 2);
    std::vector<int64_t> bad = {0, 4};
    CHECK_THROWS_AS(build_graph_csr(4, bad), Error);
    std::vector<int64_t> odd = {0, 1, 2};
    CHECK_THROWS_AS(build_graph_csr(4, odd), Error);
}

TEST_CASE("transpose twice gives the original rectangular matrix") {
    std::vector<int32_t> r = {0, 0, 2, 1, 2};
    std::vector<int32_t> c = {4, 1, 0, 3, 3};
    Csr a = Csr::from_edges(3, 5, r, c);
    Csr t = a.transpose();
    CHECK(t.num_rows() == 5);
    CHECK(t.num_cols() == 3);
    CHECK(t.row(3).size() == 2);
    Csr b = t.transpose();
    REQUIRE(b.nnz() == a.nnz());
    for (int64_t i = 0; i <= 3; ++i) CHECK(b.indptr()[i] == a.indptr()[i]);
    for (int64_t i = 0; i < a.nnz(); ++i) CHECK(b.indices()[i] == a.indices()[i]);
    CHECK(a.row(0)[0] == 1);  // sorted within the row
    CHECK(a.row(0)[1] == 4);
}

TEST_CASE("csr construction rejects malformed arrays with a message naming the field") {
    CHECK_THROWS_WITH_AS(Csr(2, 2, {0, 1}, {0}), doctest::Contains("indptr has"), Error);
    CHECK_THROWS_WITH_AS(Csr(2, 2, {1, 1, 1}, {0}), doctest::Contains("indptr[0]"), Error);
    CHECK_THROWS_WITH_AS(Csr(2, 2, {0, 2, 1}, {0, 1}), doctest::Contains("decreases"), Error);
    CHECK_THROWS_WITH_AS(Csr(2, 2, {0, 1, 2}, {0, 2}), doctest::Contains("indices[1]"), Error);
    CHECK_THROWS_WITH_AS(Csr(2, 2, {0, 1, 3}, {0, 1}), doctest::Contains("indptr.back()"), Error);
    std::vector<int32_t> r = {0, 5};
    std::vector<int32_t> c = {0, 0};
    CHECK_THROWS_AS(Csr::from_edges(2, 2, r, c), Error);
}

TEST_CASE("duplicate edges count twice in the degree") {
    std::vector<int32_t> r = {1, 1};
    std::vector<int32_t> c = {0, 0};
    Csr a = Csr::from_edges(2, 2, r, c);
    CHECK(a.degree(1) == 2);
    CHECK(a.inverse_degrees()[1] == 0.5f);
    Csr empty;
    CHECK(empty.num_rows() == 0);
    CHECK(empty.transpose().num_rows() == 0);
}
