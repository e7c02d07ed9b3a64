// scripts/check_size.py on small trees written here: an oversized file or function fails unless
// allow-listed with a reason, tests/ is left out, and a bad allow-list is refused.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

void write_text(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
}

/// A C++ file of exactly `lines` lines (comments).
std::string file_of_lines(int lines) {
    std::string s;
    for (int i = 0; i < lines; ++i) s += "// line\n";
    return s;
}

/// A function definition `head` spanning exactly `lines` lines (lines >= 3).
std::string function_of_lines(const std::string& head, int lines) {
    std::string s = head + " {\n    int x = 0;\n";
    for (int i = 0; i < lines - 4; ++i) s += "    x += 1;\n";
    return s + "    return x;\n}\n";
}

CommandResult check_size(const fs::path& root, const std::string& extra = "") {
    return run_command("python3 " + sq((source_dir() / "scripts" / "check_size.py").string()) +
                       " --root " + sq(root.string()) + " " + extra + " 2>&1");
}

}  // namespace

TEST_CASE("check_size.py fails on a new file over 500 lines and passes it once allow-listed") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path root = scratch_dir("check_size_file");
    write_text(root / "lib" / "ok.cpp", file_of_lines(500));
    auto r = check_size(root);
    INFO(r.output);
    CHECK(r.exit_code == 0);

    write_text(root / "lib" / "big.cpp", file_of_lines(501));
    r = check_size(root);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(r.output, "lib/big.cpp: file of 501 lines (limit 500)"));
    CHECK_FALSE(contains_text(r.output, "lib/ok.cpp"));

    write_text(root / "scripts" / "size_allowlist.txt", "# comment\nlib/big.cpp  to be split\n");
    r = check_size(root);
    INFO(r.output);
    CHECK(r.exit_code == 0);

    // Tests are not checked.
    write_text(root / "tests" / "lib" / "huge_test.cpp", file_of_lines(2000));
    r = check_size(root);
    INFO(r.output);
    CHECK(r.exit_code == 0);
}

TEST_CASE("check_size.py fails on a new function over 100 lines, names members by class") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path root = scratch_dir("check_size_function");
    write_text(root / "lib" / "f.cpp", function_of_lines("int short_enough()", 100) +
                                           "struct Foo { int bar(); };\n" +
                                           function_of_lines("int Foo::bar()", 101) +
                                           function_of_lines("static int long_free(int a)", 130));
    auto r = check_size(root);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(r.output, "lib/f.cpp:Foo::bar: function of 101 lines (limit 100)"));
    CHECK(contains_text(r.output, "lib/f.cpp:long_free: function of 130 lines (limit 100)"));
    CHECK_FALSE(contains_text(r.output, "short_enough"));

    const fs::path list = root / "list.txt";
    write_text(list, "lib/f.cpp:Foo::bar  to be split\nlib/f.cpp:long_free  a table\n");
    r = check_size(root, "--allowlist " + sq(list.string()));
    INFO(r.output);
    CHECK(r.exit_code == 0);

    // A stale entry is reported, not an error.
    write_text(list, "lib/f.cpp:Foo::bar  x\nlib/f.cpp:long_free  y\nlib/gone.cpp  z\n");
    r = check_size(root, "--allowlist " + sq(list.string()));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains_text(r.output, "lib/gone.cpp is no longer oversized"));
}

TEST_CASE("check_size.py refuses an allow-list entry without a reason and a missing list") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path root = scratch_dir("check_size_bad_list");
    write_text(root / "a.h", "int x;\n");
    const fs::path list = root / "list.txt";
    write_text(list, "a.h   reason\nb.cpp\n");
    auto r = check_size(root, "--allowlist " + sq(list.string()));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains_text(r.output, "list.txt:2: 'b.cpp' has no reason"));

    r = check_size(root, "--allowlist " + sq((root / "missing.txt").string()));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains_text(r.output, "no such allow-list file"));
}

}  // namespace segrank::test
