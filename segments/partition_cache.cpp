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
    std::ifstream in(path, std::ios::binary);
    if (!in.good()) return std::nullopt;
    const std::string where = path.string();
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
    if (auto cached = load_partition_file(path, key)) {
        SEGRANK_CHECK(
            cached->num_nodes == graph.num_nodes() &&
                cached->max_segment_size() <= effective_max_nodes(graph.num_nodes(), params),
            path.string(), ": cached partition does not fit graph ", graph.name);
        if (hit) *hit = true;
        return std::move(*cached);
    }
    Partition p = partition_graph(graph, node_splits, params);
    std::error_code ec;
    std::filesystem::create_directories(cache_dir, ec);
    SEGRANK_CHECK(!ec, cache_dir.string(),
                  ": cannot create the partition cache directory: ", ec.message());
    save_partition_file(path, key, p);
    return p;
}

}  // namespace segrank
