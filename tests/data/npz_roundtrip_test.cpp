// npz writer/reader round trips, numpy interoperability in both directions, and the exact npy v1.0
// header bytes numpy writes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "data/graph.h"
#include "data/npz.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

std::string py(const std::string& code) {
    const auto r = test::run_command("/usr/bin/python3 -c \"" + code + "\"");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return r.output;
}

std::vector<uint8_t> slurp(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A 3-node graph:  2 -> 1 -> 0 (node 2 consumes 1, 1 consumes 0), 4 tile configs.
TileGraph tiny_tile() {
    TileGraph g;
    g.name = "tiny";
    g.node_feat = Tensor(3, kNodeFeatDim);
    for (int64_t i = 0; i < g.node_feat.size(); ++i)
        g.node_feat[i] = 0.25f * static_cast<float>(i % 97) - 3;
    g.node_opcode = {63, 2, 120};
    g.edge_index = {1, 0, 2, 1};
    g.config_feat = Tensor(4, kTileConfigDim);
    for (int64_t i = 0; i < g.config_feat.size(); ++i) g.config_feat[i] = static_cast<float>(i % 5);
    g.config_runtime = {1000, 2000, 1500, 1000};
    g.config_runtime_normalizers = {900, 900, 900, 900};
    return g;
}

// 5 nodes, configurable nodes 1 and 4, 3 configs, splits [0, 3, 5].
LayoutGraph tiny_layout() {
    LayoutGraph g;
    g.name = "tinyl";
    g.node_feat = Tensor(5, kNodeFeatDim);
    g.node_feat.fill(1.5f);
    g.node_opcode = {1, 26, 34, 75, 26};
    g.edge_index = {1, 0, 2, 1, 3, 2, 4, 3};
    g.node_config_ids = {1, 4};
    g.node_config_feat.assign(3 * 2 * kLayoutConfigDim, -1);
    for (size_t i = 0; i < g.node_config_feat.size(); i += 5)
        g.node_config_feat[i] = static_cast<int8_t>(i % 6);
    g.config_runtime = {300, 100, 200};
    g.node_splits = {0, 3, 5};
    return g;
}

void check_equal(const TileGraph& a, const TileGraph& b) {
    CHECK(a.num_nodes() == b.num_nodes());
    CHECK(std::equal(a.node_feat.span().begin(), a.node_feat.span().end(),
                     b.node_feat.span().begin()));
    CHECK(a.node_opcode == b.node_opcode);
    CHECK(a.edge_index == b.edge_index);
    CHECK(std::equal(a.config_feat.span().begin(), a.config_feat.span().end(),
                     b.config_feat.span().begin(), b.config_feat.span().end()));
    CHECK(a.config_runtime == b.config_runtime);
    CHECK(a.config_runtime_normalizers == b.config_runtime_normalizers);
}

}  // namespace

TEST_CASE("make_npy_header matches numpy's np.save bytes for every supported dtype and rank") {
    const auto dir = test::scratch_dir("npy_headers");
    py("import numpy as np; d='" + dir.string() +
       "'; np.save(d+'/a.npy', np.zeros((597, 2), '<i8')); np.save(d+'/b.npy', np.zeros(26, 'u1'));"
       " np.save(d+'/c.npy', np.zeros((), '<f4')); np.save(d+'/d.npy', np.zeros((2, 3, 18), "
       "'<f4'));"
       " np.save(d+'/e.npy', np.zeros(3, '?')); np.save(d+'/f.npy', np.zeros((1, 7), '<u8'));"
       " np.save(d+'/g.npy', np.zeros((4, 5), '<f8')); np.save(d+'/h.npy', np.zeros(9, 'i1'));"
       " np.save(d+'/i.npy', np.zeros((123456789, 0), '<i4'))");
    struct E {
        const char* file;
        DType t;
        std::vector<int64_t> shape;
    };
    const E expect[] = {
        {"a", DType::kI8, {597, 2}},   {"b", DType::kU1, {26}}, {"c", DType::kF4, {}},
        {"d", DType::kF4, {2, 3, 18}}, {"e", DType::kB1, {3}},  {"f", DType::kU8, {1, 7}},
        {"g", DType::kF8, {4, 5}},     {"h", DType::kI1, {9}},  {"i", DType::kI4, {123456789, 0}}};
    for (const auto& e : expect) {
        CAPTURE(e.file);
        const auto bytes = slurp(dir / (std::string(e.file) + ".npy"));
        const std::string ours = make_npy_header(e.t, e.shape);
        REQUIRE(bytes.size() >= ours.size());
        CHECK(std::string(bytes.begin(), bytes.begin() + static_cast<long>(ours.size())) == ours);
        const NpyHeader h = parse_npy_header(bytes, e.file);
        CHECK(h.dtype == e.t);
        CHECK(h.shape == e.shape);
        CHECK(h.header_bytes == ours.size());
    }
}

TEST_CASE("npy header parser accepts v2/v3, '=' prefixes and any key order, rejects bad input") {
    auto v2 = [](const std::string& text, int major) {
        std::string s = "\x93NUMPY";
        s += static_cast<char>(major);
        s += '\0';
        const uint32_t n = static_cast<uint32_t>(text.size());
        for (int i = 0; i < 4; ++i) s += static_cast<char>((n >> (8 * i)) & 0xff);
        s += text;
        return std::vector<uint8_t>(s.begin(), s.end());
    };
    const NpyHeader h =
        parse_npy_header(v2("{'shape':(3,4),'fortran_order':True,'descr':'=i4'}\n", 2), "x");
    CHECK(h.dtype == DType::kI4);
    CHECK(h.fortran_order);
    CHECK(h.shape == std::vector<int64_t>{3, 4});
    CHECK(
        parse_npy_header(v2("{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }\n", 3), "x")
            .dtype == DType::kB1);
    CHECK_THROWS_WITH_AS(
        parse_npy_header(v2("{'descr': '<f4', 'shape': (5,)}\n", 2), "f.npz: key 'k'"),
        doctest::Contains("f.npz: key 'k': npy header lacks"), Error);
    CHECK_THROWS_WITH_AS(parse_npy_header(v2("{'descr': [('a', '<f4')], 'fortran_order': False, "
                                             "'shape': (5,)}\n",
                                             2),
                                          "f.npz: key 'k'"),
                         doctest::Contains("structured npy dtype"), Error);
    CHECK_THROWS_WITH_AS(parse_npy_header(v2("{}", 4), "f.npz: key 'k'"),
                         doctest::Contains("unsupported npy version 4.0"), Error);
}

TEST_CASE("tile graph npz round trip (stored and deflate) is exact and loads in numpy") {
    const auto dir = test::scratch_dir("tile_rt");
    const TileGraph g = tiny_tile();
    for (auto comp : {NpzCompression::kStored, NpzCompression::kDeflate}) {
        const auto path = dir / (comp == NpzCompression::kStored ? "s.npz" : "d.npz");
        save_tile_npz(g, path, comp);
        CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp-" + std::to_string(::getpid())));
        TileGraph back = load_tile_npz(path, LabelPolicy::kRequirePositive);
        check_equal(g, back);
        CHECK(back.name == path.stem().string());
        // numpy sees the published dtypes and the same values.
        const std::string out =
            py("import numpy as np, zipfile; p='" + path.string() +
               "'; d=np.load(p); "
               "print(sorted((k, str(d[k].dtype), d[k].shape) for k in d)); "
               "print(d['edge_index'].tolist(), d['node_opcode'].tolist(), "
               "d['config_runtime'].tolist()); "
               "print(float(d['node_feat'].astype('f8').sum()), float(d['config_feat'][3].sum())); "
               "print(sorted(set(i.compress_type for i in zipfile.ZipFile(p).infolist())))");
        CHECK(out.find("('config_feat', 'float32', (4, 24))") != std::string::npos);
        CHECK(out.find("('node_opcode', 'uint8', (3,))") != std::string::npos);
        CHECK(out.find("('config_runtime_normalizers', 'int64', (4,))") != std::string::npos);
        CHECK(out.find("[[1, 0], [2, 1]] [63, 2, 120] [1000, 2000, 1500, 1000]") !=
              std::string::npos);
        double sum = 0, row3 = 0;
        for (float v : g.node_feat.span()) sum += v;
        for (int k = 0; k < kTileConfigDim; ++k) row3 += g.config_feat.at(3, k);
        char buf[128];
        std::snprintf(buf, sizeof buf, "%.1f %.1f", sum, row3);
        CHECK(out.find(buf) != std::string::npos);
        CHECK(out.find(comp == NpzCompression::kStored ? "[0]" : "[8]") != std::string::npos);
    }
}

TEST_CASE("layout graph npz round trip: int8 configs stored as f4 (c, nc, 18), splits as (1, k)") {
    const auto dir = test::scratch_dir("layout_rt");
    const LayoutGraph g = tiny_layout();
    const auto path = dir / "l.npz";
    save_layout_npz(g, path);
    const LayoutGraph back = load_layout_npz(path, LabelPolicy::kRequirePositive);
    CHECK(back.node_config_feat == g.node_config_feat);
    CHECK(back.node_config_ids == g.node_config_ids);
    CHECK(back.node_splits == g.node_splits);
    CHECK(back.config_runtime == g.config_runtime);
    const std::string out =
        py("import numpy as np; d=np.load('" + path.string() +
           "'); f=d['node_config_feat']; print(f.dtype, f.shape, d['node_splits'].shape,"
           " int(f.sum()), d['node_config_ids'].dtype)");
    int sum = 0;
    for (int8_t v : g.node_config_feat) sum += v;
    CHECK(out == "float32 (3, 2, 18) (1, 3) " + std::to_string(sum) + " int64\n");
}

TEST_CASE("node_loop_trips round-trips as an optional f4 (n, 2) member and is validated on load") {
    const auto dir = test::scratch_dir("layout_trips");
    LayoutGraph g = tiny_layout();
    const int64_t n = g.num_nodes();
    for (int64_t v = 0; v < n; ++v)
        g.node_loop_trips.insert(g.node_loop_trips.end(),
                                 {static_cast<float>(v) * 1.5f, v % 2 ? 1.0f : 0.0f});
    const auto path = dir / "l.npz";
    save_layout_npz(g, path);
    CHECK(load_layout_npz(path, LabelPolicy::kRequirePositive).node_loop_trips ==
          g.node_loop_trips);
    CHECK(py("import numpy as np; t=np.load('" + path.string() +
             "')['node_loop_trips']; print(t.dtype, t.shape)") ==
          "float32 (" + std::to_string(n) + ", 2)\n");
    // Without the member (the published files) the field stays empty.
    LayoutGraph plain = tiny_layout();
    save_layout_npz(plain, dir / "plain.npz");
    CHECK(
        load_layout_npz(dir / "plain.npz", LabelPolicy::kRequirePositive).node_loop_trips.empty());
    // A wrong shape or flag is an error naming the file and the key.
    const auto rewrite = [&](const std::string& name, const std::string& expr) {
        const auto bad = dir / name;
        py("import numpy as np; d=dict(np.load('" + path.string() +
           "')); t=d['node_loop_trips']; " + expr + "; np.savez('" + bad.string() + "', **d)");
        return bad;
    };
    CHECK_THROWS_WITH_AS(load_layout_npz(rewrite("rows.npz", "d['node_loop_trips']=t[1:]"),
                                         LabelPolicy::kRequirePositive),
                         doctest::Contains("node_loop_trips"), Error);
    CHECK_THROWS_WITH_AS(
        load_layout_npz(rewrite("flag.npz", "t[0,1]=0.5"), LabelPolicy::kRequirePositive),
        doctest::Contains("node 0 has unknown flag 0.5, expected 0 or 1"), Error);
    CHECK_THROWS_WITH_AS(
        load_layout_npz(rewrite("neg.npz", "t[1,0]=-1"), LabelPolicy::kRequirePositive),
        doctest::Contains("node 1 has log2 trip count -1"), Error);
}

TEST_CASE(
    "numpy-written npz (savez and savez_compressed) with every dtype reads through typed "
    "accessors") {
    const auto dir = test::scratch_dir("numpy_npz");
    for (const char* fn : {"savez", "savez_compressed"}) {
        CAPTURE(fn);
        const auto path = dir / (std::string(fn) + ".npz");
        py(std::string("import numpy as np; a=np.arange(12).reshape(3,4); np.") + fn + "('" +
           path.string() +
           "', f8=a.astype('<f8')/4, i4=a.astype('<i4')-5, i1=a.astype('i1')-6, u8=a.astype('<u8'),"
           " b1=(a%2==0), u1=a.astype('u1'), ff=np.asfortranarray(a.astype('<f4')),"
           " fi=np.asfortranarray(np.arange(24).reshape(2,3,4).astype('<i8')), "
           "big=np.arange(300000, dtype='<f4'))");
        NpzReader z(path);
        std::vector<int64_t> shape;
        const auto f8 = z.read_f32("f8", &shape);
        CHECK(shape == std::vector<int64_t>{3, 4});
        CHECK(f8[11] == 2.75f);
        CHECK(z.read_i64("i4", nullptr)[0] == -5);
        CHECK(z.read_i64("i1", nullptr)[11] == 5);
        CHECK(z.read_i64("u8", nullptr)[7] == 7);
        CHECK(z.read_i64("b1", nullptr) ==
              std::vector<int64_t>{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0});
        std::vector<int8_t> i8(12);
        z.read_i8("u1", i8);
        CHECK(i8[11] == 11);
        const auto ff = z.read_f32("ff", &shape);  // fortran 2-D: C-order values 0..11
        for (int i = 0; i < 12; ++i) CHECK(ff[static_cast<size_t>(i)] == static_cast<float>(i));
        const auto fi = z.read_i64("fi", &shape);  // fortran 3-D
        CHECK(shape == std::vector<int64_t>{2, 3, 4});
        for (int i = 0; i < 24; ++i) CHECK(fi[static_cast<size_t>(i)] == i);
        const auto big = z.read_f32("big", nullptr);  // crosses the 1 MiB streaming chunk
        CHECK(big[299999] == 299999.0f);
        CHECK_THROWS_WITH_AS(z.read_i64("f8", nullptr),
                             doctest::Contains("key 'f8': dtype <f8 where an integer dtype"),
                             Error);
        CHECK_THROWS_WITH_AS(z.read_f32("i4", nullptr),
                             doctest::Contains("key 'i4': dtype <i4 where a float dtype"), Error);
    }
}

TEST_CASE("writer refuses duplicate keys and size mismatches and leaves no file behind") {
    const auto dir = test::scratch_dir("writer_err");
    {
        NpzWriter w(dir / "x.npz", NpzCompression::kStored);
        const std::vector<float> v(6, 1.0f);
        w.add_f32("a", {2, 3}, v);
        CHECK_THROWS_WITH_AS(w.add_f32("a", {2, 3}, v), doctest::Contains("key 'a': duplicate key"),
                             Error);
        CHECK_THROWS_WITH_AS(w.add_f32("b", {4, 3}, v),
                             doctest::Contains("key 'b': payload has 24 bytes"), Error);
    }  // destroyed without finish()
    CHECK(std::filesystem::is_empty(dir));
}

namespace {

std::string file_bytes(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Writes the same three entries with the given spill threshold; returns the file's bytes.
std::string write_three(const std::filesystem::path& path, NpzCompression c, size_t spill) {
    std::vector<float> big(50000);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 977) * 0.5f;
    const std::vector<int64_t> small = {1, -2, 3};
    const std::vector<uint8_t> empty;
    NpzWriter w(path, c, spill);
    w.add_f32("big", {500, 100}, big);
    w.add_i64("small", {3}, small);
    w.add_u8("empty", {0, 4}, empty);
    w.finish();
    return file_bytes(path);
}

}  // namespace

TEST_CASE("entries spilled to disk give the same npz bytes as entries kept in memory") {
    const auto dir = test::scratch_dir("npz_spill");
    for (const NpzCompression c : {NpzCompression::kStored, NpzCompression::kDeflateFast}) {
        const std::string in_memory = write_three(dir / "mem.npz", c, SIZE_MAX);
        const std::string big_spilled = write_three(dir / "big.npz", c, 1024);  // only "big"
        const std::string all_spilled = write_three(dir / "all.npz", c, 0);     // every entry
        CHECK(in_memory.size() > 1000);
        CHECK(big_spilled == in_memory);
        CHECK(all_spilled == in_memory);
        NpzReader z(dir / "all.npz");
        CHECK(z.read_f32("big", nullptr)[49999] == static_cast<float>(49999 % 977) * 0.5f);
        CHECK(z.read_i64("small", nullptr) == std::vector<int64_t>{1, -2, 3});
        // Only the three archives: no spill or temporary file left behind.
        int files = 0;
        for (const auto& e : std::filesystem::directory_iterator(dir)) {
            INFO(e.path().string());
            CHECK(e.path().extension() == ".npz");
            ++files;
        }
        CHECK(files == 3);
    }
}

TEST_CASE(
    "a writer destroyed before finish removes its spill files, and a spill that cannot be "
    "written names the file") {
    const auto dir = test::scratch_dir("npz_spill_abort");
    {
        NpzWriter w(dir / "x.npz", NpzCompression::kStored, 0);
        const std::vector<float> v(6, 1.0f);
        w.add_f32("a", {2, 3}, v);
        w.add_f32("b", {2, 3}, v);
        CHECK_FALSE(std::filesystem::is_empty(dir));  // the spill files exist until destruction
    }
    CHECK(std::filesystem::is_empty(dir));
    // The spill goes beside the temporary file: a missing parent directory fails at add().
    NpzWriter w(dir / "missing" / "x.npz", NpzCompression::kStored, 0);
    const std::vector<float> v(6, 1.0f);
    CHECK_THROWS_WITH_AS(w.add_f32("a", {2, 3}, v),
                         doctest::Contains("cannot create spill file for key 'a'"), Error);
}
