// Hostile output paths of ingest, synth, pack, tune and bench --memory (ctest label `hostile`,
// trial 17 W5 and W6): ingest --out at a dangling symbolic link, a link loop or a 300-byte
// component is named as synth names it (was "cannot create directory ...: File exists / File name
// too long"), and an --out / --work-dir whose own path fits PATH_MAX but whose files do not is
// refused naming the option and the longest name written, before anything is created (was a raw
// "File name too long"; bench --memory left its new folders).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

// A path of exactly `bytes` bytes under `base` (which must be shorter than bytes - 2): components
// of 200 'e' and a last one of 'f' that makes up the rest. Nothing of it exists.
std::string long_path(const fs::path& base, size_t bytes) {
    std::string p = base.string();
    while (p.size() + 201 < bytes) p += "/" + std::string(200, 'e');
    return p + "/" + std::string(bytes - p.size() - 1, 'f');
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank ingest --out at a dangling link, a link loop or a 300-byte name is named as "
        "synth names it, and the link is kept") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const std::string pb = sq((data / "xla_tuning" / "op_tuning_data.pb").string());
        const fs::path dir = scratch_dir("hostile_ingest_out_links");
        fs::create_symlink("/nonexistent/segrank_dir", dir / "dang");
        fs::create_symlink("loop2", dir / "loop1");
        fs::create_symlink("loop1", dir / "loop2");
        const auto dang = run_segrank_in(dir, "ingest " + pb + " --out dang");
        INFO(dang.output);
        CHECK(dang.exit_code == 1);
        CHECK(contains_text(dang.output,
                            "--out dang: is a dangling symbolic link to '/nonexistent/segrank_dir' "
                            "(which does not exist)"));
        CHECK(fs::is_symlink(fs::symlink_status(dir / "dang")));
        const auto loop = run_segrank_in(dir, "ingest " + pb + " --out loop1/sub");
        INFO(loop.output);
        CHECK(loop.exit_code == 1);
        CHECK(
            contains_text(loop.output, "--out loop1/sub: 'loop1' is a symbolic link loop (ELOOP"));
        CHECK_FALSE(contains_text(loop.output, "File exists"));
        const auto name =
            run_segrank_in(dir, "ingest " + pb + " --out " + std::string(300, 'd') + "/x");
        INFO(name.output);
        CHECK(name.exit_code == 1);
        CHECK(contains_text(name.output,
                            " is 300 bytes long, more than the 255 bytes a file name "
                            "may have (File name too long): give a shorter --out"));
        CHECK(fs::is_symlink(fs::symlink_status(dir / "loop1")));
        int entries = 0;
        for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
        CHECK(entries == 3);  // the three links, nothing created
    }

    TEST_CASE(
        "an --out or --work-dir that fits PATH_MAX but whose files do not is refused by ingest, "
        "synth, pack, tune and bench --memory before anything is created") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const fs::path dir = scratch_dir("hostile_long_out_files");
        write_tiny_layout_collection(dir / "data");
        const fs::path base = dir / "deep";
        const std::string l = long_path(base, 4087);  // fits PATH_MAX (4096 with the NUL)
        const std::string pb = sq((data / "xla_tuning" / "op_tuning_data.pb").string());
        struct Case {
            std::string args, option, written;
        };
        const Case cases[] = {
            {"ingest " + pb + " --out " + sq(l), "--out",
             "npz/layout/xla/random/train/m.npz.tmp-4294967295.XXXXXX"},
            {"synth --out " + sq(l) + " --collections layout --graphs 6", "--out",
             ".synth-staging-4294967295/npz/layout/xla/random/train/"
             "synth_layout_000000.npz.tmp-4294967295.XXXXXX"},
            {"pack " + sq((dir / "data").string()) + " --out " + sq(l), "--out",
             ".h5.tmp-4294967295.tmp-4294967295"},
            {"pack " + sq((dir / "data" / "npz" / "layout" / "xla" / "random" / "train").string()) +
                 " --out " + sq(l + ".h5"),
             "--out", fs::path(l + ".h5").filename().string() + ".tmp-4294967295.tmp-4294967295"},
            {"tune --checkpoint missing.ckpt.h5 --graph missing.npz --budget 4 --out " + sq(l),
             "--out", "measurements.jsonl.tmp-4294967295"},
            {"bench --memory --cases nodes_1e4 --threads 1 --work-dir " + sq(l), "--work-dir",
             ".h5.tmp-4294967295"},
            {"bench --memory --make-store " + sq(l) + " --cases nodes_1e4", "--make-store",
             "nodes_1e4/nodes_1e4.h5.tmp-4294967295"}};
        for (const Case& c : cases) {
            const auto r = run_segrank_in(dir, c.args);
            INFO(c.args.substr(0, 60), ": ", r.output);
            CHECK(r.exit_code == 1);
            const size_t bytes = c.args.find(".h5'") != std::string::npos ? 4090 : 4087;
            CHECK(contains_text(r.output, c.option + " " + dir.string()));
            CHECK(contains_text(r.output, ": the path is " + std::to_string(bytes) +
                                              " bytes long; with the names written "));
            CHECK(contains_text(r.output, c.written +
                                              ") it exceeds PATH_MAX (4096 bytes): give a "
                                              "shorter " +
                                              c.option));
            CHECK_FALSE(contains_text(r.output, "File name too long"));
            CHECK_FALSE(fs::exists(base));  // no folder made (bench --memory made 21)
        }
    }

    TEST_CASE(
        "segrank ingest names a module whose file path is too long with its temporary suffix, "
        "before anything is written, and ingests into the longest --out that fits") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const fs::path dir = scratch_dir("hostile_ingest_long_module_path");
        const fs::path base = dir / "deep";
        // 4039 + "/npz/layout/xla/random/train/m.npz.tmp-4294967295.XXXXXX" (56) = 4095: --out
        // passes, but the layout modules' names are longer than "m".
        const std::string l = long_path(base, 4039);
        const auto r = run_segrank_in(
            dir, "ingest " + sq((data / "xla_tuning" / "module_tuning_data_layout.pb").string()) +
                     " --out " + sq(l));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "module_tuning_data_layout.pb: module '"));
        CHECK(contains_text(r.output,
                            "but with its temporary suffix (.tmp-4294967295.XXXXXX) the "
                            "path is "));
        CHECK(contains_text(r.output,
                            "(PATH_MAX) a path may have (File name too long): give a "
                            "shorter --out"));
        CHECK_FALSE(fs::exists(base));
        // The tile modules' files (npz/tile/xla/train/<name>.npz) fit under the same --out.
        const auto ok = run_segrank_in(
            dir, "ingest " + sq((data / "xla_tuning" / "op_tuning_data.pb").string()) + " --out " +
                     sq(l));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(fs::is_directory(l + "/npz/tile/xla/train"));
    }
}
