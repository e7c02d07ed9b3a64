// One memory budget for inference (`eval.memory_mb`, `predict --memory-mb`,
// ScoreOptions::memory_mb; docs/gst.md#memory-budget): the per-graph inference cache, the state of
// one chunk (deduplicated class tables and layer rows) and one chunk of config rows are all derived
// from it, so what score_graph holds beside the graph's own arrays stays within the budget.
#pragma once
#include <cstdint>
#include <string_view>

namespace segrank {

/// Default `eval.memory_mb` (MiB). Its split gives the sizes inference used before the budget
/// existed (a 256 MiB cache, 512 MiB of chunk state, 256 MiB of deduplicated config rows, 8 MiB of
/// dense config rows, a 1024-config probe chunk), so graphs scored in one chunk get the scores of
/// before bit for bit.
inline constexpr int64_t kDefaultInferenceMemoryMb = 1024;
/// Smallest accepted budget (MiB): below it a chunk of one config of an ordinary graph would not
/// fit the state share.
inline constexpr int64_t kMinInferenceMemoryMb = 16;
/// Largest accepted budget (MiB, 1 TiB).
inline constexpr int64_t kMaxInferenceMemoryMb = int64_t{1} << 20;

/// What inference may hold per graph (bytes), derived from one budget by inference_budget.
struct InferenceBudget {
    /// The inference cache (docs/gst.md#inference-cache): config-independent rows kept across
    /// chunks.
    int64_t cache_bytes = int64_t{256} << 20;
    /// The state of one chunk: deduplicated class tables and layer rows (docs/model.md#row-
    /// deduplication); the later chunks of a graph take as many configs as fit it.
    int64_t state_bytes = int64_t{512} << 20;
    /// Config rows of one deduplicated chunk ([K, nc, 18] int8 for layout).
    int64_t dedupe_rows_bytes = int64_t{256} << 20;
    /// Config rows of one dense chunk (every (node, config) row is computed: its state is
    /// O(K x nodes x H) floats, so its rows get 1/32 of the deduplicated share).
    int64_t dense_rows_bytes = int64_t{8} << 20;
    /// Config rows held at once while a chunk is scored: the chunk's rows are read in column
    /// blocks (the configurable nodes of consecutive segments, docs/gst.md#inference), each at
    /// most this many bytes for the chunk's configs, or one segment's columns when they alone take
    /// more (R/96, as the dense rows). The chunk sizes do not depend on it.
    int64_t config_block_bytes = int64_t{8} << 20;
    /// Configs of a graph's first deduplicated chunk, which measures the rows per config
    /// (state_bytes / 512 KiB).
    int64_t probe_configs = 1024;
};

/// The split of a budget of `memory_mb` MiB: the cache takes `cache_mb` MiB when >= 0 (an
/// explicit override, at most half the budget), else a quarter; of the rest R, the chunk state
/// takes 2R/3 and deduplicated config rows R/3 (dense rows and column blocks R/96), and the probe
/// chunk has state_bytes / 512 KiB configs (at least 1). Throws segrank::Error naming `memory_key`
/// when memory_mb is outside [kMinInferenceMemoryMb, kMaxInferenceMemoryMb], naming `cache_key`
/// when cache_mb < -1, and naming both when cache_mb > memory_mb / 2.
InferenceBudget inference_budget(int64_t memory_mb, int64_t cache_mb,
                                 std::string_view memory_key = "eval.memory_mb",
                                 std::string_view cache_key = "eval.cache_mb");

}  // namespace segrank
