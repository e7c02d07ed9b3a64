#include "util/signal_cleanup.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/test_paths.h"

namespace fs = std::filesystem;

TEST_CASE(
    "remove_tree_signal_safe removes a file, a symlink without its target and a nested tree") {
    const fs::path dir = segrank::test::scratch_dir("signal_safe_remove");
    const fs::path target = dir / "target.txt";
    std::ofstream(target) << "kept";
    const fs::path tree = dir / "tree";
    fs::create_directories(tree / "a" / "b" / "c");
    std::ofstream(tree / "a" / "b" / "c" / "f.bin") << "x";
    std::ofstream(tree / "top.txt") << "y";
    fs::create_directories(tree / ".hidden");
    fs::create_symlink(target, tree / "a" / "link");
    segrank::remove_tree_signal_safe(tree.c_str());
    CHECK_FALSE(fs::exists(tree));
    CHECK(fs::exists(target));  // a link is removed, not followed
    segrank::remove_tree_signal_safe(target.c_str());
    CHECK_FALSE(fs::exists(target));
    segrank::remove_tree_signal_safe((dir / "missing").c_str());  // no error
}
