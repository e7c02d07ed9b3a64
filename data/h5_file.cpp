// HDF5 C API boundary (docs/style.md#errors): handles, files, and the conversion of negative
// returns into segrank::Error with the file, the object path and HDF5's innermost error
// description. The other parts of the wrapper: h5_attributes.cpp, h5_dataset.cpp, h5_group.cpp.
#include "data/h5_file.h"

#include <atomic>
#include <cstring>
#include <mutex>

#include "data/h5_internal.h"
#include "util/user_input.h"

namespace segrank {
namespace h5detail {
namespace {

herr_t walk_first(unsigned n, const H5E_error2_t* e, void* out) {
    auto* s = static_cast<std::string*>(out);
    if (n == 0 && e && e->desc) *s = e->desc;
    return 0;
}

// Sets *out when an entry of the stack is the Fletcher32 filter's "data error detected by
// Fletcher32 checksum" (H5Zfletcher32.c; the outer entries say only that a read failed).
herr_t find_checksum_error(unsigned, const H5E_error2_t* e, void* out) {
    if (e && e->desc && std::strstr(e->desc, "Fletcher32")) *static_cast<bool*>(out) = true;
    return 0;
}

}  // namespace

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

std::string h5_failure(const std::string& where, const char* what, const std::string& chunk) {
    bool checksum = false;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, find_checksum_error, &checksum);
    const std::string detail = h5_detail();
    const std::string in_chunk = chunk.empty() ? "" : " in " + chunk;
    // On a write the filter computes the checksum; its failure there (an allocation refused, e.g.
    // under `ulimit -v`) says nothing about the file's bytes: the write failed.
    if (checksum && std::strstr(what, "write") != nullptr)
        return str(where, ": ", what, chunk.empty() ? "" : " of " + chunk,
                   " failed: the write failed (out of memory, or HDF5's Fletcher32 filter failed "
                   "while writing), not a corrupt file");
    if (checksum)
        return str(where, ": checksum mismatch", in_chunk,
                   ": the file is corrupt (a chunk failed HDF5's Fletcher32 check in ", what,
                   "; write it again, e.g. `segrank pack --force` from the npz files)");
    return str(where, ": ", what, chunk.empty() ? "" : " of " + chunk, " failed (", detail, ")");
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

void set_compact_storage(hid_t plist, bool links, const std::string& where) {
    // The largest values HDF5 accepts (H5Pset_link_phase_change, H5Pset_attr_phase_change).
    constexpr unsigned kMaxCompact = 65535;
    if (links)
        h5_check(H5Pset_link_phase_change(plist, kMaxCompact, kMaxCompact), where,
                 "H5Pset_link_phase_change");
    h5_check(H5Pset_attr_phase_change(plist, kMaxCompact, kMaxCompact), where,
             "H5Pset_attr_phase_change");
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

}  // namespace h5detail

using namespace h5detail;

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
// Files

H5File H5File::create(const std::filesystem::path& path) {
    quiet_hdf5();
    H5Handle fapl(h5_check(H5Pcreate(H5P_FILE_ACCESS), path.string(), "H5Pcreate"));
    // HDF5's default (earliest) format keeps unchecked v1 object headers and v1 B-tree chunk
    // indexes, and cannot store an attribute over 64 KiB. The 1.10 format checksums the superblock,
    // every object header (attributes included) and the chunk indexes; HDF5 verifies them on load.
    h5_check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110), path.string(),
             "H5Pset_libver_bounds");
    H5Handle fcpl(h5_check(H5Pcreate(H5P_FILE_CREATE), path.string(), "H5Pcreate"));
    set_compact_storage(fcpl.get(), /*links=*/true, path.string());  // of the root group
    return H5File(H5Handle(h5_check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()),
                                    path.string(), "creating the HDF5 file")),
                  path);
}

H5File H5File::open_read(const std::filesystem::path& path) {
    quiet_hdf5();
    SEGRANK_CHECK(std::filesystem::exists(path), path.string(), ": no such HDF5 file");
    require_readable_input(path, "an HDF5 file");
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
    H5Group g(H5Handle(h5_check(H5Gopen2(h_.get(), "/", H5P_DEFAULT), w, "H5Gopen2")), w);
    g.require_hashes_ = require_hashes_;
    return g;
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
