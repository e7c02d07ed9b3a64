// Graph structure and the 140 node features (docs/files.md#node-features; upstream hlo_encoder.cc
// and featurizers.h semantics). All values are computed as int64 and converted to float32 directly.
#include "data/hlo/featurizer.h"

#include <algorithm>
#include <unordered_map>

#include "gnn/core/check.h"

namespace segrank::hlo {
namespace {

// One-hot order of features 2-20 (docs/files.md#node-features): slot i is element type
// kTypeOrder[i].
constexpr int32_t kTypeOrder[19] = {0,  1,  2,  3,  4,  5,  6,  7,  8, 9,
                                    10, 11, 12, 16, 15, 18, 13, 14, 17};

// Writes features into a row, converting int64 -> float32 (round to nearest) at the last moment.
class RowWriter {
public:
    explicit RowWriter(std::array<float, kNodeFeatDim>& row) : row_(row) {}

    void put(int at, int64_t v) { row_[static_cast<size_t>(at)] = static_cast<float>(v); }

    // L(K): K leading values, zero-padded.
    template <typename Vec>
    void leading(int at, int k, const Vec& v) {
        for (int i = 0; i < k && i < static_cast<int>(v.size()); ++i)
            put(at + i, v[static_cast<size_t>(i)]);
    }

    // S(K): K leading values, then the sum and product of all values (product of [] = 1, or 0 when
    // `empty_product_zero`, the S0 of the tile config). Products wrap like int64 arithmetic.
    void sum_product(int at, int k, const std::vector<int64_t>& v,
                     bool empty_product_zero = false) {
        leading(at, k, v);
        uint64_t sum = 0, prod = 1;
        for (int64_t x : v) {
            sum += static_cast<uint64_t>(x);
            prod *= static_cast<uint64_t>(x);
        }
        if (v.empty() && empty_product_zero) prod = 0;
        put(at + k, static_cast<int64_t>(sum));
        put(at + k + 1, static_cast<int64_t>(prod));
    }

    // B(K): K leading 0/1 values, then the count of trues and of falses.
    void bools(int at, int k, const std::vector<bool>& v) {
        int64_t trues = 0;
        for (size_t i = 0; i < v.size(); ++i) {
            if (static_cast<int>(i) < k) put(at + static_cast<int>(i), v[i] ? 1 : 0);
            trues += v[i] ? 1 : 0;
        }
        put(at + k, trues);
        put(at + k + 1, static_cast<int64_t>(v.size()) - trues);
    }

private:
    std::array<float, kNodeFeatDim>& row_;
};

template <typename F>
std::vector<int64_t> window_field(const std::vector<WindowDimension>& w, F get) {
    std::vector<int64_t> out;
    out.reserve(w.size());
    for (const WindowDimension& d : w) out.push_back(get(d));
    return out;
}

}  // namespace

std::array<float, kNodeFeatDim> node_features(const Instruction& ins, bool is_root) {
    std::array<float, kNodeFeatDim> row{};
    RowWriter w(row);
    w.put(0, is_root ? 1 : 0);
    // 1: constant 0 (upstream hard-codes the layout-tiles feature off).
    for (int i = 0; i < 19; ++i)
        if (ins.shape.element_type == kTypeOrder[i]) w.put(2 + i, 1);
    w.sum_product(21, 6, ins.shape.dims);
    w.put(29, static_cast<int64_t>(ins.shape.tuple_shapes.size()));
    w.put(30, ins.parameter_number);
    w.leading(31, 6, ins.dimensions);

    const auto& win = ins.window;
    w.sum_product(37, 6, window_field(win, [](const WindowDimension& d) { return d.size; }));
    w.sum_product(45, 6, window_field(win, [](const WindowDimension& d) { return d.stride; }));
    w.sum_product(53, 6, window_field(win, [](const WindowDimension& d) { return d.padding_low; }));
    w.sum_product(61, 6,
                  window_field(win, [](const WindowDimension& d) { return d.padding_high; }));
    w.sum_product(69, 6,
                  window_field(win, [](const WindowDimension& d) { return d.window_dilation; }));
    w.sum_product(77, 6,
                  window_field(win, [](const WindowDimension& d) { return d.base_dilation; }));
    std::vector<bool> reversal;
    for (const WindowDimension& d : win) reversal.push_back(d.window_reversal);
    w.bools(85, 6, reversal);

    const ConvolutionDimensionNumbers& c = ins.convolution_dimension_numbers;
    w.put(93, c.input_batch_dimension);
    w.put(94, c.input_feature_dimension);
    w.leading(95, 4, c.input_spatial_dimensions);
    w.put(99, c.kernel_input_feature_dimension);
    w.put(100, c.kernel_output_feature_dimension);
    w.leading(101, 4, c.kernel_spatial_dimensions);
    w.put(105, c.output_batch_dimension);
    w.put(106, c.output_feature_dimension);
    w.put(107, ins.feature_group_count);
    w.put(108, ins.batch_group_count);

    std::vector<int64_t> start, stride, limit;
    for (const SliceDimension& s : ins.slice_dimensions) {
        start.push_back(s.start);
        stride.push_back(s.stride);
        limit.push_back(s.limit);
    }
    w.sum_product(109, 2, start);
    w.sum_product(113, 2, stride);  // upstream order: start, stride, limit
    w.sum_product(117, 2, limit);
    w.sum_product(121, 2, ins.dynamic_slice_sizes);
    std::vector<int64_t> pad_low, pad_high;
    for (const PaddingDimension& p : ins.padding_config) {
        pad_low.push_back(p.edge_padding_low);
        pad_high.push_back(p.edge_padding_high);
    }
    w.sum_product(125, 2, pad_low);
    w.sum_product(129, 2, pad_high);
    w.put(133, ins.is_stable ? 1 : 0);
    w.leading(134, 6, ins.shape.minor_to_major);
    return row;
}

void featurize_structure(const HloModule& m, GraphStructure& out, const std::string& where) {
    const int64_t n = m.num_instructions();
    std::unordered_map<int64_t, int64_t> node_of;    // instruction id -> node index
    std::unordered_map<int64_t, int64_t> root_node;  // computation id -> node index of its root
    node_of.reserve(static_cast<size_t>(n));
    int64_t next = 0;
    for (const Computation& comp : m.computations)
        for (const Instruction& ins : comp.instructions)
            SEGRANK_CHECK(node_of.emplace(ins.id, next++).second, where, ": instruction '",
                          ins.name, "' repeats instruction id ", ins.id);
    for (const Computation& comp : m.computations) {
        if (comp.instructions.empty()) continue;
        auto it = node_of.find(comp.root_id);
        SEGRANK_CHECK(it != node_of.end() && comp.find_instruction(comp.root_id), where,
                      ": computation '", comp.name, "' root_id ", comp.root_id,
                      " is not one of its instructions");
        root_node.emplace(comp.id, it->second);
    }

    out.name = m.name;
    out.node_feat = Tensor(n, kNodeFeatDim);
    out.node_opcode.assign(static_cast<size_t>(n), 0);
    out.edge_index.clear();
    std::vector<std::pair<int64_t, int64_t>> edges;
    int64_t u = 0;
    for (const Computation& comp : m.computations) {
        for (const Instruction& ins : comp.instructions) {
            const auto row = node_features(ins, ins.id == comp.root_id);
            std::copy(row.begin(), row.end(), out.node_feat.data() + u * kNodeFeatDim);
            out.node_opcode[static_cast<size_t>(u)] = opcode_id(ins.opcode);

            std::vector<int64_t> ops = ins.operand_ids;  // distinct operands only
            std::sort(ops.begin(), ops.end());
            ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
            for (int64_t op : ops) {
                auto it = node_of.find(op);
                SEGRANK_CHECK(it != node_of.end(), where, ": instruction '", ins.name, "' (id ",
                              ins.id, ") has operand id ", op, " missing from the module");
                edges.emplace_back(u, it->second);
            }
            for (int64_t cid : ins.called_computation_ids) {
                auto it = root_node.find(cid);
                SEGRANK_CHECK(it != root_node.end(), where, ": instruction '", ins.name, "' (id ",
                              ins.id, ") calls computation id ", cid,
                              " which is missing from the module or empty");
                edges.emplace_back(u, it->second);
            }
            ++u;
        }
    }
    std::sort(edges.begin(), edges.end());
    // Repeated called_computation_ids would duplicate a row (the reference aborts); keep one.
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    out.edge_index.reserve(edges.size() * 2);
    for (const auto& [a, b] : edges) {
        SEGRANK_CHECK(a != b, where, ": node ", a,
                      " would get a self edge (an instruction using "
                      "itself or calling its own computation)");
        out.edge_index.push_back(a);
        out.edge_index.push_back(b);
    }
}

std::vector<int64_t> node_splits(const HloModule& m) {
    std::vector<int64_t> splits{0};
    int64_t count = 0;
    for (const Computation& comp : m.computations) {
        count += static_cast<int64_t>(comp.instructions.size());
        const std::string& s = comp.name;
        if (s.find("cluster") != std::string::npos || s.find("while") != std::string::npos ||
            s.find("cond") != std::string::npos)
            splits.push_back(count);
    }
    if (splits.back() < count) splits.push_back(count);
    return splits;
}

std::array<float, kTileConfigDim> tile_config_features(const TileSizeConfig& t) {
    std::array<float, kNodeFeatDim> scratch{};
    RowWriter w(scratch);
    w.sum_product(0, 6, t.kernel_bounds, /*empty_product_zero=*/true);
    w.sum_product(8, 6, t.output_bounds, true);
    w.sum_product(16, 6, t.input_bounds, true);
    std::array<float, kTileConfigDim> out{};
    std::copy(scratch.begin(), scratch.begin() + kTileConfigDim, out.begin());
    return out;
}

std::array<int8_t, kLayoutConfigDim> layout_config_values(const NodeLayoutConfig& node) {
    std::array<int8_t, kLayoutConfigDim> out;
    out.fill(-1);
    SEGRANK_CHECK(node.tensors.size() <= 3, "layout config node has ", node.tensors.size(),
                  " tensors, at most 3 allowed");
    for (size_t t = 0; t < node.tensors.size(); ++t) {
        const auto& dims = node.tensors[t];
        for (size_t d = 0; d < dims.size() && d < 6; ++d) {
            SEGRANK_CHECK(dims[d] >= -1 && dims[d] <= 127, "layout config tensor ", t, " dim ", d,
                          " = ", dims[d], " does not fit the int8 config encoding (-1..127)");
            out[t * 6 + d] = static_cast<int8_t>(dims[d]);
        }
    }
    return out;
}

}  // namespace segrank::hlo
