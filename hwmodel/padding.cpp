// Tiled layouts and padded sizes (docs/hwmodel.md#tiled-layouts-and-padding).
#include "hwmodel/padding.h"

#include <algorithm>

#include "gnn/core/check.h"

namespace segrank::hw {
namespace {

bool valid_permutation(const std::vector<int64_t>& m2m, size_t rank) {
    if (m2m.size() != rank) return false;
    std::vector<bool> seen(rank, false);
    for (int64_t d : m2m) {
        if (d < 0 || d >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(d)]) return false;
        seen[static_cast<size_t>(d)] = true;
    }
    return true;
}

int64_t next_pow2(int64_t n) {
    int64_t p = 1;
    while (p < n) p *= 2;
    return p;
}

}  // namespace

std::vector<int64_t> effective_minor_to_major(const hlo::Shape& shape) {
    if (shape.has_layout && valid_permutation(shape.minor_to_major, shape.dims.size()))
        return shape.minor_to_major;
    std::vector<int64_t> m2m(shape.dims.size());
    for (size_t i = 0; i < m2m.size(); ++i) m2m[i] = static_cast<int64_t>(m2m.size() - 1 - i);
    return m2m;
}

std::vector<int64_t> complete_minor_to_major(const std::vector<int64_t>& partial, int64_t rank) {
    SEGRANK_CHECK(static_cast<int64_t>(partial.size()) <= rank, "layout lists ", partial.size(),
                  " dims but the array has rank ", rank);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    std::vector<int64_t> out;
    for (int64_t d : partial) {
        SEGRANK_CHECK(d >= 0 && d < rank, "layout dim ", d, " out of range for rank ", rank);
        SEGRANK_CHECK(!seen[static_cast<size_t>(d)], "layout dim ", d, " repeated");
        seen[static_cast<size_t>(d)] = true;
        out.push_back(d);
    }
    for (int64_t d = rank - 1; d >= 0; --d)
        if (!seen[static_cast<size_t>(d)]) out.push_back(d);
    return out;
}

hlo::Shape with_layout(const hlo::Shape& shape, const std::vector<int64_t>& partial) {
    hlo::Shape s = shape;
    s.has_layout = true;
    s.minor_to_major = complete_minor_to_major(partial, static_cast<int64_t>(shape.dims.size()));
    return s;
}

std::vector<int64_t> physical_dims(const hlo::Shape& shape) {
    const auto m2m = effective_minor_to_major(shape);
    std::vector<int64_t> out(m2m.size());
    for (size_t i = 0; i < m2m.size(); ++i)
        out[m2m.size() - 1 - i] = shape.dims[static_cast<size_t>(m2m[i])];
    return out;
}

Tile tile_for(const hlo::Shape& shape) {
    Tile t;
    const int64_t bytes = std::max<int64_t>(1, hlo::element_byte_size(shape.element_type));
    const size_t rank = shape.dims.size();
    if (rank <= 1) {
        // 1-D tiles are counted in 32-bit words: T(256) f32 == T(512) u16 (both 1 KiB).
        const int64_t elem =
            shape.element_type == hlo::element_type::kPred ? 4 : std::min<int64_t>(bytes, 4);
        const int64_t n = rank == 0 ? 1 : shape.dims[0];
        const int64_t words =
            std::min<int64_t>(1024, std::max<int64_t>(256, next_pow2(ceil_div(n * elem, 4))));
        t.rows = 1;
        t.lanes = words * 4 / elem;
        t.storage_bytes = elem;
        t.packing = 1;
        return t;
    }
    const auto phys = physical_dims(shape);
    const int64_t second_minor = phys[rank - 2];
    t.rows = second_minor <= 2 ? 2 : (second_minor <= 4 ? 4 : 8);
    t.lanes = 128;
    t.storage_bytes = bytes;
    t.packing = bytes >= 4 ? 1 : 4 / bytes;
    return t;
}

int64_t padded_elements(const hlo::Shape& shape, bool apply_padding) {
    if (shape.is_tuple()) {
        int64_t total = 0;
        for (const auto& s : shape.tuple_shapes) total += padded_elements(s, apply_padding);
        return total;
    }
    if (hlo::element_byte_size(shape.element_type) == 0) return 0;
    if (!apply_padding) return shape.num_elements();
    const Tile t = tile_for(shape);
    if (shape.dims.size() <= 1) return round_up(shape.dims.empty() ? 1 : shape.dims[0], t.lanes);
    const auto phys = physical_dims(shape);
    const size_t r = phys.size();
    int64_t n = round_up(phys[r - 2], t.rows) * round_up(phys[r - 1], t.lanes);
    for (size_t i = 0; i + 2 < r; ++i) n *= phys[i];
    return n;
}

int64_t padded_bytes(const hlo::Shape& shape, bool apply_padding) {
    if (shape.is_tuple()) {
        int64_t total = 0;
        for (const auto& s : shape.tuple_shapes) total += padded_bytes(s, apply_padding);
        return total;
    }
    const int64_t bytes = hlo::element_byte_size(shape.element_type);
    if (bytes == 0) return 0;
    if (!apply_padding) return shape.num_elements() * bytes;
    return padded_elements(shape, true) * tile_for(shape).storage_bytes;
}

double vreg_count(const hlo::Shape& shape, bool apply_padding) {
    return static_cast<double>(padded_elements(shape, apply_padding)) / 1024.0;
}

std::string shape_string(const hlo::Shape& shape) {
    if (shape.is_tuple()) {
        std::string s = "(";
        for (size_t i = 0; i < shape.tuple_shapes.size(); ++i)
            s += (i ? ", " : "") + shape_string(shape.tuple_shapes[i]);
        return s + ")";
    }
    std::string s = hlo::element_type_name(shape.element_type) + "[";
    for (size_t i = 0; i < shape.dims.size(); ++i) s += str(i ? "," : "", shape.dims[i]);
    s += "]";
    if (!shape.dims.empty()) {
        s += "{";
        const auto m2m = effective_minor_to_major(shape);
        for (size_t i = 0; i < m2m.size(); ++i) s += str(i ? "," : "", m2m[i]);
        s += "}";
    }
    return s;
}

std::vector<int64_t> tile_units(const hlo::Shape& shape) {
    if (shape.is_tuple() || shape.dims.empty()) return {};
    if (shape.dims.size() == 1) return {ceil_div(shape.dims[0], 1024)};
    auto phys = physical_dims(shape);
    const size_t r = phys.size();
    phys[r - 2] = ceil_div(phys[r - 2], 8);
    phys[r - 1] = ceil_div(phys[r - 1], 128);
    return phys;
}

}  // namespace segrank::hw
