// Op timing (gnn/core/op_timer.h): counts only while enabled, nested scopes are exclusive (no
// nanosecond counted twice), parallel_for's join wait moves to "barrier". No timed assertions:
// only counts, and sums against wall intervals measured around them.
#include "gnn/core/op_timer.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "gnn/core/parallel.h"
#include "gnn/core/tensor.h"

using namespace segrank;

namespace {

const OpTime& of(const OpTimes& t, OpCategory c) { return t[static_cast<size_t>(c)]; }

int64_t total_ns(const OpTimes& t) {
    int64_t s = 0;
    for (const OpTime& x : t) s += x.ns;
    return s;
}

// Some work the optimizer cannot drop.
void spin(int n) {
    static std::atomic<uint64_t> sink{0};
    uint64_t acc = 0;  // unsigned: wraps, where a signed sum would overflow (undefined)
    for (int i = 0; i < n; ++i) acc += static_cast<uint64_t>(i) ^ (acc >> 3);
    sink.fetch_add(acc, std::memory_order_relaxed);
}

// Enables timing for the test's lifetime and resets the counters; disables it at the end.
struct Timing {
    Timing() {
        reset_op_times();
        set_op_timing(true);
    }
    ~Timing() {
        set_op_timing(false);
        reset_op_times();
    }
};

}  // namespace

TEST_CASE("op timing is off by default and scopes count nothing while it is off") {
    CHECK_FALSE(op_timing_enabled());
    reset_op_times();
    {
        const OpScope s(OpCategory::kGemm);
        spin(10000);
        Tensor t(64, 64);  // an allocation scope inside
    }
    for (const OpTime& x : op_times()) {
        CHECK(x.ns == 0);
        CHECK(x.calls == 0);
    }
}

TEST_CASE("op timing counts the calls of each category while enabled, and stops when disabled") {
    const Timing on;
    {
        const OpScope a(OpCategory::kSpmm);
        spin(1000);
    }
    { const OpScope b(OpCategory::kSpmm); }
    { const OpScope c(OpCategory::kPointwise); }
    OpTimes t = op_times();
    CHECK(of(t, OpCategory::kSpmm).calls == 2);
    CHECK(of(t, OpCategory::kPointwise).calls == 1);
    CHECK(of(t, OpCategory::kGemm).calls == 0);
    CHECK(of(t, OpCategory::kGemm).ns == 0);
    CHECK(of(t, OpCategory::kSpmm).ns >= 0);
    set_op_timing(false);
    { const OpScope d(OpCategory::kSpmm); }
    t = op_times();
    CHECK(of(t, OpCategory::kSpmm).calls == 2);
    reset_op_times();
    CHECK(total_ns(op_times()) == 0);
    CHECK(of(op_times(), OpCategory::kSpmm).calls == 0);
}

TEST_CASE("nested op scopes are exclusive: the categories add up to at most the wall time") {
    const Timing on;
    const int64_t t0 = op_clock_ns();
    {
        const OpScope outer(OpCategory::kPointwise);
        spin(20000);
        for (int i = 0; i < 50; ++i) {
            const OpScope inner(OpCategory::kAllocation);
            spin(2000);
            const OpScope innermost(OpCategory::kGemm);
            spin(2000);
        }
        spin(20000);
    }
    const int64_t wall = op_clock_ns() - t0;
    const OpTimes t = op_times();
    CHECK(of(t, OpCategory::kPointwise).calls == 1);
    CHECK(of(t, OpCategory::kAllocation).calls == 50);
    CHECK(of(t, OpCategory::kGemm).calls == 50);
    // Counted twice, the outer scope alone would reach the whole interval and the sum exceed it.
    CHECK(total_ns(t) <= wall);
    CHECK(of(t, OpCategory::kPointwise).ns + of(t, OpCategory::kAllocation).ns <= wall);
    for (const OpTime& x : t) CHECK(x.ns >= 0);
}

TEST_CASE("a Tensor allocated inside an op scope is allocation time, not the op's") {
    const Timing on;
    {
        const OpScope op(OpCategory::kPointwise);
        const Tensor a(1000, 100);
        const Tensor b = Tensor::uninit(10, 10);
    }
    const OpTimes t = op_times();
    // Two constructions and two frees.
    CHECK(of(t, OpCategory::kAllocation).calls == 4);
    CHECK(of(t, OpCategory::kPointwise).calls == 1);
    CHECK(total_ns(t) > 0);
}

TEST_CASE("scopes on a thread other than the one that enabled timing count nothing") {
    const Timing on;
    std::thread other([] {
        const OpScope s(OpCategory::kGemm);
        spin(1000);
    });
    other.join();
    CHECK(of(op_times(), OpCategory::kGemm).calls == 0);
    CHECK(total_ns(op_times()) == 0);
}

TEST_CASE(
    "parallel_for under op timing computes the same values and keeps the sum within the wall") {
    set_num_threads(2);
    std::vector<int64_t> plain(10000), timed(10000);
    auto body = [](std::vector<int64_t>& out) {
        return [&out](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) out[static_cast<size_t>(i)] = i * i + (i ^ 7);
        };
    };
    parallel_for(0, 10000, 16, body(plain));
    const Timing on;
    const int64_t t0 = op_clock_ns();
    {
        const OpScope op(OpCategory::kSpmm);
        for (int r = 0; r < 20; ++r) parallel_for(0, 10000, 16, body(timed));
    }
    const int64_t wall = op_clock_ns() - t0;
    CHECK(timed == plain);
    const OpTimes t = op_times();
    CHECK(total_ns(t) <= wall);
    CHECK(of(t, OpCategory::kSpmm).ns >= 0);
    CHECK(of(t, OpCategory::kBarrier).ns >= 0);
    CHECK(of(t, OpCategory::kBarrier).calls == 0);  // moved time, not a scope
}

TEST_CASE("op category names are the JSON keys of bench's time split") {
    CHECK(to_string(OpCategory::kGemm) == "gemm");
    CHECK(to_string(OpCategory::kGatherScatter) == "gather_scatter");
    CHECK(to_string(OpCategory::kBarrier) == "barrier");
    CHECK(to_string(OpCategory::kOptimizer) == "optimizer");
    CHECK(enum_names(OpCategory{}).size() == static_cast<size_t>(kNumOpCategories));
}
