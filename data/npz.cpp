// npz reader/writer over libzip (docs/files.md#zip-and-npy-layers). The only file including
// <zip.h>.
#include "data/npz.h"

#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <type_traits>

#include "data/input_memory.h"
#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {

struct NpzReader::Impl {
    std::filesystem::path path;
    uint64_t file_bytes = 0;  // archive size on disk
    zip_t* za = nullptr;
    std::vector<std::string> keys;
    std::map<std::string, zip_uint64_t> index;  // key -> zip entry index

    ~Impl() {
        if (za) zip_discard(za);
    }
};

namespace {

std::string zip_code_message(int code) {
    zip_error_t e;
    zip_error_init_with_code(&e, code);
    std::string s = zip_error_strerror(&e);
    zip_error_fini(&e);
    return s;
}

// An open zip entry; reads exactly, with the CRC verified when the end is reached.
class Entry {
public:
    Entry(const NpzReader::Impl& z, const std::string& key, const std::string& where)
        : where_(where) {
        auto it = z.index.find(key);
        SEGRANK_CHECK(it != z.index.end(), where, ": missing key (archive has ", z.keys.size(),
                      " keys)");
        zip_stat_t st;
        zip_stat_init(&st);
        SEGRANK_CHECK(zip_stat_index(z.za, it->second, 0, &st) == 0, where,
                      ": cannot stat entry: ", zip_strerror(z.za));
        SEGRANK_CHECK(st.comp_method == ZIP_CM_STORE || st.comp_method == ZIP_CM_DEFLATE, where,
                      ": unsupported zip compression method ", st.comp_method,
                      " (expected 0 stored or 8 deflate)");
        // Callers size their buffers from these (unverified) header sizes: bound them by the bytes
        // the archive holds before anyone allocates (deflate expands at most 1032:1).
        SEGRANK_CHECK((st.valid & ZIP_STAT_SIZE) && (st.valid & ZIP_STAT_COMP_SIZE), where,
                      ": zip entry without sizes");
        SEGRANK_CHECK(st.comp_size <= z.file_bytes, where, ": zip header claims ", st.comp_size,
                      " compressed bytes in a ", z.file_bytes,
                      "-byte archive (corrupt or crafted)");
        if (st.comp_method == ZIP_CM_STORE) {
            SEGRANK_CHECK(st.size == st.comp_size, where, ": stored zip entry claims ", st.size,
                          " bytes but occupies ", st.comp_size, " (corrupt or crafted)");
        } else {
            SEGRANK_CHECK(st.size / 1032 <= st.comp_size, where, ": zip header claims ", st.size,
                          " uncompressed bytes from ", st.comp_size,
                          " compressed ones, more than deflate's maximum ratio 1032:1 (corrupt or "
                          "crafted)");
        }
        size_ = st.size;
        comp_size_ = st.comp_size;
        f_ = zip_fopen_index(z.za, it->second, 0);
        SEGRANK_CHECK(f_ != nullptr, where, ": cannot open entry: ", zip_strerror(z.za));
    }
    ~Entry() {
        if (f_) zip_fclose(f_);
    }
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

    uint64_t size() const { return size_; }

    // Throws unless `elements` of `target_size` bytes fit in what the compressed bytes can expand
    // to (deflate's maximum ratio; a stored entry is bounded by the same rule, more loosely).
    void check_allocation(const NpyHeader& h, size_t target_size) const {
        // comp_size_ <= the archive's size (checked above), so this product does not overflow.
        const uint64_t can = comp_size_ * kMaxRatio + 4096;
        const auto elements = static_cast<uint64_t>(h.num_elements());
        SEGRANK_CHECK(elements <= can / target_size, where_, ": npy header declares ", elements,
                      " elements (", dtype_descr(h.dtype), " shape ", shape_text(h.shape),
                      "), more than its ", comp_size_, " compressed bytes can hold once read as ",
                      target_size, "-byte elements (at most ", can / target_size,
                      " at deflate's maximum ratio ", kMaxRatio, ":1; corrupt or crafted)");
        // Within the ratio, a 66 MB entry can still declare gigabytes: bound it by the machine.
        check_input_array_bytes(
            elements * target_size, where_,
            str("the array (", dtype_descr(h.dtype), " shape ", shape_text(h.shape), ", read as ",
                target_size, "-byte elements)"));
    }

    void read(void* dst, uint64_t n) {
        auto* p = static_cast<uint8_t*>(dst);
        while (n > 0) {
            const zip_uint64_t want = std::min<uint64_t>(n, uint64_t{1} << 30);
            const zip_int64_t got = zip_fread(f_, p, want);
            fail_if(got < 0);
            SEGRANK_CHECK(got > 0, where_, ": truncated entry (unexpected end of data)");
            p += got;
            n -= static_cast<uint64_t>(got);
        }
    }
    // Reads past the last byte so libzip reaches end-of-stream and verifies the CRC-32.
    void finish() {
        uint8_t extra;
        const zip_int64_t got = zip_fread(f_, &extra, 1);
        fail_if(got < 0);
        SEGRANK_CHECK(got == 0, where_, ": entry holds more bytes than its npy header describes");
    }

    NpyHeader header() {
        uint8_t prefix[kNpyMinPrefix];
        const uint64_t n0 = std::min<uint64_t>(size_, kNpyMinPrefix);
        read(prefix, n0);
        const size_t total = npy_preamble_length({prefix, n0}, where_);
        SEGRANK_CHECK(total <= size_, where_, ": truncated npy header (entry has ", size_,
                      " bytes, header needs ", total, ")");
        // A v1 length field of 0 or 1 ends the preamble inside the prefix already read (the
        // smallest header text, "{}", is 2 bytes).
        SEGRANK_CHECK(total >= n0, where_, ": malformed npy header: its text is ", total - 10,
                      " bytes long (a dict literal is at least 2)");
        std::vector<uint8_t> pre(total);
        std::memcpy(pre.data(), prefix, n0);
        read(pre.data() + n0, total - n0);
        NpyHeader h = parse_npy_header(pre, where_);
        SEGRANK_CHECK(size_ - total == h.payload_bytes(), where_,
                      ": payload size mismatch: header ", dtype_descr(h.dtype), " shape ",
                      shape_text(h.shape), " needs ", h.payload_bytes(),
                      " bytes but the entry holds ", size_ - total);
        return h;
    }

private:
    void fail_if(bool bad) {
        if (!bad) return;
        zip_error_t* e = zip_file_get_error(f_);
        const bool crc = zip_error_code_zip(e) == ZIP_ER_CRC;
        SEGRANK_CHECK(false, where_,
                      crc ? ": CRC-32 mismatch (entry truncated or corrupt): "
                          : ": read error (entry truncated or corrupt?): ",
                      zip_error_strerror(e));
    }

    static constexpr uint64_t kMaxRatio = 1032;  // deflate's maximum expansion
    std::string where_;
    zip_file_t* f_ = nullptr;
    uint64_t size_ = 0;
    uint64_t comp_size_ = 0;
};

template <typename T>
T load_le(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));  // little-endian host (x86-64/aarch64)
    return v;
}

// Converts `count` elements of `src` (dtype t) to T; `first` is the flat index for messages.
template <typename T>
void convert(const uint8_t* src, DType t, size_t count, T* dst, uint64_t first,
             const std::string& where) {
    const size_t es = dtype_size(t);
    for (size_t i = 0; i < count; ++i, src += es) {
        if constexpr (std::is_same_v<T, float>) {
            dst[i] =
                t == DType::kF4 ? load_le<float>(src) : static_cast<float>(load_le<double>(src));
        } else {
            int64_t v = 0;
            switch (t) {
                case DType::kI4:
                    v = load_le<int32_t>(src);
                    break;
                case DType::kI8:
                    v = load_le<int64_t>(src);
                    break;
                case DType::kU1:
                    v = *src;
                    break;
                case DType::kI1:
                    v = static_cast<int8_t>(*src);
                    break;
                case DType::kB1:
                    v = *src != 0;
                    break;
                case DType::kU8: {
                    const uint64_t u = load_le<uint64_t>(src);
                    SEGRANK_CHECK(u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                                  where, ": element ", first + i, " value ", u,
                                  " does not fit in int64");
                    v = static_cast<int64_t>(u);
                    break;
                }
                case DType::kF4:
                case DType::kF8: {
                    const double d = t == DType::kF4 ? load_le<float>(src) : load_le<double>(src);
                    SEGRANK_CHECK(std::isfinite(d) && d == std::trunc(d) && d >= -128 && d <= 127,
                                  where, ": element ", first + i, " value ", d,
                                  " is not an integer in [-128, 127]");
                    v = static_cast<int64_t>(d);
                    break;
                }
            }
            if constexpr (std::is_same_v<T, int8_t>) {
                SEGRANK_CHECK(v >= -128 && v <= 127, where, ": element ", first + i, " value ", v,
                              " does not fit in int8");
            }
            dst[i] = static_cast<T>(v);
        }
    }
}

bool is_exact(DType t, const float*) { return t == DType::kF4; }
bool is_exact(DType t, const int64_t*) { return t == DType::kI8; }
bool is_exact(DType t, const int8_t*) { return t == DType::kI1; }

// Column-major (fortran) -> row-major for rank <= 8, element-wise over opaque `es`-byte values.
void fortran_to_c(const uint8_t* f, uint8_t* c, size_t es, const std::vector<int64_t>& shape,
                  const std::string& where) {
    constexpr size_t kMaxRank = 8;
    const size_t r = shape.size();
    SEGRANK_CHECK(r <= kMaxRank, where, ": fortran-order arrays of rank ", r, " are not supported");
    std::array<int64_t, kMaxRank> idx{}, fstride{};
    int64_t n = 1;
    for (size_t d = 0; d < r; ++d) {
        fstride[d] = n;
        n *= shape[d];
    }
    for (int64_t i = 0; i < n; ++i) {
        int64_t off = 0;
        for (size_t d = 0; d < r; ++d) off += idx[d] * fstride[d];
        std::memcpy(c + static_cast<size_t>(i) * es, f + static_cast<size_t>(off) * es, es);
        for (size_t d = r; d-- > 0;) {  // advance the C-order multi-index
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
}

template <typename T>
void read_typed(const NpzReader::Impl& z, const std::string& key, std::span<T> out,
                const std::string& where) {
    Entry e(z, key, where);
    const NpyHeader h = e.header();
    const bool want_float = std::is_same_v<T, float>;
    if (want_float) {
        SEGRANK_CHECK(dtype_is_float(h.dtype), where, ": dtype ", dtype_descr(h.dtype),
                      " where a float dtype (<f4 or <f8) is expected");
    } else if (!std::is_same_v<T, int8_t>) {
        SEGRANK_CHECK(!dtype_is_float(h.dtype), where, ": dtype ", dtype_descr(h.dtype),
                      " where an integer dtype is expected");
    }
    SEGRANK_CHECK(static_cast<uint64_t>(h.num_elements()) == out.size(), where, ": holds ",
                  h.num_elements(), " elements, destination expects ", out.size());
    e.check_allocation(h, sizeof(T));  // before the Fortran-order buffer below
    std::vector<T> fbuf;
    std::span<T> dst = out;
    if (h.fortran_order && h.shape.size() > 1) {
        fbuf.resize(out.size());
        dst = fbuf;
    }
    if (is_exact(h.dtype, static_cast<const T*>(nullptr))) {
        e.read(dst.data(), h.payload_bytes());  // straight into the caller's buffer
    } else {
        const size_t es = dtype_size(h.dtype);
        const size_t chunk = (size_t{1} << 20) / es;
        std::vector<uint8_t> buf(std::min<size_t>(chunk, dst.size()) * es);
        for (size_t done = 0; done < dst.size();) {
            const size_t k = std::min(chunk, dst.size() - done);
            e.read(buf.data(), k * es);
            convert<T>(buf.data(), h.dtype, k, dst.data() + done, done, where);
            done += k;
        }
    }
    e.finish();
    if (!fbuf.empty()) {
        fortran_to_c(reinterpret_cast<const uint8_t*>(fbuf.data()),
                     reinterpret_cast<uint8_t*>(out.data()), sizeof(T), h.shape, where);
    }
}

}  // namespace

NpzReader::NpzReader(const std::filesystem::path& path) : impl_(std::make_unique<Impl>()) {
    impl_->path = path;
    SEGRANK_CHECK(!std::filesystem::is_directory(path), path.string(),
                  ": is a directory, expected an npz file");
    SEGRANK_CHECK(std::filesystem::exists(path), path.string(), ": no such npz file");
    require_readable_input(path, "an npz file");  // a FIFO would block, /dev/zero never end
    int err = 0;
    impl_->za = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
    // libzip's consistency check refuses duplicate names without saying which: reopen without
    // it so the scan below names the duplicated key.
    if (!impl_->za && err == ZIP_ER_EXISTS) impl_->za = zip_open(path.c_str(), ZIP_RDONLY, &err);
    SEGRANK_CHECK(impl_->za != nullptr, path.string(),
                  ": cannot open npz (truncated or not a zip archive?): ", zip_code_message(err));
    impl_->file_bytes = std::filesystem::file_size(path);
    const zip_int64_t n = zip_get_num_entries(impl_->za, 0);
    for (zip_int64_t i = 0; i < n; ++i) {
        const char* name = zip_get_name(impl_->za, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
        SEGRANK_CHECK(name != nullptr, path.string(), ": unreadable zip entry name #", i);
        std::string key = name;
        if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0)
            key.resize(key.size() - 4);
        SEGRANK_CHECK(impl_->index.emplace(key, static_cast<zip_uint64_t>(i)).second, where(key),
                      ": duplicate key (two zip entries named '", name, "')");
        impl_->keys.push_back(key);
    }
}

NpzReader::~NpzReader() = default;
NpzReader::NpzReader(NpzReader&&) noexcept = default;
NpzReader& NpzReader::operator=(NpzReader&&) noexcept = default;

const std::filesystem::path& NpzReader::path() const { return impl_->path; }
std::vector<std::string> NpzReader::keys() const { return impl_->keys; }
bool NpzReader::contains(const std::string& key) const { return impl_->index.count(key) != 0; }
std::string NpzReader::where(const std::string& key) const {
    return impl_->path.string() + ": key '" + key + "'";
}

NpyHeader NpzReader::header(const std::string& key) const {
    Entry e(*impl_, key, where(key));
    return e.header();
}

NpyHeader NpzReader::header(const std::string& key, size_t target_element_size) const {
    Entry e(*impl_, key, where(key));
    NpyHeader h = e.header();
    e.check_allocation(h, target_element_size);
    return h;
}

void NpzReader::read_f32(const std::string& key, std::span<float> out) const {
    read_typed<float>(*impl_, key, out, where(key));
}
void NpzReader::read_i64(const std::string& key, std::span<int64_t> out) const {
    read_typed<int64_t>(*impl_, key, out, where(key));
}
void NpzReader::read_i8(const std::string& key, std::span<int8_t> out) const {
    read_typed<int8_t>(*impl_, key, out, where(key));
}

std::vector<float> NpzReader::read_f32(const std::string& key, std::vector<int64_t>* shape) const {
    const NpyHeader h = header(key, sizeof(float));
    std::vector<float> v(static_cast<size_t>(h.num_elements()));
    read_f32(key, std::span<float>(v));
    if (shape) *shape = h.shape;
    return v;
}

std::vector<int64_t> NpzReader::read_i64(const std::string& key,
                                         std::vector<int64_t>* shape) const {
    const NpyHeader h = header(key, sizeof(int64_t));
    std::vector<int64_t> v(static_cast<size_t>(h.num_elements()));
    read_i64(key, std::span<int64_t>(v));
    if (shape) *shape = h.shape;
    return v;
}

// ---------------------------------------------------------------------------------------------
// Writer

NpzWriter::NpzWriter(const std::filesystem::path& path, NpzCompression compression,
                     size_t spill_bytes)
    : path_(path), out_(path), compression_(compression), spill_bytes_(spill_bytes) {}

// out_ removes the temporary file unless finish() committed it.
NpzWriter::~NpzWriter() { remove_spills(); }

void NpzWriter::remove_spills() noexcept {
    for (const auto& f : spills_) {
        std::error_code ec;
        if (!f.empty()) std::filesystem::remove(f, ec);
    }
}

void NpzWriter::add(const std::string& key, DType dtype, const std::vector<int64_t>& shape,
                    std::span<const uint8_t> payload) {
    SEGRANK_CHECK(!finished_, path_.string(), ": npz already finished");
    SEGRANK_CHECK(std::find(keys_.begin(), keys_.end(), key) == keys_.end(), path_.string(),
                  ": key '", key, "': duplicate key");
    NpyHeader h;
    h.dtype = dtype;
    h.shape = shape;
    SEGRANK_CHECK(h.payload_bytes() == payload.size(), path_.string(), ": key '", key,
                  "': payload has ", payload.size(), " bytes, shape needs ", h.payload_bytes());
    const std::string pre = make_npy_header(dtype, shape);
    if (pre.size() + payload.size() >= spill_bytes_) {
        std::filesystem::path f = out_.temp_path();
        f += ".";  // separate appends: GCC 12 -Wrestrict false positive on "." + std::string
        f += std::to_string(keys_.size());
        f += ".npy";
        spills_.push_back(f);  // before the first byte: the destructor removes a partial file
        entries_.emplace_back();
        keys_.push_back(key);
        std::FILE* fp = std::fopen(f.c_str(), "wb");
        SEGRANK_CHECK(fp != nullptr, f.string(), ": cannot create spill file for key '", key,
                      "' of ", path_.string(), ": ", std::strerror(errno));
        const bool ok = std::fwrite(pre.data(), 1, pre.size(), fp) == pre.size() &&
                        (payload.empty() ||
                         std::fwrite(payload.data(), 1, payload.size(), fp) == payload.size());
        const int write_errno = errno;
        const bool closed = std::fclose(fp) == 0;
        SEGRANK_CHECK(ok && closed, f.string(), ": cannot write spill file for key '", key, "' of ",
                      path_.string(), ": ", std::strerror(ok ? errno : write_errno));
        // libzip records a file source's mode in the entry: give the spill file the 0666 it
        // records for a memory entry, so the archive's bytes do not depend on the spill threshold.
        std::error_code ec;
        std::filesystem::permissions(f, std::filesystem::perms(0666),
                                     std::filesystem::perm_options::replace, ec);
        SEGRANK_CHECK(!ec, f.string(), ": cannot set the mode of the spill file: ", ec.message());
        return;
    }
    std::vector<uint8_t> bytes(pre.size() + payload.size());
    std::memcpy(bytes.data(), pre.data(), pre.size());
    if (!payload.empty()) std::memcpy(bytes.data() + pre.size(), payload.data(), payload.size());
    keys_.push_back(key);
    entries_.push_back(std::move(bytes));
    spills_.emplace_back();
}

void NpzWriter::add_f32(const std::string& key, const std::vector<int64_t>& shape,
                        std::span<const float> v) {
    add(key, DType::kF4, shape,
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size_bytes()));
}
void NpzWriter::add_i64(const std::string& key, const std::vector<int64_t>& shape,
                        std::span<const int64_t> v) {
    add(key, DType::kI8, shape,
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size_bytes()));
}
void NpzWriter::add_u8(const std::string& key, const std::vector<int64_t>& shape,
                       std::span<const uint8_t> v) {
    add(key, DType::kU1, shape, v);
}

void NpzWriter::finish() {
    SEGRANK_CHECK(!finished_, path_.string(), ": npz already finished");
    int err = 0;
    zip_t* za = zip_open(out_.temp_path().c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    SEGRANK_CHECK(za != nullptr, out_.temp_path().string(),
                  ": cannot create npz: ", zip_code_message(err));
    auto fail = [&](const std::string& what) {
        const std::string msg = str(path_.string(), ": ", what, ": ", zip_strerror(za));
        zip_discard(za);
        throw Error(msg);  // out_ removes the temporary file
    };
    for (size_t i = 0; i < keys_.size(); ++i) {
        zip_source_t* src = spills_[i].empty()
                                ? zip_source_buffer(za, entries_[i].data(), entries_[i].size(), 0)
                                : zip_source_file(za, spills_[i].c_str(), 0, -1);
        if (!src) fail("key '" + keys_[i] + "': cannot create zip source");
        const std::string name = keys_[i] + ".npy";
        const zip_int64_t idx = zip_file_add(za, name.c_str(), src, ZIP_FL_ENC_UTF_8);
        if (idx < 0) {
            zip_source_free(src);
            fail("key '" + keys_[i] + "': cannot add entry");
        }
        const zip_int32_t method =
            compression_ == NpzCompression::kStored ? ZIP_CM_STORE : ZIP_CM_DEFLATE;
        const zip_uint32_t level =
            compression_ == NpzCompression::kDeflateFast ? 1 : 0;  // 0: default
        if (zip_set_file_compression(za, static_cast<zip_uint64_t>(idx), method, level) != 0)
            fail("key '" + keys_[i] + "': cannot set compression");
        // A fixed entry time (1980-01-01 12:00 UTC, the DOS epoch) instead of "now", so equal
        // arrays give byte-identical files (deterministic `segrank synth` / `ingest` output).
        if (zip_file_set_mtime(za, static_cast<zip_uint64_t>(idx), 315576000, 0) != 0)
            fail("key '" + keys_[i] + "': cannot set modification time");
    }
    if (zip_close(za) != 0) fail("cannot write npz");
    finished_ = true;
    remove_spills();
    spills_.clear();
    out_.commit();
    entries_.clear();
}

}  // namespace segrank
