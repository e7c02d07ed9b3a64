// remove_tree_signal_safe and RemoveOnTermination (see signal_cleanup.h).
#include "util/signal_cleanup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <string>

namespace segrank {
namespace {

void remove_tree_at_depth(const char* path, int depth) noexcept {
    struct stat st;
    if (::lstat(path, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) {
        ::unlink(path);
        return;
    }
    if (depth < 16) {
        const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            alignas(8) char buf[4096];
            char child[kSignalSafeMaxPath];
            for (;;) {
                const long n = ::syscall(SYS_getdents64, fd, buf, sizeof(buf));
                if (n <= 0) break;
                for (long off = 0; off < n;) {
                    // struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, char name[]
                    const auto reclen = *reinterpret_cast<const unsigned short*>(buf + off + 16);
                    const char* name = buf + off + 19;
                    off += reclen;
                    if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))
                        continue;
                    const size_t a = std::strlen(path), b = std::strlen(name);
                    if (a + 1 + b >= sizeof(child)) continue;
                    std::memcpy(child, path, a);
                    child[a] = '/';
                    std::memcpy(child + a + 1, name, b + 1);
                    remove_tree_at_depth(child, depth + 1);
                }
            }
            ::close(fd);
        }
    }
    ::rmdir(path);
}

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};
volatile sig_atomic_t g_armed = 0;
char g_path[kSignalSafeMaxPath] = {};

extern "C" void remove_on_termination_handler(int sig) {
    if (g_armed) {
        g_armed = 0;
        remove_tree_signal_safe(g_path);
    }
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

}  // namespace

void remove_tree_signal_safe(const char* path) noexcept { remove_tree_at_depth(path, 0); }

RemoveOnTermination::RemoveOnTermination(const std::filesystem::path& path) {
    const std::string s = std::filesystem::absolute(path).string();
    if (s.size() + 1 > sizeof(g_path)) return;
    std::memcpy(g_path, s.c_str(), s.size() + 1);
    struct sigaction sa {};
    sa.sa_handler = remove_on_termination_handler;
    sigemptyset(&sa.sa_mask);
    for (int sig : kSignals) sigaddset(&sa.sa_mask, sig);
    for (int sig : kSignals) ::sigaction(sig, &sa, nullptr);
    g_armed = 1;
}

void RemoveOnTermination::release() noexcept {
    if (!g_armed) return;
    g_armed = 0;
    for (int sig : kSignals) ::signal(sig, SIG_DFL);
}

RemoveOnTermination::~RemoveOnTermination() { release(); }

}  // namespace segrank
