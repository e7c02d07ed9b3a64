// The memory bound of one input array and its messages (data/input_memory.h).
#include "data/input_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "util/rss.h"

namespace segrank {
namespace {

std::string mib(uint64_t bytes) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return buf;
}

}  // namespace

InputArrayBound max_input_array_bytes() {
    if (const char* env = std::getenv(kMaxInputBytesEnv); env && *env) {
        char* end = nullptr;
        errno = 0;
        const unsigned long long v = std::strtoull(env, &end, 10);
        SEGRANK_CHECK(*env != '-' && *end == '\0' && errno == 0 && v > 0, kMaxInputBytesEnv, " = '",
                      env, "': expected a positive integer number of bytes");
        return {static_cast<uint64_t>(v), kMaxInputBytesEnv};
    }
    InputArrayBound b{physical_memory_bytes(), "the physical memory"};
    rlimit as{};
    if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
        static_cast<uint64_t>(as.rlim_cur) < b.bytes)
        b = {static_cast<uint64_t>(as.rlim_cur), "the address-space limit (ulimit -v)"};
    return b;
}

void check_input_array_bytes(uint64_t bytes, const std::string& where, std::string_view what) {
    const InputArrayBound b = max_input_array_bytes();
    SEGRANK_CHECK(bytes <= b.bytes, where, ": ", what, " declares ", bytes, " bytes (", mib(bytes),
                  ") in memory, more than the ", b.bytes, " bytes (", mib(b.bytes),
                  ") allowed for one input array (", b.source, "; ", kMaxInputBytesEnv,
                  " sets another bound)");
}

}  // namespace segrank
