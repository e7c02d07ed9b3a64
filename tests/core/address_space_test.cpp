// The address-space floor of the commands that run oneDNN matmuls (gnn/core/address_space.h).
#include "gnn/core/address_space.h"

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <new>

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST_CASE("matmul_address_space_floor is 128 MiB on one thread and grows by a stack per thread") {
    CHECK(segrank::matmul_address_space_floor(1, 8 * kMiB) == 128 * kMiB);
    CHECK(segrank::matmul_address_space_floor(0, 8 * kMiB) == 128 * kMiB);
    CHECK(segrank::matmul_address_space_floor(3, 8 * kMiB) == 152 * kMiB);
    CHECK(segrank::matmul_address_space_floor(2, 64 * kMiB) == 196 * kMiB);
}

TEST_CASE("check_address_space_for_matmuls passes without an address-space limit") {
    rlimit as{};
    REQUIRE(getrlimit(RLIMIT_AS, &as) == 0);
    if (as.rlim_cur == RLIM_INFINITY) CHECK_NOTHROW(segrank::check_address_space_for_matmuls("x"));
}

TEST_CASE("leaves_matmul_headroom keeps 16 MiB free below the limit") {
    CHECK(segrank::matmul_headroom_bytes() == 16 * kMiB);
    CHECK(segrank::leaves_matmul_headroom(100 * kMiB, 20 * kMiB, 136 * kMiB));
    CHECK_FALSE(segrank::leaves_matmul_headroom(100 * kMiB, 20 * kMiB + 1, 136 * kMiB));
    CHECK_FALSE(segrank::leaves_matmul_headroom(130 * kMiB, 0, 136 * kMiB));
    CHECK_FALSE(segrank::leaves_matmul_headroom(140 * kMiB, 0, 136 * kMiB));
    CHECK_FALSE(segrank::leaves_matmul_headroom(0, UINT64_MAX, 136 * kMiB));
}

// A finite RLIMIT_AS cannot be set under AddressSanitizer (its shadow memory needs terabytes).
#if !defined(__SANITIZE_ADDRESS__)
TEST_CASE(
    "check_matmul_headroom under a finite address-space limit refuses a request that would "
    "leave less than the headroom") {
    rlimit old{};
    REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
    // 1 GiB above what is mapped now; the limit is restored before any CHECK.
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    REQUIRE(f != nullptr);
    unsigned long long pages = 0;
    REQUIRE(std::fscanf(f, "%llu", &pages) == 1);
    std::fclose(f);
    const uint64_t mapped = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t limit = mapped + 1024 * kMiB;
    if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < limit) return;  // already tighter
    rlimit tight = old;
    tight.rlim_cur = static_cast<rlim_t>(limit);
    REQUIRE(setrlimit(RLIMIT_AS, &tight) == 0);
    bool small_ok = false, large_refused = false, zero_ok = false;
    try {
        segrank::check_matmul_headroom(512 * kMiB);  // leaves about 512 MiB
        small_ok = true;
    } catch (const std::bad_alloc&) {
    }
    try {
        segrank::check_matmul_headroom(0);
        zero_ok = true;
    } catch (const std::bad_alloc&) {
    }
    try {
        segrank::check_matmul_headroom(1024 * kMiB - 8 * kMiB);  // leaves about 8 MiB < 16 MiB
    } catch (const std::bad_alloc&) {
        large_refused = true;
    }
    REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
    CHECK(small_ok);
    CHECK(zero_ok);
    CHECK(large_refused);
    if (old.rlim_cur == RLIM_INFINITY)  // no limit again: nothing is refused
        CHECK_NOTHROW(segrank::check_matmul_headroom(size_t{1} << 40));
}
#endif
