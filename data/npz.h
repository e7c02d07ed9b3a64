// npz = zip of npy arrays (docs/files.md#zip-and-npy-layers): a reader with typed, streaming
// accessors and a writer whose output numpy loads. libzip does the zip layer (stored/deflate,
// ZIP64, CRC-32); only data/npz.cpp includes <zip.h>. Every error names the file and the key:
// "<path>: key 'x': ...".
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/npy.h"
#include "util/atomic_file.h"

namespace segrank {

/// Zip compression method of written entries: 0 (np.savez) or 8 (np.savez_compressed).
/// kDeflateFast: deflate at zlib level 1 (libzip's default level is 9, several times slower on the
/// repetitive config arrays; used by `segrank synth`).
enum class NpzCompression { kStored, kDeflate, kDeflateFast };

/// Read-only npz archive. Opening reads only the zip central directory; arrays are streamed on
/// demand straight into caller-provided buffers (no intermediate copy when the stored dtype
/// matches). Not thread-safe: use one reader per thread.
class NpzReader {
public:
    /// Opens `path`. Throws segrank::Error naming the file when it is missing, truncated or not a
    /// zip, or when two entries have the same key ("duplicate key 'x'").
    explicit NpzReader(const std::filesystem::path& path);
    ~NpzReader();
    NpzReader(const NpzReader&) = delete;
    NpzReader& operator=(const NpzReader&) = delete;
    NpzReader(NpzReader&&) noexcept;
    NpzReader& operator=(NpzReader&&) noexcept;

    const std::filesystem::path& path() const;
    /// Keys (entry names without ".npy") in archive order.
    std::vector<std::string> keys() const;
    bool contains(const std::string& key) const;
    /// "<path>: key '<key>'" — the prefix of every message about `key`.
    std::string where(const std::string& key) const;

    /// Reads only the npy preamble of `key`. Throws when the key is missing ("missing key"), the
    /// compression method is not 0/8, the magic/dtype is bad, or the entry size disagrees with
    /// the header ("payload size mismatch").
    NpyHeader header(const std::string& key) const;
    /// Same, for a caller about to allocate the array as elements of `target_element_size` bytes
    /// (4: read_f32, 8: read_i64, 1: read_i8): also throws naming the file and the key when the
    /// declared element count times that size exceeds what the entry's compressed bytes can
    /// expand to (deflate's maximum ratio 1032:1), so a header that lies about its size cannot
    /// make the caller allocate more than the archive could hold once widened (an int8 array read
    /// as int64 needs 8 bytes per stored byte).
    NpyHeader header(const std::string& key, size_t target_element_size) const;

    /// Streams `key` into `out` (size must equal the element count), converting to float32.
    /// Accepts <f4 and <f8 (f8 is rounded); fortran-order arrays are transposed to C order.
    void read_f32(const std::string& key, std::span<float> out) const;
    /// Same for any integer or bool dtype widened to int64 (u8 values above 2^63-1 are errors).
    void read_i64(const std::string& key, std::span<int64_t> out) const;
    /// Same narrowing to int8: accepts integer, bool and float dtypes whose values are integral and
    /// in [-128, 127] (e.g. node_config_feat stored as f4); otherwise throws naming the element.
    void read_i8(const std::string& key, std::span<int8_t> out) const;

    /// Convenience: whole array as float32 / int64 with its (C-order) shape.
    std::vector<float> read_f32(const std::string& key, std::vector<int64_t>* shape) const;
    std::vector<int64_t> read_i64(const std::string& key, std::vector<int64_t>* shape) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

/// Writes an npz: npy v1.0 headers exactly as numpy writes them, entries stored or deflated, into a
/// temporary file that finish() commits onto `path` (util/atomic_file.h; no partial file on failure
/// or destruction). A directory at `path` is refused by the constructor. libzip writes every entry
/// at finish(), so added entries wait: those of at least `spill_bytes` bytes (npy preamble
/// included) in a spill file beside the temporary file ("<temp>.<i>.npy", removed by finish() and
/// by the destructor), the others in memory. The spill keeps a graph's config features (gigabytes
/// at the layout collection's largest sizes) from being held twice by `segrank synth`/`ingest`.
class NpzWriter {
public:
    /// Default spill threshold: 64 MiB.
    static constexpr size_t kDefaultSpillBytes = size_t{64} << 20;
    NpzWriter(const std::filesystem::path& path, NpzCompression compression,
              size_t spill_bytes = kDefaultSpillBytes);
    ~NpzWriter();  ///< discards the temporary file when finish() was not reached
    NpzWriter(const NpzWriter&) = delete;
    NpzWriter& operator=(const NpzWriter&) = delete;

    /// Adds `key` (C-order `payload` of `dtype`, bytes = product(shape) * dtype_size). Copies it
    /// (to memory or to a spill file, see the class comment). Throws segrank::Error on a size
    /// mismatch, a duplicate key, or a spill file that cannot be written (naming it and the
    /// reason).
    void add(const std::string& key, DType dtype, const std::vector<int64_t>& shape,
             std::span<const uint8_t> payload);
    void add_f32(const std::string& key, const std::vector<int64_t>& shape,
                 std::span<const float> v);
    void add_i64(const std::string& key, const std::vector<int64_t>& shape,
                 std::span<const int64_t> v);
    void add_u8(const std::string& key, const std::vector<int64_t>& shape,
                std::span<const uint8_t> v);

    /// Writes the archive and commits it into place. Throws segrank::Error on I/O failure.
    void finish();

private:
    std::filesystem::path path_;
    AtomicOutput out_;
    NpzCompression compression_;
    std::vector<std::string> keys_;
    std::vector<std::vector<uint8_t>> entries_;  // npy preamble + payload, alive until zip_close
    std::vector<std::filesystem::path> spills_;  // per key: its spill file, or empty (in entries_)
    size_t spill_bytes_;
    bool finished_ = false;
    void remove_spills() noexcept;
};

}  // namespace segrank
