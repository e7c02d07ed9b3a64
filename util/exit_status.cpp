#include "util/exit_status.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <new>
#include <string_view>

#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {

namespace {

// "filesystem error: cannot create directories: Not a directory [a/b]" ->
// "cannot create directories 'a/b': Not a directory".
std::string describe(const std::filesystem::filesystem_error& e) {
    std::string_view what = e.what();
    constexpr std::string_view kPrefix = "filesystem error: ";
    if (what.starts_with(kPrefix)) what.remove_prefix(kPrefix.size());
    // libstdc++ appends " [path1]" (and " [path2]"); the paths are quoted below instead.
    if (const size_t bracket = what.find(" ["); bracket != std::string_view::npos)
        what = what.substr(0, bracket);
    const std::string reason = e.code().message();
    std::string op(what);
    if (op.size() > reason.size() + 2 && op.ends_with(": " + reason))
        op.resize(op.size() - reason.size() - 2);
    // A symbolic link loop is named as such, whatever the operation (ELOOP's own text, "too many
    // levels of symbolic links", does not say that the path is the loop).
    if (e.code() == std::errc::too_many_symbolic_link_levels && !e.path1().empty()) {
        const auto link = describe_link_problem(e.path1(), ELOOP);
        return str(e.path1().string(), ": ", *link);
    }
    std::string out = op;
    if (!e.path1().empty()) out += " '" + e.path1().string() + "'";
    if (!e.path2().empty()) out += " -> '" + e.path2().string() + "'";
    return out + ": " + reason;
}

// The address space this process has mapped (/proc/self/statm's first field x page size), or -1
// when it cannot be read. Reads with stdio into a stack buffer: no heap allocation after an
// allocation has just failed.
long long mapped_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long long pages = -1;
    if (std::fscanf(f, "%lld", &pages) != 1) pages = -1;
    std::fclose(f);
    const long page = sysconf(_SC_PAGESIZE);
    return pages < 0 || page <= 0 ? -1 : pages * page;
}

}  // namespace

std::string out_of_memory_message() {
    std::string msg = "error: out of memory (an allocation failed";
    rlimit lim{};
    if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
        const long long mapped = mapped_bytes();
        msg += str("; the address-space limit (ulimit -v) is ", lim.rlim_cur >> 20, " MiB");
        if (mapped >= 0) msg += str(", of which ", mapped >> 20, " MiB were mapped");
        msg += ": raise the limit";
    }
    return msg + ")";
}

namespace {

// What classify_exception reports, before its message is escaped.
ExitReport classify(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const Error& err) {
        return {1, std::string("error: ") + err.what()};
    } catch (const std::filesystem::filesystem_error& err) {
        return {1, "error: " + describe(err)};
    } catch (const std::bad_alloc&) {
        return {1, out_of_memory_message()};
    } catch (const std::exception& err) {
        return {3, std::string("internal error: ") + err.what()};
    } catch (...) {
        return {3, "internal error: unknown exception"};
    }
}

}  // namespace

ExitReport classify_exception(std::exception_ptr e) noexcept {
    try {
        ExitReport r = classify(e);
        // Text from outside inside the message (a file name with an ESC sequence) is escaped: it
        // would drive the terminal. The quoted texts were cut and escaped where they were quoted
        // (echo_value); this is the net under every message.
        r.message = echo_lines(r.message);
        return r;
    } catch (...) {  // building the message itself failed (out of memory)
        return {1, {}};
    }
}

}  // namespace segrank
