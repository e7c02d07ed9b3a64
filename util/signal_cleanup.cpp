// remove_tree_signal_safe and RemoveOnTermination (see signal_cleanup.h).
#include "util/signal_cleanup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <string>

#include "util/signal_relay.h"

namespace segrank {
namespace {

// Calls visit(child) for every entry of the open folder `fd` (at `dir`, `dir_len` bytes) but "."
// and "..", whose name passes keep(name), child being "dir/name" (an entry whose path would not fit
// kSignalSafeMaxPath is skipped). Async-signal-safe: getdents64 into stack buffers, no allocation.
template <typename Keep, typename Visit>
void for_each_entry(int fd, const char* dir, size_t dir_len, Keep keep, Visit visit) noexcept {
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
            if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
            if (!keep(name)) continue;
            const size_t b = std::strlen(name);
            if (dir_len + 1 + b >= sizeof(child)) continue;
            std::memcpy(child, dir, dir_len);
            child[dir_len] = '/';
            std::memcpy(child + dir_len + 1, name, b + 1);
            visit(child);
        }
    }
}

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
            for_each_entry(
                fd, path, std::strlen(path), [](const char*) { return true; },
                [depth](const char* child) { remove_tree_at_depth(child, depth + 1); });
            ::close(fd);
        }
    }
    ::rmdir(path);
}

// Removes the entries of the folder of "dir/prefix" whose names start with prefix
// (async-signal-safe, as remove_tree_at_depth).
void remove_prefixed_signal_safe(const char* dir_and_prefix) noexcept {
    const char* slash = std::strrchr(dir_and_prefix, '/');
    if (slash == nullptr || slash[1] == 0) return;
    char dir[kSignalSafeMaxPath];
    const size_t dir_len =
        slash == dir_and_prefix ? 1 : static_cast<size_t>(slash - dir_and_prefix);
    std::memcpy(dir, dir_and_prefix, dir_len);
    dir[dir_len] = 0;
    const char* prefix = slash + 1;
    const size_t prefix_len = std::strlen(prefix);
    const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    for_each_entry(
        fd, dir, dir_len,
        [prefix, prefix_len](const char* name) {
            return std::strncmp(name, prefix, prefix_len) == 0;
        },
        [](const char* child) { remove_tree_at_depth(child, 1); });
    ::close(fd);
}

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};
volatile sig_atomic_t g_armed = 0;
// What each entry of g_paths removes: the path itself, or the entries of its folder whose names
// start with its last component.
constexpr char kWhole = 'W';
constexpr char kPrefixed = 'P';
// The entries to remove, each a kind byte then a 0-terminated path, one after the other (g_used
// bytes), and the line to print to stderr afterwards (g_message_size bytes).
char g_paths[kSignalSafeMaxPath * 16] = {};
size_t g_used = 0;
char g_message[1024] = {};
size_t g_message_size = 0;

extern "C" void remove_on_termination_handler(int sig) {
    if (g_armed) {
        g_armed = 0;
        for (size_t at = 0; at < g_used; at += std::strlen(g_paths + at) + 1) {
            if (g_paths[at] == kWhole)
                remove_tree_signal_safe(g_paths + at + 1);
            else
                remove_prefixed_signal_safe(g_paths + at + 1);
        }
        write_stderr_signal_safe(g_message, g_message_size);
    }
    end_by_signal(sig);
}

// Blocks the signals the guard handles in the calling thread, so the lists are never read
// half-written, and returns the mask before, which the caller restores (never a plain unblock: in
// a process with the signal relay they must stay blocked outside the relay thread).
sigset_t block_signals() noexcept {
    sigset_t set, before;
    sigemptyset(&set);
    for (int sig : kSignals) sigaddset(&set, sig);
    ::pthread_sigmask(SIG_BLOCK, &set, &before);
    return before;
}

void restore_signal_mask(const sigset_t& before) noexcept {
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

}  // namespace

void remove_tree_signal_safe(const char* path) noexcept { remove_tree_at_depth(path, 0); }

void write_stderr_signal_safe(const char* text, size_t size) noexcept {
    for (size_t done = 0; done < size;) {
        const ssize_t n = ::write(STDERR_FILENO, text + done, size - done);
        if (n <= 0) return;
        done += static_cast<size_t>(n);
    }
}

RemoveOnTermination::RemoveOnTermination(const std::filesystem::path& path,
                                         std::string_view message) {
    g_used = 0;
    g_message_size = std::min(message.size(), sizeof(g_message));
    if (g_message_size > 0) std::memcpy(g_message, message.data(), g_message_size);
    add(path);
    struct sigaction sa {};
    sa.sa_handler = remove_on_termination_handler;
    sigemptyset(&sa.sa_mask);
    for (int sig : kSignals) sigaddset(&sa.sa_mask, sig);
    for (int sig : kSignals) ::sigaction(sig, &sa, nullptr);
    g_armed = 1;
}

namespace {

// Appends `kind` and the absolute form of `path` to the entries (nothing when too long).
void add_entry(char kind, const std::filesystem::path& path) noexcept {
    std::string s(1, kind);
    try {
        s += std::filesystem::absolute(path).string();
    } catch (...) {
        return;
    }
    if (s.size() > kSignalSafeMaxPath || g_used + s.size() + 1 > sizeof(g_paths)) return;
    const sigset_t before = block_signals();
    std::memcpy(g_paths + g_used, s.c_str(), s.size() + 1);
    g_used += s.size() + 1;
    restore_signal_mask(before);
}

}  // namespace

void RemoveOnTermination::add(const std::filesystem::path& path) noexcept {
    if (!path.empty()) add_entry(kWhole, path);
}

void RemoveOnTermination::add_prefixed(const std::filesystem::path& dir,
                                       std::string_view prefix) noexcept {
    if (prefix.empty() || prefix.find('/') != std::string_view::npos) return;
    try {
        add_entry(kPrefixed, (dir.empty() ? std::filesystem::path(".") : dir) / prefix);
    } catch (...) {
    }
}

void RemoveOnTermination::release() noexcept {
    if (!g_armed) return;
    g_armed = 0;
    for (int sig : kSignals) ::signal(sig, SIG_DFL);
}

RemoveOnTermination::~RemoveOnTermination() { release(); }

SignalsHeld::SignalsHeld() noexcept : previous_(block_signals()) {}

SignalsHeld::~SignalsHeld() { restore_signal_mask(previous_); }

}  // namespace segrank
