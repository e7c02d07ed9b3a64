// Helpers the layout feature files share (hwmodel/layout_bytes.cpp, hwmodel/layout_edges.cpp);
// not part of the library's interface.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph_source.h"
#include "hwmodel/layout_bytes.h"
#include "hwmodel/module_cost.h"

namespace segrank::hw::detail {

/// Layout tensor t of `v` applied to `s`: unset (no dims listed, or `s` a tuple), valid (a complete
/// minor_to_major) or invalid (a listed dim is out of range or repeated).
struct Configured {
    bool set = false;
    bool valid = true;
    std::vector<int64_t> m2m;
};

/// Layout tensor t (0 output, 1 input, 2 kernel) of `v` applied to shape `s`.
Configured configured(const hlo::Shape& s, const LayoutValues& v, int t);
/// Row j (18 values) of `values`.
LayoutValues values_of(std::span<const int8_t> values, int64_t j);
/// The shapes of configurable node j's operands, ascending node id.
std::vector<const hlo::Shape*> operand_shapes(const LayoutNeighbourhood& nb, int64_t j);

/// Fills nb's edge-role members (layout_neighbourhood with edge_roles): `involved` the ascending
/// node ids of nb.shapes, `config_index` [n] (-1 or the configurable index of each node), `users`
/// per configurable node its distinct users, ascending. Reads node_opcode and the edges again,
/// `edge_chunk` rows at a time. Throws segrank::Error on a read failure.
void gather_edge_roles(LayoutNeighbourhood& nb, const GraphSource& source, int64_t i,
                       int64_t edge_chunk, const std::vector<int64_t>& involved,
                       const std::vector<int32_t>& config_index,
                       const std::vector<std::vector<int64_t>>& users);

}  // namespace segrank::hw::detail
