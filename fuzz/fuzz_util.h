// Shared bits of the libFuzzer harnesses: a per-process scratch file for readers that take a path,
// and the rule every harness follows: segrank::Error is the expected outcome of bad input; any
// other exception escapes and libFuzzer reports it as a crash (as it does sanitizer reports, leaks
// and allocations above -malloc_limit_mb).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace segrank::fuzz {

/// Writes `size` bytes to `<TMPDIR or /tmp>/segrank-fuzz-<pid>.<ext>` (overwritten on each call)
/// and returns the path.
inline std::filesystem::path write_temp(const std::string& ext, const uint8_t* data, size_t size) {
    const char* tmp = std::getenv("TMPDIR");
    const std::filesystem::path p = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                                    ("segrank-fuzz-" + std::to_string(::getpid()) + "." + ext);
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (!f) std::abort();
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return p;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

}  // namespace segrank::fuzz
