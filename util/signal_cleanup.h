// Removing partial output when a process is terminated by a signal: an async-signal-safe tree
// removal, and a one-path "remove this on SIGTERM / SIGINT / SIGHUP" guard for commands that
// stage their output (segrank synth, pack, ingest).
#pragma once
#include <signal.h>

#include <cstddef>
#include <filesystem>
#include <string_view>

namespace segrank {

/// Longest path (bytes, with the terminating 0) the signal-safe helpers handle.
inline constexpr size_t kSignalSafeMaxPath = 4096;

/// Removes `path` (a file, a symbolic link or a directory tree, at most 16 levels deep) using only
/// async-signal-safe calls (lstat, open, getdents64, unlink, rmdir, close), so it may run inside a
/// signal handler. Errors are ignored: whatever cannot be removed stays.
void remove_tree_signal_safe(const char* path) noexcept;

/// Writes `size` bytes of `text` to stderr with write(2) only (async-signal-safe), retrying short
/// writes; stops at the first error.
void write_stderr_signal_safe(const char* text, size_t size) noexcept;

/// While alive, SIGTERM, SIGINT and SIGHUP remove `path` and every path add()ed later
/// (remove_tree_signal_safe), print `message` (if any) to stderr and then take their default
/// action (the process ends as it would have). The destructor (or release()) restores the default
/// handlers without removing anything: the command finished and `path` is its result, or its own
/// error path already cleaned up. One guard per process at a time; a path longer than
/// kSignalSafeMaxPath, or beyond 64 KiB of paths in all, is not removed; `message` is cut at 1 KiB.
/// Used by synth::write_synthetic for its output folder (when it did not exist before) or its
/// staging folder, by segrank pack for its temporary stores and by segrank ingest for the npz
/// files, temporaries and folders it makes.
class RemoveOnTermination {
public:
    explicit RemoveOnTermination(const std::filesystem::path& path, std::string_view message = {});
    ~RemoveOnTermination();
    /// Also removes `path` on termination (an empty path adds nothing).
    void add(const std::filesystem::path& path) noexcept;
    /// Also removes, on termination, every entry of the folder `dir` whose name starts with
    /// `prefix` (a file, or a folder tree as remove_tree_signal_safe): for the temporary file a
    /// library names itself, e.g. libzip's "<file>.XXXXXX". An empty prefix adds nothing.
    void add_prefixed(const std::filesystem::path& dir, std::string_view prefix) noexcept;
    /// Restores the default handlers now.
    void release() noexcept;
    RemoveOnTermination(const RemoveOnTermination&) = delete;
    RemoveOnTermination& operator=(const RemoveOnTermination&) = delete;
};

/// While alive, SIGTERM, SIGINT and SIGHUP are blocked in the calling thread (held pending, then
/// delivered when the destructor restores the thread's mask from before, unless that mask blocks
/// them too): for a commit step (several renames) that must not stop half-way.
class SignalsHeld {
public:
    SignalsHeld() noexcept;
    ~SignalsHeld();
    SignalsHeld(const SignalsHeld&) = delete;
    SignalsHeld& operator=(const SignalsHeld&) = delete;

private:
    sigset_t previous_;
};

}  // namespace segrank
