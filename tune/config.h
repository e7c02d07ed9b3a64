// The configurations `segrank tune` searches over and measures (docs/tune.md#search-space): one
// config of the tuned graph as the rows it has in the collection's files, and the graph itself.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/graph.h"
#include "gnn/core/task.h"

namespace segrank::tune {

/// One configuration of the tuned graph, stored exactly as its row(s) in the npz files:
/// - layout: `layout` = [nc, 18] node_config_feat values, row-major (configurable node k's slots
/// are
///   layout[k*18 .. k*18+17]: output, input, kernel minor_to_major dims of up to 6 entries each, -1
///   padded; all -1 = the compiler's default; docs/files.md#layout-config-features); `tile` empty.
/// - tile: `tile` = the [24] config_feat row (S0(6) of kernel, output and input bounds in tile
///   units, docs/files.md#tile-config-features); `layout` empty.
/// Two configs are the same config when their rows are equal (tile floats compared by value, with
/// -0 equal to 0).
struct Config {
    std::vector<int8_t> layout;  ///< [nc * 18] values -1..5 (layout), else empty
    std::vector<float> tile;     ///< [24] (tile), else empty

    Task task() const { return tile.empty() ? Task::kLayout : Task::kTile; }
    bool operator==(const Config& o) const;
};

/// The dedupe key of a config: a byte string equal for equal rows (tile: -0 stored as 0). For
/// unordered containers (std::unordered_set<std::string>).
std::string config_key(const Config& c);

/// A short readable form for messages and logs: layout "node 12: out {1,0} in {} kernel {0,1}; ..."
/// (only nodes not at the default; "default" when none), tile "kernel [1,2] output [4,1] input []".
std::string describe(const Config& c);

/// The graph being tuned: its record (structure, recorded configs and runtimes) and where it came
/// from. Exactly one of `tile` / `layout` is used, as `task` says.
struct TuneGraph {
    Task task = Task::kTile;
    std::filesystem::path path;  ///< the npz it was read from (in memory: the record's source)
    std::string name;            ///< the graph's name (the npz stem)
    TileGraph tile;
    LayoutGraph layout;

    int64_t num_recorded() const;  ///< recorded configs (rows of the file)
    /// Recorded config j (0 <= j < num_recorded()) as a Config.
    Config recorded_config(int64_t j) const;
    /// Recorded runtime of config j in ns (tile: config_runtime, not divided by the normalizer).
    int64_t recorded_runtime_ns(int64_t j) const;
};

/// Reads the npz at `path` as a graph of `task` (load_tile_npz / load_layout_npz with `labels`).
/// Throws segrank::Error as those do (naming the file, key and index).
TuneGraph load_tune_graph(const std::filesystem::path& path, Task task, LabelPolicy labels);

/// Wraps in-memory records (tests, synth output): `path` = the record's source, `name` its name.
TuneGraph tune_graph(TileGraph g);
TuneGraph tune_graph(LayoutGraph g);

}  // namespace segrank::tune
