// XLA:TPU tiled layouts and padded sizes (docs/hwmodel.md#tiled-layouts-and-padding): the
// layout/padding kernel of the timing model. Shapes are hlo::Shape (data/hlo/module.h); a missing
// layout means descending minor_to_major (XLA's default).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/hlo/module.h"

namespace segrank::hw {

/// The memory tile XLA:TPU gives an array (docs/hwmodel.md#tiled-layouts-and-padding). For rank >=
/// 2 the two most-minor physical dims are tiled (rows x 128 lanes); rank 0/1 arrays use a 1-D tile
/// of `lanes` elements.
struct Tile {
    int64_t rows = 1;           ///< second-minor tile extent (elements); 1 for rank <= 1
    int64_t lanes = 128;        ///< minor tile extent (elements)
    int64_t storage_bytes = 4;  ///< bytes one element occupies in memory (PRED: 1 packed, or 4)
    int64_t packing = 1;        ///< elements per 32-bit word: the "(2,1)"/"(4,1)" sub-tile (>= 2)
};

/// minor_to_major of `shape`, or descending (rank-1, ..., 0) when it has no (or a malformed)
/// layout.
std::vector<int64_t> effective_minor_to_major(const hlo::Shape& shape);

/// Completes a possibly partial minor_to_major (e.g. a layout config giving only the two most-minor
/// dims, docs/files.md#layout-config-features): listed dims first, then the remaining dims in
/// descending order. Throws segrank::Error when a listed dim is out of range or repeated.
std::vector<int64_t> complete_minor_to_major(const std::vector<int64_t>& partial, int64_t rank);

/// `shape` with its layout replaced by complete_minor_to_major(partial, rank).
hlo::Shape with_layout(const hlo::Shape& shape, const std::vector<int64_t>& partial_minor_to_major);

/// Logical dimension sizes in physical order, major first (array shapes only).
std::vector<int64_t> physical_dims(const hlo::Shape& shape);

/// The tile XLA:TPU assigns to an array shape (docs/hwmodel.md#tiled-layouts-and-padding): 32-bit
/// (8,128); 16-bit (8,128)(2,1); 8-bit and PRED (8,128)(4,1); second-minor dim 1-2 -> (2,128), 3-4
/// -> (4,128); rank 0/1 -> T(min(1024, max(256, next_pow2(n)))) 32-bit words; PRED of rank <= 1
/// takes 4 B.
Tile tile_for(const hlo::Shape& shape);

/// Bytes of `shape` in HBM under its tiled layout (docs/hwmodel.md#tiled-layouts-and-padding):
/// prod(major dims) x roundup(second-minor, rows) x roundup(minor, lanes) x storage bytes.
/// Tuples sum their elements; tokens/opaque are 0. With apply_padding = false: dense bytes
/// (the "no padding" ablation).
int64_t padded_bytes(const hlo::Shape& shape, bool apply_padding = true);

/// Padded elements of an array (tuples: sum), the VPU work unit before dividing by 1024.
int64_t padded_elements(const hlo::Shape& shape, bool apply_padding = true);

/// 32-bit vector registers (8x128) the array occupies: padded_elements / 1024
/// (docs/hwmodel.md#tiled-layouts-and-padding).
double vreg_count(const hlo::Shape& shape, bool apply_padding = true);

/// Extent of each physical dim (major first) in TpuGraphs tile-config units
/// (docs/hwmodel.md#tile-units): major dims in elements, second-minor in units of 8 rows, minor in
/// units of 128 lanes; rank 1 in units of 1024. Scalars give an empty vector.
std::vector<int64_t> tile_units(const hlo::Shape& shape);

/// XLA-style text of a shape with its effective layout, e.g. "bf16[32,5,5,256]{3,0,2,1}";
/// tuples as "(s32[], f32[2]{0})".
std::string shape_string(const hlo::Shape& shape);

/// ceil(a / b) for a >= 0, b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
/// Smallest multiple of b that is >= a (a >= 0, b > 0).
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace segrank::hw
