// The conversion behind `segrank ingest` and `data.ingest` of `segrank train`: one raw XLA tuning
// protobuf -> TpuGraphs npz files under a collection root (docs/files.md#protobuf-ingest).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace segrank {
class RemoveOnTermination;
}

namespace segrank::cli {

/// What one ingest is asked to do.
struct IngestRequest {
    std::filesystem::path input;     ///< the tuning .pb (TuningData or ModuleTuningData)
    std::filesystem::path npz_root;  ///< the folder holding tile/ and layout/ (TpuGraphs' npz/)
    std::string split = "train";     ///< train | valid | test
    std::string search = "random";   ///< layout search space: random | default
    bool force = false;              ///< overwrite existing npz files
    /// When not null, every npz file, temporary and folder the ingest makes is add()ed to it before
    /// it is made, so SIGINT / SIGTERM / SIGHUP remove them (segrank ingest; not owned).
    RemoveOnTermination* on_signal = nullptr;
};

/// What an ingest added to the file system: npz files that did not exist before and the folders it
/// created (outermost first), so a caller can take them back.
struct IngestWritten {
    std::vector<std::filesystem::path> files;
    std::vector<std::filesystem::path> folders;
};

/// Featurizes and validates every module of `req.input`, checks every target, then writes one npz
/// per module under req.npz_root/tile/xla/<split>/ or req.npz_root/layout/xla/<search>/<split>/
/// and prints a summary on stdout. Appends what it added to `*written` (when not null). First
/// removes, in the target folders, the temporary npz files of killed ingests
/// (remove_stale_temp_files). Throws segrank::Error naming the input or target; a failure while
/// writing removes what it wrote.
void ingest_tuning_file(const IngestRequest& req, IngestWritten* written);

/// The npz root that collection discovery (data/collection.h discover_collections) reads for
/// data.root = `root`: root/npz when that folder exists; `root` itself when it is named npz or
/// holds tile/ or layout/; else root/npz (a new data folder).
std::filesystem::path npz_root_of(const std::filesystem::path& root);

/// Removes the files of `written`, then those of its folders that are empty, innermost first.
/// Never throws; returns the number of entries removed.
int64_t remove_ingested(const IngestWritten& written) noexcept;

}  // namespace segrank::cli
