// Streams synthetic collections to disk (docs/hwmodel.md#synthetic-collections): TpuGraphs npz
// folders or HDF5 graph stores, one graph at a time (generate -> featurize -> label -> write ->
// free), staged in a temporary folder and moved into place only when everything succeeded.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data/collection.h"
#include "data/npz.h"
#include "hwmodel/synth/synth.h"

namespace segrank::synth {

/// What `segrank synth` writes.
struct WriteOptions {
    std::filesystem::path out;  ///< output root
    std::vector<Task> tasks = {Task::kTile, Task::kLayout};
    int64_t graphs = 24;                               ///< graphs per collection (all splits)
    std::array<double, 3> splits = {0.7, 0.15, 0.15};  ///< train, valid, test fractions (sum 1)
    StoreFormat format = StoreFormat::kNpz;
    bool force = false;             ///< replace existing target folders / stores
    bool hide_test_labels = false;  ///< test split: runtimes 0 (tile normalizers 1), like Kaggle
    /// npz members: deflate level 1 by default (libzip's default level 9 made zlib 80 % of the
    /// run time for ~2.5x smaller files); kStored is fastest, kDeflate smallest.
    NpzCompression npz_compression = NpzCompression::kDeflateFast;
    SynthOptions synth;
};

/// Split of each graph index 0..graphs-1 of `task`'s collection: round(graphs x valid) valid and
/// round(graphs x test) test graphs (each at least 1 when its fraction > 0 and graphs >= 3), the
/// rest train, assigned by a permutation seeded by (seed, task). Throws on fractions that are
/// negative or do not sum to 1 (within 1e-6).
std::vector<Split> assign_splits(int64_t graphs, const std::array<double, 3>& fractions,
                                 uint64_t seed, Task task);

/// One written collection split.
struct WrittenSplit {
    CollectionId id;
    std::filesystem::path path;  ///< npz folder or .h5 store (final location)
    int64_t graphs = 0;
    int64_t nodes = 0;  ///< total over its graphs
    int64_t configs = 0;
};

/// Target of a collection split under `out`: npz/tile/xla/<split>/,
/// npz/layout/xla/random/<split>/, or h5/<collection file stem>.h5 (e.g. h5/tile_xla_train.h5).
std::filesystem::path target_path(const std::filesystem::path& out, const CollectionId& id,
                                  StoreFormat format);

/// Removes the `<out>/.synth-staging-<pid>/` folders of processes that no longer exist (a synth
/// killed by a signal cannot remove its own); those of running processes are kept. Errors are
/// ignored (best effort).
void remove_stale_staging(const std::filesystem::path& out);

/// Generates and writes every graph. Nothing is written in place until all graphs succeeded:
/// output goes to `<out>/.synth-staging-<pid>/` and is renamed onto the targets at the end; on
/// error the staging folder is removed, and the staging folders of earlier runs that were killed
/// are removed first (remove_stale_staging). Throws segrank::Error when a target exists and
/// !opt.force, or on invalid options / I/O failures. Peak memory: one graph (module, features,
/// config rows; see synth_tile / synth_layout) plus the writer's copy of it, because neither
/// save_*_npz nor GraphStoreWriter::add can append config rows in chunks; a staged layout graph
/// (layout_stages > 1) written to an HDF5 store holds one stage plus its config rows instead
/// (synth_layout_parts). `progress` (optional) receives one line per written graph.
std::vector<WrittenSplit> write_synthetic(
    const WriteOptions& opt, const std::function<void(const std::string&)>& progress = {});

}  // namespace segrank::synth
