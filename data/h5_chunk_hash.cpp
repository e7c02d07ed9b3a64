// xxh3_64 per chunk of checksummed HDF5 datasets (data/h5_file.h, H5WriteOptions::checksum): the
// hashes written with a dataset or grown with its appended rows, and the reads that verify every
// chunk they touch. A chunk's hash covers its rows as they read: little-endian bytes of the stored
// element type, before compression (HDF5 inflates whole chunks anyway, so reading a chunk's full
// rows costs no more disk reads than reading some of them).
#include <algorithm>
#include <bit>
#include <cstring>

#include "data/h5_file.h"
#include "data/h5_internal.h"
#include "data/input_memory.h"
#include "gnn/core/hash.h"

namespace segrank {

using namespace h5detail;

// Hashes are of the bytes in memory, which are the file's little-endian bytes only on a
// little-endian host.
static_assert(std::endian::native == std::endian::little, "chunk hashes assume little-endian");

// ---------------------------------------------------------------------------------------------
// Writing

std::vector<uint64_t> h5detail::hash_chunks(const void* data, int64_t rows, size_t row_bytes,
                                            int64_t rows_per_chunk) {
    std::vector<uint64_t> h;
    const auto* p = static_cast<const uint8_t*>(data);
    for (int64_t b = 0; b < rows; b += rows_per_chunk) {
        const int64_t n = std::min(rows_per_chunk, rows - b);
        h.push_back(
            xxh3_64(p + static_cast<size_t>(b) * row_bytes, static_cast<size_t>(n) * row_bytes));
    }
    return h;
}

void h5detail::write_chunk_hashes(hid_t obj, const std::string& where,
                                  const std::vector<uint64_t>& hashes) {
    const std::string w = str(where, " attribute '", kChunkHashAttr, "'");
    if (h5_check(H5Aexists(obj, kChunkHashAttr), w, "H5Aexists") > 0)
        h5_check(H5Adelete(obj, kChunkHashAttr), w, "H5Adelete");
    const hsize_t n = hashes.size();
    H5Handle space(h5_check(H5Screate_simple(1, &n, nullptr), w, "H5Screate_simple"));
    H5Handle a(h5_check(
        H5Acreate2(obj, kChunkHashAttr, H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), w,
        "H5Acreate2"));
    if (n > 0) h5_check(H5Awrite(a.get(), H5T_NATIVE_UINT64, hashes.data()), w, "H5Awrite");
}

void H5Dataset::AppendHashes::add(const void* data, int64_t rows, size_t row_bytes) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (rows > 0) {
        const int64_t n = std::min(rows, rows_per_chunk - partial_rows);
        partial->update(p, static_cast<size_t>(n) * row_bytes);
        partial_rows += n;
        p += static_cast<size_t>(n) * row_bytes;
        rows -= n;
        if (partial_rows == rows_per_chunk) {
            full.push_back(partial->digest());
            partial = std::make_unique<ContentHasher>();  // the next chunk's
            partial_rows = 0;
        }
    }
}

std::vector<uint64_t> H5Dataset::AppendHashes::values() const {
    std::vector<uint64_t> v = full;
    if (partial_rows > 0) v.push_back(partial->digest());
    return v;
}

// ---------------------------------------------------------------------------------------------
// Reading

std::shared_ptr<const H5Dataset::ChunkHashes> H5Dataset::chunk_hashes(int64_t rows) const {
    // Kept only while nothing is appended (an appended dataset's hashes change with its rows).
    if (hashes_ && hashes_->rows == rows && !appending_) return hashes_;
    const std::string w = str(where_, " attribute '", kChunkHashAttr, "'");
    if (!has_attr(kChunkHashAttr)) {
        SEGRANK_CHECK(!require_hashes_, where_, ": no '", kChunkHashAttr,
                      "' attribute (every dataset of this store carries its xxh3_64 per chunk): "
                      "the file is corrupt or was edited (write it again, e.g. `segrank pack "
                      "--force` from the npz files)");
        return nullptr;
    }
    auto read = std::make_shared<ChunkHashes>();
    ChunkHashes& h = *read;
    h.rows = rows;
    h.rows_per_chunk = chunk_rows();
    SEGRANK_CHECK(h.rows_per_chunk > 0, w, ": the dataset is not chunked: the file is corrupt");
    H5Handle a(h5_check(H5Aopen(id(), kChunkHashAttr, H5P_DEFAULT), w, "H5Aopen"));
    H5Handle type(h5_check(H5Aget_type(a.get()), w, "H5Aget_type"));
    SEGRANK_CHECK(H5Tget_class(type.get()) == H5T_INTEGER && H5Tget_size(type.get()) == 8, w,
                  ": expected uint64 values: the file is corrupt");
    H5Handle space(h5_check(H5Aget_space(a.get()), w, "H5Aget_space"));
    const hssize_t n = h5_check(H5Sget_simple_extent_npoints(space.get()), w, "H5Sget_npoints");
    const int64_t expected = rows == 0 ? 0 : (rows - 1) / h.rows_per_chunk + 1;
    SEGRANK_CHECK(n == expected, w, ": ", n, " values for the ", expected, " chunk(s) of ",
                  h.rows_per_chunk, " rows of ", rows, ": the file is corrupt");
    h.values.resize(static_cast<size_t>(n));
    if (n > 0) h5_check(H5Aread(a.get(), H5T_NATIVE_UINT64, h.values.data()), w, "H5Aread");
    if (!appending_) hashes_ = read;
    return read;
}

void H5Dataset::read_verified(
    H5Type t, const ChunkHashes& h, int64_t begin, int64_t count, void* direct,
    const std::function<void(int64_t, int64_t, const uint8_t*)>& place) const {
    if (count <= 0) return;
    const auto dims = shape();
    const int64_t row = row_elements();
    const H5Type stored = type();
    const size_t es_stored = type_size(stored), es_t = type_size(t);
    const size_t es_max = std::max(es_stored, es_t);
    const int64_t r = h.rows_per_chunk;
    H5Handle fspace(h5_check(H5Dget_space(id()), where_, "H5Dget_space"));
    std::vector<uint8_t> scratch;
    for (int64_t c = begin / r; c <= (begin + count - 1) / r; ++c) {
        const int64_t first = c * r, n = std::min(r, dims[0] - first);
        const std::string rows_text = str("chunk ", c, " (rows ", first, "..", first + n - 1, ")");
        const bool inside = direct && t == stored && first >= begin && first + n <= begin + count;
        uint64_t elements = 0, scratch_bytes = 0;
        SEGRANK_CHECK(!__builtin_mul_overflow(static_cast<uint64_t>(n), static_cast<uint64_t>(row),
                                              &elements) &&
                          !__builtin_mul_overflow(elements, es_max, &scratch_bytes),
                      where_, ": ", rows_text, " overflows 64 bits");
        uint8_t* buf = nullptr;
        if (inside) {
            buf = static_cast<uint8_t*>(direct) +
                  static_cast<size_t>(first - begin) * static_cast<size_t>(row) * es_t;
        } else {
            check_input_array_bytes(scratch_bytes, where_, rows_text);
            scratch.resize(static_cast<size_t>(scratch_bytes));
            buf = scratch.data();
        }
        H5Handle mspace = select_row_range(fspace.get(), dims, first, n, where_);
        // Read as the file's own type: no conversion, the bytes the hash was taken of.
        if (H5Dread(id(), file_type(stored), mspace.get(), fspace.get(), H5P_DEFAULT, buf) < 0)
            throw Error(h5_failure(where_, "H5Dread", rows_text));
        const uint64_t computed = xxh3_64(buf, static_cast<size_t>(elements) * es_stored);
        const uint64_t want = h.values[static_cast<size_t>(c)];
        SEGRANK_CHECK(computed == want, where_, ": checksum mismatch in ", rows_text,
                      ": the file is corrupt (stored xxh3_64 ", hash_hex(want), ", computed ",
                      hash_hex(computed),
                      "; write it again, e.g. `segrank pack --force` from the npz files)");
        if (inside) continue;
        if (t != stored)
            h5_check(H5Tconvert(file_type(stored), mem_type(t), static_cast<size_t>(elements), buf,
                                nullptr, H5P_DEFAULT),
                     where_, "H5Tconvert");
        const int64_t lo = std::max(first, begin), hi = std::min(first + n, begin + count);
        place(lo, hi - lo, buf + static_cast<size_t>(lo - first) * static_cast<size_t>(row) * es_t);
    }
}

}  // namespace segrank
