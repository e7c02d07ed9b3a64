// `segrank ingest` end to end on the real fixtures: output layout, numpy-loadable files with the
// published keys/dtypes, no partial output, --force, and error exits.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

std::string ingest(const fs::path& pb, const fs::path& out, const std::string& extra = "") {
    std::string cmd = "'";  // built with += : GCC 12 -Wrestrict false positive on "'" + std::string
    cmd += segrank_binary().string() + "' ingest '" + pb.string() + "' --out '" + out.string() +
           "' " + extra;
    return cmd;
}

// Runs a python3 (numpy) snippet; argv[1..] are the given paths.
CommandResult python(const std::string& code, const std::string& args) {
    const fs::path script = scratch_dir("py") / "check.py";
    std::ofstream(script) << code;
    return run_command("/usr/bin/python3 '" + script.string() + "' " + args);
}

}  // namespace

TEST_CASE(
    "ingest writes the 15 tile kernels into npz/tile/xla/train with the published keys and "
    "dtypes") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const fs::path out = scratch_dir("ingest_tile");
    const auto r = run_command(ingest(data / "xla_tuning" / "op_tuning_data.pb", out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("fusion.191") != std::string::npos);
    CHECK(r.output.find("579/581") != std::string::npos);
    CHECK(r.output.find("137344-3963794") != std::string::npos);
    const fs::path dir = out / "npz" / "tile" / "xla" / "train";
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir))
        files += e.path().extension() == ".npz" ? 1 : 0;
    CHECK(files == 15);

    // Same keys and dtypes as the public tile samples; product slots are 1 wherever the window
    // sizes (37..42) and slice/pad slots are all zero, in our files and in the samples.
    const std::string code = R"PY(
import sys, glob, numpy as np
ours, samples = sys.argv[1], sys.argv[2]
def sig(p):
    z = np.load(p)
    return {k: z[k].dtype.str for k in z.files}
ref = sig(sorted(glob.glob(samples + '/*.npz'))[0])
prod = [44, 52, 60, 68, 76, 84, 112, 116, 120, 124, 128, 132]
checked = 0
for p in sorted(glob.glob(ours + '/*.npz')) + sorted(glob.glob(samples + '/*.npz')):
    assert sig(p) == ref, (p, sig(p), ref)
    z = np.load(p)
    f = z['node_feat']
    assert f.shape[1] == 140
    assert z['edge_index'].shape[1] == 2
    assert z['config_feat'].shape == (len(z['config_runtime']), 24)
    for row in f:
        if not row[37:43].any() and not row[109:111].any() and not row[125:127].any():
            assert all(row[s] == 1 for s in prod), (p, row)
            checked += 1
z = np.load(ours + '/fusion.232.npz')
assert z['node_opcode'].tolist()[:4] == [63, 63, 2, 24]
assert z['config_runtime'].min() == 57188 and (z['config_runtime_normalizers'] == 57188).all()
print('OK', ref, checked)
)PY";
    const auto py = python(
        code, sq(dir.string()) + " " + sq((data / "npz_samples" / "tile_xla_test").string()));
    INFO(py.output);
    CHECK(py.exit_code == 0);
    CHECK(py.output.find("'node_opcode': '|u1'") != std::string::npos);
}

TEST_CASE(
    "ingest writes the layout module with the fixture's published shapes, loadable by numpy") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const fs::path out = scratch_dir("ingest_layout");
    const auto r = run_command(ingest(data / "xla_tuning" / "module_tuning_data_layout.pb", out,
                                      "--split valid --search default"));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("112/122") != std::string::npos);
    CHECK(r.output.find("910876401-925642328") != std::string::npos);
    const fs::path file = out / "npz" / "layout" / "xla" / "default" / "valid" / "main__.10904.npz";
    REQUIRE(fs::exists(file));
    const std::string code = R"PY(
import sys, numpy as np
z = np.load(sys.argv[1])
assert z['node_feat'].shape == (3163, 140) and z['node_feat'].dtype.str == '<f4'
assert z['edge_index'].shape == (5112, 2) and z['edge_index'].dtype.str == '<i8'
assert z['node_opcode'].dtype.str == '|u1'
assert z['node_config_ids'].shape == (62,) and z['node_config_ids'][0] == 443
assert z['node_config_feat'].shape == (112, 62, 18) and z['node_config_feat'].dtype.str == '<f4'
assert z['node_splits'].tolist() == [[0, 449, 453, 467, 471, 498, 502, 3163]]
assert z['config_runtime'].min() == 910876401 and z['config_runtime'].max() == 925642328
assert len(np.unique(z['node_config_feat'].reshape(112, -1), axis=0)) == 91
# beside the published keys: the loops' trip counts (3 loops of 2 trips holding 67 nodes)
t = z['node_loop_trips']
assert t.shape == (3163, 2) and t.dtype.str == '<f4', (t.shape, t.dtype)
assert (t[:, 0] == 1).sum() == 67 and (t[:, 0] == 0).sum() == 3163 - 67 and t[:, 1].sum() == 0
print('OK')
)PY";
    const auto py = python(code, sq(file.string()));
    INFO(py.output);
    CHECK(py.exit_code == 0);
}

TEST_CASE("ingest refuses to overwrite without --force and writes nothing, --force overwrites") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const fs::path out = scratch_dir("ingest_force");
    const fs::path pb = data / "xla_tuning" / "op_tuning_data.pb";
    const fs::path dir = out / "npz" / "tile" / "xla" / "train";
    fs::create_directories(dir);
    // One of 15 targets exists: an earlier (here truncated) npz file, which --force replaces.
    std::ofstream(dir / "copy.24.npz") << "PK\x03\x04old";
    const auto r = run_command(ingest(pb, out));
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("already exist") != std::string::npos);
    CHECK(r.output.find("copy.24.npz") != std::string::npos);
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
    CHECK(files == 1);  // no partial output
    const auto f = run_command(ingest(pb, out, "--force"));
    CHECK(f.exit_code == 0);
    CHECK(fs::file_size(dir / "copy.24.npz") > 100);
}

TEST_CASE(
    "ingest --out a collection root (holding tile/ or layout/) adds to the collections it holds, "
    "which stats then lists together") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const fs::path root = scratch_dir("ingest_into_root");
    // A root like the official npz/ folder: an earlier ingest's tile/ moved up one level.
    const auto first = run_command(
        ingest(data / "xla_tuning" / "op_tuning_data.pb", root / "first", "--split valid"));
    REQUIRE(first.exit_code == 0);
    fs::rename(root / "first" / "npz" / "tile", root / "tile");
    const auto r = run_command(ingest(data / "xla_tuning" / "op_tuning_data.pb", root));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_FALSE(fs::exists(root / "npz"));
    CHECK(fs::exists(root / "tile" / "xla" / "train" / "copy.24.npz"));
    std::string stats = "'";  // built with += (see ingest())
    stats += segrank_binary().string() + "' stats '" + root.string() + "' 2>&1";
    const auto st = run_command(stats);
    INFO(st.output);
    CHECK(st.exit_code == 0);
    CHECK(contains_text(st.output, "tile:xla:train"));
    CHECK(contains_text(st.output, "tile:xla:valid"));
    // Both npz/ and tile/ in one root: refused by every reader, naming both.
    fs::create_directories(root / "npz" / "tile" / "xla" / "test");
    const auto both = run_command(stats);
    CHECK(both.exit_code == 1);
    CHECK(contains_text(both.output,
                        root.string() + ": holds both npz/ and tile/ (collections in two places)"));
}

TEST_CASE("ingest rejects bad options and malformed files with a message and exit code 1") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const fs::path out = scratch_dir("ingest_bad");
    const auto bad_split =
        run_command(ingest(data / "xla_tuning" / "op_tuning_data.pb", out, "--split dev"));
    CHECK(bad_split.exit_code == 1);
    CHECK(bad_split.output.find("train, valid, test") != std::string::npos);

    const fs::path truncated = out / "cut.pb";
    {
        std::ifstream in(data / "xla_tuning" / "op_tuning_data.pb", std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::ofstream(truncated, std::ios::binary) << bytes.substr(0, 1000);
    }
    const auto cut = run_command(ingest(truncated, out));
    CHECK(cut.exit_code == 1);
    CHECK(cut.output.find("cut.pb") != std::string::npos);
    CHECK(cut.output.find("truncated") != std::string::npos);
    CHECK_FALSE(fs::exists(out / "npz"));

    const auto help = run_command(sq(segrank_binary().string()) + " ingest --help");
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("--force") != std::string::npos);
}
