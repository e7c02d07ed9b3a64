// Error type and check macros (docs/style.md#errors): SEGRANK_CHECK for user/file/config errors
// (throws segrank::Error), SEGRANK_ASSERT for our own invariants (always on), SEGRANK_DASSERT
// (debug only).
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace segrank {

/// The one exception type for bad input (files, configs, CLI) and failed external calls.
/// The message names the file/field and the expectation; `what()` is shown to the user as is.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
    std::ostringstream os;
    (os << ... << std::forward<Args>(args));
    return os.str();
}
[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const std::string& msg);
}  // namespace detail

/// Builds a message from streamable parts: `str("got ", n, " rows")`.
template <typename... Args>
std::string str(Args&&... args) {
    return detail::concat(std::forward<Args>(args)...);
}

}  // namespace segrank

/// Input check: throws segrank::Error with the streamed message when `cond` is false.
#define SEGRANK_CHECK(cond, ...)                                          \
    do {                                                                  \
        if (!(cond)) throw ::segrank::Error(::segrank::str(__VA_ARGS__)); \
    } while (0)

/// Internal invariant (a bug if it fails): throws std::logic_error naming file:line.
#define SEGRANK_ASSERT(cond, ...)                                                          \
    do {                                                                                   \
        if (!(cond))                                                                       \
            ::segrank::detail::assert_fail(#cond, __FILE__, __LINE__,                      \
                                           ::segrank::str("" __VA_OPT__(, ) __VA_ARGS__)); \
    } while (0)

#ifndef NDEBUG
#define SEGRANK_DASSERT(cond, ...) SEGRANK_ASSERT(cond __VA_OPT__(, ) __VA_ARGS__)
#else
#define SEGRANK_DASSERT(cond, ...) \
    do {                           \
    } while (0)
#endif
