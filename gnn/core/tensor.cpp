// Tensor storage: 64-byte aligned allocation.
#include "gnn/core/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace segrank {

namespace {
float* alloc_floats(int64_t n) {
    if (n == 0) return nullptr;
    size_t bytes = static_cast<size_t>(n) * sizeof(float);
    bytes = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    return static_cast<float*>(p);
}
}  // namespace

void Tensor::FreeDeleter::operator()(float* p) const noexcept { std::free(p); }

Tensor::Tensor(int64_t rows, int64_t cols) : rows_(rows), cols_(cols), rank_(2) {
    SEGRANK_CHECK(rows >= 0 && cols >= 0, "Tensor: negative shape [", rows, ", ", cols, "]");
    data_.reset(alloc_floats(rows * cols));
}

Tensor::Tensor(int64_t n) : rows_(n), cols_(1), rank_(1) {
    SEGRANK_CHECK(n >= 0, "Tensor: negative size ", n);
    data_.reset(alloc_floats(n));
}

Tensor Tensor::clone() const {
    Tensor t(rows_, cols_);
    t.rank_ = rank_;
    if (size() > 0) std::memcpy(t.data_.get(), data_.get(), static_cast<size_t>(size()) * sizeof(float));
    return t;
}

void Tensor::fill(float v) { std::fill(data_.get(), data_.get() + size(), v); }

void Tensor::reshape(int64_t rows, int64_t cols) {
    SEGRANK_ASSERT(rows * cols == size(), "reshape [", rows_, ",", cols_, "] -> [", rows, ",", cols, "]");
    rows_ = rows;
    cols_ = cols;
    rank_ = 2;
}

}  // namespace segrank
