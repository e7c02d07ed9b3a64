// HDF5 groups (data/h5_file.h): children, and datasets created whole, or appendable and grown
// row by row.
#include <algorithm>

#include "data/h5_file.h"
#include "data/h5_internal.h"

namespace segrank {

using namespace h5detail;

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
    H5Handle gcpl(h5_check(H5Pcreate(H5P_GROUP_CREATE), w, "H5Pcreate"));
    set_compact_storage(gcpl.get(), /*links=*/true, w);
    return H5Group(
        H5Handle(h5_check(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), w,
                          "H5Gcreate2")),
        w);
}

H5Group H5Group::open_group(const std::string& name) const {
    const std::string w = child_where(name);
    SEGRANK_CHECK(has(name), w, ": no such group");
    H5Group g(H5Handle(h5_check(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), w, "H5Gopen2")), w);
    g.require_hashes_ = require_hashes_;
    return g;
}

H5Dataset H5Group::open_dataset(const std::string& name) const {
    const std::string w = child_where(name);
    SEGRANK_CHECK(has(name), w, ": no such dataset");
    H5Dataset d(H5Handle(h5_check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), w, "H5Dopen2")), w);
    d.require_hashes_ = require_hashes_;
    return d;
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
    if ((opt.chunk_rows > 0 || opt.checksum) && total > 0) {
        chunk.assign(dims.begin(), dims.end());
        if (opt.chunk_rows > 0)
            chunk[0] = static_cast<uint64_t>(std::min<int64_t>(opt.chunk_rows, shape[0]));
    }
    // Written whole by the one H5Dwrite below: its chunks go straight to the file (no chunk cache),
    // so a write that fails (a full disk, a file-size limit) fails here, not in a later flush.
    H5Dataset ds = create_dataset(name, t, space.get(), chunk, opt.deflate_level, opt.checksum,
                                  /*write_through=*/true);
    if (total > 0) {
        h5_check(H5Dwrite(ds.id(), mem_type(t), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), w,
                 "H5Dwrite");
        if (opt.checksum) {
            const size_t row_bytes = static_cast<size_t>(total / shape[0]) * type_size(t);
            write_chunk_hashes(
                ds.id(), w, hash_chunks(data, shape[0], row_bytes, static_cast<int64_t>(chunk[0])));
        }
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
    H5Dataset ds = create_dataset(name, t, space.get(), chunk, opt.deflate_level, opt.checksum);
    if (opt.checksum) {
        ds.appending_ = std::make_shared<H5Dataset::AppendHashes>(opt.chunk_rows);
        write_chunk_hashes(ds.id(), w, {});
    }
    return ds;
}

H5Dataset H5Group::create_dataset(const std::string& name, H5Type t, int64_t space,
                                  const std::vector<uint64_t>& chunk, int deflate_level,
                                  bool checksum, bool write_through) {
    const std::string w = child_where(name);
    H5Handle dcpl(h5_check(H5Pcreate(H5P_DATASET_CREATE), w, "H5Pcreate"));
    H5Handle dapl(h5_check(H5Pcreate(H5P_DATASET_ACCESS), w, "H5Pcreate"));
    set_compact_storage(dcpl.get(), /*links=*/false, w);
    if (write_through)
        h5_check(H5Pset_chunk_cache(dapl.get(), 0, 0, H5D_CHUNK_CACHE_W0_DEFAULT), w,
                 "H5Pset_chunk_cache");
    if (!chunk.empty()) {
        const std::vector<hsize_t> c(chunk.begin(), chunk.end());
        h5_check(H5Pset_chunk(dcpl.get(), static_cast<int>(c.size()), c.data()), w, "H5Pset_chunk");
        if (deflate_level > 0) {
            h5_check(H5Pset_shuffle(dcpl.get()), w, "H5Pset_shuffle");
            h5_check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(deflate_level)), w,
                     "H5Pset_deflate");
        }
        // Last in the pipeline: the checksum covers the bytes as stored (after compression).
        if (checksum) h5_check(H5Pset_fletcher32(dcpl.get()), w, "H5Pset_fletcher32");
    }
    return H5Dataset(H5Handle(h5_check(H5Dcreate2(id(), name.c_str(), file_type(t), space,
                                                  H5P_DEFAULT, dcpl.get(), dapl.get()),
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
    // The chunk hashes grow with the rows: only the writer that created the dataset knows the
    // running hash of its partial last chunk.
    SEGRANK_CHECK(appending_ || !has_chunk_hashes(), where_,
                  ": appending to a checksummed dataset not created by this writer (its chunk "
                  "hashes cannot be extended)");
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
    if (appending_) {  // rewritten after every append: the file always holds every row's hash
        appending_->add(data, rows, static_cast<size_t>(row) * type_size(t));
        write_chunk_hashes(id(), where_, appending_->values());
    }
}

}  // namespace segrank
