// Op timing counters and the exclusive nesting of OpScope (gnn/core/op_timer.h).
#include "gnn/core/op_timer.h"

#include <algorithm>
#include <chrono>

namespace segrank {

namespace detail {
std::atomic<bool> g_op_timing{false};
}

namespace {

constexpr EnumName<OpCategory> kCategoryNames[] = {
    {OpCategory::kGemm, "gemm"},           {OpCategory::kSpmm, "spmm"},
    {OpCategory::kPointwise, "pointwise"}, {OpCategory::kGatherScatter, "gather_scatter"},
    {OpCategory::kBarrier, "barrier"},     {OpCategory::kAllocation, "allocation"},
    {OpCategory::kOptimizer, "optimizer"}};
static_assert(std::size(kCategoryNames) == kNumOpCategories);

std::atomic<int64_t> g_ns[kNumOpCategories];
std::atomic<int64_t> g_calls[kNumOpCategories];

// The timing thread's open scopes: how many, the innermost one's category and when it last
// (re)started counting.
struct ThreadState {
    bool timing_thread = false;
    int depth = 0;
    OpCategory current = OpCategory::kGemm;
    int64_t since_ns = 0;
};
thread_local ThreadState t_state;

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void add(OpCategory c, int64_t ns) {
    g_ns[static_cast<int>(c)].fetch_add(ns, std::memory_order_relaxed);
}

}  // namespace

std::span<const EnumName<OpCategory>> enum_names(OpCategory) { return kCategoryNames; }
std::string_view to_string(OpCategory c) { return enum_name(c); }

void set_op_timing(bool enabled) {
    t_state.timing_thread = enabled;
    detail::g_op_timing.store(enabled, std::memory_order_relaxed);
}

bool op_timing_enabled() { return detail::g_op_timing.load(std::memory_order_relaxed); }

bool op_timing_here() { return op_timing_enabled() && t_state.timing_thread; }

int64_t op_clock_ns() { return now_ns(); }

void add_barrier_wait(int64_t begin_ns, int64_t end_ns) {
    if (!op_timing_here() || end_ns <= begin_ns) return;
    const ThreadState& s = t_state;
    // The wait lies inside the innermost scope's running interval (it started before the loop):
    // that scope will count it when it pauses or ends, so it is taken back here.
    const int64_t wait = s.depth > 0 ? end_ns - std::max(begin_ns, s.since_ns) : end_ns - begin_ns;
    if (wait <= 0) return;
    if (s.depth > 0) add(s.current, -wait);
    add(OpCategory::kBarrier, wait);
}

OpTimes op_times() {
    OpTimes t;
    for (int i = 0; i < kNumOpCategories; ++i) {
        t[static_cast<size_t>(i)].ns = g_ns[i].load(std::memory_order_relaxed);
        t[static_cast<size_t>(i)].calls = g_calls[i].load(std::memory_order_relaxed);
    }
    return t;
}

void reset_op_times() {
    for (int i = 0; i < kNumOpCategories; ++i) {
        g_ns[i].store(0, std::memory_order_relaxed);
        g_calls[i].store(0, std::memory_order_relaxed);
    }
}

void OpScope::begin(OpCategory category) noexcept {
    ThreadState& s = t_state;
    if (!s.timing_thread) return;
    const int64_t now = now_ns();
    if (s.depth > 0) add(s.current, now - s.since_ns);  // pause the enclosing scope
    outer_ = s.current;
    s.current = category;
    s.since_ns = now;
    ++s.depth;
    g_calls[static_cast<int>(category)].fetch_add(1, std::memory_order_relaxed);
    active_ = true;
}

void OpScope::end() noexcept {
    ThreadState& s = t_state;
    const int64_t now = now_ns();
    add(s.current, now - s.since_ns);
    --s.depth;
    s.current = outer_;  // resume the enclosing scope from now
    s.since_ns = now;
}

}  // namespace segrank
