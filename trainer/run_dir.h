// Run-directory integrity for `segrank train` (docs/config.md "Run directory"): one training
// process per run directory (RunDirLock), what a --resume may change (check_resume_config), a
// fingerprint of the data a run was trained on (data_manifest / check_data_manifest), and the
// removal of what a fresh run created when it fails before its first checkpoint (RunDirCleanup).
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/config.h"
#include "trainer/dataset.h"

namespace segrank {

/// Exclusive advisory lock on `<dir>/.lock` (flock LOCK_EX | LOCK_NB), held for the lifetime of the
/// object and released by the destructor (or by the kernel when the process dies). The holder's pid
/// is written into the file. Under MPI only rank 0 takes it.
class RunDirLock {
public:
    /// Creates `dir` when missing, opens (creating) `<dir>/.lock` and locks it. A `.lock` that is a
    /// symbolic link is refused naming it (the pid would be written into the link's target). Throws
    /// segrank::Error `<what> <dir> is in use by another <command> (pid N)` ("run directory ... is
    /// in use by another segrank train (pid N)") when another process holds the lock (pid from the
    /// file, else from /proc/locks, else "pid unknown"), or naming the path when the directory or
    /// file cannot be created. `segrank tune` takes the same lock on its --out ("tune directory",
    /// "segrank tune").
    explicit RunDirLock(const std::filesystem::path& dir, std::string_view what = "run directory",
                        std::string_view command = "segrank train");
    ~RunDirLock();
    RunDirLock(const RunDirLock&) = delete;
    RunDirLock& operator=(const RunDirLock&) = delete;

private:
    int fd_ = -1;
};

/// Whether RunDirLock(dir, what, command) would be refused now, without keeping the lock (segrank
/// train --check; docs/config.md#run-directory): throws the same segrank::Error as RunDirLock for
/// a `.lock` that is a symbolic link and for a lock another process holds ("run directory D is in
/// use by another segrank train (pid N)"). Probes with a shared flock taken and released at once;
/// a missing `dir` or `.lock` passes. Creates and writes nothing.
void check_run_dir_unlocked(const std::filesystem::path& dir,
                            std::string_view what = "run directory",
                            std::string_view command = "segrank train");

/// True for the keys a `--resume` may change: purely operational ones that change neither the
/// model, the data, the segmentation nor the optimizer trajectory of the steps already taken
/// (train.steps, train.epochs, train.eval_every, train.log_every, train.progress, train.threads,
/// train.run_dir, train.checkpoint_every, train.patience, every eval.* key but eval.metric, whose
/// values chose the best checkpoint so far (best_selection), and every dist.* key).
bool resume_may_change(std::string_view dotted_key);

/// One entry per config key that differs between `before` and `after`: dotted key -> {old, new}
/// values in TOML spelling (as dump_config writes them), in schema order.
std::vector<std::pair<std::string, std::pair<std::string, std::string>>> config_differences(
    const RunConfig& before, const RunConfig& after);

/// Compares the effective config of a resume (`now`: the run's config.toml plus --set) with the one
/// the run was trained with (`run`: the checkpoint's stored config). Throws segrank::Error listing
/// every changed key that resume_may_change() refuses, one per line:
/// `--resume RUN: segments.max_nodes was 500 in the run, now 300; resuming cannot change it`.
void check_resume_config(const RunConfig& run, const RunConfig& now,
                         const std::filesystem::path& run_dir);

/// Everything `segrank train --resume RUN` checks before anything is written, without opening the
/// data: no run file (config.toml, metrics.jsonl, report.json, report.html, the checkpoints,
/// partitions/) is a symbolic link (error "RUN/metrics.jsonl is a symbolic link (to 'T'); ...":
/// the resume would write through it into T), RUN has config.toml and last.ckpt.h5 (error "no
/// checkpoint '<file>'"), the checkpoint's
/// stored config (else config.toml) vs `now` (check_resume_config), and, when train.epochs = 0,
/// train.steps > the checkpoint step. Throws segrank::Error naming RUN.
void check_resume_start(const RunConfig& now, const std::filesystem::path& run_dir);

/// The data a run trains and evaluates on, one line per graph in role order:
/// `<train|eval>\t<collection>\t<name>\t<num_nodes>\t<num_edges>\t<num_configs>\tconfigs=<hex>\tgraph=<hex>\n`
/// with the two digests of data/graph_digest.h (configs: config rows in stored order and runtimes;
/// graph: node features, opcodes, edges, config node ids, node splits). Each graph is read once
/// (one pass over everything; a graph listed as train and eval is digested once). Files are not
/// part of it (moving the data keeps a run resumable); any change of what is read is. Throws what
/// the sources' loads throw.
std::string data_manifest(const std::vector<GraphEntry>& train,
                          const std::vector<GraphEntry>& eval);

/// 64-bit FNV-1a of the manifest as 16 hex digits (stored with it in checkpoints).
std::string data_fingerprint(std::string_view manifest);

/// Compares the manifest stored in a checkpoint with the current data. Throws segrank::Error naming
/// `ckpt`, the first graph that differs (what it was, what it is: sizes, or config rows / runtimes
/// or graph data with the same sizes) and the file it is read from now (GraphSource::where), or the
/// graph that is missing or new. A manifest without the digest columns is compared by sizes.
void check_data_manifest(std::string_view stored, const std::vector<GraphEntry>& train,
                         const std::vector<GraphEntry>& eval, const std::filesystem::path& ckpt);
/// Same, with the current manifest already computed (data_manifest(train, eval)).
void check_data_manifest(std::string_view stored, std::string_view current,
                         const std::vector<GraphEntry>& train, const std::vector<GraphEntry>& eval,
                         const std::filesystem::path& ckpt);

/// The start-up checks of a run's paths that read no data (segrank train, also with --check;
/// docs/config.md#run-directory): every data.ingest entry is an existing regular file, and the
/// run directory `run_dir` (train.run_dir, --run-dir or --resume) is neither data.root nor inside
/// it (the run would write its checkpoints and partition cache beside the data; compared after
/// resolving symlinks and "..", on the existing part of each path). Throws segrank::Error naming
/// the key and the path.
void check_run_paths(const RunConfig& cfg, const std::filesystem::path& run_dir);

/// Whether the run can create (or write into) its run directory `dir`, checked without creating
/// anything (segrank train before anything is written, and --check; docs/config.md#run-directory):
/// no component of the path is longer than NAME_MAX (255 bytes) and the path leaves room for the
/// names a run writes below PATH_MAX; an existing `dir` is a writable folder (access W_OK | X_OK);
/// otherwise its nearest existing ancestor is a folder the process may create entries in. `label`
/// names where the path came from ("train.run_dir (or --run-dir)", "--resume"). Throws
/// segrank::Error "<label> '<dir>': ..." naming the reason ("is a symbolic link loop (ELOOP ...)"
/// for links that point at each other, at `dir` or above it). Under euid 0 access() grants W_OK
/// except on a read-only file system, so a mode-555 parent passes for root, as the run would.
void check_run_dir_creatable(const std::filesystem::path& dir, std::string_view label);

/// Removes what a fresh (not --resume) training run created in its run directory when it fails
/// before writing its first checkpoint (docs/config.md "Run directory"): the whole directory when
/// it did not exist before (and then the folders above it that did not exist either, while they
/// are empty), else every top-level entry that is new or was modified since the snapshot. Nothing
/// is removed once the directory holds best.ckpt.h5 or last.ckpt.h5.
class RunDirCleanup {
public:
    /// Snapshots `dir` (existence; names and modification times of its entries).
    explicit RunDirCleanup(std::filesystem::path dir);
    /// Performs the removal described above; never throws (problems are printed to stderr).
    /// Returns the number of entries removed (1 for a removed directory).
    int64_t remove_created() const noexcept;
    /// Also performs a removal when the process is terminated by SIGTERM, SIGINT or SIGHUP before
    /// its first checkpoint: under MPI a rank that fails aborts the job, and mpirun ends rank 0
    /// with SIGTERM while it waits in a collective, so its exception path never runs. The handler
    /// is async-signal-safe (paths prepared here; access, lstat, getdents64, unlink, rmdir only):
    /// it removes the directory when it did not exist before, else the entries segrank train
    /// creates (.lock, config.toml, metrics.jsonl, partitions/, report.json and checkpoint
    /// temporaries) that were not there at the snapshot; then the signal takes its default action.
    /// Nothing is removed once best.ckpt.h5 or last.ckpt.h5 exists. One armed object per process;
    /// disarm_on_termination() (also called by the destructor) restores the default handlers.
    void arm_on_termination() const;
    /// Removes the handlers of arm_on_termination (no-op when not armed).
    static void disarm_on_termination() noexcept;
    ~RunDirCleanup();
    RunDirCleanup(const RunDirCleanup&) = delete;
    RunDirCleanup& operator=(const RunDirCleanup&) = delete;

private:
    std::filesystem::path dir_;
    bool existed_ = false;
    /// Missing folders above a new dir_ at the snapshot, innermost first.
    std::vector<std::filesystem::path> created_parents_;
    std::map<std::string, std::filesystem::file_time_type> before_;
};

}  // namespace segrank
