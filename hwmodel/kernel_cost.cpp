// Fused kernel under a tile configuration (docs/hwmodel.md#kernels-under-a-tile-config).
#include "hwmodel/kernel_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gnn/core/check.h"
#include "hwmodel/padding.h"

namespace segrank::hw {
namespace {

// Instructions of the fused body: the fused computation and, recursively, nested fusions.
void collect_fused(const ModuleIndex& idx, size_t comp, std::vector<const hlo::Instruction*>& out) {
    for (const auto& ins : idx.module().computations[comp].instructions) {
        out.push_back(&ins);
        if (ins.opcode == "fusion")
            for (int64_t cc : ins.called_computation_ids)
                collect_fused(idx, idx.computation(cc), out);
    }
}

// Follows layout-preserving producers (bitcast, convert, copy, reshape, nested fusions) from
// `id` back to a parameter of the outermost fused computation; returns its parameter_number.
std::optional<int64_t> trace_to_parameter(const ModuleIndex& idx, int64_t id, size_t fused_comp) {
    for (int depth = 0; depth < 64; ++depth) {
        const auto r = idx.ref(id);
        const auto& ins = idx.module().at(r);
        if (ins.opcode == "parameter") {
            if (r.computation == fused_comp) return ins.parameter_number;
            // A parameter of a nested fused computation: continue at the caller's operand.
            bool found = false;
            for (const auto& caller : idx.module().computations[fused_comp].instructions) {
                if (caller.opcode != "fusion") continue;
                for (int64_t cc : caller.called_computation_ids)
                    if (idx.computation(cc) == r.computation &&
                        ins.parameter_number < static_cast<int64_t>(caller.operand_ids.size())) {
                        id = caller.operand_ids[static_cast<size_t>(ins.parameter_number)];
                        found = true;
                    }
            }
            if (!found) return std::nullopt;
            continue;
        }
        const bool passthrough = ins.opcode == "bitcast" || ins.opcode == "convert" ||
                                 ins.opcode == "copy" || ins.opcode == "reshape" ||
                                 ins.opcode == "transpose";
        if (ins.opcode == "fusion") {
            id = idx.root(idx.computation(ins.called_computation_ids.at(0))).id;
            continue;
        }
        if (!passthrough || ins.operand_ids.empty()) return std::nullopt;
        id = ins.operand_ids[0];
    }
    return std::nullopt;
}

int64_t position_in_physical(const hlo::Shape& s, int64_t logical_dim) {
    const auto m2m = effective_minor_to_major(s);
    for (size_t i = 0; i < m2m.size(); ++i)
        if (m2m[i] == logical_dim) return static_cast<int64_t>(m2m.size() - 1 - i);
    return -1;
}

}  // namespace

KernelModel::KernelModel(const hlo::HloModule& module, const HwParams& hw,
                         const CostOptions& options)
    : hw_(hw), opt_(options) {
    const ModuleIndex idx(module);
    const auto& entry = module.computations[idx.entry()];
    const hlo::Instruction& root = idx.root(idx.entry());
    std::vector<const hlo::Instruction*> body;
    std::optional<size_t> fused;
    if (root.opcode == "fusion" && !root.called_computation_ids.empty()) {
        fused = idx.computation(root.called_computation_ids[0]);
        collect_fused(idx, *fused, body);
    } else {
        body.push_back(&root);
    }
    const bool pad = opt_.padding;
    for (const auto& ins : entry.instructions)
        if (ins.id == root.id) output_bytes_ = static_cast<double>(padded_bytes(ins.shape, pad));

    // Iterated array: an output of the rank the tile config addresses; preferred order: the kernel
    // output (or its largest tuple element), else the largest array in the body.
    const hlo::Shape* iter = nullptr;
    auto consider = [&](const hlo::Shape& s) {
        if (s.is_tuple() || s.dims.empty()) return;
        if (!iter || padded_elements(s, pad) > padded_elements(*iter, pad)) iter = &s;
    };
    // npz records drop tuple element shapes: then take the outputs from the fused root tuple.
    std::vector<const hlo::Shape*> outputs;
    if (root.shape.is_tuple() && root.shape.tuple_shapes.empty() && fused) {
        const auto& fused_root = idx.root(*fused);
        for (int64_t op : fused_root.operand_ids) outputs.push_back(&idx.instruction(op).shape);
        output_bytes_ = 0;
        for (const auto* s : outputs) output_bytes_ += static_cast<double>(padded_bytes(*s, pad));
    } else if (root.shape.is_tuple()) {
        for (const auto& s : root.shape.tuple_shapes) outputs.push_back(&s);
    } else {
        outputs.push_back(&root.shape);
    }
    for (const auto* s : outputs) consider(*s);
    const size_t out_rank = iter ? iter->dims.size() : 0;
    for (const auto* ins : body)
        if (!ins->shape.is_tuple() && ins->shape.dims.size() > out_rank) consider(ins->shape);
    if (iter) iter_units_ = tile_units(*iter);

    for (const auto* ins : body) {
        const auto ops = idx.operand_shapes(*ins);
        NodeCost nc{ins->name, ins->opcode, shape_string(ins->shape),
                    op_work(*ins, ins->shape, ops, hw_, opt_)};
        mxu_ns_ += nc.work.mxu_ns;
        vpu_ns_ += nc.work.vpu_ns;
        if ((ins->opcode == "convolution" || ins->opcode == "dot") && ops.size() >= 2 && fused) {
            has_accumulator_ = true;
            const auto w = trace_to_parameter(idx, ins->operand_ids[1], *fused);
            const auto a = trace_to_parameter(idx, ins->operand_ids[0], *fused);
            if (w && *w < static_cast<int64_t>(root.operand_ids.size())) {
                const auto& ws = idx.instruction(root.operand_ids[static_cast<size_t>(*w)]).shape;
                kernel_units_ = tile_units(ws);
                if (ins->has_convolution_dimension_numbers)
                    kernel_feature_pos_ = position_in_physical(
                        ws, ins->convolution_dimension_numbers.kernel_output_feature_dimension);
                else
                    kernel_feature_pos_ = static_cast<int64_t>(ws.dims.size()) - 1;
                weight_bytes_ = static_cast<double>(padded_bytes(ws, pad));
                if (iter && iter->dims == ins->shape.dims)
                    iter_feature_pos_ = position_in_physical(
                        *iter, ins->has_convolution_dimension_numbers
                                   ? ins->convolution_dimension_numbers.output_feature_dimension
                                   : static_cast<int64_t>(iter->dims.size()) - 1);
            }
            if (a && *a < static_cast<int64_t>(root.operand_ids.size()) && a != w)
                activation_bytes_ = static_cast<double>(padded_bytes(
                    idx.instruction(root.operand_ids[static_cast<size_t>(*a)]).shape, pad));
        }
        nodes_.push_back(std::move(nc));
    }
    double inputs = 0;
    for (int64_t op : root.operand_ids)
        inputs += static_cast<double>(padded_bytes(idx.instruction(op).shape, pad));
    other_input_bytes_ = std::max(0.0, inputs - weight_bytes_ - activation_bytes_);
    default_tile_ = best_tile();
}

TileGeometry KernelModel::geometry(const hlo::TileSizeConfig& tile) const {
    TileGeometry g;
    const size_t r = iter_units_.size();
    // No output bounds (e.g. reshape kernels): the compiler picks; model it by our best tile.
    if (tile.output_bounds.empty() && !default_tile_.output_bounds.empty())
        return geometry(default_tile_);
    std::vector<int64_t> ob = tile.output_bounds;
    if (ob.size() != r) ob = iter_units_;  // unusable config: one block over everything
    double steps_out = 1, waste = 1, feat_blocks = 1, block_frac = 1;
    for (size_t i = 0; i < r; ++i) {
        const int64_t u = std::max<int64_t>(1, iter_units_[i]);
        const int64_t bnd = std::clamp<int64_t>(ob[i], 1, u);
        const double blocks = static_cast<double>(ceil_div(u, bnd));
        steps_out *= blocks;
        waste *= blocks * static_cast<double>(bnd) / static_cast<double>(u);
        block_frac *= static_cast<double>(bnd) / static_cast<double>(u);
        if (static_cast<int64_t>(i) == iter_feature_pos_) feat_blocks = blocks;
        if (r >= 2 && i == r - 2) g.block_rows = 8.0 * static_cast<double>(bnd);
    }
    double steps_k = 1, kernel_frac = 1;
    if (!kernel_units_.empty() && tile.kernel_bounds.size() == kernel_units_.size()) {
        for (size_t j = 0; j < kernel_units_.size(); ++j) {
            const int64_t u = std::max<int64_t>(1, kernel_units_[j]);
            const int64_t bnd = std::clamp<int64_t>(tile.kernel_bounds[j], 1, u);
            kernel_frac *= static_cast<double>(bnd) / static_cast<double>(u);
            if (static_cast<int64_t>(j) == kernel_feature_pos_) continue;  // shared with output
            const double blocks = static_cast<double>(ceil_div(u, bnd));
            steps_k *= blocks;
            waste *= blocks * static_cast<double>(bnd) / static_cast<double>(u);
        }
    } else if (!kernel_units_.empty()) {
        kernel_frac = 1.0 / feat_blocks;
    }
    const double nonfeat_blocks = steps_out / feat_blocks;
    // Re-reads (docs/hwmodel.md#kernels-under-a-tile-config): feature blocks innermost; weights
    // stay resident only when one block holds all of them, activations only when the reduction is
    // not split.
    g.weight_reads = (feat_blocks == 1 && steps_k == 1) ? 1 : nonfeat_blocks;
    g.act_reads = steps_k == 1 ? 1 : feat_blocks;
    g.hbm_bytes = output_bytes_ * std::min(waste, 2.0) + other_input_bytes_ * std::min(waste, 2.0) +
                  weight_bytes_ * g.weight_reads + activation_bytes_ * g.act_reads;
    // VMEM (step 2): blocks + an f32 accumulator for MXU kernels.
    g.out_block = output_bytes_ * block_frac;
    g.in_block = other_input_bytes_ * block_frac + weight_bytes_ * kernel_frac +
                 activation_bytes_ * block_frac * (steps_k > 1 ? 1.0 / steps_k : 1.0);
    g.acc = has_accumulator_ ? g.out_block * 2 : 0;
    g.steps_out = steps_out;
    g.steps_k = steps_k;
    g.waste = waste;
    g.feat_blocks = feat_blocks;
    return g;
}

KernelSummary KernelModel::summary() const {
    KernelSummary s;
    s.mxu_ns = mxu_ns_;
    s.vpu_ns = vpu_ns_;
    s.output_bytes = output_bytes_;
    s.weight_bytes = weight_bytes_;
    s.activation_bytes = activation_bytes_;
    s.other_input_bytes = other_input_bytes_;
    s.has_accumulator = has_accumulator_;
    return s;
}

Breakdown KernelModel::evaluate(const hlo::TileSizeConfig& tile, TileDetail* detail) const {
    Breakdown b;
    const TileGeometry g = geometry(tile);
    const double steps = g.steps();
    b.hbm_bytes = g.hbm_bytes;
    if (detail) {
        detail->waste = g.waste;
        detail->vmem_bytes = g.out_block + g.in_block + g.acc;
        detail->hbm_bytes_once =
            output_bytes_ + other_input_bytes_ + weight_bytes_ + activation_bytes_;
    }
    // Measured tile collections contain configs whose double-buffered estimate exceeds 16 MiB
    // (public sample 0a3585...: 40 % of configs), so only a single-buffered overflow is invalid.
    if (g.out_block + g.in_block + g.acc > static_cast<double>(hw_.vmem_bytes)) {
        b.invalid = true;
        b.total_ns = std::numeric_limits<double>::infinity();
        b.steps = static_cast<int64_t>(steps);
        return b;
    }
    b.steps = static_cast<int64_t>(steps);
    b.mxu_ns = mxu_ns_ * g.waste;
    b.vpu_ns = vpu_ns_ * g.waste;
    b.hbm_ns = hbm_ns(b.hbm_bytes, hw_);
    const double step_ns = opt_.step_overhead ? hw_.step_overhead_ns : 0;
    const double roof = std::max({b.mxu_ns, b.vpu_ns, b.hbm_ns});
    // Pipeline bubble: the first load and last store do not overlap
    // (docs/hwmodel.md#kernels-under-a-tile-config).
    b.overhead_ns = steps * step_ns + hw_.kernel_overhead_ns + roof / (steps + 1);
    b.total_ns = roof + b.overhead_ns;
    return b;
}

hlo::TileSizeConfig KernelModel::best_tile() const {
    hlo::TileSizeConfig best;
    double best_ns = std::numeric_limits<double>::infinity();
    std::vector<std::vector<int64_t>> choices;
    for (int64_t u : iter_units_) {
        std::vector<int64_t> c;
        for (int64_t v = 1; v < u; v *= 2) c.push_back(v);
        c.push_back(std::max<int64_t>(1, u));
        choices.push_back(std::move(c));
    }
    std::vector<size_t> pick(choices.size(), 0);
    for (int64_t guard = 0; guard < 200000; ++guard) {
        hlo::TileSizeConfig t;
        for (size_t i = 0; i < pick.size(); ++i) t.output_bounds.push_back(choices[i][pick[i]]);
        t.kernel_bounds = kernel_units_;
        const double ns = evaluate(t).total_ns;
        if (ns < best_ns) {
            best_ns = ns;
            best = t;
        }
        size_t i = 0;
        while (i < pick.size() && ++pick[i] == choices[i].size()) pick[i++] = 0;
        if (i == pick.size()) break;
    }
    return best;
}

}  // namespace segrank::hw
