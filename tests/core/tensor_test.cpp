// Tensor, views and Rng basics.
#include "gnn/core/tensor.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "gnn/core/parallel.h"
#include "gnn/core/rng.h"

using namespace segrank;

TEST_CASE("tensor is zero-initialized, aligned to a 4 KiB page at every size, and row-major") {
    // Small blocks come from the heap, large ones are mapped: both start a page, whatever was
    // allocated before (a 1-float block in between shifts the heap).
    std::vector<Tensor> keep;
    for (int64_t n : {1, 15, 100, 1000, 70000, 300000}) {
        keep.emplace_back(1, 1);
        keep.emplace_back(n, 1);
        CHECK(reinterpret_cast<uintptr_t>(keep.back().data()) % 4096 == 0);
        CHECK(reinterpret_cast<uintptr_t>(Tensor::uninit(n, 1).data()) % 4096 == 0);
    }
    Tensor t(3, 5);
    CHECK(t.size() == 15);
    CHECK(reinterpret_cast<uintptr_t>(t.data()) % 4096 == 0);
    for (int64_t i = 0; i < t.size(); ++i) CHECK(t[i] == 0.0f);
    t.at(1, 2) = 7.0f;
    CHECK(t[1 * 5 + 2] == 7.0f);
    auto v = t.view().rows_range(1, 3);
    CHECK(v.rows == 2);
    CHECK(v.at(0, 2) == 7.0f);
    Tensor c = t.clone();
    t.at(1, 2) = 1.0f;
    CHECK(c.at(1, 2) == 7.0f);
}

TEST_CASE("tensor rejects negative shapes with segrank::Error") {
    CHECK_THROWS_AS(Tensor(-1, 2), Error);
}

TEST_CASE("rng streams are deterministic and distinct per key") {
    Rng a = Rng::derive(42, 1, 7, "configs");
    Rng b = Rng::derive(42, 1, 7, "configs");
    Rng c = Rng::derive(42, 1, 8, "configs");
    Rng d = Rng::derive(42, 1, 7, "segments");
    uint64_t xa = a.next_u64();
    CHECK(xa == b.next_u64());
    CHECK(xa != c.next_u64());
    CHECK(xa != d.next_u64());
}

TEST_CASE("rng uniform_int covers its range without bias beyond sampling noise") {
    Rng r(1);
    int counts[7] = {0};
    const int n = 70000;
    for (int i = 0; i < n; ++i) counts[r.uniform_int(7)]++;
    for (int k = 0; k < 7; ++k) CHECK(std::abs(counts[k] - n / 7) < 400);
}

TEST_CASE("parallel_for visits every index exactly once") {
    std::vector<int> hits(10007, 0);
    parallel_for(0, 10007, 64, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (int h : hits) CHECK(h == 1);
}

TEST_CASE("large tensors reuse freed storage and are still zero-filled, uninit keeps the shape") {
    const int64_t rows = 40000, cols = 64;  // 10 MB: the huge-page block path
    float* first = nullptr;
    {
        segrank::Tensor t(rows, cols);
        first = t.data();
        CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
        t.fill(3.0f);
    }
    segrank::Tensor again(rows, cols);
    CHECK(again.data() == first);  // the cached block came back
    bool all_zero = true;
    for (int64_t i = 0; i < again.size(); ++i) all_zero &= again[i] == 0.0f;
    CHECK(all_zero);
    segrank::Tensor u = segrank::Tensor::uninit(rows, cols);
    CHECK(u.rows() == rows);
    CHECK(u.cols() == cols);
    CHECK(u.data() != again.data());
    segrank::Tensor c = again.clone();
    CHECK(c[123] == 0.0f);
    CHECK_THROWS_AS(segrank::Tensor::uninit(-1, 2), segrank::Error);
}
