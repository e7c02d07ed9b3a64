// parallel_for over OpenMP (docs/style.md#parallel-loops): the only place that opens parallel
// regions for our kernels. Bodies must not throw (validate before the loop). No nesting: inside a
// region it runs serially.
#pragma once
#include <cstdint>
#include <functional>

/// Function multiversioning for hot element-wise loops: the libraries are built for baseline
/// x86-64, so without this the compiler vectorizes with SSE2 only. GCC emits AVX-512, AVX2 and
/// default clones and an ifunc picks one at load time (off under AddressSanitizer and on other
/// targets).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define SEGRANK_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SEGRANK_SIMD_CLONES
#endif

namespace segrank {

/// Runs fn(chunk_begin, chunk_end) over [begin, end) split into chunks of about `grain` items,
/// on the OpenMP threads (serially when the range is small or when already inside a region).
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

/// Upper bound of every thread count the user sets (`--threads`, `train.threads`,
/// `dist.threads_per_rank`): far above the cores of any machine this runs on, far below the counts
/// where OpenMP's thread creation fails (about 50000) or thousands of threads on a few cores turn a
/// 0.05 s job into 30 s.
inline constexpr int kMaxThreads = 1024;

/// Sets the OpenMP thread count used by parallel_for (and by oneDNN, which shares the runtime).
/// n < 1 means 1; throws segrank::Error when n > kMaxThreads (callers check their option first and
/// name it).
void set_num_threads(int n);
/// Current OpenMP thread count.
int num_threads();

}  // namespace segrank
