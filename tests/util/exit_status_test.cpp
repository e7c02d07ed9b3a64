// How an exception escaping a subcommand becomes a message and an exit status (util/exit_status.h).
#include "util/exit_status.h"

#include <doctest/doctest.h>

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

}  // namespace segrank
