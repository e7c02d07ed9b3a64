// Partition cache key and binary file format (see partition_cache.h).
// File layout (little-endian, native): magic "SGPART01", u64 key length, key bytes, i64 num_nodes,
// u64 S, i64 offsets[S+1], i64 nodes[n].
#include "segments/partition_cache.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"
#include "util/atomic_file.h"

namespace segrank {

namespace {
constexpr char kMagic[8] = {'S', 'G', 'P', 'A', 'R', 'T', '0', '1'};
constexpr int kPartitionerVersion = 1;

// The bytes of a value or an array, for write_file_atomically.
template <typename T>
std::string_view bytes_of(const T& v) {
    return {reinterpret_cast<const char*>(&v), sizeof(T)};
}
template <typename T>
std::string_view bytes_of(const std::vector<T>& v) {
    return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}
template <typename T>
bool read_pod(std::ifstream& in, T& v) {
    return static_cast<bool>(in.read(reinterpret_cast<char*>(&v), sizeof(T)));
}
}  // namespace

uint64_t hash_int64s(std::span<const int64_t> values) {
    uint64_t h = mix64(values.size());
    for (int64_t v : values) h = mix64(h ^ static_cast<uint64_t>(v)) + 0x9e3779b97f4a7c15ULL;
    return h;
}

std::string partition_cache_key(const GraphStructure& graph, std::span<const int64_t> node_splits,
                                const PartitionParams& params) {
    std::ostringstream os;
    os << "segrank-partition-v" << kPartitionerVersion << '|' << graph.name
       << "|n=" << graph.num_nodes() << "|edges=" << std::hex << std::setw(16) << std::setfill('0')
       << hash_int64s(graph.edge_index) << std::dec << '|' << to_string(params.method)
       << "|max_nodes=" << params.max_nodes;
    if (params.method == PartitionMethod::kMetis) os << "|seed=" << params.metis_seed;
    if (params.method == PartitionMethod::kSplits)
        os << "|splits=" << std::hex << std::setw(16) << std::setfill('0')
           << hash_int64s(node_splits);
    return os.str();
}

void save_partition_file(const std::filesystem::path& path, const std::string& key,
                         const Partition& partition) {
    const auto key_size = static_cast<uint64_t>(key.size());
    const auto num_segments = static_cast<uint64_t>(partition.num_segments());
    write_file_atomically(path, {std::string_view(kMagic, sizeof(kMagic)), bytes_of(key_size), key,
                                 bytes_of(partition.num_nodes), bytes_of(num_segments),
                                 bytes_of(partition.offsets), bytes_of(partition.nodes)});
}

std::optional<Partition> load_partition_file(const std::filesystem::path& path,
                                             const std::string& key) {
    const std::string where = path.string();
    std::error_code ec;
    const std::filesystem::file_type type = std::filesystem::status(path, ec).type();
    if (type == std::filesystem::file_type::not_found) return std::nullopt;
    // Checked before opening: a directory opens and reads as empty, a FIFO blocks the open.
    SEGRANK_CHECK(type != std::filesystem::file_type::directory, where,
                  ": is a directory, not a partition cache file");
    SEGRANK_CHECK(type == std::filesystem::file_type::regular || ec, where,
                  ": is not a regular file, so not a partition cache file");
    std::ifstream in(path, std::ios::binary);
    if (!in.good()) return std::nullopt;
    char magic[sizeof(kMagic)];
    SEGRANK_CHECK(in.read(magic, sizeof(magic)) && std::memcmp(magic, kMagic, sizeof(kMagic)) == 0,
                  where, ": not a segrank partition cache file (bad magic)");
    uint64_t key_len = 0;
    SEGRANK_CHECK(read_pod(in, key_len) && key_len < (1u << 20), where,
                  ": truncated or corrupt key length");
    std::string stored(key_len, '\0');
    SEGRANK_CHECK(in.read(stored.data(), static_cast<std::streamsize>(key_len)), where,
                  ": truncated key");
    if (stored != key) return std::nullopt;
    Partition p;
    uint64_t num_segments = 0;
    SEGRANK_CHECK(read_pod(in, p.num_nodes) && read_pod(in, num_segments), where,
                  ": truncated header");
    SEGRANK_CHECK(
        p.num_nodes >= 1 && num_segments >= 1 && num_segments <= static_cast<uint64_t>(p.num_nodes),
        where, ": header: num_nodes = ", p.num_nodes, ", segments = ", num_segments,
        " (expected 1 <= segments <= num_nodes)");
    // Sizes checked against the file before allocating: a corrupt count must not ask for terabytes.
    const auto left = static_cast<uint64_t>(std::filesystem::file_size(path, ec) -
                                            static_cast<uint64_t>(in.tellg())) /
                      sizeof(int64_t);
    SEGRANK_CHECK(!ec && static_cast<uint64_t>(p.num_nodes) <= left &&
                      num_segments + 1 <= left - static_cast<uint64_t>(p.num_nodes),
                  where, ": truncated: the header gives ", num_segments, " segments and ",
                  p.num_nodes, " nodes, the file holds ", left, " more int64 values");
    p.offsets.resize(num_segments + 1);
    p.nodes.resize(static_cast<size_t>(p.num_nodes));
    SEGRANK_CHECK(in.read(reinterpret_cast<char*>(p.offsets.data()),
                          static_cast<std::streamsize>(p.offsets.size() * sizeof(int64_t))),
                  where, ": truncated offsets");
    SEGRANK_CHECK(in.read(reinterpret_cast<char*>(p.nodes.data()),
                          static_cast<std::streamsize>(p.nodes.size() * sizeof(int64_t))),
                  where, ": truncated nodes");
    p.validate(where);
    return p;
}

namespace {

// The cache is an optimization: a file it cannot use or write costs a recomputation and this
// warning, never the run (docs/gst.md#partition-cache).
void warn_cache(const std::string& what, const char* consequence) {
    std::fprintf(stderr, "warning: %s; %s\n", what.c_str(), consequence);
}

// The partition cached at `path` under `key` when it is there, readable and fits `graph`; a file
// that is corrupt, truncated or of another graph is warned about and ignored.
std::optional<Partition> load_cached(const std::filesystem::path& path, const std::string& key,
                                     const GraphStructure& graph, const PartitionParams& params) {
    try {
        std::optional<Partition> cached = load_partition_file(path, key);
        if (cached)
            SEGRANK_CHECK(
                cached->num_nodes == graph.num_nodes() &&
                    cached->max_segment_size() <= effective_max_nodes(graph.num_nodes(), params),
                path.string(), ": cached partition does not fit graph ", graph.name);
        return cached;
    } catch (const Error& e) {
        warn_cache(e.what(),
                   "the partition cache file is ignored: the partition is recomputed "
                   "and the file rewritten");
        return std::nullopt;
    }
}

// Writes `p` to `path` (temporary name, then rename), creating cache_dir; a failure (an unwritable
// or full file system) is warned about and leaves the partition uncached.
void store_cached(const std::filesystem::path& cache_dir, const std::filesystem::path& path,
                  const std::string& key, const Partition& p) {
    try {
        std::error_code ec;
        std::filesystem::create_directories(cache_dir, ec);
        SEGRANK_CHECK(!ec, cache_dir.string(),
                      ": cannot create the partition cache directory: ", ec.message());
        save_partition_file(path, key, p);
    } catch (const Error& e) {
        warn_cache(e.what(), "the partition is not cached");
    }
}

}  // namespace

Partition partition_graph_cached(const GraphStructure& graph, std::span<const int64_t> node_splits,
                                 const PartitionParams& params,
                                 const std::filesystem::path& cache_dir, bool* hit) {
    if (hit) *hit = false;
    if (cache_dir.empty()) return partition_graph(graph, node_splits, params);
    const std::string key = partition_cache_key(graph, node_splits, params);
    std::ostringstream name;
    name << "partition-" << std::hex << std::setw(16) << std::setfill('0') << stream_id(key)
         << ".bin";
    const std::filesystem::path path = cache_dir / name.str();
    std::error_code ec;
    const std::filesystem::file_type type = std::filesystem::status(path, ec).type();
    if (!ec && type != std::filesystem::file_type::not_found &&
        type != std::filesystem::file_type::regular) {  // not ours to remove: left as it is
        warn_cache(path.string() +
                       (type == std::filesystem::file_type::directory ? ": is a directory"
                                                                      : ": is not a regular file") +
                       ", not a partition cache file",
                   "the partition is computed and not cached (remove it to cache the partition)");
        return partition_graph(graph, node_splits, params);
    }
    if (auto cached = load_cached(path, key, graph, params)) {
        if (hit) *hit = true;
        return std::move(*cached);
    }
    Partition p = partition_graph(graph, node_splits, params);
    store_cached(cache_dir, path, key, p);
    return p;
}

}  // namespace segrank
