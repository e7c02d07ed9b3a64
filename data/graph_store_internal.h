// Parts shared by the graph store's writer, reader and partial reads (data/graph_store*.cpp); not
// a public header.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph_source.h"
#include "data/h5_file.h"

namespace segrank {

// Value of a store's root attribute `format`.
inline constexpr const char* kGraphStoreFormat = "segrank-graph-store";

// `v` as a read-only span.
template <typename T>
std::span<const T> cspan(const std::vector<T>& v) {
    return {v.data(), v.size()};
}

// Rows `rows` of a [c, ...] dataset (every row when rows.rows is empty), in that order. Throws
// segrank::Error as H5Dataset::read / read_rows.
template <typename T>
std::vector<T> rows_of(const H5Dataset& ds, const ConfigRows& rows) {
    if (!rows.rows) return ds.read<T>();
    std::vector<T> out(rows.rows->size() * static_cast<size_t>(ds.row_elements()));
    ds.read_rows<T>(cspan(*rows.rows), std::span<T>(out));
    return out;
}

// The optional node_loop_trips dataset [n, 2] of a layout graph group of n nodes (empty when
// absent). Throws segrank::Error naming the dataset on a bad shape or value.
std::vector<float> read_loop_trips(const H5Group& gg, int64_t n);

}  // namespace segrank
