// Thin RAII layer over HDF5's C API (docs/architecture.md#third-party-libraries,
// docs/style.md#errors): files, groups, datasets and attributes with typed 1-D..3-D array I/O,
// row-selection (hyperslab) reads, chunking + deflate, string/int attributes. Only data/h5_*.cpp
// (and data/h5_internal.h) include <hdf5.h>. Every HDF5 failure becomes a segrank::Error naming the
// file and the object path; HDF5's own error printing is switched off. HDF5 here is the serial
// build: call it from one thread at a time.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace segrank {

/// Name of the uint64 array attribute holding a checksummed dataset's xxh3_64 per chunk
/// (H5WriteOptions::checksum).
inline constexpr const char* kChunkHashAttr = "chunk_xxh3";

/// Element types stored in datasets (memory and file use the same little-endian type).
enum class H5Type { kF32, kF64, kI64, kI32, kI8, kU8 };

template <typename T>
constexpr H5Type h5_type_of();
template <>
constexpr H5Type h5_type_of<float>() {
    return H5Type::kF32;
}
template <>
constexpr H5Type h5_type_of<double>() {
    return H5Type::kF64;
}
template <>
constexpr H5Type h5_type_of<int64_t>() {
    return H5Type::kI64;
}
template <>
constexpr H5Type h5_type_of<int32_t>() {
    return H5Type::kI32;
}
template <>
constexpr H5Type h5_type_of<int8_t>() {
    return H5Type::kI8;
}
template <>
constexpr H5Type h5_type_of<uint8_t>() {
    return H5Type::kU8;
}

/// Layout of a new dataset. chunk_rows > 0 chunks along dimension 0 (each chunk = chunk_rows full
/// rows, clamped to the row count); deflate_level 1..9 adds shuffle + deflate (needs chunking).
/// checksum protects every chunk twice: HDF5's Fletcher32 filter over the bytes as stored (a
/// mismatch throws "<file>:<dataset>: checksum mismatch ...: the file is corrupt"), and the uint64
/// array attribute "chunk_xxh3" (kChunkHashAttr): the xxh3_64 of each chunk's rows as they read
/// (little-endian, stored element type, before compression), one value per chunk along dimension
/// 0, verified on every read (read, read_rows, read_range) of rows of that chunk. Fletcher32 sums
/// 16-bit words mod 65535 and so misses a word changed 0x0000 <-> 0xFFFF; xxh3_64 has no such
/// blind spot. Checksums need chunking, so with chunk_rows = 0 a non-empty dataset becomes one
/// chunk (an empty one stays contiguous, unchecked: it stores no bytes).
struct H5WriteOptions {
    int64_t chunk_rows = 0;
    int deflate_level = 0;
    bool checksum = false;
};

/// An owned HDF5 identifier (file, group, dataset, ...); closes it on destruction. Move-only.
/// A close that fails (a file's final flush on a full disk) still gives the id up: HDF5 has freed
/// the object by then, so nothing may touch it again.
class H5Handle {
public:
    H5Handle() = default;
    explicit H5Handle(int64_t id);
    ~H5Handle();
    H5Handle(const H5Handle&) = delete;
    H5Handle& operator=(const H5Handle&) = delete;
    H5Handle(H5Handle&& o) noexcept : id_(o.id_) { o.id_ = -1; }
    H5Handle& operator=(H5Handle&& o) noexcept;
    int64_t get() const { return id_; }
    bool valid() const { return id_ >= 0; }
    /// Closes now (no-op when empty); false when HDF5 reported a failure (the id is gone either
    /// way).
    bool release() noexcept;
    /// Ids currently owned by H5Handles in this process: 0 once every file, group and dataset
    /// object is gone (the leak check of tests and of the fuzz harness).
    static int64_t open_count();

private:
    int64_t id_ = -1;
};

/// Common part of groups and datasets: attributes and the "<file>:<object path>" used in messages.
class H5Object {
public:
    /// "<file path>:<object path>", e.g. "store.h5:/graphs/a/node_feat".
    const std::string& where() const { return where_; }
    bool has_attr(const std::string& name) const;
    /// Writes (or replaces) a fixed-length, NUL-terminated UTF-8 string attribute of
    /// value.size() + 1 bytes, kept in the (checksummed) object header like every other
    /// attribute; h5py reads it as numpy bytes (`.decode()` gives str). Never a variable-length
    /// string: those live in HDF5's global heap, which has no checksum (docs/files.md).
    void set_attr(const std::string& name, const std::string& value);
    /// Writes (or replaces) a scalar int64 attribute.
    void set_attr(const std::string& name, int64_t value);
    /// Reads a fixed-length string attribute (up to its first NUL); nullopt when absent. Throws
    /// segrank::Error naming the attribute on a type mismatch and, without reading its value, on
    /// a variable-length string: HDF5 dereferences its global-heap ID unchecked, and one flipped
    /// bit there hangs or crashes the reader (segrank wrote those before checkpoint
    /// format_version 3 and graph store format_version 3).
    std::optional<std::string> attr_string(const std::string& name) const;
    /// True when attribute `name` exists and is a variable-length string (its type only is read).
    bool attr_is_variable_string(const std::string& name) const;
    /// Reads an integer attribute as int64; nullopt when absent.
    std::optional<int64_t> attr_int(const std::string& name) const;

protected:
    H5Object(H5Handle h, std::string where) : h_(std::move(h)), where_(std::move(where)) {}
    int64_t id() const { return h_.get(); }
    H5Handle h_;
    std::string where_;
    // Set on objects reached from an H5File whose require_chunk_hashes() was called (and passed
    // on to their children): a dataset read without a chunk_xxh3 attribute is refused.
    bool require_hashes_ = false;
};

/// An open dataset of rank 1-3.
class H5Dataset : public H5Object {
public:
    /// Dimensions as stored.
    std::vector<int64_t> shape() const;
    /// Product of shape() / shape()[0]: elements per row along dimension 0 (1 for rank 1).
    int64_t row_elements() const;
    /// Stored element type; throws for types outside H5Type.
    H5Type type() const;
    /// Bytes the dataset occupies in the file (after compression).
    int64_t storage_bytes() const;
    /// Rows per chunk along dimension 0, or 0 when not chunked.
    int64_t chunk_rows() const;
    /// Product of shape(), checked against what the file stores for the dataset, so that a shape
    /// edited to claim more than the file holds fails before anyone allocates for it. Throws
    /// segrank::Error naming the dataset when the shape overflows, the stored bytes exceed the file
    /// size, a chunk is missing (it would read as fill values), or the shape needs more bytes than
    /// the stored ones can hold (uncompressed: equal; deflate: at most 1032 times as many), or
    /// the shape needs more bytes in memory than max_input_array_bytes() (data/input_memory.h).
    int64_t stored_elements() const;

    /// Reads the whole dataset into `out` (size = product of shape), converting to T, every chunk
    /// verified against its hash when the dataset has them (read_rows). Integer T
    /// refuses float datasets (HDF5 would truncate 20.5 to 20 and turn NaN into INT64_MIN); every
    /// read below does the same.
    template <typename T>
    void read(std::span<T> out) const {
        read_all(h5_type_of<T>(), out.data(), out.size());
    }
    template <typename T>
    std::vector<T> read() const;
    /// Reads rows `rows` (indices along dimension 0, any order, repeats allowed) into `out`
    /// ([rows.size(), row_elements()] row-major, in the order given). Only the chunks holding
    /// those rows are read from disk. With chunk hashes (H5WriteOptions::checksum) each chunk
    /// holding a requested row is read whole once, through one chunk of scratch, and verified
    /// before its rows are copied out; a mismatch throws "<file>:<dataset>: checksum mismatch in
    /// chunk N (rows a..b): the file is corrupt (stored xxh3_64 X, computed Y; ...)". Throws
    /// naming the row when an index is out of range.
    template <typename T>
    void read_rows(std::span<const int64_t> rows, std::span<T> out) const {
        read_rows_impl(h5_type_of<T>(), rows, out.data(), out.size());
    }
    /// Reads the contiguous rows [begin, begin + count) along dimension 0 into `out`
    /// ([count, row_elements()] row-major) with one hyperslab: no index array, only those chunks
    /// read (each verified as read_rows does; whole chunks inside the range go straight into
    /// `out`). Throws naming the dataset when the range leaves [0, shape()[0]] or sizes mismatch.
    template <typename T>
    void read_range(int64_t begin, int64_t count, std::span<T> out) const {
        read_range_impl(h5_type_of<T>(), begin, count, out.data(), out.size());
    }
    /// Appends `data` ([rows, row_elements()] row-major, T the stored type) after the last row of
    /// a dataset made by H5Group::create_appendable: dimension 0 grows by data.size() /
    /// row_elements(). Throws segrank::Error naming the dataset when T is not the stored type, the
    /// size is not a whole number of rows, or HDF5 fails (e.g. the dataset is not extendible).
    template <typename T>
    void append(std::span<const T> data) {
        append_impl(h5_type_of<T>(), data.data(), data.size());
    }
    /// True when the dataset carries its xxh3_64 per chunk (attribute kChunkHashAttr).
    bool has_chunk_hashes() const { return has_attr(kChunkHashAttr); }

private:
    friend class H5Group;
    using H5Object::H5Object;
    // The chunk hashes of a checksummed dataset being appended to (create_appendable): the
    // hashes of its full chunks and the running hash of the last, partial one.
    struct AppendHashes;
    std::shared_ptr<AppendHashes> appending_;
    // The chunk_xxh3 values and rows per chunk of a dataset of `rows` rows, checked to be one per
    // chunk; null when the dataset carries none (then refused when require_hashes_). Read once per
    // H5Dataset object and row count and kept (hashes_): a reader that reads a dataset of 10^5
    // one-row chunks in many small reads would otherwise read its 800 KB attribute every time.
    // Not synchronized: like the HDF5 handle it wraps, an H5Dataset is used by one thread at a
    // time (every reader opens its own).
    struct ChunkHashes {
        std::vector<uint64_t> values;
        int64_t rows_per_chunk = 0;
        int64_t rows = -1;  // the dataset's rows when read
    };
    std::shared_ptr<const ChunkHashes> chunk_hashes(int64_t rows) const;
    mutable std::shared_ptr<const ChunkHashes> hashes_;
    // Rows [begin, begin + count) read chunk by chunk, each chunk's rows verified against its
    // hash and converted to `t`; `place(first, n, src)` receives rows [first, first + n) of the
    // chunk (src: [n, row_elements()] as `t`) that overlap the range. When `direct` is non-null
    // and t is the stored type, chunks inside the range are read straight into
    // direct + (chunk's first row - begin) * row bytes instead.
    void read_verified(H5Type t, const ChunkHashes& h, int64_t begin, int64_t count, void* direct,
                       const std::function<void(int64_t, int64_t, const uint8_t*)>& place) const;
    // read_rows of a dataset with chunk hashes (rows checked in range, out sized): each chunk
    // holding a requested row read and verified once, through one chunk of scratch.
    void read_rows_verified(H5Type t, const ChunkHashes& h, std::span<const int64_t> rows,
                            void* out) const;
    void read_all(H5Type t, void* out, size_t n) const;
    void read_rows_impl(H5Type t, std::span<const int64_t> rows, void* out, size_t n) const;
    void read_range_impl(H5Type t, int64_t begin, int64_t count, void* out, size_t n) const;
    void append_impl(H5Type t, const void* data, size_t n);
    void check_readable_as(H5Type t) const;
    // stored_elements() after check_readable_as(t), the bytes read as `t` checked against
    // max_input_array_bytes() (an int8 dataset read as int64 needs 8 bytes per stored one).
    size_t elements_to_read(H5Type t) const;
    // Throws naming the dataset when a chunk holding a row of [begin, begin + count) (or, not
    // chunked, the dataset) was never written: HDF5 would return fill values for it.
    void check_rows_stored(int64_t begin, int64_t count) const;
};

/// An open group (the root group of a file is "/").
class H5Group : public H5Object {
public:
    bool has(const std::string& name) const;
    /// Names of the direct children (groups and datasets), sorted.
    std::vector<std::string> children() const;
    H5Group create_group(const std::string& name);
    /// Opens a child group; throws naming the path when it does not exist.
    H5Group open_group(const std::string& name) const;
    H5Dataset open_dataset(const std::string& name) const;
    /// Creates dataset `name` with `shape` (rank 1-3) holding `data` (size = product of shape).
    template <typename T>
    H5Dataset write(const std::string& name, const std::vector<int64_t>& shape,
                    std::span<const T> data, const H5WriteOptions& opt = {}) {
        return write_impl(name, h5_type_of<T>(), shape, data.data(), data.size(), opt);
    }

    /// Creates an empty dataset `name` of shape [0, row_shape...] (rank 1-3) whose dimension 0
    /// grows with H5Dataset::append (unlimited maximum; chunked along dimension 0 by
    /// opt.chunk_rows, which must be >= 1; opt.deflate_level as for write). For data too large to
    /// hold in memory at once, written in parts.
    template <typename T>
    H5Dataset create_appendable(const std::string& name, const std::vector<int64_t>& row_shape,
                                const H5WriteOptions& opt) {
        return create_appendable_impl(name, h5_type_of<T>(), row_shape, opt);
    }

private:
    friend class H5File;
    using H5Object::H5Object;
    H5Dataset create_appendable_impl(const std::string& name, H5Type t,
                                     const std::vector<int64_t>& row_shape,
                                     const H5WriteOptions& opt);
    // A new dataset over dataspace id `space`: chunked by `chunk` (shuffle + deflate when
    // deflate_level > 0, then Fletcher32 when checksum), or contiguous when chunk is empty;
    // write_through: no chunk cache (chunks go to the file as they are written).
    H5Dataset create_dataset(const std::string& name, H5Type t, int64_t space,
                             const std::vector<uint64_t>& chunk, int deflate_level, bool checksum,
                             bool write_through = false);
    H5Dataset write_impl(const std::string& name, H5Type t, const std::vector<int64_t>& shape,
                         const void* data, size_t n, const H5WriteOptions& opt);
    std::string child_where(const std::string& name) const;
};

/// An open HDF5 file. create() truncates; open_read()/open_write() require an existing file.
class H5File {
public:
    /// Creates (truncates) `path` in the HDF5 1.10 file format (libver bounds v110..v110; readable
    /// by HDF5 >= 1.10 and h5py built on it): superblock v3, v2 object headers, fixed/extensible
    /// array chunk indexes, all carrying checksums HDF5 verifies on load, so a flipped metadata
    /// bit fails the open or read instead of being followed; attributes may exceed 64 KiB
    /// (stored densely): a chunk_xxh3 list of more than 8192 chunks. Throws segrank::Error.
    static H5File create(const std::filesystem::path& path);
    static H5File open_read(const std::filesystem::path& path);
    static H5File open_write(const std::filesystem::path& path);

    const std::filesystem::path& path() const { return path_; }
    H5Group root() const;
    /// From now on every dataset reached through root() must carry chunk_xxh3 (attribute
    /// kChunkHashAttr) to be read: a read of rows of one without throws segrank::Error naming it
    /// (a graph store of format_version 2 checksums every dataset; one without was edited).
    void require_chunk_hashes() { require_hashes_ = true; }
    /// Flushes and closes; throws segrank::Error naming the file when either fails (the file is
    /// closed in any case). The destructor closes silently.
    void close();

private:
    H5File(H5Handle h, std::filesystem::path p) : h_(std::move(h)), path_(std::move(p)) {}
    H5Handle h_;
    std::filesystem::path path_;
    bool require_hashes_ = false;
};

template <typename T>
std::vector<T> H5Dataset::read() const {
    std::vector<T> v(elements_to_read(h5_type_of<T>()));
    read(std::span<T>(v));
    return v;
}

}  // namespace segrank
