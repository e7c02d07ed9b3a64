// One process per run directory: RunDirLock and the lock probe of --check (trainer/run_dir.h).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gnn/core/check.h"
#include "trainer/run_dir.h"

namespace segrank {

namespace fs = std::filesystem;

namespace {

// The pid that holds a flock on the file with inode `ino`, from /proc/locks ("1: FLOCK ADVISORY
// WRITE 1234 08:01:5678 0 EOF"); -1 when not found.
long flock_holder_from_proc(ino_t ino) {
    std::ifstream in("/proc/locks");
    for (std::string line; std::getline(in, line);) {
        std::istringstream is(line);
        std::string id, kind, mode, rw, dev;
        long pid = -1;
        if (!(is >> id >> kind)) continue;
        if (kind == "->") is >> kind;  // a waiter line: "1: -> FLOCK ..."
        if (!(is >> mode >> rw >> pid >> dev) || kind != "FLOCK") continue;
        const auto colon = dev.rfind(':');
        if (colon == std::string::npos) continue;
        if (std::strtoull(dev.c_str() + colon + 1, nullptr, 10) ==
            static_cast<unsigned long long>(ino))
            return pid;
    }
    return -1;
}

std::string lock_holder(int fd) {
    char buf[32] = {};
    const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n > 0) {
        const long pid = std::strtol(buf, nullptr, 10);
        if (pid > 0) return str("pid ", pid);
    }
    struct stat st {};
    if (fstat(fd, &st) == 0) {
        const long pid = flock_holder_from_proc(st.st_ino);
        if (pid > 0) return str("pid ", pid);
    }
    return "pid unknown";
}

// A `.lock` that is a symbolic link: the pid would be written into the link's target.
void refuse_linked_lock(const fs::path& dir, std::string_view what, std::string_view command) {
    const fs::path file = dir / ".lock";
    std::error_code ec;
    SEGRANK_CHECK(!fs::is_symlink(fs::symlink_status(file, ec)), what, " ", dir.string(), ": ",
                  file.string(), " is a symbolic link (to '", fs::read_symlink(file, ec).string(),
                  "'); ", command, " writes its pid into it: remove the link");
}

[[noreturn]] void throw_in_use(const fs::path& dir, std::string_view what, std::string_view command,
                               const std::string& holder) {
    throw Error(str(what, " ", dir.string(), " is in use by another ", command, " (", holder, ")"));
}

}  // namespace

RunDirLock::RunDirLock(const fs::path& dir, std::string_view what, std::string_view command) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    SEGRANK_CHECK(!ec, "cannot create ", what, " '", dir.string(), "': ", ec.message());
    const fs::path file = dir / ".lock";
    refuse_linked_lock(dir, what, command);
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    SEGRANK_CHECK(fd_ >= 0, "cannot open lock file '", file.string(), "': ", std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        const std::string holder = err == EWOULDBLOCK ? lock_holder(fd_) : "";
        ::close(fd_);
        fd_ = -1;
        if (err == EWOULDBLOCK) throw_in_use(dir, what, command, holder);
        throw Error(str("cannot lock '", file.string(), "': ", std::strerror(err)));
    }
    const std::string pid = str(static_cast<long>(::getpid()), "\n");
    if (::ftruncate(fd_, 0) == 0) {
        [[maybe_unused]] const ssize_t n = ::pwrite(fd_, pid.data(), pid.size(), 0);
    }
}

RunDirLock::~RunDirLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

void check_run_dir_unlocked(const fs::path& dir, std::string_view what, std::string_view command) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return;  // nothing holds a folder that does not exist yet
    refuse_linked_lock(dir, what, command);
    const fs::path file = dir / ".lock";
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return;  // no .lock: no run has held it (one that cannot be opened: RunDirLock)
    // A shared lock fails while a run holds the exclusive one; taken, it is released at once.
    if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
        const int err = errno;
        const std::string holder = err == EWOULDBLOCK ? lock_holder(fd) : "";
        ::close(fd);
        if (err == EWOULDBLOCK) throw_in_use(dir, what, command, holder);
        return;
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
}

}  // namespace segrank
