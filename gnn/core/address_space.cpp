#include "gnn/core/address_space.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <new>

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
// Kept free for oneDNN when the engine maps a large block or creates a new matmul primitive: a
// new primitive maps JIT code and profiling buffers (a few MiB, unchecked). Measured with the
// huge-graph evaluate / predict / train of docs/config.md#out-of-memory swept over `ulimit -v`
// 150000..200000 KiB in 1000 KiB steps: 4 MiB still crashed, 8 MiB did not; 2x margin.
constexpr uint64_t kMatmulHeadroomBytes = 16 * kMiB;
constexpr uint64_t kDefaultStackBytes = 8 * kMiB;

// The address space this process has mapped (/proc/self/statm's first field, in pages, times the
// page size), or 0 when it cannot be read.
uint64_t mapped_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0;
    unsigned long long pages = 0;
    const int got = std::fscanf(f, "%llu", &pages);
    std::fclose(f);
    if (got != 1) return 0;
    static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    return pages * page;
}

}  // namespace

uint64_t matmul_headroom_bytes() { return kMatmulHeadroomBytes; }

bool leaves_matmul_headroom(uint64_t mapped, uint64_t bytes, uint64_t limit) {
    const uint64_t need = matmul_headroom_bytes();
    return mapped <= limit && bytes <= limit - mapped && need <= limit - mapped - bytes;
}

void check_matmul_headroom(size_t bytes) {
    rlimit as{};
    if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return;
    if (!leaves_matmul_headroom(mapped_bytes(), bytes, static_cast<uint64_t>(as.rlim_cur)))
        throw std::bad_alloc();
}

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
