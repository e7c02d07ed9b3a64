#include "gnn/core/address_space.h"

#include <sys/resource.h>

#include <algorithm>

#include "gnn/core/check.h"
#include "gnn/core/parallel.h"

namespace segrank {

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
// One thread, a tiny model: about 103 MiB measured (segrank evaluate --threads 1 of a 16-wide
// model works under `ulimit -v 105000`, crashes in oneDNN's JIT under 100000); 25 MiB margin.
constexpr uint64_t kBaseBytes = 128 * kMiB;
// Besides its stack, each further OpenMP thread takes oneDNN / libgomp buffers (measured about
// 8.5 MiB per thread with 8 MiB stacks); 4 MiB margin.
constexpr uint64_t kPerThreadExtraBytes = 4 * kMiB;
constexpr uint64_t kDefaultStackBytes = 8 * kMiB;

}  // namespace

uint64_t matmul_address_space_floor(int threads, uint64_t stack_bytes) {
    const uint64_t further = static_cast<uint64_t>(std::max(1, threads) - 1);
    return kBaseBytes + further * (stack_bytes + kPerThreadExtraBytes);
}

void check_address_space_for_matmuls(std::string_view command) {
    rlimit as{};
    if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return;
    rlimit stack{};
    uint64_t stack_bytes = kDefaultStackBytes;
    // An unlimited stack rlimit gives new threads glibc's default (8 MiB on x86-64).
    if (getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur != RLIM_INFINITY)
        stack_bytes = static_cast<uint64_t>(stack.rlim_cur);
    const int threads = num_threads();
    const uint64_t floor = matmul_address_space_floor(threads, stack_bytes);
    const uint64_t limit = static_cast<uint64_t>(as.rlim_cur);
    SEGRANK_CHECK(limit >= floor, "the address-space limit (ulimit -v) is ", limit / kMiB,
                  " MiB; segrank ", command, " needs at least ", (floor + kMiB - 1) / kMiB,
                  " MiB (oneDNN's JIT code buffers and the libraries) with ", threads,
                  " OpenMP thread(s): raise the limit, e.g. `ulimit -v ", (floor + 1023) / 1024,
                  "` (KiB), or use fewer threads");
}

}  // namespace segrank
