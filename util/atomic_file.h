// Output files written all-or-nothing, and the one policy for what an output path may be: every
// segrank writer (submissions, scores, JSON, reports, configs, checkpoints, stores, npz, caches)
// goes through write_file_atomically, or through AtomicOutput / commit_file when a library (HDF5,
// libzip) writes the file itself.
#pragma once
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

namespace segrank {

/// How an output path is written (see resolve_output).
struct OutputTarget {
    std::filesystem::path
        path;  ///< the file to create or replace (symlinks resolved), or to write through
    bool write_through =
        false;  ///< true: written in place (character device, /dev/stdout), never replaced
};

/// The output policy, decided before anything is written:
/// - a missing path or a regular file: the bytes go to "<file>.tmp-<pid>" beside it, which is then
///   renamed over it, so readers never see a partial file and a failure leaves the old file as it
///   was;
/// - a symbolic link (chains and dangling links included): followed; the file it points to is
///   created or replaced as above and the link is kept;
/// - a character device (/dev/null, a terminal), or a link inside /proc (/dev/stdout, /dev/fd/N,
///   /proc/self/fd/N name an open descriptor, e.g. a pipe to another process): written through in
///   place, never replaced;
/// - a directory, FIFO (named pipe: opening it would block until a reader comes, maybe forever),
///   block device or socket: segrank::Error naming the path, and nothing is created.
/// Throws segrank::Error naming `path` for these and for unreadable paths (a file used as a
/// directory, permission denied, a symlink loop).
OutputTarget resolve_output(const std::filesystem::path& path);

/// Writes `bytes` to `path` under the resolve_output policy. Every write, the close and the rename
/// are checked: a missing parent directory, a full disk, /dev/full or a permission problem throws
/// segrank::Error naming `path` and the system's reason, after removing the temporary file (the
/// target is unchanged). The file is not fsync'ed: a killed process leaves the old or the new file,
/// a power loss may leave either or an empty one.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);
/// Same, for the concatenation of `pieces` (written one after the other, never copied into one
/// buffer).
void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::string_view> pieces);

/// One file of write_files_atomically.
struct OutputFile {
    std::filesystem::path path;
    std::string_view bytes;
};

/// Writes several files all-or-nothing together (e.g. predict's --out and --scores): each regular
/// (or missing) target is written to its own "<file>.tmp-<pid>" first; only when every one of them
/// was written and closed without error are the write-through targets (devices, descriptors, which
/// cannot be taken back) written, and then the temporary files renamed into place. Any failure
/// before the renames removes every temporary file and leaves every target as it was; throws
/// segrank::Error as write_file_atomically, naming the file that failed, and, before writing
/// anything, when two of the files are one (same_file: through a symbolic link or "..").
void write_files_atomically(std::span<const OutputFile> files);

/// Removes the temporary files that killed processes left in `dir`: entries named
/// "<name_prefix>...<.tmp-PID>" (the names write_file_atomically and AtomicOutput use), or
/// "<name_prefix>...<.tmp-PID>.XXXXXX" (libzip's own temporary of such a file: six letters or
/// digits), whose PID is no longer a running process. Returns how many were removed; errors are
/// ignored (a folder that cannot be listed removes nothing).
int64_t remove_stale_temp_files(const std::filesystem::path& dir,
                                std::string_view name_prefix = {});

/// The absolute path `path` leads to once every symbolic link on the way is followed, as open()
/// with O_CREAT would: links in folders and the last component alike, dangling links included (a
/// link whose target does not exist yet leads to that target, read relative to the link's folder),
/// then "." and ".." resolved. Components that do not exist are kept as written. A link that
/// cannot be read, or a chain of more than 40 links, stops the resolution there. Never throws.
std::filesystem::path resolve_links(const std::filesystem::path& path);

/// True when `a` and `b` name the same file: equal after resolve_links (so a link to the other
/// path counts, also when it dangles because neither exists yet), or (both existing) the same
/// device and inode, e.g. through a hard link. Never throws.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

/// The commit step of a file or folder `tmp` that was written completely, onto `target` under the
/// resolve_output policy: renamed over a missing or regular target (a folder only onto a missing
/// one), or copied into a write-through target and then removed. `tmp` must be on the resolved
/// target's file system (beside it). On failure removes `tmp` and throws segrank::Error naming
/// `target` and the reason.
void commit_file(const std::filesystem::path& tmp, const std::filesystem::path& target);

/// A temporary file for a library that opens and writes a path of its own (HDF5, libzip): the
/// library writes temp_path(), the caller closes it and calls commit(); the destructor removes the
/// temporary file when commit() was not reached (an exception on the way). Declare it before the
/// library's file handle so the handle is closed first.
class AtomicOutput {
public:
    /// Checks `target` (resolve_output: directories and other non-files are refused here, before
    /// any work) and picks the temporary path: "<resolved target>.tmp-<pid>", or a file in the
    /// system's temporary folder for write-through targets. Creates nothing.
    explicit AtomicOutput(const std::filesystem::path& target);
    ~AtomicOutput();
    AtomicOutput(const AtomicOutput&) = delete;
    AtomicOutput& operator=(const AtomicOutput&) = delete;

    /// Where the library writes.
    const std::filesystem::path& temp_path() const { return tmp_; }
    /// The output path as given.
    const std::filesystem::path& target() const { return target_; }
    /// commit_file(temp_path(), target()); at most once. Throws as commit_file.
    void commit();

private:
    std::filesystem::path target_;
    std::filesystem::path tmp_;
    bool done_ = false;
};

/// An output directory made for one command: the constructor creates `dir` and its missing
/// parents; unless keep() is called, the destructor removes, innermost first, every directory it
/// created that is still empty, so a command that fails leaves no empty folder behind (what it
/// wrote inside is the command's to remove). Throws segrank::Error naming the path and the
/// system's reason when a directory cannot be created, or when `dir` exists and is not a
/// directory.
class CreatedDirectories {
public:
    explicit CreatedDirectories(const std::filesystem::path& dir);
    ~CreatedDirectories();
    CreatedDirectories(const CreatedDirectories&) = delete;
    CreatedDirectories& operator=(const CreatedDirectories&) = delete;
    /// The command succeeded: keep the directories.
    void keep() noexcept { created_.clear(); }
    /// The directories this object created, outermost first (empty once kept).
    const std::vector<std::filesystem::path>& created() const { return created_; }

private:
    void remove_empty_created() noexcept;
    std::vector<std::filesystem::path> created_;
};

}  // namespace segrank
