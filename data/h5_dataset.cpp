// HDF5 datasets (data/h5_file.h): shape and type, the checks of what the file really stores, and
// whole, row-range and row-selection reads.
#include <algorithm>
#include <cstring>

#include "data/h5_file.h"
#include "data/h5_internal.h"
#include "data/input_memory.h"
#include "data/npy.h"

namespace segrank {

using namespace h5detail;

// ---------------------------------------------------------------------------------------------
// Datasets

std::vector<int64_t> H5Dataset::shape() const {
    H5Handle space(h5_check(H5Dget_space(id()), where_, "H5Dget_space"));
    const int r = h5_check(H5Sget_simple_extent_ndims(space.get()), where_, "H5Sget_ndims");
    std::vector<hsize_t> dims(static_cast<size_t>(r));
    h5_check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), where_, "H5Sget_dims");
    return std::vector<int64_t>(dims.begin(), dims.end());
}

int64_t H5Dataset::row_elements() const {
    const auto s = shape();
    int64_t n = 1;
    for (size_t d = 1; d < s.size(); ++d) n *= s[d];
    return n;
}

H5Type H5Dataset::type() const {
    H5Handle t(h5_check(H5Dget_type(id()), where_, "H5Dget_type"));
    const H5T_class_t cls = H5Tget_class(t.get());
    const size_t size = H5Tget_size(t.get());
    if (cls == H5T_FLOAT && size == 4) return H5Type::kF32;
    if (cls == H5T_FLOAT && size == 8) return H5Type::kF64;
    if (cls == H5T_INTEGER) {
        const bool sgn = H5Tget_sign(t.get()) == H5T_SGN_2;
        if (size == 8 && sgn) return H5Type::kI64;
        if (size == 4 && sgn) return H5Type::kI32;
        if (size == 1) return sgn ? H5Type::kI8 : H5Type::kU8;
    }
    throw Error(str(where_, ": unsupported dataset element type (class ", static_cast<int>(cls),
                    ", ", size, " bytes)"));
}

int64_t H5Dataset::storage_bytes() const { return static_cast<int64_t>(H5Dget_storage_size(id())); }

int64_t H5Dataset::chunk_rows() const {
    H5Handle plist(h5_check(H5Dget_create_plist(id()), where_, "H5Dget_create_plist"));
    if (H5Pget_layout(plist.get()) != H5D_CHUNKED) return 0;
    hsize_t dims[8] = {};
    h5_check(H5Pget_chunk(plist.get(), 8, dims), where_, "H5Pget_chunk");
    return static_cast<int64_t>(dims[0]);
}

int64_t H5Dataset::stored_elements() const {
    const auto dims = shape();
    const size_t es = type_size(type());
    int64_t n = 1;
    uint64_t bytes = 0;
    for (int64_t d : dims)
        SEGRANK_CHECK(d >= 0 && !__builtin_mul_overflow(n, d, &n), where_,
                      ": shape overflows 64 bits");
    SEGRANK_CHECK(!__builtin_mul_overflow(static_cast<uint64_t>(n), es, &bytes), where_,
                  ": shape overflows 64 bits");
    if (n == 0) return 0;
    check_input_array_bytes(
        bytes, where_, str("the dataset (", type_name(type()), " shape ", shape_text(dims), ")"));
    H5Handle file(h5_check(H5Iget_file_id(id()), where_, "H5Iget_file_id"));
    hsize_t file_bytes = 0;
    h5_check(H5Fget_filesize(file.get(), &file_bytes), where_, "H5Fget_filesize");
    const uint64_t stored = H5Dget_storage_size(id());
    SEGRANK_CHECK(stored <= file_bytes, where_, ": claims ", stored, " stored bytes in a file of ",
                  file_bytes, " bytes");
    H5Handle plist(h5_check(H5Dget_create_plist(id()), where_, "H5Dget_create_plist"));
    bool deflate_only = true;  // every filter is deflate, shuffle or fletcher32
    bool compressed = false;   // one of them is deflate
    const int nfilters = h5_check(H5Pget_nfilters(plist.get()), where_, "H5Pget_nfilters");
    for (int f = 0; f < nfilters; ++f) {
        unsigned flags = 0;
        size_t nvalues = 0;
        const H5Z_filter_t fid = H5Pget_filter2(plist.get(), static_cast<unsigned>(f), &flags,
                                                &nvalues, nullptr, 0, nullptr, nullptr);
        deflate_only &=
            fid == H5Z_FILTER_DEFLATE || fid == H5Z_FILTER_SHUFFLE || fid == H5Z_FILTER_FLETCHER32;
        compressed |= fid == H5Z_FILTER_DEFLATE;
    }
    if (H5Pget_layout(plist.get()) == H5D_CHUNKED) {
        std::vector<hsize_t> chunk(dims.size());
        h5_check(H5Pget_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()), where_,
                 "H5Pget_chunk");
        uint64_t expected = 1;
        for (size_t d = 0; d < dims.size(); ++d) {
            const uint64_t per_dim =
                chunk[d] ? (static_cast<uint64_t>(dims[d]) + chunk[d] - 1) / chunk[d] : 1;
            SEGRANK_CHECK(!__builtin_mul_overflow(expected, per_dim, &expected), where_,
                          ": chunk count overflows 64 bits");
        }
        H5Handle space(h5_check(H5Dget_space(id()), where_, "H5Dget_space"));
        hsize_t have = 0;
        h5_check(H5Dget_num_chunks(id(), space.get(), &have), where_, "H5Dget_num_chunks");
        SEGRANK_CHECK(have == expected, where_, ": stores ", have, " of its ", expected,
                      " chunks (the others were never written and would read as fill values)");
    }
    if (deflate_only && !compressed) {  // stored as is (a checksum only adds bytes)
        SEGRANK_CHECK(stored >= bytes, where_, ": shape needs ", bytes,
                      " bytes but the file stores ", stored, " (unwritten or truncated dataset)");
    } else if (deflate_only) {
        SEGRANK_CHECK(bytes / 1032 <= stored, where_, ": shape needs ", bytes,
                      " bytes, more than 1032 times the ", stored,
                      " compressed bytes stored (deflate's maximum ratio)");
    }
    return n;
}

void H5Dataset::check_readable_as(H5Type t) const {
    const H5Type stored = type();
    SEGRANK_CHECK(!is_integer(t) || is_integer(stored), where_, ": ", type_name(stored),
                  " dataset where an integer dtype is expected (", type_name(t),
                  "); values would be truncated");
}

size_t H5Dataset::elements_to_read(H5Type t) const {
    check_readable_as(t);
    const auto n = static_cast<uint64_t>(stored_elements());
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(n, type_size(t), &bytes)) bytes = UINT64_MAX;
    check_input_array_bytes(bytes, where_,
                            str("the dataset (", type_name(type()), " shape ", shape_text(shape()),
                                ", read as ", type_name(t), ")"));
    return static_cast<size_t>(n);
}

void H5Dataset::read_all(H5Type t, void* out, size_t n) const {
    check_readable_as(t);
    const int64_t total = stored_elements();
    SEGRANK_CHECK(static_cast<int64_t>(n) == total, where_, ": dataset holds ", total,
                  " elements, destination has ", n);
    if (n == 0) return;
    const auto dims = shape();
    if (const auto h = dims.empty() ? nullptr : chunk_hashes(dims[0])) {
        // Every chunk verified; those of the stored type go straight into `out`.
        const size_t row_bytes = static_cast<size_t>(row_elements()) * type_size(t);
        read_verified(t, *h, 0, dims[0], out, [&](int64_t first, int64_t rows, const uint8_t* src) {
            std::memcpy(static_cast<uint8_t*>(out) + static_cast<size_t>(first) * row_bytes, src,
                        static_cast<size_t>(rows) * row_bytes);
        });
        return;
    }
    h5_check(H5Dread(id(), mem_type(t), H5S_ALL, H5S_ALL, H5P_DEFAULT, out), where_, "H5Dread");
}

void H5Dataset::read_rows_verified(H5Type t, const ChunkHashes& h, std::span<const int64_t> rows,
                                   void* out) const {
    // Positions of `rows` by row: each chunk holding a requested row is read (and verified) once,
    // then its rows go to every position that asked for them, in the order given.
    std::vector<size_t> order(rows.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return rows[a] < rows[b]; });
    const size_t row_bytes = static_cast<size_t>(row_elements()) * type_size(t);
    const int64_t r = h.rows_per_chunk, total = shape()[0];
    for (size_t k = 0; k < order.size();) {
        const int64_t c = rows[order[k]] / r;
        size_t end = k;
        while (end < order.size() && rows[order[end]] / r == c) ++end;
        const int64_t first = c * r, n = std::min(r, total - first);
        check_rows_stored(first, 1);
        read_verified(t, h, first, n, nullptr, [&](int64_t, int64_t, const uint8_t* src) {
            for (size_t j = k; j < end; ++j)
                std::memcpy(static_cast<uint8_t*>(out) + order[j] * row_bytes,
                            src + static_cast<size_t>(rows[order[j]] - first) * row_bytes,
                            row_bytes);
        });
        k = end;
    }
}

// Selects rows [begin, begin + count) of file dataspace `fspace` (full rows of a dataset of shape
// `dims`) and returns a memory dataspace of the selection's shape: with a flat one HDF5 maps every
// element to its chunk one by one (H5S_select_iterate), 30x slower on [c, nc, 18] config tensors.
H5Handle h5detail::select_row_range(hid_t fspace, const std::vector<int64_t>& dims, int64_t begin,
                                    int64_t count, const std::string& where) {
    std::vector<hsize_t> start(dims.size(), 0), cnt(dims.begin(), dims.end());
    start[0] = static_cast<hsize_t>(begin);
    cnt[0] = static_cast<hsize_t>(count);
    h5_check(
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, cnt.data(), nullptr),
        where, "H5Sselect_hyperslab");
    return H5Handle(h5_check(H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr),
                             where, "H5Screate_simple"));
}

void H5Dataset::check_rows_stored(int64_t begin, int64_t count) const {
    if (count <= 0) return;
    H5Handle plist(h5_check(H5Dget_create_plist(id()), where_, "H5Dget_create_plist"));
    if (H5Pget_layout(plist.get()) != H5D_CHUNKED) {
        H5D_space_status_t status = H5D_SPACE_STATUS_ERROR;
        h5_check(H5Dget_space_status(id(), &status), where_, "H5Dget_space_status");
        SEGRANK_CHECK(status == H5D_SPACE_STATUS_ALLOCATED, where_,
                      ": the dataset was never written (it would read as fill values)");
        return;
    }
    const auto dims = shape();
    std::vector<hsize_t> chunk(dims.size());
    h5_check(H5Pget_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()), where_,
             "H5Pget_chunk");
    // Every chunk holding a row of [begin, begin + count): the chunks along dimension 0 in the
    // range, each with every chunk position of the other dimensions (usually one).
    const hsize_t c0 = chunk[0] ? chunk[0] : 1;
    uint64_t others = 1;
    for (size_t d = 1; d < dims.size(); ++d)
        others *= (static_cast<uint64_t>(dims[d]) + chunk[d] - 1) / std::max<hsize_t>(chunk[d], 1);
    std::vector<hsize_t> offset(dims.size(), 0);
    for (hsize_t c = static_cast<hsize_t>(begin) / c0;
         c <= static_cast<hsize_t>(begin + count - 1) / c0; ++c) {
        for (uint64_t k = 0; k < others; ++k) {
            offset[0] = c * c0;
            uint64_t rest = k;
            for (size_t d = dims.size(); d-- > 1;) {
                const uint64_t per = (static_cast<uint64_t>(dims[d]) + chunk[d] - 1) /
                                     std::max<hsize_t>(chunk[d], 1);
                offset[d] = (rest % per) * chunk[d];
                rest /= per;
            }
            // H5Dget_chunk_storage_size looks the chunk up in the index (constant time): a
            // positive size is a stored chunk. It fails for a chunk never written (and for any
            // other failure) and gives 0 when no chunk of the dataset was ever written. Only then
            // is the chunk asked for by H5Dget_chunk_info_by_coord, which tells these apart but
            // walks the whole index in HDF5 1.10 (3 ms per call on 10^5 chunks: as the only check,
            // reading every config of a 10^5-config graph took more than 10 minutes).
            hsize_t stored_bytes = 0;
            if (H5Dget_chunk_storage_size(id(), offset.data(), &stored_bytes) >= 0 &&
                stored_bytes > 0)
                continue;
            unsigned mask = 0;
            haddr_t addr = HADDR_UNDEF;
            hsize_t size = 0;
            h5_check(H5Dget_chunk_info_by_coord(id(), offset.data(), &mask, &addr, &size), where_,
                     "H5Dget_chunk_info_by_coord");
            SEGRANK_CHECK(addr != HADDR_UNDEF, where_, ": the chunk holding rows ", offset[0], "..",
                          std::min<int64_t>(dims[0], static_cast<int64_t>(offset[0] + c0)) - 1,
                          " was never written (it would read as fill values; the store is "
                          "incomplete: pack it again)");
        }
    }
}

void H5Dataset::read_range_impl(H5Type t, int64_t begin, int64_t count, void* out, size_t n) const {
    check_readable_as(t);
    const auto dims = shape();
    SEGRANK_CHECK(!dims.empty(), where_, ": row range read from a scalar dataset");
    SEGRANK_CHECK(begin >= 0 && count >= 0 && begin + count <= dims[0], where_, ": rows [", begin,
                  ", ", begin + count, ") out of range [0, ", dims[0], ")");
    const int64_t row = row_elements();
    SEGRANK_CHECK(static_cast<int64_t>(n) == count * row, where_, ": destination has ", n,
                  " elements, ", count, " rows need ", count * row);
    if (count == 0 || row == 0) return;
    check_rows_stored(begin, count);
    if (const auto h = chunk_hashes(dims[0])) {
        const size_t row_bytes = static_cast<size_t>(row) * type_size(t);
        read_verified(
            t, *h, begin, count, out, [&](int64_t first, int64_t rows, const uint8_t* src) {
                std::memcpy(
                    static_cast<uint8_t*>(out) + static_cast<size_t>(first - begin) * row_bytes,
                    src, static_cast<size_t>(rows) * row_bytes);
            });
        return;
    }
    H5Handle fspace(h5_check(H5Dget_space(id()), where_, "H5Dget_space"));
    H5Handle mspace = select_row_range(fspace.get(), dims, begin, count, where_);
    h5_check(H5Dread(id(), mem_type(t), mspace.get(), fspace.get(), H5P_DEFAULT, out), where_,
             "H5Dread (row range)");
}

void H5Dataset::read_rows_impl(H5Type t, std::span<const int64_t> rows, void* out, size_t n) const {
    check_readable_as(t);
    const auto dims = shape();
    SEGRANK_CHECK(!dims.empty(), where_, ": row read from a scalar dataset");
    const int64_t row = row_elements();
    SEGRANK_CHECK(static_cast<int64_t>(n) == static_cast<int64_t>(rows.size()) * row, where_,
                  ": destination has ", n, " elements, ", rows.size(), " rows need ",
                  static_cast<int64_t>(rows.size()) * row);
    for (size_t i = 0; i < rows.size(); ++i) {
        SEGRANK_CHECK(rows[i] >= 0 && rows[i] < dims[0], where_, ": row ", rows[i],
                      " (selection index ", i, ") out of range [0, ", dims[0], ")");
    }
    if (rows.empty() || row == 0) return;
    if (const auto h = chunk_hashes(dims[0])) {
        read_rows_verified(t, *h, rows, out);
        return;
    }
    // Read the sorted distinct rows (runs of consecutive rows as blocks), then place them in the
    // requested order.
    std::vector<int64_t> uniq(rows.begin(), rows.end());
    std::sort(uniq.begin(), uniq.end());
    uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
    std::vector<std::pair<int64_t, int64_t>> runs;  // (first row, count)
    for (size_t i = 0; i < uniq.size();) {
        size_t j = i + 1;
        while (j < uniq.size() && uniq[j] == uniq[j - 1] + 1) ++j;
        runs.emplace_back(uniq[i], static_cast<int64_t>(j - i));
        i = j;
    }
    const size_t es = type_size(t);
    const size_t row_bytes = static_cast<size_t>(row) * es;
    // Distinct rows (sampled configs are drawn without replacement): read in file order straight
    // into `out`, then permute in place along cycles with one row of scratch, so the peak is the
    // result itself. Repeated rows need the sorted copy aside.
    const bool distinct = uniq.size() == rows.size();
    std::vector<uint8_t> tmp(distinct ? 0 : uniq.size() * row_bytes);
    void* dst = distinct ? out : tmp.data();
    if (chunk_rows() > 0) {
        // Chunked datasets: one regular hyperslab per run. HDF5 maps an irregular (OR-ed) selection
        // to chunks element by element, which cost 0.1 s for 32 rows of [10^4, 18] int8; per-run
        // reads take the chunk-wise path.
        int64_t at = 0;
        for (const auto& [first, cnt] : runs) {
            read_range_impl(t, first, cnt,
                            static_cast<uint8_t*>(dst) + static_cast<size_t>(at) * row_bytes,
                            static_cast<size_t>(cnt * row));
            at += cnt;
        }
    } else {
        check_rows_stored(uniq.front(), 1);  // not chunked: written as a whole or not at all
        H5Handle fspace(h5_check(H5Dget_space(id()), where_, "H5Dget_space"));
        h5_check(H5Sselect_none(fspace.get()), where_, "H5Sselect_none");
        std::vector<hsize_t> start(dims.size(), 0), count(dims.begin(), dims.end());
        for (const auto& [first, cnt] : runs) {
            start[0] = static_cast<hsize_t>(first);
            count[0] = static_cast<hsize_t>(cnt);
            h5_check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_OR, start.data(), nullptr,
                                         count.data(), nullptr),
                     where_, "H5Sselect_hyperslab");
        }
        std::vector<hsize_t> mem_dims(dims.begin(), dims.end());
        mem_dims[0] = static_cast<hsize_t>(uniq.size());
        H5Handle mspace(
            h5_check(H5Screate_simple(static_cast<int>(mem_dims.size()), mem_dims.data(), nullptr),
                     where_, "H5Screate_simple"));
        h5_check(H5Dread(id(), mem_type(t), mspace.get(), fspace.get(), H5P_DEFAULT, dst), where_,
                 "H5Dread (row selection)");
    }
    auto* o = static_cast<uint8_t*>(out);
    auto sorted_pos = [&](int64_t r) {
        return static_cast<size_t>(std::lower_bound(uniq.begin(), uniq.end(), r) - uniq.begin());
    };
    if (!distinct) {
        for (size_t i = 0; i < rows.size(); ++i)
            std::memcpy(o + i * row_bytes, tmp.data() + sorted_pos(rows[i]) * row_bytes, row_bytes);
        return;
    }
    // Position i must receive sorted row src[i]; follow each cycle i <- src[i] <- src[src[i]] ...
    std::vector<size_t> src(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) src[i] = sorted_pos(rows[i]);
    std::vector<uint8_t> done(rows.size(), 0), first(row_bytes);
    for (size_t i = 0; i < rows.size(); ++i) {
        if (done[i] || src[i] == i) continue;
        std::memcpy(first.data(), o + i * row_bytes, row_bytes);
        size_t j = i;
        while (true) {
            done[j] = 1;
            const size_t from = src[j];
            if (from == i) {
                std::memcpy(o + j * row_bytes, first.data(), row_bytes);
                break;
            }
            std::memcpy(o + j * row_bytes, o + from * row_bytes, row_bytes);
            j = from;
        }
    }
}

}  // namespace segrank
