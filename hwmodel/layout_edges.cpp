// Layout edge features (docs/model.md#layout-edge-features): where the relayouts of a config
// land, by what the neighbours on the changed edges do with the tensor.
#include <algorithm>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"
#include "hwmodel/layout_bytes.h"
#include "hwmodel/layout_features_internal.h"
#include "hwmodel/op_cost.h"
#include "hwmodel/padding.h"

namespace segrank::hw {
namespace {

EdgeRole role_of_opcode(int32_t opcode) {
    switch (classify_opcode(hlo::opcode_name(opcode))) {
        case OpClass::kElementwise:
        case OpClass::kBroadcast:
            return EdgeRole::kAbsorbs;
        case OpClass::kReduce:
        case OpClass::kReduceWindow:
        case OpClass::kTranspose:
        case OpClass::kDataMovement:
            return EdgeRole::kFlexible;
        default:
            return EdgeRole::kConstrained;
    }
}

}  // namespace

namespace detail {

void gather_edge_roles(LayoutNeighbourhood& nb, const GraphSource& source, int64_t i,
                       int64_t edge_chunk, const std::vector<int64_t>& involved,
                       const std::vector<int32_t>& config_index,
                       const std::vector<std::vector<int64_t>>& users) {
    const StructureIndex idx = source.load_structure_index(i);
    const int64_t n = idx.num_nodes, m = idx.num_edges;
    const size_t u = involved.size();
    auto entry = [&](int64_t v) {
        return static_cast<int32_t>(std::lower_bound(involved.begin(), involved.end(), v) -
                                    involved.begin());
    };
    nb.role.assign(u, static_cast<uint8_t>(EdgeRole::kConstrained));
    size_t at = 0;  // next involved node to read the opcode of
    for (int64_t b = 0; b < n && at < u; b += edge_chunk) {
        const int64_t e = std::min(n, b + edge_chunk);
        if (involved[at] >= e) continue;
        const std::vector<int32_t> ops = source.load_opcode_range(i, b, e);
        for (; at < u && involved[at] < e; ++at) {
            const int64_t v = involved[at];
            nb.role[at] =
                static_cast<uint8_t>(config_index[static_cast<size_t>(v)] >= 0
                                         ? EdgeRole::kConfigurable
                                         : role_of_opcode(ops[static_cast<size_t>(v - b)]));
        }
    }
    for (size_t r = 0; r < u; ++r)
        if (nb.shapes[r].is_tuple() && nb.role[r] == static_cast<uint8_t>(EdgeRole::kAbsorbs))
            nb.role[r] = static_cast<uint8_t>(EdgeRole::kConstrained);
    std::vector<int32_t> slot(static_cast<size_t>(n), -1);
    for (size_t r = 0; r < u; ++r) slot[static_cast<size_t>(involved[r])] = static_cast<int32_t>(r);
    nb.user_count.assign(u, 0);
    std::vector<int64_t> last(u, -1);
    for (int64_t b = 0; b < m; b += edge_chunk) {
        const int64_t e = std::min(m, b + edge_chunk);
        const std::vector<int64_t> ed = source.load_edge_range(i, b, e);
        for (int64_t r = 0; r < e - b; ++r) {
            const int64_t uu = ed[static_cast<size_t>(2 * r)],
                          v = ed[static_cast<size_t>(2 * r + 1)];
            const int32_t s = slot[static_cast<size_t>(v)];
            if (s < 0 || last[static_cast<size_t>(s)] == uu) continue;
            last[static_cast<size_t>(s)] = uu;
            ++nb.user_count[static_cast<size_t>(s)];
        }
    }
    nb.user_begin.push_back(0);
    for (const auto& l : users) {
        for (int64_t w : l) nb.users.push_back(entry(w));
        nb.user_begin.push_back(static_cast<int64_t>(nb.users.size()));
    }
}

}  // namespace detail

namespace {

bool relayouted(const detail::Configured& c, const hlo::Shape& s) {
    return c.set && c.valid && c.m2m != effective_minor_to_major(s);
}

// (own + configured padded bytes) of `s` under `m2m`, in units of nb.scale_bytes.
double copy_units(const LayoutNeighbourhood& nb, const hlo::Shape& s,
                  const std::vector<int64_t>& m2m) {
    return (static_cast<double>(padded_bytes(s)) +
            static_cast<double>(padded_bytes(with_layout(s, m2m)))) /
           nb.scale_bytes;
}

// The six output numbers of configurable node j under row v into o.
void output_edges(const LayoutNeighbourhood& nb, int64_t j, const LayoutValues& v, float* o) {
    std::fill_n(o, 6, 0.0f);
    const hlo::Shape& s = nb.shapes[static_cast<size_t>(nb.self[static_cast<size_t>(j)])];
    const detail::Configured c = detail::configured(s, v, 0);
    if (!relayouted(c, s)) return;
    const int64_t b = nb.user_begin[static_cast<size_t>(j)],
                  e = nb.user_begin[static_cast<size_t>(j + 1)];
    const double copy = copy_units(nb, s, c.m2m);
    if (e == b) {
        o[4] = 1.0f;
        o[5] = static_cast<float>(copy);
        return;
    }
    std::array<double, 4> count = {0, 0, 0, 0};
    for (int64_t k = b; k < e; ++k)
        count[nb.role[static_cast<size_t>(nb.users[static_cast<size_t>(k)])]] += 1.0;
    for (size_t r = 0; r < 4; ++r) o[r] = static_cast<float>(count[r] / static_cast<double>(e - b));
    o[5] = static_cast<float>(copy * count[static_cast<size_t>(EdgeRole::kConstrained)] /
                              static_cast<double>(e - b));
}

}  // namespace

void layout_edge_features_of_rows(const LayoutNeighbourhood& nb, std::span<const int8_t> node_rows,
                                  std::span<const int32_t> nodes, std::span<float> out) {
    static_assert(kLayoutEdgeFeatures == 12, "six output numbers, three per operand tensor");
    SEGRANK_CHECK(node_rows.size() == nodes.size() * 18 &&
                      out.size() == nodes.size() * static_cast<size_t>(kLayoutEdgeFeatures),
                  "layout_edge_features_of_rows: ", node_rows.size(), " values for ", nodes.size(),
                  " nodes, ", out.size(), " outputs");
    const int64_t nc = nb.num_config_nodes();
    SEGRANK_CHECK(
        nb.role.size() == nb.shapes.size() && static_cast<int64_t>(nb.user_begin.size()) == nc + 1,
        "layout_edge_features_of_rows: the neighbourhood was gathered without edge "
        "roles (layout_neighbourhood(..., edge_roles = true))");
    for (size_t r = 0; r < nodes.size(); ++r) {
        const int64_t j = nodes[r];
        SEGRANK_CHECK(j >= 0 && j < nc, "layout_edge_features: node ", j, " outside [0, ", nc, ")");
        const LayoutValues v = detail::values_of(node_rows, static_cast<int64_t>(r));
        float* o = out.data() + r * static_cast<size_t>(kLayoutEdgeFeatures);
        output_edges(nb, j, v, o);
        const std::vector<const hlo::Shape*> op_shapes = detail::operand_shapes(nb, j);
        const std::array<int, 2> match = match_layout_operands(v, op_shapes);
        for (int t = 1; t <= 2; ++t) {
            float* ot = o + 6 + 3 * (t - 1);
            std::fill_n(ot, 3, 0.0f);
            const int i = match[static_cast<size_t>(t - 1)];
            if (i < 0) continue;
            const hlo::Shape& s = *op_shapes[static_cast<size_t>(i)];
            const detail::Configured c = detail::configured(s, v, t);
            if (!relayouted(c, s)) continue;
            const auto p = static_cast<size_t>(
                nb.operands[static_cast<size_t>(nb.op_begin[static_cast<size_t>(j)] + i)]);
            const auto role = static_cast<EdgeRole>(nb.role[p]);
            if (role == EdgeRole::kConfigurable)
                ot[1] = 1.0f;
            else if ((role == EdgeRole::kAbsorbs || role == EdgeRole::kFlexible) &&
                     nb.user_count[p] == 1)
                ot[0] = 1.0f;
            else
                ot[2] = static_cast<float>(copy_units(nb, s, c.m2m));
        }
    }
}

}  // namespace segrank::hw
