// Partition caching (docs/gst.md#partition-cache). A Partition is
// already plain arrays (offsets [S+1], nodes [n]); this file gives the cache key and a small binary
// file format for the run directory. Callers storing into the HDF5 store write `offsets` and
// `nodes` as int64 datasets with the key as an attribute, and compare keys on read.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "data/graph.h"
#include "segments/partitioner.h"

namespace segrank {

/// 64-bit hash of an int64 array (edge_index [m, 2] or node_splits [k]); order-sensitive.
uint64_t hash_int64s(std::span<const int64_t> values);

/// Cache key of a partition: graph name, node count, edge hash, partitioner version and every
/// parameter that changes the pooled node lists (method, max_nodes; the seed for metis; the
/// node_splits hash for splits). Halo context is derived from the partition, so it is not part
/// of the key. Example:
/// "segrank-partition-v1|fusion.232|n=512|edges=1f3a...|contiguous|max_nodes=1000".
std::string partition_cache_key(const GraphStructure& graph, std::span<const int64_t> node_splits,
                                const PartitionParams& params);

/// Writes `key` and the partition to `path` (temporary name, then rename).
/// Throws segrank::Error naming the path on I/O failure.
void save_partition_file(const std::filesystem::path& path, const std::string& key,
                         const Partition& partition);

/// Reads a partition file. Returns nullopt when the file does not exist or holds another key;
/// throws segrank::Error naming the path when it is a directory or another non-regular file (a
/// FIFO is never opened), or when the file is truncated, not a partition file, or holds an invalid
/// partition.
std::optional<Partition> load_partition_file(const std::filesystem::path& path,
                                             const std::string& key);

/// Loads the partition of `graph` from `cache_dir` when cached under the same key, else computes it
/// with partition_graph and saves it there (file name derived from the key hash). An empty
/// cache_dir disables caching. `hit` (optional) is set to whether the partition came from the
/// cache. The cache never fails the call (docs/gst.md#partition-cache): a cache file that is
/// truncated, corrupt or does not fit the graph is warned about on stderr (naming the file and what
/// was wrong) and treated as a miss, then rewritten atomically; a directory or another non-regular
/// file at its place is warned about, left alone and not cached; a failed write is warned about.
/// Throws only what partition_graph throws.
Partition partition_graph_cached(const GraphStructure& graph, std::span<const int64_t> node_splits,
                                 const PartitionParams& params,
                                 const std::filesystem::path& cache_dir, bool* hit = nullptr);

}  // namespace segrank
