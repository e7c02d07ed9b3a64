// Layout byte features (docs/model.md#layout-byte-features) and the neighbourhood they read.
#include "hwmodel/layout_bytes.h"

#include <algorithm>
#include <cmath>

#include "gnn/core/check.h"
#include "hwmodel/from_graph.h"
#include "hwmodel/module_cost.h"
#include "hwmodel/padding.h"

namespace segrank::hw {

int64_t LayoutNeighbourhood::memory_bytes() const {
    int64_t b = 0;
    for (const auto& s : shapes)
        b += static_cast<int64_t>(sizeof(hlo::Shape) +
                                  (s.dims.capacity() + s.minor_to_major.capacity()) * 8);
    b += static_cast<int64_t>((self.capacity() + operands.capacity()) * sizeof(int32_t) +
                              op_begin.capacity() * sizeof(int64_t));
    return b;
}

LayoutNeighbourhood layout_neighbourhood(const GraphSource& source, int64_t i, int64_t edge_chunk) {
    SEGRANK_CHECK(edge_chunk >= 1, "layout_neighbourhood: edge_chunk = ", edge_chunk);
    const StructureIndex idx = source.load_structure_index(i);
    const int64_t n = idx.num_nodes, m = idx.num_edges;
    const auto nc = static_cast<int64_t>(idx.node_config_ids.size());
    std::vector<int32_t> config_index(static_cast<size_t>(n), -1);
    for (int64_t j = 0; j < nc; ++j) {
        const int64_t v = idx.node_config_ids[static_cast<size_t>(j)];
        SEGRANK_CHECK(v >= 0 && v < n, idx.where, ": node_config_ids[", j, "] = ", v,
                      " outside [0, ", n, ")");
        config_index[static_cast<size_t>(v)] = static_cast<int32_t>(j);
    }
    std::vector<std::vector<int64_t>> ops(static_cast<size_t>(nc)), users(static_cast<size_t>(nc));
    for (int64_t b = 0; b < m; b += edge_chunk) {
        const int64_t e = std::min(m, b + edge_chunk);
        const std::vector<int64_t> ed = source.load_edge_range(i, b, e);
        for (int64_t r = 0; r < e - b; ++r) {
            const int64_t u = ed[static_cast<size_t>(2 * r)],
                          v = ed[static_cast<size_t>(2 * r + 1)];
            SEGRANK_CHECK(u >= 0 && u < n && v >= 0 && v < n, idx.where, ": edge_index row ", b + r,
                          " = (", u, ", ", v, ") outside [0, ", n, ")");
            if (const int32_t ju = config_index[static_cast<size_t>(u)]; ju >= 0)
                ops[static_cast<size_t>(ju)].push_back(v);
            if (const int32_t jv = config_index[static_cast<size_t>(v)]; jv >= 0)
                users[static_cast<size_t>(jv)].push_back(u);
        }
    }
    std::vector<int64_t> involved(idx.node_config_ids.begin(), idx.node_config_ids.end());
    for (auto* lists : {&ops, &users})
        for (auto& l : *lists) {
            std::sort(l.begin(), l.end());
            l.erase(std::unique(l.begin(), l.end()), l.end());
            involved.insert(involved.end(), l.begin(), l.end());
        }
    std::sort(involved.begin(), involved.end());
    involved.erase(std::unique(involved.begin(), involved.end()), involved.end());
    const Tensor rows = source.load_node_feat_rows(i, involved);

    LayoutNeighbourhood nb;
    auto entry = [&](int64_t v) {
        return static_cast<int32_t>(std::lower_bound(involved.begin(), involved.end(), v) -
                                    involved.begin());
    };
    nb.shapes.reserve(involved.size());
    double scale = 0.0;
    for (size_t r = 0; r < involved.size(); ++r) {
        nb.shapes.push_back(
            shape_from_features(rows.data() + static_cast<int64_t>(r) * rows.cols()));
        if (!nb.shapes.back().is_tuple())
            scale += static_cast<double>(padded_bytes(nb.shapes.back()));
    }
    nb.scale_bytes = std::max(1.0, scale);
    nb.op_begin.push_back(0);
    for (int64_t j = 0; j < nc; ++j) {
        const int64_t v = idx.node_config_ids[static_cast<size_t>(j)];
        nb.self.push_back(entry(v));
        for (int64_t p : ops[static_cast<size_t>(j)]) nb.operands.push_back(entry(p));
        nb.op_begin.push_back(static_cast<int64_t>(nb.operands.size()));
    }
    return nb;
}

namespace {

// Layout tensor t of `v` applied to `s`: unset (no dims listed, or `s` a tuple), valid (a complete
// minor_to_major) or invalid (a listed dim is out of range or repeated).
struct Configured {
    bool set = false;
    bool valid = true;
    std::vector<int64_t> m2m;
};

Configured configured(const hlo::Shape& s, const LayoutValues& v, int t) {
    Configured c;
    if (s.is_tuple()) return c;
    const std::vector<int64_t> dims = layout_dims(v, t);
    if (dims.empty()) return c;
    c.set = true;
    const auto rank = static_cast<int64_t>(s.dims.size());
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t d : dims) {
        if (d >= rank || seen[static_cast<size_t>(d)]) {
            c.valid = false;
            return c;
        }
        seen[static_cast<size_t>(d)] = true;
    }
    c.m2m = complete_minor_to_major(dims, rank);
    return c;
}

LayoutValues values_of(std::span<const int8_t> values, int64_t j) {
    LayoutValues v;
    std::copy_n(values.begin() + j * 18, 18, v.begin());
    return v;
}

// The shapes of configurable node j's operands, ascending node id.
std::vector<const hlo::Shape*> operand_shapes(const LayoutNeighbourhood& nb, int64_t j) {
    std::vector<const hlo::Shape*> shapes;
    for (int64_t e = nb.op_begin[static_cast<size_t>(j)];
         e < nb.op_begin[static_cast<size_t>(j + 1)]; ++e)
        shapes.push_back(&nb.shapes[static_cast<size_t>(nb.operands[static_cast<size_t>(e)])]);
    return shapes;
}

}  // namespace

namespace {

// The byte features of configurable nodes `nodes` into `out`; row_of(r) is node nodes[r]'s config
// row (18 values). Sizes are checked by the callers.
template <typename RowOf>
void byte_features_of(const LayoutNeighbourhood& nb, std::span<const int32_t> nodes,
                      std::span<float> out, RowOf row_of) {
    const int64_t nc = nb.num_config_nodes();
    constexpr int64_t bf = kLayoutByteFeatures;
    const double unit = nb.scale_bytes;
    // The three numbers of tensor `s` (own layout) under layout tensor t of `v`.
    auto fill = [&](float* o, const hlo::Shape& s, const LayoutValues& v, int t) {
        o[0] = o[1] = o[2] = 0.0f;
        const Configured c = configured(s, v, t);
        if (!c.set || !c.valid) return;
        const auto own = static_cast<double>(padded_bytes(s));
        const auto cfg = static_cast<double>(padded_bytes(with_layout(s, c.m2m)));
        if (own > 0.0 && cfg > 0.0) o[0] = static_cast<float>(std::log2(cfg / own));
        o[1] = static_cast<float>((cfg - own) / unit);
        if (c.m2m != effective_minor_to_major(s)) o[2] = static_cast<float>((cfg + own) / unit);
    };
    for (size_t r = 0; r < nodes.size(); ++r) {
        const int64_t j = nodes[r];
        SEGRANK_CHECK(j >= 0 && j < nc, "layout_byte_features: node ", j, " outside [0, ", nc, ")");
        const LayoutValues v = row_of(r, j);
        float* o = out.data() + r * static_cast<size_t>(bf);
        fill(o, nb.shapes[static_cast<size_t>(nb.self[static_cast<size_t>(j)])], v, 0);
        const std::vector<const hlo::Shape*> op_shapes = operand_shapes(nb, j);
        const std::array<int, 2> match = match_layout_operands(v, op_shapes);
        for (int t = 1; t <= 2; ++t) {
            float* ot = o + 3 * t;
            ot[0] = ot[1] = ot[2] = 0.0f;
            const int i = match[static_cast<size_t>(t - 1)];
            if (i >= 0) fill(ot, *op_shapes[static_cast<size_t>(i)], v, t);
        }
    }
}

}  // namespace

void layout_byte_features(const LayoutNeighbourhood& nb, std::span<const int8_t> values,
                          std::span<const int32_t> nodes, std::span<float> out) {
    const int64_t nc = nb.num_config_nodes();
    SEGRANK_CHECK(static_cast<int64_t>(values.size()) == nc * 18 &&
                      out.size() == nodes.size() * static_cast<size_t>(kLayoutByteFeatures),
                  "layout_byte_features: ", values.size(), " values for nc = ", nc, ", ",
                  out.size(), " outputs for ", nodes.size(), " nodes");
    byte_features_of(nb, nodes, out, [&](size_t, int64_t j) { return values_of(values, j); });
}

void layout_byte_features_of_rows(const LayoutNeighbourhood& nb, std::span<const int8_t> node_rows,
                                  std::span<const int32_t> nodes, std::span<float> out) {
    SEGRANK_CHECK(node_rows.size() == nodes.size() * 18 &&
                      out.size() == nodes.size() * static_cast<size_t>(kLayoutByteFeatures),
                  "layout_byte_features_of_rows: ", node_rows.size(), " values for ", nodes.size(),
                  " nodes, ", out.size(), " outputs");
    byte_features_of(nb, nodes, out, [&](size_t r, int64_t) {
        return values_of(node_rows, static_cast<int64_t>(r));
    });
}

namespace {

// The physical dims of `m2m` (minor first) whose extent in `s` is not 1: size-1 dims change no
// element's place in memory.
std::vector<int64_t> moving_dims(const hlo::Shape& s, const std::vector<int64_t>& m2m) {
    std::vector<int64_t> out;
    for (int64_t d : m2m)
        if (s.dims[static_cast<size_t>(d)] != 1) out.push_back(d);
    return out;
}

// The five access features of tensor `s` (own layout) under layout tensor t of `v` into o.
void access_of(float* o, const hlo::Shape& s, const LayoutValues& v, int t) {
    std::fill_n(o, 5, 0.0f);
    const Configured c = configured(s, v, t);
    if (!c.set || !c.valid) return;
    const std::vector<int64_t> own = effective_minor_to_major(s);
    if (c.m2m == own) return;
    o[0] = 1.0f;
    const std::vector<int64_t> a = moving_dims(s, own), b = moving_dims(s, c.m2m);
    auto at = [](const std::vector<int64_t>& x, size_t i) { return i < x.size() ? x[i] : -1; };
    o[1] = at(a, 0) != at(b, 0) ? 1.0f : 0.0f;
    o[2] = at(a, 1) != at(b, 1) ? 1.0f : 0.0f;
    double run = 1.0;
    for (size_t i = 0; i < a.size() && i < b.size() && a[i] == b[i]; ++i)
        run *= static_cast<double>(s.dims[static_cast<size_t>(a[i])]);
    const double elems = static_cast<double>(std::max<int64_t>(1, s.num_elements()));
    const double eb =
        static_cast<double>(std::max<int64_t>(1, hlo::element_byte_size(s.element_type)));
    o[3] = static_cast<float>(std::log2(std::max(1.0, elems / run)) / 16.0);
    o[4] = static_cast<float>(std::log2(run * eb) / 16.0);
}

// The access features of configurable nodes `nodes` into `out` (row stride `stride`, starting at
// each row's first value); row_of(r) is node nodes[r]'s config row.
template <typename RowOf>
void access_features_of(const LayoutNeighbourhood& nb, std::span<const int32_t> nodes, float* out,
                        int64_t stride, RowOf row_of) {
    const int64_t nc = nb.num_config_nodes();
    for (size_t r = 0; r < nodes.size(); ++r) {
        const int64_t j = nodes[r];
        SEGRANK_CHECK(j >= 0 && j < nc, "layout_access_features: node ", j, " outside [0, ", nc,
                      ")");
        const LayoutValues v = row_of(r);
        float* o = out + static_cast<int64_t>(r) * stride;
        access_of(o, nb.shapes[static_cast<size_t>(nb.self[static_cast<size_t>(j)])], v, 0);
        const std::vector<const hlo::Shape*> op_shapes = operand_shapes(nb, j);
        const std::array<int, 2> match = match_layout_operands(v, op_shapes);
        for (int t = 1; t <= 2; ++t) {
            float* ot = o + 5 * t;
            std::fill_n(ot, 5, 0.0f);
            const int i = match[static_cast<size_t>(t - 1)];
            if (i >= 0) access_of(ot, *op_shapes[static_cast<size_t>(i)], v, t);
        }
    }
}

}  // namespace

void layout_access_features_of_rows(const LayoutNeighbourhood& nb,
                                    std::span<const int8_t> node_rows,
                                    std::span<const int32_t> nodes, std::span<float> out) {
    static_assert(kLayoutAccessFeatures == 15, "five numbers for each of three tensors");
    SEGRANK_CHECK(node_rows.size() == nodes.size() * 18 &&
                      out.size() == nodes.size() * static_cast<size_t>(kLayoutAccessFeatures),
                  "layout_access_features_of_rows: ", node_rows.size(), " values for ",
                  nodes.size(), " nodes, ", out.size(), " outputs");
    access_features_of(nb, nodes, out.data(), kLayoutAccessFeatures,
                       [&](size_t r) { return values_of(node_rows, static_cast<int64_t>(r)); });
}

void layout_features_of_rows(const LayoutNeighbourhood& nb, LayoutFeatureSets sets,
                             std::span<const int8_t> node_rows, std::span<const int32_t> nodes,
                             std::span<float> out) {
    const int64_t w = sets.width();
    SEGRANK_CHECK(node_rows.size() == nodes.size() * 18 &&
                      out.size() == nodes.size() * static_cast<size_t>(w),
                  "layout_features_of_rows: ", node_rows.size(), " values for ", nodes.size(),
                  " nodes, ", out.size(), " outputs of width ", w);
    using Fill = void (*)(const LayoutNeighbourhood&, std::span<const int8_t>,
                          std::span<const int32_t>, std::span<float>);
    struct Block {
        bool on;
        int64_t width;
        Fill fill;
    };
    const std::array<Block, 2> blocks = {
        {{sets.bytes, kLayoutByteFeatures, &layout_byte_features_of_rows},
         {sets.access, kLayoutAccessFeatures, &layout_access_features_of_rows}}};
    int64_t at = 0;  // first column of the block in each row
    for (const Block& b : blocks) {
        if (!b.on) continue;
        if (b.width == w) {  // the only block: written in place
            b.fill(nb, node_rows, nodes, out);
            return;
        }
        std::vector<float> tmp(nodes.size() * static_cast<size_t>(b.width));
        b.fill(nb, node_rows, nodes, tmp);
        for (size_t r = 0; r < nodes.size(); ++r)
            std::copy_n(tmp.data() + r * static_cast<size_t>(b.width), b.width,
                        out.data() + r * static_cast<size_t>(w) + at);
        at += b.width;
    }
}

}  // namespace segrank::hw
