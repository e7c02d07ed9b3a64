// The record `segrank synth` keeps of what it wrote into --out (DIR/.synth-manifest), so that
// --force replaces an earlier synth output as a whole and nothing else
// (docs/hwmodel.md#synthetic-collections).
#pragma once
#include <filesystem>
#include <vector>

namespace segrank::cli {

/// File name of the manifest under --out.
inline constexpr const char* kSynthManifest = ".synth-manifest";

/// The collection splits an earlier synth recorded in `out`/.synth-manifest, as paths relative to
/// `out` ("npz/tile/xla/train", "npz/layout/xla/random/valid", "h5/tile_xla_train.h5"); empty when
/// there is no manifest. Throws segrank::Error naming the manifest, the line and the expected
/// entries when it cannot be read or a line is not the target of a synth collection split (so a
/// manifest can never make --force remove a user's other files).
std::vector<std::filesystem::path> read_synth_manifest(const std::filesystem::path& out);

/// After a successful synth into `out` that wrote the splits `written` (relative to `out`): with
/// `force`, removes the `earlier` splits (read_synth_manifest) that this run did not write, and
/// the folders that leaves empty below `out`; then writes `out`/.synth-manifest (atomically)
/// listing `written` plus, without `force`, the earlier splits that still exist. Returns the
/// removed splits. Throws segrank::Error naming the path when a removal or the write fails.
std::vector<std::filesystem::path> update_synth_manifest(
    const std::filesystem::path& out, const std::vector<std::filesystem::path>& earlier,
    const std::vector<std::filesystem::path>& written, bool force);

}  // namespace segrank::cli
