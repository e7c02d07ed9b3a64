// require_regular_input and echo_value (see user_input.h).
#include "util/user_input.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
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
    std::ifstream in(path, std::ios::binary);
    SEGRANK_CHECK(in.good(), path.string(), ": cannot open for reading (expected ", what, ")");
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

std::string echo_value(std::string_view value, size_t max) {
    std::string out;
    const size_t shown = value.size() <= max ? value.size() : max;
    for (size_t i = 0; i < shown; ++i) {
        const unsigned char c = static_cast<unsigned char>(value[i]);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    if (shown < value.size()) out += str("... (", value.size(), " bytes)");
    return out;
}

}  // namespace segrank
