// Per-category wall-time accounting of the training step (docs/benchmarks.md#where-the-step-goes):
// leaf ops open an OpScope of their category; while timing is enabled each scope adds its
// steady_clock nanoseconds to a per-category counter. Off by default; when off a scope is one
// relaxed load and a branch, and nothing is ever computed differently.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>

#include "gnn/core/enum_names.h"

namespace segrank {

/// Where a leaf op's time goes. The step's wall time minus the sum of these is "other" (framework
/// bookkeeping, OpenMP fork/join between ops, history-table work), computed by the caller.
enum class OpCategory {
    kGemm,           ///< matmul() and what it runs (oneDNN, bf16 operand packing)
    kSpmm,           ///< neighbour sums/means: spmm, mixed_spmm, dep_spmm
    kPointwise,      ///< LayerNorm, activations, dropout, residual adds, row sums
    kGatherScatter,  ///< embedding rows, readout pooling, mixed-row gathers, row scatters/copies
    kBarrier,     ///< the timing thread idle at the end of a parallel_for while the other threads
                  ///< finish their chunks (taken out of the op that ran the loop); oneDNN's own
                  ///< barriers stay in kGemm
    kAllocation,  ///< Tensor storage: block cache, mmap/munmap, zeroing (not first-touch faults)
    kOptimizer,   ///< zero_grads, gradient clipping, AdamW
};
inline constexpr int kNumOpCategories = 7;
/// Names: "gemm", "spmm", "pointwise", "gather_scatter", "barrier", "allocation", "optimizer".
std::span<const EnumName<OpCategory>> enum_names(OpCategory);
std::string_view to_string(OpCategory c);

/// Counters of one category since the last reset_op_times().
struct OpTime {
    int64_t ns = 0;     ///< exclusive wall time: nested scopes' time is theirs, not the outer one's
    int64_t calls = 0;  ///< scopes opened while timing was enabled
};
/// Indexed by static_cast<int>(OpCategory).
using OpTimes = std::array<OpTime, kNumOpCategories>;

/// Enables or disables op timing for the calling thread's scopes. Only scopes opened on the thread
/// that enabled timing count (ops that run on OpenMP workers are inside an op of that thread), so
/// the categories of one thread never add up to more than its wall time. Scopes already open keep
/// the state they were opened with.
void set_op_timing(bool enabled);
bool op_timing_enabled();
/// The counters since the last reset (relaxed atomics).
OpTimes op_times();
/// Sets every counter to 0.
void reset_op_times();

/// True when timing is enabled and the calling thread is the one that enabled it (parallel_for
/// then measures its join wait).
bool op_timing_here();
/// steady_clock now in nanoseconds (the clock of every counter).
int64_t op_clock_ns();
/// Moves the interval [begin_ns, end_ns) of the calling thread, spent waiting at a barrier inside
/// the innermost open scope (or outside any), from that scope's category to kBarrier. No effect
/// unless op_timing_here().
void add_barrier_wait(int64_t begin_ns, int64_t end_ns);

namespace detail {
extern std::atomic<bool> g_op_timing;
}

/// Times the enclosing block as `category` when timing is enabled. Scopes nest exclusively: an
/// inner scope pauses the outer one, so no nanosecond is counted twice (an allocation inside a
/// pointwise op is allocation time, the rest of the op pointwise time). Not copyable.
class OpScope {
public:
    explicit OpScope(OpCategory category) noexcept {
        if (detail::g_op_timing.load(std::memory_order_relaxed)) begin(category);
    }
    ~OpScope() {
        if (active_) end();
    }
    OpScope(const OpScope&) = delete;
    OpScope& operator=(const OpScope&) = delete;

private:
    void begin(OpCategory category) noexcept;
    void end() noexcept;

    bool active_ = false;
    OpCategory outer_ = OpCategory::kGemm;  ///< the enclosing scope's category, resumed at the end
};

}  // namespace segrank
