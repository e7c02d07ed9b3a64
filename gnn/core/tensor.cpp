// Tensor storage: page-aligned allocation; large blocks huge-page mapped and cached.
#include "gnn/core/tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <tuple>
#include <utility>

#include "gnn/core/address_space.h"
#include "gnn/core/op_timer.h"

namespace segrank {

namespace {

// Large blocks (activations of a full graph are hundreds of MB: [n*K, H] floats) are created and
// freed many times per training step. On VMs page faults dominate such a step (measured on the
// 2-core CI machine type: ~7 us per 4 KiB fault, 1.9 s to first-touch 256 MiB; 0.04 s with 2 MiB
// transparent huge pages). So blocks >= 256 KiB are mapped (>= 4 MiB: with MADV_HUGEPAGE) and, when
// freed, kept in a cache for reuse (glibc would hand such blocks back to the kernel and fault them
// in again every step). The cache never lets live + cached bytes exceed the high-water mark of live
// bytes alone by more than 1/4 (at least 16 MiB): on a miss it first unmaps cached blocks, so peak
// RSS stays within that margin of what it would be if every block were returned at once.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kPageBytes = 4096;  ///< the alignment of every block (see alloc_floats)
constexpr size_t kMapThreshold = size_t{256} << 10;  ///< blocks from here on are mapped and cached
constexpr size_t kHugeThreshold = size_t{4} << 20;   ///< blocks from here on are huge-page aligned

size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

size_t request_bytes(int64_t n) {
    const size_t bytes = round_up(static_cast<size_t>(n) * sizeof(float), 64);
    if (bytes >= kHugeThreshold) return round_up(bytes, kHugePage);
    return bytes >= kMapThreshold ? round_up(bytes, size_t{64} << 10) : bytes;
}

void* map_block(size_t bytes) {
    check_matmul_headroom(bytes);
    if (bytes < kHugeThreshold) {  // page-aligned mapping (>= 64-byte alignment), no huge pages
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        return p;
    }
    // Over-map by one huge page, then unmap the unaligned head and the tail: [a, a + bytes) stays.
    const size_t span = bytes + kHugePage;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto base = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t a = round_up(base, kHugePage);
    if (a > base) munmap(raw, a - base);
    if (base + span > a + bytes)
        munmap(reinterpret_cast<void*>(a + bytes), base + span - (a + bytes));
    madvise(reinterpret_cast<void*>(a), bytes, MADV_HUGEPAGE);  // advisory; fine when THP is off
    return reinterpret_cast<void*>(a);
}

class BlockCache {
public:
    /// Returns {block, block bytes, fresh}: fresh blocks come zeroed from the kernel.
    std::tuple<void*, size_t, bool> acquire(size_t bytes) {
        std::lock_guard<std::mutex> lock(mu_);
        // Best fit among cached blocks at most twice the request. A larger block costs no extra RSS
        // (it is resident already and counted in live + cached), it only makes a later large
        // request miss.
        auto it = free_.lower_bound(bytes);
        if (it != free_.end() && it->first <= 2 * bytes) {
            const size_t got = it->first;
            void* p = it->second;
            free_.erase(it);
            cached_ -= got;
            live_ += got;
            return {p, got, false};
        }
        // Miss: release cached blocks (largest first) until live + cached + new fits the high-water
        // mark.
        const size_t cap = std::max(peak_ + slack(), live_ + bytes);
        while (!free_.empty() && live_ + cached_ + bytes > cap) {
            auto last = std::prev(free_.end());
            munmap(last->second, last->first);
            cached_ -= last->first;
            free_.erase(last);
        }
        void* p = map_block(bytes);
        live_ += bytes;
        peak_ = std::max(peak_, live_);
        return {p, bytes, true};
    }
    size_t trim() {
        std::lock_guard<std::mutex> lock(mu_);
        const size_t freed = cached_;
        for (auto& [b, p] : free_) munmap(p, b);
        free_.clear();
        cached_ = 0;
        peak_ = live_;
        return freed;
    }
    void release(void* p, size_t bytes) {
        std::lock_guard<std::mutex> lock(mu_);
        live_ -= bytes;
        free_.emplace(bytes, p);
        cached_ += bytes;
    }

private:
    // Blocks of different sizes cannot always stand in for each other, so a cache held strictly at
    // the live high-water mark misses (and faults) every step; 1/4 of it (at least 16 MiB) of slack
    // avoids that (1/8 did until the projection-first SAGE layers, whose buffers come in more
    // sizes: 131 faults per full-graph bench step, about 10 % of its time).
    size_t slack() const { return std::max(peak_ / 4, size_t{16} << 20); }

    std::mutex mu_;
    std::multimap<size_t, void*> free_;
    size_t live_ = 0, cached_ = 0, peak_ = 0;
};

BlockCache& block_cache() {
    static BlockCache* cache =
        new BlockCache();  // never destroyed: tensors may outlive static destructors
    return *cache;
}

/// Allocates storage for n floats; returns the pointer and the block size for the deleter.
std::pair<float*, size_t> alloc_floats(int64_t n, bool zero) {
    if (n == 0) return {nullptr, 0};
    const size_t bytes = request_bytes(n);
    if (bytes >= kMapThreshold) {
        auto [p, got, fresh] = block_cache().acquire(bytes);
        if (zero && !fresh) std::memset(p, 0, bytes);
        return {static_cast<float*>(p), got};
    }
    // Page-aligned, not only 64-byte aligned: oneDNN 2.6's fp32 GEMM on AVX-512 gives results that
    // depend on where in a 4 KiB page its operands start (measured: the same training step of a
    // 40-node segment repeated 400 times in one process gave different weight gradients on 6 of
    // them with 64-byte alignment, at 128 on 1, at 4096 on none of 4500; AVX2 on none). Page
    // alignment makes every product a function of the shapes alone, as the mapped blocks above
    // already were, so results do not depend on what the process allocated before.
    // posix_memalign, not aligned_alloc: C11 wants the size a multiple of the alignment, and a
    // small block is not a whole page (glibc accepts it, sanitizers do not).
    void* p = nullptr;
    if (::posix_memalign(&p, kPageBytes, bytes) != 0) throw std::bad_alloc();
    if (zero) std::memset(p, 0, bytes);
    return {static_cast<float*>(p), bytes};
}

}  // namespace

void Tensor::FreeDeleter::operator()(float* p) const noexcept {
    if (!p) return;
    const OpScope op_scope(OpCategory::kAllocation);
    if (bytes >= kMapThreshold)
        block_cache().release(p, bytes);
    else
        std::free(p);
}

Tensor::Tensor(int64_t rows, int64_t cols, bool zero) : rows_(rows), cols_(cols), rank_(2) {
    const OpScope op_scope(OpCategory::kAllocation);
    SEGRANK_CHECK(rows >= 0 && cols >= 0, "Tensor: negative shape [", rows, ", ", cols, "]");
    auto [p, bytes] = alloc_floats(rows * cols, zero);
    data_ = std::unique_ptr<float[], FreeDeleter>(p, FreeDeleter{bytes});
}

Tensor::Tensor(int64_t rows, int64_t cols) : Tensor(rows, cols, true) {}

Tensor::Tensor(int64_t n) : Tensor(n, 1, true) { rank_ = 1; }

size_t release_cached_tensor_memory() { return block_cache().trim(); }

Tensor Tensor::uninit(int64_t rows, int64_t cols) { return Tensor(rows, cols, false); }

Tensor Tensor::clone() const {
    Tensor t(rows_, cols_, false);
    t.rank_ = rank_;
    if (size() > 0)
        std::memcpy(t.data_.get(), data_.get(), static_cast<size_t>(size()) * sizeof(float));
    return t;
}

void Tensor::fill(float v) { std::fill(data_.get(), data_.get() + size(), v); }

void Tensor::reshape(int64_t rows, int64_t cols) {
    SEGRANK_ASSERT(rows * cols == size(), "reshape [", rows_, ",", cols_, "] -> [", rows, ",", cols,
                   "]");
    rows_ = rows;
    cols_ = cols;
    rank_ = 2;
}

}  // namespace segrank
