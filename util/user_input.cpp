// require_regular_input and echo_value (see user_input.h).
#include "util/user_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <fstream>
#include <optional>
#include <system_error>

#include "gnn/core/check.h"

namespace segrank {

namespace {

const char* kind_of(const struct stat& st) {
    return S_ISDIR(st.st_mode)    ? "a directory"
           : S_ISREG(st.st_mode)  ? "a regular file"
           : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
           : S_ISCHR(st.st_mode)  ? "a character device"
           : S_ISBLK(st.st_mode)  ? "a block device"
           : S_ISSOCK(st.st_mode) ? "a socket"
                                  : "not a regular file";
}

}  // namespace

std::optional<std::string> describe_link_problem(const std::filesystem::path& path, int err) {
    if (err == ELOOP)
        return std::string(
            "is a symbolic link loop (ELOOP: too many levels of symbolic links; the links point "
            "at each other, no file is at the end)");
    struct stat lst {};
    if (err != ENOENT || ::lstat(path.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode))
        return std::nullopt;
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
    return str("is a broken symbolic link (to '", ec ? std::string("?") : target.string(),
               "', which does not exist)");
}

bool is_link_loop(const std::filesystem::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return false;
    return ::stat(path.c_str(), &st) != 0 && errno == ELOOP;
}

void require_regular_input(const std::filesystem::path& path, std::string_view what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        if (const auto link = describe_link_problem(path, err))
            throw Error(str(path.string(), ": ", *link, ", expected ", what));
        SEGRANK_CHECK(err != ENOENT, path.string(), ": no such file (expected ", what, ")");
        throw Error(str(path.string(), ": cannot read (expected ", what,
                        "): ", std::generic_category().message(err)));
    }
    if (S_ISREG(st.st_mode)) return;
    throw Error(str(path.string(), ": is ", kind_of(st), ", expected ", what, " (a regular file)"));
}

void require_readable_input(const std::filesystem::path& path, std::string_view what) {
    require_regular_input(path, what);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int err = errno;
        throw Error(str(path.string(), ": cannot open for reading (expected ", what,
                        "): ", std::generic_category().message(err)));
    }
    ::close(fd);
}

const char* file_kind(const std::filesystem::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return nullptr;
    return kind_of(st);
}

void require_input_folder(const std::filesystem::path& path, std::string_view what) {
    const char* kind = file_kind(path);
    if (kind == nullptr) {
        struct stat st {};
        const int err = ::stat(path.c_str(), &st) != 0 ? errno : 0;
        if (const auto link = describe_link_problem(path, err))
            throw Error(str(path.string(), ": ", *link, ", expected ", what));
    }
    SEGRANK_CHECK(kind != nullptr, path.string(), ": no such directory (expected ", what, ")");
    SEGRANK_CHECK(std::filesystem::is_directory(path), path.string(), ": is ", kind, ", expected ",
                  what);
}

namespace {

std::string mib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return buf;
}

[[noreturn]] void too_large(const std::filesystem::path& path, std::string_view what,
                            uint64_t bytes, uint64_t max_bytes, bool at_least) {
    throw Error(str(path.string(), ": ", at_least ? "at least " : "", bytes, " bytes (", mib(bytes),
                    "), more than the ", max_bytes, " bytes (", mib(max_bytes), ") allowed for ",
                    what));
}

}  // namespace

void require_input_size(const std::filesystem::path& path, std::string_view what,
                        uint64_t max_bytes) {
    require_regular_input(path, what);
    struct stat st {};
    SEGRANK_CHECK(::stat(path.c_str(), &st) == 0, path.string(), ": cannot read (expected ", what,
                  "): ", std::generic_category().message(errno));
    const auto bytes = static_cast<uint64_t>(st.st_size);
    if (bytes > max_bytes) too_large(path, what, bytes, max_bytes, false);
}

std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                            uint64_t max_bytes) {
    require_input_size(path, what, max_bytes);
    require_readable_input(path, what);
    std::ifstream in(path, std::ios::binary);
    SEGRANK_CHECK(in.good(), path.string(), ": cannot open for reading (expected ", what,
                  "): ", std::generic_category().message(errno));
    std::string out;
    constexpr size_t kChunk = size_t{1} << 20;
    while (true) {
        const size_t old = out.size();
        out.resize(old + kChunk);
        in.read(out.data() + old, static_cast<std::streamsize>(kChunk));
        out.resize(old + static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
        if (out.size() > max_bytes) too_large(path, what, out.size(), max_bytes, true);
        if (!in) break;
    }
    SEGRANK_CHECK(!in.bad(), path.string(), ": read error");
    return out;
}

namespace {

// Length of the UTF-8 sequence starting at s[i] (2..4) when it is well formed (no overlong form,
// no surrogate, at most U+10FFFF), else 0.
size_t utf8_sequence(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    const size_t n = c >= 0xc2 && c <= 0xdf   ? 2
                     : c >= 0xe0 && c <= 0xef ? 3
                     : c >= 0xf0 && c <= 0xf4 ? 4
                                              : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((b(k) & 0xc0) != 0x80) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(1) >= 0xa0) return 0;  // UTF-16 surrogate
    if (c == 0xf0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return n;
}

void append_hex(std::string& out, const char* format, unsigned value) {
    char buf[12];
    std::snprintf(buf, sizeof buf, format, value);
    out += buf;
}

}  // namespace

std::optional<std::string> path_length_problem(std::string_view path) {
    for (const auto& part : std::filesystem::path(path)) {
        const size_t n = part.native().size();
        if (n > NAME_MAX)
            return str("the path component '", echo_value(part.native()), "' is ", n,
                       " bytes long, more than the ", NAME_MAX,
                       " bytes a file name may have (File name too long)");
    }
    if (path.size() >= PATH_MAX)
        return str("the path is ", path.size(), " bytes long, more than the ", PATH_MAX - 1,
                   " bytes (PATH_MAX) a path may have (File name too long)");
    return std::nullopt;
}

std::string echo_value(std::string_view value, size_t max) {
    std::string out;
    size_t i = 0;
    while (i < value.size()) {
        const unsigned char c = static_cast<unsigned char>(value[i]);
        const size_t n = c < 0x80 ? 1 : utf8_sequence(value, i);
        if (i + std::max<size_t>(n, 1) > max) break;  // a character is shown whole or not at all
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f || n == 0) {
            append_hex(out, "\\x%02x", c);
        } else if (n == 2 && c == 0xc2 && static_cast<unsigned char>(value[i + 1]) < 0xa0) {
            append_hex(out, "\\u%04x", static_cast<unsigned char>(value[i + 1]));  // C1 control
        } else {
            out.append(value.substr(i, n));
        }
        i += std::max<size_t>(n, 1);
    }
    if (i < value.size()) out += str("... (", value.size() - i, " more bytes)");
    return out;
}

std::string echo_lines(std::string_view text) {
    std::string out;
    size_t start = 0;
    for (size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n', start)) {
        out += echo_value(text.substr(start, nl - start), std::string_view::npos) + '\n';
        start = nl + 1;
    }
    return out + echo_value(text.substr(start), std::string_view::npos);
}

}  // namespace segrank
