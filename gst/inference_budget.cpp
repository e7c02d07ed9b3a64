// The split of the inference memory budget (docs/gst.md#memory-budget).
#include "gst/inference_budget.h"

#include <algorithm>

#include "gnn/core/check.h"

namespace segrank {

namespace {
constexpr int64_t kMiB = int64_t{1} << 20;
// Assumed chunk state per config of the probe chunk, before anything is measured.
constexpr int64_t kProbeBytesPerConfig = int64_t{512} << 10;
}  // namespace

InferenceBudget inference_budget(int64_t memory_mb, int64_t cache_mb, std::string_view memory_key,
                                 std::string_view cache_key) {
    SEGRANK_CHECK(memory_mb >= kMinInferenceMemoryMb && memory_mb <= kMaxInferenceMemoryMb,
                  memory_key, ": expected ", kMinInferenceMemoryMb, " to ", kMaxInferenceMemoryMb,
                  " (MiB that inference may hold per graph beside the graph's own arrays), got ",
                  memory_mb);
    SEGRANK_CHECK(cache_mb >= -1, cache_key,
                  ": expected -1 (a quarter of the memory budget) or 0 and more MiB, got ",
                  cache_mb);
    SEGRANK_CHECK(cache_mb <= memory_mb / 2, cache_key, " = ", cache_mb, " does not fit ",
                  memory_key, " = ", memory_mb,
                  ": the inference cache may take at most half of the memory budget (",
                  memory_mb / 2, " MiB), the rest holds the chunks; lower ", cache_key,
                  " or raise ", memory_key);
    InferenceBudget b;
    const int64_t total = memory_mb * kMiB;
    b.cache_bytes = cache_mb >= 0 ? cache_mb * kMiB : total / 4;
    const int64_t rest = total - b.cache_bytes;
    b.state_bytes = rest / 3 * 2;
    b.dedupe_rows_bytes = rest / 3;
    b.dense_rows_bytes = b.dedupe_rows_bytes / 32;
    b.config_block_bytes = b.dense_rows_bytes;
    b.probe_configs = std::max<int64_t>(1, b.state_bytes / kProbeBytesPerConfig);
    return b;
}

}  // namespace segrank
