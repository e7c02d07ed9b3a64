// NPY array headers (docs/files.md#zip-and-npy-layers): dtype table, tolerant v1-v3 header parser,
// and the exact v1.0 header numpy writes. Pure byte logic; the zip layer lives in data/npz.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace segrank {

/// Element types accepted in npy payloads (little-endian or single-byte).
enum class DType { kF4, kF8, kI4, kI8, kU1, kI1, kU8, kB1 };

/// Bytes per element of `t`.
size_t dtype_size(DType t);
/// numpy descr as numpy writes it: "<f4", "|u1", ...
const char* dtype_descr(DType t);
/// True for kF4 and kF8.
bool dtype_is_float(DType t);
/// A shape as numpy prints it: "(3, 2)", "(5,)", "()".
std::string shape_text(const std::vector<int64_t>& shape);

/// A parsed npy header. `shape` is in C order as stored (for fortran_order arrays it is still the
/// logical shape; the payload is column-major).
struct NpyHeader {
    DType dtype = DType::kF4;
    bool fortran_order = false;
    std::vector<int64_t> shape;
    size_t header_bytes = 0;  ///< preamble length: magic + version + length field + text

    /// Product of the shape (1 for a 0-d array). Throws segrank::Error on overflow.
    int64_t num_elements() const;
    /// num_elements() * dtype_size(dtype).
    uint64_t payload_bytes() const;
};

/// Bytes needed before the header text length is known (magic, version, length field).
inline constexpr size_t kNpyMinPrefix = 12;

/// Returns the full preamble length given at least the first 10 (v1) or 12 (v2/v3) bytes, or
/// throws segrank::Error("<where>: bad npy magic ...") when the magic or version is wrong.
size_t npy_preamble_length(std::span<const uint8_t> prefix, const std::string& where);

/// Parses a complete preamble (`bytes.size() >= npy_preamble_length`). Accepts any whitespace and
/// key order, descr prefixes '<', '|' and '='; rejects '>' (big-endian), object ('O'), structured
/// (list descr) and unknown dtypes, and shapes whose payload size overflows 64 bits. `where`
/// prefixes every message (e.g. "f.npz: key 'x'").
NpyHeader parse_npy_header(std::span<const uint8_t> bytes, const std::string& where);

/// The v1.0 preamble numpy 1.x writes for a C-order array: "{'descr': '<f4', 'fortran_order':
/// False, 'shape': (3, 2), }" space-padded so the preamble is a multiple of 64 bytes, ending in
/// '\n'.
std::string make_npy_header(DType t, const std::vector<int64_t>& shape);

}  // namespace segrank
