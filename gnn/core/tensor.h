// Tensor (owning, float32, row-major, 4 KiB-page aligned, rank 1-2) and borrowed matrix views.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "gnn/core/check.h"

namespace segrank {

/// Borrowed mutable view of a row-major matrix: {data, rows, cols, row_stride (floats)}.
struct MatrixView {
    float* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t stride = 0;  // floats between row starts, >= cols

    float* row(int64_t r) const { return data + r * stride; }
    float& at(int64_t r, int64_t c) const { return data[r * stride + c]; }
    /// Rows [b, e) as a zero-copy view.
    MatrixView rows_range(int64_t b, int64_t e) const {
        return {data + b * stride, e - b, cols, stride};
    }
    bool contiguous() const { return stride == cols; }
};

/// Borrowed read-only view of a row-major matrix.
struct ConstMatrixView {
    const float* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t stride = 0;

    ConstMatrixView() = default;
    ConstMatrixView(const float* d, int64_t r, int64_t c, int64_t s)
        : data(d), rows(r), cols(c), stride(s) {}
    ConstMatrixView(MatrixView v)
        : data(v.data), rows(v.rows), cols(v.cols), stride(v.stride) {}  // NOLINT
    const float* row(int64_t r) const { return data + r * stride; }
    float at(int64_t r, int64_t c) const { return data[r * stride + c]; }
    ConstMatrixView rows_range(int64_t b, int64_t e) const {
        return {data + b * stride, e - b, cols, stride};
    }
    bool contiguous() const { return stride == cols; }
};

/// Returns every cached large tensor block to the kernel and restarts the cache's high-water mark
/// at the current live bytes (gnn/core/tensor.cpp keeps freed blocks >= 256 KiB for reuse). Returns
/// the bytes released. Call between phases whose shapes differ (e.g. benchmark modes).
size_t release_cached_tensor_memory();

/// Owning float32 tensor of rank 1 ([n], stored as rows=n, cols=1 view-wise) or rank 2 ([rows,
/// cols]). Contiguous row-major, aligned to a 4 KiB page (so oneDNN's products depend only on the
/// shapes, not on the heap's history), zero-initialized, move-only (`clone()` copies).
class Tensor {
public:
    Tensor() = default;
    /// [rows, cols], zero-filled. Throws segrank::Error on negative sizes.
    Tensor(int64_t rows, int64_t cols);
    /// Rank-1 [n], zero-filled.
    explicit Tensor(int64_t n);
    /// [rows, cols] with unspecified contents, for outputs a kernel overwrites completely (skips
    /// the zero-fill of reused storage). Throws segrank::Error on negative sizes.
    static Tensor uninit(int64_t rows, int64_t cols);

    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;
    Tensor(Tensor&&) noexcept = default;
    Tensor& operator=(Tensor&&) noexcept = default;

    Tensor clone() const;

    int rank() const { return rank_; }
    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    int64_t size() const { return rows_ * cols_; }
    float* data() { return data_.get(); }
    const float* data() const { return data_.get(); }
    std::span<float> span() { return {data_.get(), static_cast<size_t>(size())}; }
    std::span<const float> span() const { return {data_.get(), static_cast<size_t>(size())}; }
    float& operator[](int64_t i) { return data_[i]; }
    float operator[](int64_t i) const { return data_[i]; }
    float& at(int64_t r, int64_t c) { return data_[r * cols_ + c]; }
    float at(int64_t r, int64_t c) const { return data_[r * cols_ + c]; }

    MatrixView view() { return {data_.get(), rows_, cols_, cols_}; }
    ConstMatrixView view() const { return {data_.get(), rows_, cols_, cols_}; }
    ConstMatrixView cview() const { return view(); }

    void fill(float v);
    void zero() { fill(0.0f); }
    /// Reinterprets the same storage as [rows, cols] (rows*cols must equal size()).
    void reshape(int64_t rows, int64_t cols);

private:
    Tensor(int64_t rows, int64_t cols, bool zero);
    struct FreeDeleter {
        FreeDeleter() noexcept : bytes(0) {}
        explicit FreeDeleter(size_t b) noexcept : bytes(b) {}
        size_t bytes;  ///< storage size: decides munmap (large, huge-page mapped) or free
        void operator()(float* p) const noexcept;
    };
    std::unique_ptr<float[], FreeDeleter> data_;
    int64_t rows_ = 0;
    int64_t cols_ = 0;
    int rank_ = 0;
};

}  // namespace segrank
