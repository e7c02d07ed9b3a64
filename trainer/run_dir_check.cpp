// Whether a run can create its run directory, checked before anything is written
// (trainer/run_dir.h).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "gnn/core/check.h"
#include "trainer/run_dir.h"
#include "util/user_input.h"

namespace segrank {

void check_run_dir_creatable(const std::filesystem::path& dir, std::string_view label) {
    namespace fs = std::filesystem;
    constexpr size_t kShownPathBytes = 512;  // a 5000-byte name is cut, an ordinary path is whole
    const std::string head = str(label, " '", echo_value(dir.string(), kShownPathBytes), "': ");
    SEGRANK_CHECK(!dir.empty(), label, ": the path is empty (expected a run directory)");
    for (const fs::path& part : dir) {
        const size_t n = part.native().size();
        SEGRANK_CHECK(n <= NAME_MAX, head, "the path component '", echo_value(part.native()),
                      "' is ", n, " bytes long, more than the ", NAME_MAX,
                      " bytes a file name may have (File name too long)");
    }
    // The longest name a run writes directly in its folder: a checkpoint's temporary.
    constexpr std::string_view kLongestChild = "/last.ckpt.h5.tmp-4294967295";
    const size_t total = dir.native().size() + kLongestChild.size();
    SEGRANK_CHECK(total < PATH_MAX, head, "the path is ", dir.native().size(),
                  " bytes long; with the names the run writes in it (", kLongestChild.substr(1),
                  ") it exceeds PATH_MAX (", PATH_MAX, " bytes): choose a shorter run directory");
    std::error_code ec;
    // Links that point at each other (loop1 -> loop2 -> loop1): dir or a folder above it.
    for (fs::path at = dir; !at.empty(); at = at.has_relative_path() ? at.parent_path() : "")
        if (is_link_loop(at))
            throw Error(str(head,
                            at == dir ? std::string()
                                      : str("cannot be created: '",
                                            echo_value(at.string(), kShownPathBytes), "' "),
                            *describe_link_problem(at, ELOOP),
                            ": remove one of the links or give another path"));
    if (fs::is_symlink(fs::symlink_status(dir, ec)) && !fs::exists(fs::status(dir, ec)))
        return;         // a dangling link: check_fresh_run_dir names its target
    fs::path at = dir;  // the nearest existing ancestor (or dir itself)
    while (!at.empty() && !fs::exists(fs::status(at, ec))) {
        SEGRANK_CHECK(ec.value() != ELOOP, head, "cannot be created (", ec.message(), ")");
        // A dangling link above dir: creating dir through it fails ("File exists").
        if (at != dir && fs::is_symlink(fs::symlink_status(at, ec)))
            throw Error(str(head, "cannot be created: '", echo_value(at.string(), kShownPathBytes),
                            "' is a dangling symbolic link to '",
                            echo_value(fs::read_symlink(at, ec).string(), kShownPathBytes),
                            "' (which does not exist): remove the link, create that folder or "
                            "give another path"));
        at = at.has_relative_path() ? at.parent_path() : fs::path();
    }
    if (at.empty()) at = ".";
    const auto st = fs::status(at, ec);
    if (!fs::is_directory(st)) {
        SEGRANK_CHECK(at != dir, head,
                      "exists and is not a directory (expected a run directory to create or "
                      "reuse)");
        throw Error(str(head, "cannot be created: '", echo_value(at.string(), kShownPathBytes),
                        "' is not a directory (", std::strerror(ENOTDIR), ")"));
    }
    if (::access(at.c_str(), W_OK | X_OK) == 0) return;
    const int err = errno;
    throw Error(str(
        head,
        at == dir ? "the run cannot write into this folder ("
                  : str("cannot be created in '", echo_value(at.string(), kShownPathBytes), "' ("),
        std::strerror(err), ")"));
}

}  // namespace segrank
