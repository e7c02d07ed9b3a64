// Parts of the HDF5 wrapper (data/h5_file.h) shared by its source files data/h5_*.cpp: the error
// conversion and the element-type tables. With data/h5_*.cpp the only includer of <hdf5.h>
// (docs/architecture.md#third-party-libraries); not a public header.
#pragma once
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "data/h5_file.h"
#include "gnn/core/check.h"
#include "gnn/core/hash.h"

namespace segrank::h5detail {

static_assert(std::is_same_v<hid_t, int64_t>, "HDF5 >= 1.10 uses 64-bit hid_t");

// HDF5's description of the current error stack's innermost failure. A failed write describes
// itself as "file write failed: time = ..., filename = ..., errno = 28, error message = 'No space
// left on device', buf = ..." over two lines: keep the operation and the system's message.
std::string h5_detail();

// The message for a failed HDF5 call `what` on `where`, from the current error stack (cleared):
// "<where>: checksum mismatch: the file is corrupt (...)" when a chunk failed its Fletcher32
// checksum on a read (on a write, whose `what` names a write, the filter's failure is the write's:
// "<where>: <what> failed: the write failed (out of memory, ...)"), else "<where>: <what> failed
// (<h5_detail()>)". A non-empty `chunk` ("chunk 3 (rows
// 126..167)") names the chunk read: "<where>: checksum mismatch in <chunk>: ..." or
// "<where>: <what> of <chunk> failed (...)".
std::string h5_failure(const std::string& where, const char* what, const std::string& chunk = {});

// Throws when an HDF5 call returned a negative value.
template <typename R>
R h5_check(R r, const std::string& where, const char* what) {
    if (r < 0) throw Error(h5_failure(where, what));
    return r;
}

// Keeps the links (`links`, a group or file creation list) and the attributes of the object that
// creation property list `plist` creates in its object header ("compact" storage, checksummed with
// it) instead of moving them to "dense" storage (a fractal heap and a v2 B-tree) past 8 entries:
// HDF5 1.10 frees uninitialised link-table entries when a damaged dense link storage fails to
// load (H5G__dense_iterate -> H5G__link_release_table: SIGSEGV or abort instead of an error).
// An attribute over 64 KiB still goes to dense storage (it cannot be compact).
void set_compact_storage(hid_t plist, bool links, const std::string& where);

// The memory and file (little-endian) HDF5 types of `t`.
hid_t mem_type(H5Type t);
hid_t file_type(H5Type t);
bool is_integer(H5Type t);
// "float32", "int64", ... for messages.
const char* type_name(H5Type t);
// Bytes per element.
size_t type_size(H5Type t);

// Selects rows [begin, begin + count) of file dataspace `fspace` (full rows of a dataset of shape
// `dims`) and returns a memory dataspace of the selection's shape: with a flat one HDF5 maps every
// element to its chunk one by one (H5S_select_iterate), 30x slower on [c, nc, 18] config tensors.
H5Handle select_row_range(hid_t fspace, const std::vector<int64_t>& dims, int64_t begin,
                          int64_t count, const std::string& where);

// xxh3_64 of each block of `rows_per_chunk` rows of `data` ([rows, row_bytes] bytes, the last
// block possibly shorter): the chunk_xxh3 values of a dataset chunked by rows_per_chunk rows.
std::vector<uint64_t> hash_chunks(const void* data, int64_t rows, size_t row_bytes,
                                  int64_t rows_per_chunk);
// Writes (or replaces) the uint64 array attribute kChunkHashAttr of object `obj` (`where` in
// messages).
void write_chunk_hashes(hid_t obj, const std::string& where, const std::vector<uint64_t>& hashes);

}  // namespace segrank::h5detail

namespace segrank {

// The chunk hashes of a checksummed dataset grown by H5Dataset::append: those of its full chunks
// and the running hash of its last, partial chunk (rows_per_chunk rows make a chunk).
struct H5Dataset::AppendHashes {
    explicit AppendHashes(int64_t r) : rows_per_chunk(r) {}
    int64_t rows_per_chunk;
    std::vector<uint64_t> full;
    std::unique_ptr<ContentHasher> partial = std::make_unique<ContentHasher>();
    int64_t partial_rows = 0;
    // Adds `rows` rows of `row_bytes` bytes at `data` (the rows appended, in order).
    void add(const void* data, int64_t rows, size_t row_bytes);
    // The chunk_xxh3 values of every row added so far.
    std::vector<uint64_t> values() const;
};

}  // namespace segrank
