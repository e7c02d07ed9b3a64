// npz graph records -> approximate HLO modules (docs/hwmodel.md#graphs-from-npz).
#include "hwmodel/from_graph.h"

#include <algorithm>
#include <cmath>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"

namespace segrank::hw {
namespace {

// One-hot order of features 2-20 (docs/files.md#node-features) as PrimitiveType values.
constexpr int32_t kOneHotTypes[19] = {0,  1,  2,  3,  4,  5,  6,  7,  8, 9,
                                      10, 11, 12, 16, 15, 18, 13, 14, 17};

int64_t as_int(float v) { return static_cast<int64_t>(std::llround(v)); }

// Leading entries of an S(K)/L(K) block with value != 0 (sizes, bounds: never 0 when present).
std::vector<int64_t> leading_nonzero(const float* f, int k) {
    std::vector<int64_t> out;
    for (int i = 0; i < k && as_int(f[i]) != 0; ++i) out.push_back(as_int(f[i]));
    return out;
}

// npz loses operand order (edges are sorted): a convolution's (lhs, rhs) order fits when the
// kernel's output-feature dim matches the output's and the input features divide evenly.
bool conv_operands_fit(const hlo::Instruction& conv, const hlo::Shape& lhs, const hlo::Shape& rhs) {
    const auto& dn = conv.convolution_dimension_numbers;
    const auto dim = [](const hlo::Shape& s, int64_t d) -> int64_t {
        return d >= 0 && d < static_cast<int64_t>(s.dims.size()) ? s.dims[static_cast<size_t>(d)]
                                                                 : -1;
    };
    const int64_t kin = dim(rhs, dn.kernel_input_feature_dimension);
    const int64_t kout = dim(rhs, dn.kernel_output_feature_dimension);
    const int64_t in = dim(lhs, dn.input_feature_dimension);
    const int64_t out = dim(conv.shape, dn.output_feature_dimension);
    return kin > 0 && kout > 0 && in > 0 && out > 0 && kout == out && in % kin == 0;
}

}  // namespace

hlo::Shape shape_from_features(const float* f) {
    hlo::Shape s;
    s.element_type = element_type_from_features(f + 2);
    if (s.element_type == hlo::element_type::kTuple) {
        // Tuple element shapes are not in the features: an empty tuple of f29 count.
        return s;
    }
    s.dims = leading_nonzero(f + 21, 6);
    // Rank > 6: fold the remaining extent (product f28 / product of the first 6) into the 6th dim.
    if (s.dims.size() == 6) {
        double p = 1;
        for (int64_t d : s.dims) p *= static_cast<double>(d);
        const double rest = static_cast<double>(f[28]) / p;
        if (rest > 1.5)
            s.dims[5] = static_cast<int64_t>(std::llround(static_cast<double>(s.dims[5]) * rest));
    }
    const size_t rank = s.dims.size();
    std::vector<int64_t> m2m;
    for (size_t i = 0; i < std::min<size_t>(rank, 6); ++i) m2m.push_back(as_int(f[134 + i]));
    std::vector<bool> seen(rank, false);
    bool ok = m2m.size() == rank && rank > 0;
    for (int64_t d : m2m) {
        if (d < 0 || d >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(d)])
            ok = false;
        else
            seen[static_cast<size_t>(d)] = true;
    }
    if (ok &&
        (rank == 1 || std::any_of(m2m.begin(), m2m.end(), [](int64_t d) { return d != 0; }))) {
        s.has_layout = true;
        s.minor_to_major = m2m;
    }
    return s;
}

int32_t element_type_from_features(const float* f) {
    for (int i = 0; i < 19; ++i)
        if (f[i] > 0.5f) return kOneHotTypes[i];
    return hlo::element_type::kInvalid;
}

hlo::TileSizeConfig tile_config_from_features(const float* row) {
    hlo::TileSizeConfig t;
    t.kernel_bounds = leading_nonzero(row + 0, 6);
    t.output_bounds = leading_nonzero(row + 8, 6);
    t.input_bounds = leading_nonzero(row + 16, 6);
    return t;
}

namespace {

// Computation index of every node: a computation ends at each is_root node (XLA stores the root
// last in practice), so the last node's computation is the entry.
std::vector<int64_t> computation_of_nodes(const GraphStructure& g) {
    const int64_t n = g.num_nodes();
    std::vector<int64_t> comp_of(static_cast<size_t>(n), 0);
    int64_t comp = 0;
    for (int64_t i = 0; i < n; ++i) {
        comp_of[static_cast<size_t>(i)] = comp;
        if (g.node_feat.data()[i * kNodeFeatDim] > 0.5f && i + 1 < n) ++comp;
    }
    return comp_of;
}

// The operands of every node from edge_index (row (u, v): u consumes v), in edge order. Throws
// naming the file and the edge when a node id is out of range.
std::vector<std::vector<int64_t>> operands_of_nodes(const GraphStructure& g) {
    const int64_t n = g.num_nodes();
    std::vector<std::vector<int64_t>> operands(static_cast<size_t>(n));
    for (int64_t e = 0; e < g.num_edges(); ++e) {
        const int64_t u = g.edge_index[static_cast<size_t>(2 * e)];
        const int64_t v = g.edge_index[static_cast<size_t>(2 * e + 1)];
        SEGRANK_CHECK(u >= 0 && u < n && v >= 0 && v < n, g.source.string(), ": edge_index row ", e,
                      " = (", u, ", ", v, ") out of range for ", n, " nodes");
        operands[static_cast<size_t>(u)].push_back(v);
    }
    return operands;
}

// dimensions (L(6), features f[31..36]): a transpose lists a full permutation; others a sorted
// list, so take the strictly increasing prefix (a leading 0 is a real dimension).
void set_dimensions(hlo::Instruction& ins, const float* f) {
    const size_t rank = ins.shape.dims.size();
    for (int k = 0; k < 6; ++k) {
        const int64_t d = as_int(f[31 + k]);
        if (ins.opcode == "transpose") {
            if (static_cast<size_t>(k) < rank) ins.dimensions.push_back(d);
        } else if (ins.dimensions.empty() || d > ins.dimensions.back()) {
            if (k == 0 && d == 0 && ins.opcode != "reduce" && ins.opcode != "broadcast") break;
            ins.dimensions.push_back(d);
        } else {
            break;
        }
    }
}

// The window (features f[37..84]): one dimension per nonzero leading size.
void set_window(hlo::Instruction& ins, const float* f) {
    const auto sizes = leading_nonzero(f + 37, 6);
    for (size_t w = 0; w < sizes.size(); ++w) {
        hlo::WindowDimension wd;
        wd.size = sizes[w];
        wd.stride = as_int(f[45 + w]);
        wd.padding_low = as_int(f[53 + w]);
        wd.padding_high = as_int(f[61 + w]);
        wd.window_dilation = as_int(f[69 + w]);
        wd.base_dilation = as_int(f[77 + w]);
        ins.window.push_back(wd);
    }
}

// A convolution's dimension numbers (features f[93..106]), and its two operands swapped when only
// the other order fits their shapes (`shapes`: every node's, by node id - 1 = operand id - 1).
void set_convolution(hlo::Instruction& ins, const float* f, const std::vector<hlo::Shape>& shapes) {
    if (ins.opcode != "convolution") return;
    ins.has_convolution_dimension_numbers = true;
    auto& dn = ins.convolution_dimension_numbers;
    dn.input_batch_dimension = as_int(f[93]);
    dn.input_feature_dimension = as_int(f[94]);
    dn.kernel_input_feature_dimension = as_int(f[99]);
    dn.kernel_output_feature_dimension = as_int(f[100]);
    dn.output_batch_dimension = as_int(f[105]);
    dn.output_feature_dimension = as_int(f[106]);
    for (size_t s = 0; s < std::min<size_t>(4, ins.window.size()); ++s) {
        dn.input_spatial_dimensions.push_back(as_int(f[95 + s]));
        dn.kernel_spatial_dimensions.push_back(as_int(f[101 + s]));
    }
    if (ins.operand_ids.size() == 2) {
        const auto& a = shapes[static_cast<size_t>(ins.operand_ids[0] - 1)];
        const auto& b = shapes[static_cast<size_t>(ins.operand_ids[1] - 1)];
        if (!conv_operands_fit(ins, a, b) && conv_operands_fit(ins, b, a))
            std::swap(ins.operand_ids[0], ins.operand_ids[1]);
    }
}

// The instruction of node i (id i + 1): opcode, shape, parameter number, operands (same
// computation) or called computations (others), dimensions, window, convolution numbers, group
// counts. Sorts `ops`, node i's operands.
hlo::Instruction instruction_of_node(const GraphStructure& g, int64_t i,
                                     const std::vector<hlo::Shape>& shapes,
                                     std::vector<int64_t>& ops,
                                     const std::vector<int64_t>& comp_of) {
    const float* f = g.node_feat.data() + i * kNodeFeatDim;
    const int32_t op = g.node_opcode[static_cast<size_t>(i)];
    hlo::Instruction ins;
    ins.id = i + 1;
    ins.opcode = std::string(hlo::opcode_name(op));
    ins.name = ins.opcode + "." + std::to_string(i);
    ins.shape = shapes[static_cast<size_t>(i)];
    ins.parameter_number = as_int(f[30]);
    std::sort(ops.begin(), ops.end());
    const int64_t my_comp = comp_of[static_cast<size_t>(i)];
    for (int64_t v : ops) {
        const int64_t vc = comp_of[static_cast<size_t>(v)];
        if (vc == my_comp)
            ins.operand_ids.push_back(v + 1);
        else
            ins.called_computation_ids.push_back(vc + 1);
    }
    set_dimensions(ins, f);
    set_window(ins, f);
    set_convolution(ins, f, shapes);
    ins.feature_group_count = as_int(f[107]);
    ins.batch_group_count = as_int(f[108]);
    return ins;
}

}  // namespace

hlo::HloModule module_from_graph(const GraphStructure& g) {
    const int64_t n = g.num_nodes();
    SEGRANK_CHECK(g.node_feat.rows() == n && g.node_feat.cols() == kNodeFeatDim, g.source.string(),
                  ": node_feat is [", g.node_feat.rows(), ", ", g.node_feat.cols(), "], expected [",
                  n, ", ", kNodeFeatDim, "]");
    hlo::HloModule m;
    m.name = g.name;
    const std::vector<int64_t> comp_of = computation_of_nodes(g);
    const int64_t last_comp = n > 0 ? comp_of.back() : 0;
    m.computations.resize(static_cast<size_t>(last_comp + 1));
    for (size_t c = 0; c < m.computations.size(); ++c) {
        m.computations[c].id = static_cast<int64_t>(c) + 1;
        m.computations[c].name = "computation." + std::to_string(c);
    }
    std::vector<hlo::Shape> shapes;
    shapes.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        shapes.push_back(shape_from_features(g.node_feat.data() + i * kNodeFeatDim));
    std::vector<std::vector<int64_t>> operands = operands_of_nodes(g);
    for (int64_t i = 0; i < n; ++i) {
        hlo::Instruction ins =
            instruction_of_node(g, i, shapes, operands[static_cast<size_t>(i)], comp_of);
        auto& c = m.computations[static_cast<size_t>(comp_of[static_cast<size_t>(i)])];
        if (g.node_feat.data()[i * kNodeFeatDim] > 0.5f) c.root_id = ins.id;
        c.instructions.push_back(std::move(ins));
    }
    m.entry_computation_id = static_cast<int64_t>(m.computations.size());
    return m;
}

}  // namespace segrank::hw
