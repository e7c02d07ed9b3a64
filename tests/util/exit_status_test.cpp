// How an exception escaping a subcommand becomes a message and an exit status (util/exit_status.h).
#include "util/exit_status.h"

#include <doctest/doctest.h>
#include <sys/resource.h>

#include <filesystem>
#include <new>
#include <stdexcept>
#include <system_error>

#include "gnn/core/check.h"

namespace segrank {

TEST_CASE(
    "exceptions become exit 1 for input and environment errors (Error, filesystem, out of memory) "
    "and exit 3 for others") {
    auto report = [](auto e) { return classify_exception(std::make_exception_ptr(e)); };
    const ExitReport err = report(Error("data.root: 'x' does not exist"));
    CHECK(err.code == 1);
    CHECK(err.message == "error: data.root: 'x' does not exist");
    const ExitReport fs = report(std::filesystem::filesystem_error(
        "cannot create directories", std::filesystem::path("/ro/out"),
        std::make_error_code(std::errc::read_only_file_system)));
    CHECK(fs.code == 1);
    CHECK(fs.message == "error: cannot create directories '/ro/out': Read-only file system");
    const ExitReport oom = report(std::bad_alloc());
    CHECK(oom.code == 1);
    CHECK(oom.message == "error: out of memory (an allocation failed)");
    const ExitReport bug = report(std::logic_error("vector::_M_range_check"));
    CHECK(bug.code == 3);
    CHECK(bug.message == "internal error: vector::_M_range_check");
    const ExitReport other = report(42);
    CHECK(other.code == 3);
    CHECK(other.message == "internal error: unknown exception");
}

TEST_CASE(
    "out of memory under an address-space limit names the limit and what was mapped, unlimited "
    "it does not") {
    rlimit saved{};
    REQUIRE(getrlimit(RLIMIT_AS, &saved) == 0);
    // A finite limit far above anything mapped (1 PiB; AddressSanitizer's shadow fits): the
    // message's numbers come from getrlimit and /proc/self/statm.
    rlimit lim = saved;
    lim.rlim_cur = rlim_t{1} << 50;
    if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < lim.rlim_cur)
        lim.rlim_cur = saved.rlim_max;
    REQUIRE(setrlimit(RLIMIT_AS, &lim) == 0);
    const std::string limited = out_of_memory_message();
    REQUIRE(setrlimit(RLIMIT_AS, &saved) == 0);
    CHECK(
        limited.starts_with("error: out of memory (an allocation failed; the address-space "
                            "limit (ulimit -v) is " +
                            std::to_string(lim.rlim_cur >> 20) + " MiB, of which "));
    CHECK(limited.ends_with(" MiB were mapped: raise the limit)"));
    if (saved.rlim_cur == RLIM_INFINITY)
        CHECK(out_of_memory_message() == "error: out of memory (an allocation failed)");
}

}  // namespace segrank
