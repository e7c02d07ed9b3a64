// The address-space floor of the commands that run oneDNN matmuls (gnn/core/address_space.h).
#include "gnn/core/address_space.h"

#include <doctest/doctest.h>
#include <sys/resource.h>

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
