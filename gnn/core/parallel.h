// parallel_for over OpenMP (STYLE.md R7): the only place that opens parallel regions for our kernels.
// Bodies must not throw (validate before the loop). No nesting: inside a region it runs serially.
#pragma once
#include <cstdint>
#include <functional>

namespace segrank {

/// Runs fn(chunk_begin, chunk_end) over [begin, end) split into chunks of about `grain` items,
/// on the OpenMP threads (serially when the range is small or when already inside a region).
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

/// Sets the OpenMP thread count used by parallel_for (and by oneDNN, which shares the runtime).
void set_num_threads(int n);
/// Current OpenMP thread count.
int num_threads();

}  // namespace segrank
