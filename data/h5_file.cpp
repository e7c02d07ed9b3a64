// HDF5 C API boundary (docs/style.md#errors): the only <hdf5.h> includer; negative returns become
// segrank::Error with the file, the object path and HDF5's innermost error description.
#include "data/h5_file.h"

#include <hdf5.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "data/input_memory.h"
#include "data/npy.h"
#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {

static_assert(std::is_same_v<hid_t, int64_t>, "HDF5 >= 1.10 uses 64-bit hid_t");

namespace {

void quiet_hdf5() {
    static std::once_flag once;
    std::call_once(once, [] {
        // HDF5 1.10 frees a file whose close failed (its last flush hit a full disk or a file-size
        // limit) yet keeps its id; the exit-time cleanup H5_term_library then closes it again and
        // crashes after the error was reported. Every id here is owned by an H5Handle and closed
        // on every path, so that cleanup has nothing to do: skip it. Must precede any other call.
        H5dont_atexit();
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    });
}

herr_t walk_first(unsigned n, const H5E_error2_t* e, void* out) {
    auto* s = static_cast<std::string*>(out);
    if (n == 0 && e && e->desc) *s = e->desc;
    return 0;
}

// HDF5's description of the current error stack's innermost failure. A failed write describes
// itself as "file write failed: time = ..., filename = ..., errno = 28, error message = 'No space
// left on device', buf = ..." over two lines: keep the operation and the system's message.
std::string h5_detail() {
    std::string s;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_first, &s);
    H5Eclear2(H5E_DEFAULT);
    if (s.empty()) return "HDF5 call failed";
    const std::string tag = "error message = '";
    const size_t m = s.find(tag);
    if (m != std::string::npos) {
        const size_t b = m + tag.size();
        const size_t e = s.find('\'', b);
        const size_t colon = s.find(':');
        const std::string op =
            colon != std::string::npos && colon < m ? s.substr(0, colon) : "I/O failed";
        s = op + ": " + s.substr(b, e == std::string::npos ? std::string::npos : e - b);
    }
    for (char& c : s)
        if (c == '\n' || c == '\r') c = ' ';
    return s;
}

// Throws when an HDF5 call returned a negative value.
template <typename R>
R h5_check(R r, const std::string& where, const char* what) {
    if (r < 0) throw Error(str(where, ": ", what, " failed (", h5_detail(), ")"));
    return r;
}

hid_t mem_type(H5Type t) {
    switch (t) {
        case H5Type::kF32:
            return H5T_NATIVE_FLOAT;
        case H5Type::kF64:
            return H5T_NATIVE_DOUBLE;
        case H5Type::kI64:
            return H5T_NATIVE_INT64;
        case H5Type::kI32:
            return H5T_NATIVE_INT32;
        case H5Type::kI8:
            return H5T_NATIVE_INT8;
        case H5Type::kU8:
            return H5T_NATIVE_UINT8;
    }
    return -1;
}

hid_t file_type(H5Type t) {
    switch (t) {
        case H5Type::kF32:
            return H5T_IEEE_F32LE;
        case H5Type::kF64:
            return H5T_IEEE_F64LE;
        case H5Type::kI64:
            return H5T_STD_I64LE;
        case H5Type::kI32:
            return H5T_STD_I32LE;
        case H5Type::kI8:
            return H5T_STD_I8LE;
        case H5Type::kU8:
            return H5T_STD_U8LE;
    }
    return -1;
}

bool is_integer(H5Type t) { return t != H5Type::kF32 && t != H5Type::kF64; }

const char* type_name(H5Type t) {
    switch (t) {
        case H5Type::kF32:
            return "float32";
        case H5Type::kF64:
            return "float64";
        case H5Type::kI64:
            return "int64";
        case H5Type::kI32:
            return "int32";
        case H5Type::kI8:
            return "int8";
        case H5Type::kU8:
            return "uint8";
    }
    return "?";
}

size_t type_size(H5Type t) {
    switch (t) {
        case H5Type::kF32:
            return 4;
        case H5Type::kF64:
            return 8;
        case H5Type::kI64:
            return 8;
        case H5Type::kI32:
            return 4;
        case H5Type::kI8:
            return 1;
        case H5Type::kU8:
            return 1;
    }
    return 0;
}

}  // namespace

namespace {
std::atomic<int64_t> g_open_handles{0};
}  // namespace

H5Handle::H5Handle(int64_t id) : id_(id) {
    if (id_ >= 0) ++g_open_handles;
}

H5Handle::~H5Handle() { release(); }

int64_t H5Handle::open_count() { return g_open_handles.load(); }

H5Handle& H5Handle::operator=(H5Handle&& o) noexcept {
    if (this != &o) {
        release();
        id_ = o.id_;
        o.id_ = -1;
    }
    return *this;
}

bool H5Handle::release() noexcept {
    if (id_ < 0) return true;
    const int r = H5Idec_ref(id_);
    id_ = -1;  // even on failure: HDF5 has freed the object, closing it again would crash
    --g_open_handles;
    if (r < 0) H5Eclear2(H5E_DEFAULT);
    return r >= 0;
}

// ---------------------------------------------------------------------------------------------
// Attributes

bool H5Object::has_attr(const std::string& name) const {
    return h5_check(H5Aexists(id(), name.c_str()), where_, "H5Aexists") > 0;
}

void H5Object::set_attr(const std::string& name, const std::string& value) {
    if (has_attr(name)) h5_check(H5Adelete(id(), name.c_str()), where_, "H5Adelete");
    H5Handle type(h5_check(H5Tcopy(H5T_C_S1), where_, "H5Tcopy"));
    h5_check(H5Tset_size(type.get(), H5T_VARIABLE), where_, "H5Tset_size");
    h5_check(H5Tset_cset(type.get(), H5T_CSET_UTF8), where_, "H5Tset_cset");
    H5Handle space(h5_check(H5Screate(H5S_SCALAR), where_, "H5Screate"));
    H5Handle a(
        h5_check(H5Acreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                 where_ + " attribute '" + name + "'", "H5Acreate2"));
    const char* p = value.c_str();
    h5_check(H5Awrite(a.get(), type.get(), &p), where_ + " attribute '" + name + "'", "H5Awrite");
}

void H5Object::set_attr(const std::string& name, int64_t value) {
    if (has_attr(name)) h5_check(H5Adelete(id(), name.c_str()), where_, "H5Adelete");
    H5Handle space(h5_check(H5Screate(H5S_SCALAR), where_, "H5Screate"));
    H5Handle a(h5_check(
        H5Acreate2(id(), name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
        where_ + " attribute '" + name + "'", "H5Acreate2"));
    h5_check(H5Awrite(a.get(), H5T_NATIVE_INT64, &value), where_ + " attribute '" + name + "'",
             "H5Awrite");
}

std::optional<std::string> H5Object::attr_string(const std::string& name) const {
    if (!has_attr(name)) return std::nullopt;
    const std::string w = where_ + " attribute '" + name + "'";
    H5Handle a(h5_check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), w, "H5Aopen"));
    H5Handle type(h5_check(H5Aget_type(a.get()), w, "H5Aget_type"));
    SEGRANK_CHECK(H5Tget_class(type.get()) == H5T_STRING, w, ": expected a string attribute");
    if (H5Tis_variable_str(type.get()) > 0) {
        H5Handle mt(h5_check(H5Tcopy(H5T_C_S1), w, "H5Tcopy"));
        h5_check(H5Tset_size(mt.get(), H5T_VARIABLE), w, "H5Tset_size");
        h5_check(H5Tset_cset(mt.get(), H5Tget_cset(type.get())), w, "H5Tset_cset");
        char* p = nullptr;
        h5_check(H5Aread(a.get(), mt.get(), &p), w, "H5Aread");
        std::string s = p ? p : "";
        H5free_memory(p);
        return s;
    }
    const size_t n = H5Tget_size(type.get());
    std::string s(n, '\0');
    h5_check(H5Aread(a.get(), type.get(), s.data()), w, "H5Aread");
    s.resize(std::strlen(s.c_str()));
    return s;
}

std::optional<int64_t> H5Object::attr_int(const std::string& name) const {
    if (!has_attr(name)) return std::nullopt;
    const std::string w = where_ + " attribute '" + name + "'";
    H5Handle a(h5_check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), w, "H5Aopen"));
    H5Handle type(h5_check(H5Aget_type(a.get()), w, "H5Aget_type"));
    SEGRANK_CHECK(H5Tget_class(type.get()) == H5T_INTEGER, w, ": expected an integer attribute");
    int64_t v = 0;
    h5_check(H5Aread(a.get(), H5T_NATIVE_INT64, &v), w, "H5Aread");
    return v;
}

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
    const int nfilters = h5_check(H5Pget_nfilters(plist.get()), where_, "H5Pget_nfilters");
    for (int f = 0; f < nfilters; ++f) {
        unsigned flags = 0;
        size_t nvalues = 0;
        const H5Z_filter_t fid = H5Pget_filter2(plist.get(), static_cast<unsigned>(f), &flags,
                                                &nvalues, nullptr, 0, nullptr, nullptr);
        deflate_only &=
            fid == H5Z_FILTER_DEFLATE || fid == H5Z_FILTER_SHUFFLE || fid == H5Z_FILTER_FLETCHER32;
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
    if (nfilters == 0) {
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
    h5_check(H5Dread(id(), mem_type(t), H5S_ALL, H5S_ALL, H5P_DEFAULT, out), where_, "H5Dread");
}

namespace {

// Selects rows [begin, begin + count) of file dataspace `fspace` (full rows of a dataset of shape
// `dims`) and returns a memory dataspace of the selection's shape: with a flat one HDF5 maps every
// element to its chunk one by one (H5S_select_iterate), 30x slower on [c, nc, 18] config tensors.
H5Handle select_row_range(hid_t fspace, const std::vector<int64_t>& dims, int64_t begin,
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

}  // namespace

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

// ---------------------------------------------------------------------------------------------
// Groups

std::string H5Group::child_where(const std::string& name) const {
    return where_ + (where_.back() == '/' ? "" : "/") + name;
}

bool H5Group::has(const std::string& name) const {
    return h5_check(H5Lexists(id(), name.c_str(), H5P_DEFAULT), child_where(name), "H5Lexists") > 0;
}

namespace {
herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
    static_cast<std::vector<std::string>*>(out)->push_back(name);
    return 0;
}
}  // namespace

std::vector<std::string> H5Group::children() const {
    std::vector<std::string> names;
    hsize_t idx = 0;
    h5_check(H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, &idx, collect_name, &names), where_,
             "H5Literate");
    std::sort(names.begin(), names.end());
    return names;
}

H5Group H5Group::create_group(const std::string& name) {
    const std::string w = child_where(name);
    return H5Group(
        H5Handle(h5_check(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), w,
                          "H5Gcreate2")),
        w);
}

H5Group H5Group::open_group(const std::string& name) const {
    const std::string w = child_where(name);
    SEGRANK_CHECK(has(name), w, ": no such group");
    return H5Group(H5Handle(h5_check(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), w, "H5Gopen2")), w);
}

H5Dataset H5Group::open_dataset(const std::string& name) const {
    const std::string w = child_where(name);
    SEGRANK_CHECK(has(name), w, ": no such dataset");
    return H5Dataset(H5Handle(h5_check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), w, "H5Dopen2")),
                     w);
}

H5Dataset H5Group::write_impl(const std::string& name, H5Type t, const std::vector<int64_t>& shape,
                              const void* data, size_t n, const H5WriteOptions& opt) {
    const std::string w = child_where(name);
    SEGRANK_CHECK(shape.size() >= 1 && shape.size() <= 3, w, ": rank ", shape.size(),
                  " not supported (1-3)");
    int64_t total = 1;
    for (int64_t d : shape) {
        SEGRANK_CHECK(d >= 0, w, ": negative dimension ", d);
        total *= d;
    }
    SEGRANK_CHECK(static_cast<int64_t>(n) == total, w, ": data has ", n, " elements, shape needs ",
                  total);
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    H5Handle space(h5_check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                            w, "H5Screate_simple"));
    std::vector<uint64_t> chunk;  // empty: contiguous
    if (opt.chunk_rows > 0 && total > 0) {
        chunk.assign(dims.begin(), dims.end());
        chunk[0] = static_cast<uint64_t>(std::min<int64_t>(opt.chunk_rows, shape[0]));
    }
    H5Dataset ds = create_dataset(name, t, space.get(), chunk, opt.deflate_level);
    if (total > 0) {
        h5_check(H5Dwrite(ds.id(), mem_type(t), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), w,
                 "H5Dwrite");
    }
    return ds;
}

H5Dataset H5Group::create_appendable_impl(const std::string& name, H5Type t,
                                          const std::vector<int64_t>& row_shape,
                                          const H5WriteOptions& opt) {
    const std::string w = child_where(name);
    SEGRANK_CHECK(row_shape.size() <= 2, w, ": rank ", row_shape.size() + 1,
                  " not supported (1-3)");
    SEGRANK_CHECK(opt.chunk_rows >= 1, w, ": an appendable dataset needs chunk_rows >= 1, got ",
                  opt.chunk_rows);
    std::vector<hsize_t> dims{0}, maxdims{H5S_UNLIMITED};
    std::vector<uint64_t> chunk{static_cast<uint64_t>(opt.chunk_rows)};
    for (int64_t d : row_shape) {
        SEGRANK_CHECK(d >= 1, w, ": row dimension ", d, " must be >= 1");
        dims.push_back(static_cast<hsize_t>(d));
        maxdims.push_back(static_cast<hsize_t>(d));
        chunk.push_back(static_cast<uint64_t>(d));
    }
    H5Handle space(
        h5_check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), maxdims.data()), w,
                 "H5Screate_simple"));
    return create_dataset(name, t, space.get(), chunk, opt.deflate_level);
}

H5Dataset H5Group::create_dataset(const std::string& name, H5Type t, int64_t space,
                                  const std::vector<uint64_t>& chunk, int deflate_level) {
    const std::string w = child_where(name);
    H5Handle dcpl(h5_check(H5Pcreate(H5P_DATASET_CREATE), w, "H5Pcreate"));
    if (!chunk.empty()) {
        const std::vector<hsize_t> c(chunk.begin(), chunk.end());
        h5_check(H5Pset_chunk(dcpl.get(), static_cast<int>(c.size()), c.data()), w, "H5Pset_chunk");
        if (deflate_level > 0) {
            h5_check(H5Pset_shuffle(dcpl.get()), w, "H5Pset_shuffle");
            h5_check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(deflate_level)), w,
                     "H5Pset_deflate");
        }
    }
    return H5Dataset(H5Handle(h5_check(H5Dcreate2(id(), name.c_str(), file_type(t), space,
                                                  H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                                       w, "H5Dcreate2")),
                     w);
}

void H5Dataset::append_impl(H5Type t, const void* data, size_t n) {
    SEGRANK_CHECK(type() == t, where_, ": appending values of another element type");
    auto dims = shape();
    const int64_t row = row_elements();
    SEGRANK_CHECK(row > 0 && static_cast<int64_t>(n) % row == 0, where_, ": appending ", n,
                  " elements, not a whole number of rows of ", row);
    const int64_t rows = static_cast<int64_t>(n) / row;
    if (rows == 0) return;
    std::vector<hsize_t> grown(dims.begin(), dims.end());
    const hsize_t begin = grown[0];
    grown[0] += static_cast<hsize_t>(rows);
    h5_check(H5Dset_extent(id(), grown.data()), where_, "H5Dset_extent (append)");
    H5Handle fspace(h5_check(H5Dget_space(id()), where_, "H5Dget_space"));
    dims[0] = static_cast<int64_t>(grown[0]);
    H5Handle mspace =
        select_row_range(fspace.get(), dims, static_cast<int64_t>(begin), rows, where_);
    h5_check(H5Dwrite(id(), mem_type(t), mspace.get(), fspace.get(), H5P_DEFAULT, data), where_,
             "H5Dwrite (append)");
}

// ---------------------------------------------------------------------------------------------
// Files

H5File H5File::create(const std::filesystem::path& path) {
    quiet_hdf5();
    return H5File(
        H5Handle(h5_check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                          path.string(), "creating the HDF5 file")),
        path);
}

H5File H5File::open_read(const std::filesystem::path& path) {
    quiet_hdf5();
    SEGRANK_CHECK(std::filesystem::exists(path), path.string(), ": no such HDF5 file");
    require_regular_input(path, "an HDF5 file");
    return H5File(H5Handle(h5_check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT),
                                    path.string(), "opening the HDF5 file")),
                  path);
}

H5File H5File::open_write(const std::filesystem::path& path) {
    quiet_hdf5();
    SEGRANK_CHECK(std::filesystem::is_regular_file(path), path.string(), ": no such HDF5 file");
    return H5File(H5Handle(h5_check(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), path.string(),
                                    "opening the HDF5 file for writing")),
                  path);
}

H5Group H5File::root() const {
    const std::string w = path_.string() + ":/";
    return H5Group(H5Handle(h5_check(H5Gopen2(h_.get(), "/", H5P_DEFAULT), w, "H5Gopen2")), w);
}

void H5File::close() {
    if (!h_.valid()) return;
    const bool flushed = H5Fflush(h_.get(), H5F_SCOPE_LOCAL) >= 0;
    const std::string detail = flushed ? "" : h5_detail();
    // Closed in any case: a failed flush leaves nothing worth keeping open, and the error path of
    // every writer removes the file.
    const bool closed = h_.release();
    SEGRANK_CHECK(flushed, path_.string(), ": flushing the HDF5 file failed (", detail, ")");
    SEGRANK_CHECK(closed, path_.string(), ": closing the HDF5 file failed (", h5_detail(), ")");
}

}  // namespace segrank
