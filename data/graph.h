// Typed in-memory records of the two TpuGraphs tasks (docs/files.md#keys-and-dtypes) and their
// npz load/save. Every invariant is validated on load with an error naming file, key and index.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "data/npz.h"
#include "gnn/core/format.h"
#include "gnn/core/task.h"
#include "gnn/core/tensor.h"

namespace segrank {

/// What every graph has: nodes, opcodes and "user -> producer" edges.
struct GraphStructure {
    std::string name;                  ///< file stem, e.g. "fusion.232" or an npz hash
    std::filesystem::path source;      ///< the file it was read from (for messages)
    Tensor node_feat;                  ///< [n, 140] float32 raw (unnormalized) features
    std::vector<int32_t> node_opcode;  ///< [n] ids in 0..120
    std::vector<int64_t> edge_index;   ///< [m, 2] row-major: row (u, v) means u consumes v

    int64_t num_nodes() const { return static_cast<int64_t>(node_opcode.size()); }
    int64_t num_edges() const { return static_cast<int64_t>(edge_index.size() / 2); }
};

/// tile:xla graph: c configurations of the whole kernel. Target = runtime / normalizer.
struct TileGraph : GraphStructure {
    Tensor config_feat;                               ///< [c, 24]
    std::vector<int64_t> config_runtime;              ///< [c] ns (all 0 in test splits)
    std::vector<int64_t> config_runtime_normalizers;  ///< [c] ns (all 1 in test splits)

    int64_t num_configs() const { return static_cast<int64_t>(config_runtime.size()); }
};

/// layout:{xla,nlp}:{default,random} graph: c configurations, each giving 18 integers in -1..5 to
/// each of the nc configurable nodes. Target = config_runtime (ns).
struct LayoutGraph : GraphStructure {
    std::vector<int64_t> node_config_ids;  ///< [nc] strictly increasing node indices < n
    std::vector<int8_t> node_config_feat;  ///< [c, nc, 18] values -1..5 (int8: 4x less than f32)
    std::vector<int64_t> config_runtime;   ///< [c] ns (0 in test splits)
    std::vector<int64_t> node_splits;      ///< [k] boundaries, 0 first and n last (flattened (1,k))
    /// Optional npz member `node_loop_trips` [n, 2] float32 (docs/files.md#loop-trip-counts), empty
    /// when the file has none (the published npz files): per node, column 0 = log2 of the product
    /// of the known trip counts of the while loops enclosing it (0 outside loops), column 1 = 1
    /// when some enclosing loop's trip count is unknown, else 0. Written by ingest and synth.
    std::vector<float> node_loop_trips;

    int64_t num_configs() const { return static_cast<int64_t>(config_runtime.size()); }
    int64_t num_config_nodes() const { return static_cast<int64_t>(node_config_ids.size()); }
};

/// Whether runtimes must be positive (train/valid) or may be the test split's zeros.
enum class LabelPolicy { kRequirePositive, kAllowTestZeros };

/// Reads a tile npz. Throws segrank::Error naming the file, key and offending index/value when a
/// key is missing, a dtype/shape is wrong, or an invariant fails (docs/files.md#keys-and-dtypes),
/// when an array declares more bytes than max_input_array_bytes() (data/input_memory.h), and
/// when an allocation fails ("<path>: out of memory while reading this graph file ...").
TileGraph load_tile_npz(const std::filesystem::path& path, LabelPolicy labels);
/// Reads a layout npz (same error contract as load_tile_npz).
LayoutGraph load_layout_npz(const std::filesystem::path& path, LabelPolicy labels);

/// Writes a tile npz with the dtypes of the published files (f4, u1, i8); numpy-loadable.
/// Written to a temporary name and renamed. Throws segrank::Error on I/O failure.
void save_tile_npz(const TileGraph& g, const std::filesystem::path& path);
/// Writes a layout npz (node_config_feat as f4 (c,nc,18), node_splits as i8 (1,k)).
void save_layout_npz(const LayoutGraph& g, const std::filesystem::path& path);
/// Same as above with an explicit zip method (the two-argument forms deflate, like the public
/// files).
void save_tile_npz(const TileGraph& g, const std::filesystem::path& path,
                   NpzCompression compression);
void save_layout_npz(const LayoutGraph& g, const std::filesystem::path& path,
                     NpzCompression compression);

/// Validates every invariant of a record (shapes agree, ids in range, strictly increasing
/// node_config_ids, finite features, config values in -1..5, runtimes > 0 unless allowed).
/// `where` prefixes messages (usually the file path).
void validate(const TileGraph& g, LabelPolicy labels, const std::string& where);
void validate(const LayoutGraph& g, LabelPolicy labels, const std::string& where);
/// Validates one part of a graph written in parts (GraphStoreWriter::append_layout_part): `part`
/// holds nodes first_node .. first_node + p - 1 of the whole graph (node_feat [p, 140] finite,
/// node_opcode [p] in range) and edges whose ends are whole-graph ids < first_node + p (a part may
/// point into earlier parts). Messages give whole-graph node indices.
void validate_part(const GraphStructure& part, int64_t first_node, const std::string& where);
/// Checks an optional node_loop_trips member of a graph of `n` nodes: empty, or [n, 2] with column
/// 0 finite in [0, 64] and column 1 in {0, 1}. Throws segrank::Error naming `where`, the key and
/// the node.
void validate_loop_trips(std::span<const float> trips, int64_t n, const std::string& where);
/// The layout checks of validate(LayoutGraph) for a graph of `n` nodes: node_config_ids,
/// node_config_feat, config_runtime and node_splits; g's structure fields are not read.
void validate_layout_configs(const LayoutGraph& g, int64_t n, LabelPolicy labels,
                             const std::string& where);
/// Checks runtimes read without the rest of the graph (label-only and config-row reads):
/// runtime[k] > 0 ns under kRequirePositive (train / valid splits), >= 0 otherwise, and
/// normalizers[k] > 0 when given (tile; empty = none, else as long as runtime). `rows` maps entry
/// k to the config index named in messages (empty = k itself). Throws segrank::Error naming
/// `where` (the file, or store.h5:/graphs/<name>), key 'config_runtime', the config index and
/// the value.
void validate_runtime_rows(std::span<const int64_t> runtime, std::span<const int64_t> normalizers,
                           LabelPolicy labels, const std::string& where,
                           std::span<const int64_t> rows = {});

}  // namespace segrank
