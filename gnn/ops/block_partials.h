// Row blocks with one partial-sum row each, for column reductions inside parallel_for
// (gnn/ops/pointwise.cpp, gnn/ops/dep_fused.cpp). The block count depends only on the row count, so
// results do not depend on the number of threads.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace segrank {

/// Up to 64 blocks of about 256 rows or more; block b holds rows [begin(b), end(b)) and a partial
/// row of `width` floats, reduced in block order.
class BlockPartials {
public:
    BlockPartials(int64_t rows, int64_t width)
        : rows_(rows),
          width_(width),
          blocks_(std::max<int64_t>(1, std::min<int64_t>(64, (rows + 255) / 256))),
          acc_(static_cast<size_t>(blocks_ * width), 0.0f) {}
    int64_t blocks() const { return blocks_; }
    int64_t begin(int64_t b) const { return rows_ * b / blocks_; }
    int64_t end(int64_t b) const { return rows_ * (b + 1) / blocks_; }
    float* block(int64_t b) { return acc_.data() + b * width_; }
    /// out[c] += sum over blocks of block(b)[offset + c], c < count.
    void reduce_into(int64_t offset, int64_t count, float* out) const {
        for (int64_t c = 0; c < count; ++c) {
            double s = 0.0;
            for (int64_t b = 0; b < blocks_; ++b)
                s += acc_[static_cast<size_t>(b * width_ + offset + c)];
            out[c] += static_cast<float>(s);
        }
    }

private:
    int64_t rows_, width_, blocks_;
    std::vector<float> acc_;
};

}  // namespace segrank
