// OpenMP-backed parallel_for.
#include "gnn/core/parallel.h"

#include <omp.h>

#include <algorithm>

#include "gnn/core/check.h"
#include "gnn/core/op_timer.h"

namespace segrank {

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
    if (end <= begin) return;
    grain = std::max<int64_t>(grain, 1);
    const int64_t n = end - begin;
    const int threads = omp_get_max_threads();
    if (n <= grain || threads <= 1 || omp_in_parallel()) {
        fn(begin, end);
        return;
    }
    const int64_t chunks =
        std::min<int64_t>((n + grain - 1) / grain, static_cast<int64_t>(threads) * 8);
    const int64_t chunk = (n + chunks - 1) / chunks;
    if (op_timing_here()) {
        // The same loop, with the calling thread's wait from its last chunk to the join measured
        // (gnn/core/op_timer.h, kBarrier). Chunks are the same; which thread runs one is dynamic
        // either way.
        int64_t done_ns = 0;
#pragma omp parallel
        {
#pragma omp for schedule(dynamic, 1) nowait
            for (int64_t c = 0; c < chunks; ++c) {
                const int64_t b = begin + c * chunk;
                const int64_t e = std::min(end, b + chunk);
                if (b < e) fn(b, e);
            }
            if (omp_get_thread_num() == 0) done_ns = op_clock_ns();
        }
        add_barrier_wait(done_ns, op_clock_ns());
        return;
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t b = begin + c * chunk;
        const int64_t e = std::min(end, b + chunk);
        if (b < e) fn(b, e);
    }
}

void set_num_threads(int n) {
    SEGRANK_CHECK(n <= kMaxThreads, "thread count ", n, " exceeds the maximum ", kMaxThreads);
    omp_set_num_threads(std::max(1, n));
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace segrank
