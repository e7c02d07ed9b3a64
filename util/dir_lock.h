// One writer per output folder: an exclusive flock on the folder itself, held while a command
// writes into it (segrank synth, pack and ingest; docs/files.md#output-folders).
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace segrank {

/// Exclusive advisory lock (flock LOCK_EX | LOCK_NB) on the directory `dir` itself (no lock file
/// is left behind), held for the lifetime of the object and released by the destructor or by the
/// kernel when the process dies. `dir` must exist.
class OutputDirLock {
public:
    /// Locks `dir`. Throws segrank::Error `<command>: <option> '<dir>' is being written by another
    /// process (pid N: <its command line>); wait for it to finish or choose another <option>`
    /// when another process holds the lock, or naming `dir` and the system error when it cannot be
    /// opened or locked. A lock held by a process that /proc/locks does not name (it let go
    /// between the attempt and the look-up: it just finished) is tried again, up to 25 times 2 ms
    /// apart; only then is the holder described as "one that /proc/locks does not name".
    OutputDirLock(const std::filesystem::path& dir, std::string_view command,
                  std::string_view option = "--out");
    ~OutputDirLock();
    OutputDirLock(const OutputDirLock&) = delete;
    OutputDirLock& operator=(const OutputDirLock&) = delete;

private:
    int fd_ = -1;
};

/// "pid N: <command line>" of the process holding a flock on the file or folder open as `fd`,
/// from /proc/locks and /proc/N/cmdline (at most 80 characters of it); "pid unknown" when not
/// found.
std::string flock_holder(int fd);

}  // namespace segrank
