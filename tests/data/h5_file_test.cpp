// The HDF5 RAII layer: typed round trips of 1-3-D datasets, row selections, attributes, errors
// naming file and object, and interoperability with h5py.
#include "data/h5_file.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "gnn/core/check.h"
#include "tests/support/test_paths.h"

using namespace segrank;

TEST_CASE("every element type round-trips through 1-D, 2-D and 3-D datasets") {
    const auto path = test::scratch_dir("h5_types") / "t.h5";
    {
        H5File f = H5File::create(path);
        H5Group g = f.root().create_group("g");
        std::vector<float> f32(24);
        std::iota(f32.begin(), f32.end(), -3.5f);
        g.write<float>("f32", {2, 3, 4}, f32, {1, 4});
        g.write<double>("f64", {3}, std::vector<double>{1e300, -2.5, 0.125});
        g.write<int64_t>("i64", {2, 2}, std::vector<int64_t>{INT64_MIN, -1, 0, INT64_MAX});
        g.write<int32_t>("i32", {1}, std::vector<int32_t>{-7});
        g.write<int8_t>("i8", {2, 3}, std::vector<int8_t>{-1, 0, 1, 2, 3, 127}, {1, 9});
        g.write<uint8_t>("u8", {4}, std::vector<uint8_t>{0, 1, 200, 255});
        g.write<int64_t>("empty", {0, 2}, std::vector<int64_t>{}, {16, 4});
        f.close();
    }
    const H5File f = H5File::open_read(path);
    const H5Group g = f.root().open_group("g");
    CHECK(g.children() ==
          std::vector<std::string>{"empty", "f32", "f64", "i32", "i64", "i8", "u8"});
    const H5Dataset d = g.open_dataset("f32");
    CHECK(d.shape() == std::vector<int64_t>{2, 3, 4});
    CHECK(d.type() == H5Type::kF32);
    CHECK(d.chunk_rows() == 1);
    CHECK(d.read<float>()[23] == 19.5f);
    CHECK(g.open_dataset("f64").read<double>() == std::vector<double>{1e300, -2.5, 0.125});
    CHECK(g.open_dataset("i64").read<int64_t>() ==
          std::vector<int64_t>{INT64_MIN, -1, 0, INT64_MAX});
    CHECK(g.open_dataset("i32").read<int32_t>() == std::vector<int32_t>{-7});
    CHECK(g.open_dataset("i8").read<int8_t>() == std::vector<int8_t>{-1, 0, 1, 2, 3, 127});
    CHECK(g.open_dataset("i8").type() == H5Type::kI8);
    CHECK(g.open_dataset("u8").read<uint8_t>() == std::vector<uint8_t>{0, 1, 200, 255});
    CHECK(g.open_dataset("u8").read<int32_t>() ==
          std::vector<int32_t>{0, 1, 200, 255});  // converted
    CHECK(g.open_dataset("empty").shape() == std::vector<int64_t>{0, 2});
    CHECK(g.open_dataset("empty").read<int64_t>().empty());
}

TEST_CASE("read_rows returns rows in the requested order, with repeats, and checks the range") {
    const auto path = test::scratch_dir("h5_rows") / "r.h5";
    std::vector<int32_t> v(10 * 3);
    std::iota(v.begin(), v.end(), 0);  // row r = {3r, 3r+1, 3r+2}
    {
        H5File f = H5File::create(path);
        f.root().write<int32_t>("x", {10, 3}, v, {4, 1});
        f.root().write<int32_t>("contiguous", {10, 3}, v, {0, 0});
    }
    const H5Dataset d = H5File::open_read(path).root().open_dataset("x");
    const std::vector<int64_t> rows = {7, 2, 3, 7, 9};
    std::vector<int32_t> out(rows.size() * 3);
    d.read_rows<int32_t>(rows, out);
    CHECK(out == std::vector<int32_t>{21, 22, 23, 6, 7, 8, 9, 10, 11, 21, 22, 23, 27, 28, 29});
    // Chunked datasets are read run by run, contiguous ones with one union selection: same rows.
    const H5Dataset c = H5File::open_read(path).root().open_dataset("contiguous");
    CHECK(c.chunk_rows() == 0);
    CHECK(d.chunk_rows() == 4);
    std::vector<int32_t> outc(rows.size() * 3);
    c.read_rows<int32_t>(rows, outc);
    CHECK(outc == out);
    const std::vector<int64_t> sorted = {0, 1, 5};
    std::vector<int64_t> out2(9);
    d.read_rows<int64_t>(sorted, out2);
    CHECK(out2 == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 15, 16, 17});
    // Distinct rows in any order are permuted in place (every permutation of 6 rows, plus a 3-cycle
    // and a fixed point mixed).
    std::vector<int64_t> perm = {0, 2, 4, 5, 8, 9};
    do {
        std::vector<int32_t> o(perm.size() * 3);
        d.read_rows<int32_t>(perm, o);
        bool ok = true;
        for (size_t i = 0; i < perm.size(); ++i)
            for (int c = 0; c < 3; ++c)
                ok = ok && o[i * 3 + static_cast<size_t>(c)] == 3 * perm[i] + c;
        REQUIRE(ok);
    } while (std::next_permutation(perm.begin(), perm.end()));
    std::vector<int32_t> r0(9);
    const std::vector<int64_t> range_rows = {4, 5, 6};
    d.read_range<int32_t>(4, 3, r0);
    std::vector<int32_t> r1(9);
    d.read_rows<int32_t>(range_rows, r1);
    CHECK(r0 == r1);
    CHECK_THROWS_WITH_AS(d.read_range<int32_t>(8, 3, std::span<int32_t>(r0)),
                         doctest::Contains(":/x: rows [8, 11) out of range [0, 10)"), Error);
    const std::vector<int64_t> bad = {1, 10};
    CHECK_THROWS_WITH_AS(
        d.read_rows<int32_t>(bad, std::span<int32_t>(out.data(), 6)),
        doctest::Contains(
            (path.string() + ":/x: row 10 (selection index 1) out of range [0, 10)").c_str()),
        Error);
}

TEST_CASE("string and integer attributes on groups and datasets") {
    const auto path = test::scratch_dir("h5_attr") / "a.h5";
    {
        H5File f = H5File::create(path);
        H5Group root = f.root();
        root.set_attr("name", std::string("tile:xla"));
        root.set_attr("name", std::string("layout:nlp:random"));  // replaced
        root.set_attr("version", int64_t{3});
        H5Dataset d = root.write<float>("d", {1}, std::vector<float>{1.0f});
        d.set_attr("unit", std::string("ns"));
    }
    const H5Group root = H5File::open_read(path).root();
    CHECK(root.attr_string("name") == "layout:nlp:random");
    CHECK(root.attr_int("version") == 3);
    CHECK_FALSE(root.attr_int("absent").has_value());
    CHECK(root.open_dataset("d").attr_string("unit") == "ns");
    CHECK_THROWS_WITH_AS(root.attr_int("name"),
                         doctest::Contains("attribute 'name': expected an integer"), Error);
    const auto r =
        test::run_command("/usr/bin/python3 -c \"import h5py; f=h5py.File('" + path.string() +
                          "','r'); print(f.attrs['name'].decode(), int(f.attrs['version']), "
                          "f['d'].attrs['unit'].decode())\"");
    CHECK(r.exit_code == 0);
    CHECK(r.output == "layout:nlp:random 3 ns\n");
}

TEST_CASE("HDF5 failures become segrank::Error naming the file and the object") {
    const auto dir = test::scratch_dir("h5_err");
    CHECK_THROWS_WITH_AS(H5File::open_read(dir / "missing.h5"),
                         doctest::Contains("missing.h5: no such HDF5 file"), Error);
    {
        std::FILE* f = std::fopen((dir / "junk.h5").c_str(), "wb");
        std::fputs("not hdf5 at all", f);
        std::fclose(f);
    }
    CHECK_THROWS_WITH_AS(H5File::open_read(dir / "junk.h5"),
                         doctest::Contains("junk.h5: opening the HDF5 file failed"), Error);
    H5File f = H5File::create(dir / "x.h5");
    H5Group root = f.root();
    CHECK_THROWS_WITH_AS(root.open_dataset("nope"),
                         doctest::Contains("x.h5:/nope: no such dataset"), Error);
    root.write<float>("a", {2}, std::vector<float>{1, 2});
    CHECK_THROWS_WITH_AS(root.write<float>("a", {2}, std::vector<float>{1, 2}),
                         doctest::Contains("x.h5:/a: H5Dcreate2 failed"), Error);
    CHECK_THROWS_WITH_AS(root.write<float>("b", {3}, std::vector<float>{1, 2}),
                         doctest::Contains("x.h5:/b: data has 2 elements, shape needs 3"), Error);
}

TEST_CASE("appendable datasets grow part by part and read back as one array") {
    const auto path = test::scratch_dir("h5_append") / "a.h5";
    std::vector<float> all(7 * 3);
    std::iota(all.begin(), all.end(), 0.5f);
    {
        H5File f = H5File::create(path);
        H5Group g = f.root().create_group("g");
        H5Dataset d = g.create_appendable<float>("rows", {3}, {2, 4});
        // Parts of 3, 0 and 4 rows; chunks of 2 rows straddle the part boundaries.
        d.append<float>(std::span<const float>(all.data(), 9));
        d.append<float>(std::span<const float>(all.data() + 9, 0));
        d.append<float>(std::span<const float>(all.data() + 9, 12));
        CHECK(d.shape() == std::vector<int64_t>{7, 3});
        CHECK_THROWS_WITH_AS(d.append<float>(std::span<const float>(all.data(), 4)),
                             doctest::Contains("not a whole number of rows of 3"), Error);
        CHECK_THROWS_WITH_AS(d.append<int64_t>(std::vector<int64_t>{1, 2, 3}),
                             doctest::Contains("another element type"), Error);
        H5Dataset flat = g.create_appendable<int64_t>("flat", {}, {5, 0});
        flat.append<int64_t>(std::vector<int64_t>{1, 2, 3});
        flat.append<int64_t>(std::vector<int64_t>{4});
        CHECK_THROWS_WITH_AS(g.create_appendable<int64_t>("bad", {}, {0, 0}),
                             doctest::Contains("chunk_rows >= 1"), Error);
        f.close();
    }
    const H5File f = H5File::open_read(path);
    const H5Dataset d = f.root().open_group("g").open_dataset("rows");
    CHECK(d.read<float>() == all);
    CHECK(d.chunk_rows() == 2);
    CHECK(d.stored_elements() == 21);
    CHECK(f.root().open_group("g").open_dataset("flat").read<int64_t>() ==
          std::vector<int64_t>{1, 2, 3, 4});
}
