// The record `segrank synth` keeps of the files it wrote into --out (DIR/.synth-manifest), so that
// --force replaces an earlier synth output and removes only synth's own files, never a user's
// (docs/hwmodel.md#synthetic-collections).
#pragma once
#include <filesystem>
#include <vector>

namespace segrank::cli {

/// File name of the manifest under --out.
inline constexpr const char* kSynthManifest = ".synth-manifest";

/// Before any work: throws segrank::Error when `out` (--out) is too long a path (refuse_long_path:
/// a component over 255 bytes), a symbolic link loop, a dangling symbolic link ("is a
/// dangling symbolic link to 'X' (which does not exist)"), or an existing non-empty folder that is
/// no earlier synth output: one without .synth-manifest whose entries are not only synth's own
/// (npz/, h5/, .synth-staging-*, as an output of a synth without manifests holds), naming the
/// folder, the first other entry and how many it holds (a run directory, a user's folder).
void check_synth_out(const std::filesystem::path& out);

/// The files an earlier synth recorded in `out`/.synth-manifest, as paths relative to `out`,
/// sorted: npz graph files ("npz/tile/xla/train/synth_tile_000003.npz") and HDF5 stores
/// ("h5/tile_xla_train.h5"). A line naming a whole npz split folder ("npz/tile/xla/train", the
/// form of earlier versions) stands for the synth_<task>_<index>.npz files now in that folder.
/// Empty when there is no manifest. Throws segrank::Error naming the manifest, the line and the
/// expected entries when it cannot be read or a line is not a file synth writes (so a manifest can
/// never make --force remove a user's other files).
std::vector<std::filesystem::path> read_synth_manifest(const std::filesystem::path& out);

/// The files now in the collection split `target` (relative to `out`: an npz split folder or an
/// .h5 store), relative to `out` and sorted; empty when it does not exist.
std::vector<std::filesystem::path> split_files(const std::filesystem::path& out,
                                               const std::filesystem::path& target);

/// Before a --force run that replaces the existing split `targets` (relative to `out`): throws
/// segrank::Error naming each target that holds files `recorded` (read_synth_manifest) does not
/// list, and those files (at most 8 named), since --force replaces only synth's own files.
void check_only_synth_files(const std::filesystem::path& out,
                            const std::vector<std::filesystem::path>& targets,
                            const std::vector<std::filesystem::path>& recorded);

/// After a successful synth into `out` that wrote the files `written` (relative to `out`): with
/// `force`, removes the `earlier` files (read_synth_manifest) this run did not write, and the
/// folders below `out` that leaves empty (a folder still holding other files stays); then writes
/// `out`/.synth-manifest (atomically) listing `written` plus, without `force`, the earlier files
/// that still exist. Returns the removed files. Throws segrank::Error naming the path when a
/// removal or the write fails.
std::vector<std::filesystem::path> update_synth_manifest(
    const std::filesystem::path& out, const std::vector<std::filesystem::path>& earlier,
    const std::vector<std::filesystem::path>& written, bool force);

}  // namespace segrank::cli
