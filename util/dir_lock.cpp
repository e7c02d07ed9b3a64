// OutputDirLock: flock on an output folder, and the holder's pid from /proc/locks.
#include "util/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gnn/core/check.h"

namespace segrank {
namespace {

// The pid that holds a flock on the inode `ino` of device `dev`, from /proc/locks ("1: FLOCK
// ADVISORY WRITE 1234 08:01:5678 0 EOF", device in hex major:minor); -1 when not found.
long flock_holder_pid(dev_t dev, ino_t ino) {
    std::ifstream in("/proc/locks");
    for (std::string line; std::getline(in, line);) {
        std::istringstream is(line);
        std::string id, kind, mode, rw, where;
        long pid = -1;
        if (!(is >> id >> kind)) continue;
        if (kind == "->") continue;  // a waiter, not the holder
        if (!(is >> mode >> rw >> pid >> where) || kind != "FLOCK") continue;
        const auto c1 = where.find(':'), c2 = where.rfind(':');
        if (c1 == std::string::npos || c2 == c1) continue;
        const auto major = std::strtoul(where.substr(0, c1).c_str(), nullptr, 16);
        const auto minor = std::strtoul(where.substr(c1 + 1, c2 - c1 - 1).c_str(), nullptr, 16);
        if (std::strtoull(where.c_str() + c2 + 1, nullptr, 10) ==
                static_cast<unsigned long long>(ino) &&
            major == ::major(dev) && minor == ::minor(dev))
            return pid;
    }
    return -1;
}

// How often a lock whose holder /proc/locks does not name is tried again (2 ms apart).
constexpr int kLockAttempts = 25;

}  // namespace

std::string flock_holder(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return "pid unknown";
    const long pid = flock_holder_pid(st.st_dev, st.st_ino);
    if (pid <= 0) return "pid unknown";
    std::ifstream in(str("/proc/", pid, "/cmdline"), std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    for (char& c : cmdline)
        if (c == '\0') c = ' ';
    if (cmdline.size() > 80) cmdline = cmdline.substr(0, 77) + "...";
    return cmdline.empty() ? str("pid ", pid) : str("pid ", pid, ": ", cmdline);
}

OutputDirLock::OutputDirLock(const std::filesystem::path& dir, std::string_view command,
                             std::string_view option) {
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    SEGRANK_CHECK(fd_ >= 0, command, ": cannot open ", option, " '", dir.string(),
                  "' to lock it: ", std::strerror(errno));
    for (int attempt = 1;; ++attempt) {
        if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
        const int err = errno;
        // Not listed in /proc/locks: the holder most likely let go between the two looks (it
        // just finished), so try again; the lock is then ours, or held by a process named now.
        const std::string holder = err == EWOULDBLOCK ? flock_holder(fd_) : "";
        if (err == EWOULDBLOCK && holder == "pid unknown" && attempt < kLockAttempts) {
            ::usleep(2000);
            continue;
        }
        ::close(fd_);
        fd_ = -1;
        SEGRANK_CHECK(err != EWOULDBLOCK, command, ": ", option, " '", dir.string(),
                      "' is being written by another process (",
                      holder == "pid unknown"
                          ? std::string("one that /proc/locks does not name, e.g. in another "
                                        "container or PID namespace")
                          : holder,
                      "); wait for it to finish or choose another ", option);
        throw Error(
            str(command, ": cannot lock ", option, " '", dir.string(), "': ", std::strerror(err)));
    }
}

OutputDirLock::~OutputDirLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace segrank
