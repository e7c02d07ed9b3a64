// The xxh3_64 per chunk of checksummed HDF5 datasets (H5WriteOptions::checksum, attribute
// chunk_xxh3): one value per chunk whether written whole or appended part by part, every read
// (whole, range, rows, converted) verified, and lists over 64 KiB in the 1.8 object format.
#include <doctest/doctest.h>

#include <numeric>

#include "data/h5_file.h"
#include "gnn/core/check.h"
#include "gnn/core/hash.h"
#include "tests/support/store_fixtures.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

// The chunk_xxh3 values of dataset `name` of the file, read with h5py, as "[v0, v1, ...]".
std::string h5py_hashes(const std::filesystem::path& path, const std::string& name) {
    const auto r =
        test::run_command("/usr/bin/python3 -c \"import h5py; print([int(v) for v in h5py.File('" +
                          path.string() + "')['" + name + "'].attrs['chunk_xxh3']])\"");
    REQUIRE(r.exit_code == 0);
    return r.output;
}

}  // namespace

TEST_CASE("an appended dataset carries the chunk hashes of the same rows written whole") {
    const auto path = test::scratch_dir("h5_chunk_hash_append") / "a.h5";
    std::vector<float> all(7 * 3);
    std::iota(all.begin(), all.end(), 0.5f);
    const H5WriteOptions opt{2, 0, true};  // chunks of 2 rows, checksummed
    {
        H5File f = H5File::create(path);
        H5Dataset d = f.root().create_appendable<float>("parts", {3}, opt);
        // Parts of 3, 1 and 3 rows: chunks of 2 rows straddle the part boundaries.
        d.append<float>(std::span<const float>(all.data(), 9));
        d.append<float>(std::span<const float>(all.data() + 9, 3));
        d.append<float>(std::span<const float>(all.data() + 12, 9));
        f.root().write<float>("whole", {7, 3}, all, opt);
        f.close();
    }
    const std::string parts = h5py_hashes(path, "parts");
    CHECK(parts == h5py_hashes(path, "whole"));
    // 4 chunks: rows 0-1, 2-3, 4-5, 6; the first is the xxh3_64 of its 24 bytes.
    CHECK(parts.find(str("[", xxh3_64(all.data(), 6 * sizeof(float)), ", ")) == 0);
    const H5File f = H5File::open_read(path);
    const H5Dataset d = f.root().open_dataset("parts");
    CHECK(d.has_chunk_hashes());
    CHECK(d.read<float>() == all);
    CHECK(d.read<double>()[20] == 20.5);  // converted after the check
    std::vector<float> rows(2 * 3);
    d.read_rows<float>(std::vector<int64_t>{6, 1}, rows);
    CHECK(rows == std::vector<float>{18.5f, 19.5f, 20.5f, 3.5f, 4.5f, 5.5f});
    std::vector<float> range(3 * 3);
    d.read_range<float>(3, 3, range);
    CHECK(range == std::vector<float>(all.begin() + 9, all.begin() + 18));
}

TEST_CASE("a changed chunk_xxh3 value is refused by every kind of read of its chunk only") {
    const auto path = test::scratch_dir("h5_chunk_hash_edit") / "e.h5";
    std::vector<int64_t> v(10);
    std::iota(v.begin(), v.end(), 0);
    {
        H5File f = H5File::create(path);
        f.root().write<int64_t>("x", {10}, v, {4, 0, true});
        f.close();
    }
    test::edit_with_h5py(
        path, "a=f['x'].attrs['chunk_xxh3']; a[1]^=np.uint64(1); f['x'].attrs['chunk_xxh3']=a");
    {
        const H5File f = H5File::open_read(path);
        const H5Dataset d = f.root().open_dataset("x");
        const std::string expected = path.string() +
                                     ":/x: checksum mismatch in chunk 1 (rows 4..7): the file is "
                                     "corrupt (stored xxh3_64 ";
        CHECK(test::error_of([&] { d.read<int64_t>(); }).find(expected) == 0);
        CHECK(test::error_of([&] { d.read<double>(); }).find(expected) == 0);
        std::vector<int64_t> one(1);
        CHECK(test::error_of([&] {
                  d.read_rows<int64_t>(std::vector<int64_t>{7}, one);
              }).find(expected) == 0);
        CHECK(test::error_of([&] {
                  d.read_range<int64_t>(3, 2, std::span(v).subspan(0, 2));
              }).find(expected) == 0);
        d.read_rows<int64_t>(std::vector<int64_t>{9, 0}, std::span(v).subspan(0, 2));
        CHECK(v[0] == 9);
        CHECK(v[1] == 0);
    }  // closed: h5py below opens the file for writing
    // A list that is not one value per chunk is refused before any read.
    test::edit_with_h5py(path, "f['x'].attrs['chunk_xxh3']=f['x'].attrs['chunk_xxh3'][:2]");
    CHECK(test::error_of([&] { H5File::open_read(path).root().open_dataset("x").read<int64_t>(); })
              .find(path.string() + ":/x attribute 'chunk_xxh3': 2 values for the 3 chunk(s) of 4 "
                                    "rows of 10: the file is corrupt") == 0);
}

TEST_CASE("more than 8192 chunk hashes (over 64 KiB) fit in a file of the 1.8 object format") {
    const auto path = test::scratch_dir("h5_chunk_hash_many") / "m.h5";
    std::vector<uint8_t> v(9000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 7);
    {
        H5File f = H5File::create(path);
        f.root().write<uint8_t>("x", {9000}, v, {1, 0, true});  // 9000 chunks of one row
        f.close();
    }
    const H5Dataset d = H5File::open_read(path).root().open_dataset("x");
    CHECK(d.read<uint8_t>() == v);
    std::vector<int32_t> rows(2);
    d.read_rows<int32_t>(std::vector<int64_t>{8999, 3}, rows);
    CHECK(rows == std::vector<int32_t>{v[8999], v[3]});
}
