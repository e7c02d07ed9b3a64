// All-or-nothing output files and the output path policy (see atomic_file.h), over POSIX calls so
// that every write, close and rename reports the system's reason.
#include "util/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

#include "gnn/core/check.h"

namespace segrank {
namespace fs = std::filesystem;

namespace {

std::string reason(int err) { return std::generic_category().message(err); }

// The path as the user gave it, plus where a symlink led.
std::string describe(const fs::path& given, const fs::path& resolved) {
    if (given == resolved) return given.string();
    return str(given.string(), " (link to ", resolved.string(), ")");
}

// A symlink inside /proc (/proc/<pid>/fd/N behind /dev/stdout and /dev/fd/N, /proc/self/...) is
// resolved by the kernel on open, not by reading its text ("pipe:[123]", "/x (deleted)").
bool inside_proc(const fs::path& dir) {
    std::error_code ec;
    const fs::path c = fs::canonical(dir, ec);
    if (ec) return false;
    const std::string s = c.string();
    return s == "/proc" || s.rfind("/proc/", 0) == 0;
}

const char* kind_name(mode_t m) {
    if (S_ISBLK(m)) return "block device";
    if (S_ISSOCK(m)) return "socket";
    return "special file";
}

// Writes every piece to fd (short writes and EINTR retried); 0 or the errno of the failure.
int write_all(int fd, std::initializer_list<std::string_view> pieces) {
    for (std::string_view piece : pieces) {
        const char* p = piece.data();
        size_t left = piece.size();
        while (left > 0) {
            const ssize_t n = ::write(fd, p, std::min<size_t>(left, size_t{1} << 30));
            if (n < 0) {
                if (errno == EINTR) continue;
                return errno;
            }
            if (n == 0) return EIO;
            p += n;
            left -= static_cast<size_t>(n);
        }
    }
    return 0;
}

// Opens an existing write-through target (no O_CREAT: it must still be the device or descriptor, no
// O_TRUNC: what the descriptor behind /dev/stdout already holds is kept).
int open_through(const fs::path& p, const fs::path& given) {
    std::fflush(stdout);  // what this process printed before comes first on a shared stdout
    int fd;
    do {
        fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    SEGRANK_CHECK(fd >= 0, given.string(), ": cannot open for writing: ", reason(errno));
    return fd;
}

void close_checked(int fd, int err, const std::string& what) {
    if (::close(fd) != 0 && err == 0) err = errno;
    SEGRANK_CHECK(err == 0, what, ": write failed: ", reason(err));
}

void write_through(const fs::path& given, const fs::path& p,
                   std::initializer_list<std::string_view> pieces) {
    const int fd = open_through(p, given);
    close_checked(fd, write_all(fd, pieces), given.string());
}

std::string pid_suffix() { return ".tmp-" + std::to_string(::getpid()); }

fs::path temp_beside(const fs::path& resolved) { return resolved.string() + pid_suffix(); }

void remove_quietly(const fs::path& p) {
    std::error_code ec;
    fs::remove_all(p, ec);
}

// The one rename of segrank: `tmp` over the resolved regular (or missing) target; `tmp` removed on
// failure.
void rename_into_place(const fs::path& tmp, const OutputTarget& t, const fs::path& given) {
    if (::rename(tmp.c_str(), t.path.c_str()) != 0) {
        const int err = errno;
        remove_quietly(tmp);
        throw Error(str(describe(given, t.path), ": cannot rename '", tmp.string(),
                        "' into place: ", reason(err)));
    }
}

void write_replacing(const fs::path& given, const OutputTarget& t,
                     std::initializer_list<std::string_view> pieces) {
    const std::string what = describe(given, t.path);
    const fs::path tmp = temp_beside(t.path);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        const int err = errno;
        const fs::path parent = t.path.parent_path();
        std::error_code ec;
        SEGRANK_CHECK(!(err == ENOENT && !parent.empty() && !fs::exists(parent, ec)), what,
                      ": cannot write: folder '", parent.string(), "' does not exist");
        throw Error(
            str(what, ": cannot create the temporary file '", tmp.string(), "': ", reason(err)));
    }
    try {
        close_checked(fd, write_all(fd, pieces), what);
    } catch (...) {
        remove_quietly(tmp);
        throw;
    }
    rename_into_place(tmp, t, given);
}

// Copies the finished file `tmp` into the write-through target `p`.
void copy_through(const fs::path& tmp, const fs::path& p, const fs::path& given) {
    const int in = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
    SEGRANK_CHECK(in >= 0, given.string(), ": cannot read back the temporary file '", tmp.string(),
                  "': ", reason(errno));
    const int out = [&] {
        try {
            return open_through(p, given);
        } catch (...) {
            ::close(in);
            throw;
        }
    }();
    std::vector<char> buf(size_t{1} << 20);
    int err = 0;
    while (err == 0) {
        const ssize_t n = ::read(in, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            err = errno;
            break;
        }
        if (n == 0) break;
        err = write_all(out, {std::string_view(buf.data(), static_cast<size_t>(n))});
    }
    ::close(in);
    close_checked(out, err, given.string());
}

}  // namespace

OutputTarget resolve_output(const fs::path& path) {
    SEGRANK_CHECK(!path.empty(), "empty output path");
    fs::path p = path;
    for (int hops = 0; hops < 40; ++hops) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0) {
            const int err = errno;
            if (err == ENOENT)
                return {p, false};  // created; a missing folder is reported on creation
            throw Error(str(describe(path, p), ": cannot write: ", reason(err)));
        }
        if (S_ISLNK(st.st_mode)) {
            const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
            if (inside_proc(dir)) return {p, true};
            std::error_code ec;
            const fs::path next = fs::read_symlink(p, ec);
            SEGRANK_CHECK(!ec, describe(path, p),
                          ": cannot read the symbolic link: ", ec.message());
            p = next.is_absolute() ? next : dir / next;
            continue;
        }
        if (S_ISREG(st.st_mode)) return {p, false};
        if (S_ISCHR(st.st_mode)) return {p, true};
        // A named pipe blocks the writer until a reader opens it, possibly forever, and whether
        // one will cannot be told without disturbing it: refused. A pipe reached through /proc
        // (/dev/stdout, /dev/fd/N of `>(...)`) is an open descriptor and is written through above.
        if (S_ISFIFO(st.st_mode))
            throw Error(str(describe(path, p),
                            ": is a FIFO (named pipe), expected a regular file to write (a named "
                            "pipe would block until a reader opens it; write to /dev/stdout and "
                            "pipe that instead)"));
        if (S_ISDIR(st.st_mode))
            throw Error(str(describe(path, p), ": is a directory, expected a file name to write"));
        throw Error(str(describe(path, p), ": is a ", kind_name(st.st_mode),
                        ", expected a regular file (or a character device such as /dev/null) to "
                        "write"));
    }
    throw Error(str(path.string(), ": cannot write: too many levels of symbolic links"));
}

void write_file_atomically(const fs::path& path, std::string_view bytes) {
    write_file_atomically(path, {bytes});
}

void write_file_atomically(const fs::path& path, std::initializer_list<std::string_view> pieces) {
    const OutputTarget t = resolve_output(path);
    if (t.write_through) {
        write_through(path, t.path, pieces);
    } else {
        write_replacing(path, t, pieces);
    }
}

void write_files_atomically(std::span<const OutputFile> files) {
    std::vector<OutputTarget> targets;
    for (const auto& f : files) targets.push_back(resolve_output(f.path));
    // One file twice would share one temporary file: the second rename fails after the first
    // replaced the target with the wrong bytes.
    for (size_t i = 0; i < files.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            SEGRANK_CHECK(targets[i].write_through || targets[j].write_through ||
                              !same_file(targets[i].path, targets[j].path),
                          files[j].path.string(), " and ", files[i].path.string(),
                          " name the same file (", resolve_links(targets[i].path).string(),
                          "): give two different paths");
    std::vector<fs::path> temps;  // of the replaced targets, in order
    auto drop_temps = [&] {
        for (const auto& t : temps) remove_quietly(t);
    };
    try {
        for (size_t i = 0; i < files.size(); ++i) {
            if (targets[i].write_through) continue;
            const std::string what = describe(files[i].path, targets[i].path);
            const fs::path tmp = temp_beside(targets[i].path);
            const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
            if (fd < 0) {
                const int err = errno;
                const fs::path parent = targets[i].path.parent_path();
                std::error_code ec;
                SEGRANK_CHECK(!(err == ENOENT && !parent.empty() && !fs::exists(parent, ec)), what,
                              ": cannot write: folder '", parent.string(), "' does not exist");
                throw Error(str(what, ": cannot create the temporary file '", tmp.string(),
                                "': ", reason(err)));
            }
            temps.push_back(tmp);
            close_checked(fd, write_all(fd, {files[i].bytes}), what);
        }
        // Devices and descriptors cannot be taken back: written once every file is complete.
        for (size_t i = 0; i < files.size(); ++i)
            if (targets[i].write_through)
                write_through(files[i].path, targets[i].path, {files[i].bytes});
    } catch (...) {
        drop_temps();
        throw;
    }
    size_t k = 0;
    for (size_t i = 0; i < files.size(); ++i) {
        if (targets[i].write_through) continue;
        try {
            rename_into_place(temps[k], targets[i], files[i].path);
        } catch (...) {
            for (size_t j = k + 1; j < temps.size(); ++j) remove_quietly(temps[j]);
            throw;
        }
        ++k;
    }
}

int64_t remove_stale_temp_files(const fs::path& dir, std::string_view name_prefix) {
    int64_t removed = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        const size_t at = name.rfind(".tmp-");
        if (at == std::string::npos || name.compare(0, name_prefix.size(), name_prefix) != 0)
            continue;
        std::string digits = name.substr(at + 5);
        // libzip writes "<its target>.XXXXXX" (six random letters or digits) before renaming it
        // to its target, so an npz writer killed inside zip_close leaves "<file>.tmp-PID.XXXXXX".
        if (const size_t dot = digits.find('.'); dot != std::string::npos) {
            const std::string random = digits.substr(dot + 1);
            if (random.size() != 6 || !std::all_of(random.begin(), random.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) != 0;
                }))
                continue;
            digits.resize(dot);
        }
        if (digits.empty() || digits.size() > 9 ||
            !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        const auto pid = static_cast<pid_t>(std::stol(digits));
        // Only files of processes that no longer exist (a live one may still be writing).
        if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
        std::error_code rec;
        if (fs::remove_all(e.path(), rec) > 0 && !rec) ++removed;
    }
    return removed;
}

fs::path resolve_links(const fs::path& path) {
    std::error_code ec;
    const fs::path start = fs::absolute(path, ec);
    if (ec) return path.lexically_normal();
    // `done` never holds a link (each component is resolved as it is appended), so its parent is
    // the real parent and ".." may drop its last component.
    fs::path done = start.root_path();
    const fs::path start_rel = start.relative_path();
    std::vector<fs::path> todo(start_rel.begin(), start_rel.end());
    std::reverse(todo.begin(), todo.end());  // next component last
    int hops = 0;
    while (!todo.empty()) {
        const fs::path c = todo.back();
        todo.pop_back();
        if (c.empty() || c == ".") continue;
        if (c == "..") {
            done = done.parent_path();
            continue;
        }
        const fs::path next = done / c;
        struct stat st {};
        if (hops < 40 && ::lstat(next.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
            const fs::path target = fs::read_symlink(next, ec);
            if (!ec) {
                ++hops;
                if (target.is_absolute()) done = target.root_path();
                const fs::path rel = target.relative_path();
                std::vector<fs::path> parts(rel.begin(), rel.end());
                for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_back(*it);
                continue;
            }
        }
        done = next;
    }
    return done;
}

bool same_file(const fs::path& a, const fs::path& b) {
    if (resolve_links(a) == resolve_links(b)) return true;
    std::error_code ec;
    return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec) && !ec;
}

void commit_file(const fs::path& tmp, const fs::path& target) {
    OutputTarget t;
    try {
        t = resolve_output(target);
        if (t.write_through) {
            std::error_code ec;
            SEGRANK_CHECK(fs::is_regular_file(tmp, ec), target.string(),
                          ": cannot write the folder '", tmp.string(),
                          "' into a device or descriptor");
            copy_through(tmp, t.path, target);
        }
    } catch (...) {
        remove_quietly(tmp);
        throw;
    }
    if (t.write_through) {
        remove_quietly(tmp);
    } else {
        rename_into_place(tmp, t, target);
    }
}

AtomicOutput::AtomicOutput(const fs::path& target) : target_(target) {
    const OutputTarget t = resolve_output(target);
    if (t.write_through) {
        static std::atomic<int> counter{0};
        tmp_ = fs::temp_directory_path() /
               str("segrank-", ::getpid(), "-", counter++, "-", target.filename().string(), ".tmp");
    } else {
        tmp_ = temp_beside(t.path);
    }
}

AtomicOutput::~AtomicOutput() {
    if (!done_) remove_quietly(tmp_);
}

void AtomicOutput::commit() {
    SEGRANK_CHECK(!done_, target_.string(), ": committed twice");
    done_ = true;  // commit_file removes the temporary file on failure too
    commit_file(tmp_, target_);
}

CreatedDirectories::CreatedDirectories(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    fs::path target = fs::absolute(dir).lexically_normal();
    if (target.filename().empty() && target != target.root_path()) target = target.parent_path();
    std::vector<fs::path> missing;  // innermost first
    for (fs::path p = target;; p = p.parent_path()) {
        std::error_code ec;
        const auto st = fs::status(p, ec);
        if (fs::exists(st)) {
            SEGRANK_CHECK(fs::is_directory(st), "'", p.string(), "' exists and is not a directory",
                          p == target ? "" : str(" (needed for '", dir.string(), "')"));
            break;
        }
        missing.push_back(p);
        if (p == p.root_path() || !p.has_parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        std::error_code ec;
        if (!fs::create_directory(*it, ec) && ec) {
            remove_empty_created();
            throw Error(str("cannot create directory '", it->string(), "': ", ec.message()));
        }
        created_.push_back(*it);
    }
}

CreatedDirectories::~CreatedDirectories() { remove_empty_created(); }

void CreatedDirectories::remove_empty_created() noexcept {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
        std::error_code ec;
        if (std::filesystem::is_empty(*it, ec) && !ec) std::filesystem::remove(*it, ec);
    }
    created_.clear();
}

}  // namespace segrank
