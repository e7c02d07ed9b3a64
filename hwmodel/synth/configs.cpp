// Random layout and tile configurations and label noise for synthetic collections.
#include "hwmodel/synth/configs.h"

#include <algorithm>
#include <cmath>

#include "gnn/core/check.h"
#include "hwmodel/module_index.h"

namespace segrank::synth {

std::vector<int64_t> configurable_nodes(const hlo::HloModule& m) {
    // Computations called as reducers (to_apply) are not configurable, nor fused computations.
    std::vector<int64_t> reducer_ids;
    for (const auto& c : m.computations)
        for (const auto& ins : c.instructions)
            if (ins.opcode == "reduce" || ins.opcode == "reduce-window" ||
                ins.opcode == "all-reduce")
                reducer_ids.insert(reducer_ids.end(), ins.called_computation_ids.begin(),
                                   ins.called_computation_ids.end());
    std::vector<int64_t> out;
    int64_t node = 0;
    for (const auto& c : m.computations) {
        const bool skip =
            c.is_fusion_computation ||
            std::find(reducer_ids.begin(), reducer_ids.end(), c.id) != reducer_ids.end();
        for (const auto& ins : c.instructions) {
            if (!skip &&
                (ins.opcode == "convolution" || ins.opcode == "dot" || ins.opcode == "reshape"))
                out.push_back(node);
            ++node;
        }
    }
    return out;
}

std::vector<int64_t> layout_tensor_ranks(const hlo::HloModule& m, const hlo::Instruction& ins) {
    std::vector<int64_t> ranks = {static_cast<int64_t>(ins.shape.dims.size())};
    const size_t operands = (ins.opcode == "convolution" || ins.opcode == "dot") ? 2 : 1;
    for (size_t i = 0; i < std::min(operands, ins.operand_ids.size()); ++i) {
        const auto ref = m.find_instruction(ins.operand_ids[i]);
        SEGRANK_CHECK(ref.has_value(), "synth: operand ", ins.operand_ids[i], " of '", ins.name,
                      "' not found");
        ranks.push_back(static_cast<int64_t>(m.at(*ref).shape.dims.size()));
    }
    return ranks;
}

hlo::NodeLayoutConfig random_node_layout(Rng& rng, const std::vector<int64_t>& tensor_ranks,
                                         const LayoutSampling& opt) {
    hlo::NodeLayoutConfig node;
    for (int64_t rank : tensor_ranks) {
        SEGRANK_CHECK(rank >= 0 && rank <= 6, "synth: tensor rank ", rank,
                      " cannot be described by a layout config (at most 6 dims)");
        std::vector<int32_t> perm;
        if (rank > 0 && rng.uniform() >= opt.default_prob) {
            for (int32_t d = 0; d < rank; ++d) perm.push_back(d);
            for (size_t i = perm.size(); i > 1; --i)
                std::swap(perm[i - 1], perm[rng.uniform_int(i)]);
            if (rank > 2 && rng.uniform() < opt.partial_prob) perm.resize(2);
        }
        node.tensors.push_back(std::move(perm));
    }
    return node;
}

namespace {
int64_t random_bound(Rng& rng, int64_t extent) {
    std::vector<int64_t> c;
    for (int64_t v = 1; v < extent; v *= 2) c.push_back(v);
    c.push_back(std::max<int64_t>(1, extent));
    return c[rng.uniform_int(c.size())];
}
}  // namespace

hlo::TileSizeConfig random_tile_config(Rng& rng, const hw::KernelModel& kernel) {
    for (int attempt = 0; attempt < 32; ++attempt) {
        hlo::TileSizeConfig t;
        for (int64_t u : kernel.iteration_units()) t.output_bounds.push_back(random_bound(rng, u));
        for (int64_t u : kernel.kernel_units()) t.kernel_bounds.push_back(random_bound(rng, u));
        if (!kernel.evaluate(t).invalid) return t;
    }
    return kernel.best_tile();
}

int64_t noisy_runtime_ns(Rng& rng, double ns, double sigma, int64_t min_ns) {
    SEGRANK_CHECK(std::isfinite(ns) && ns >= 0, "synth: hwmodel estimate ", ns,
                  " ns is not finite");
    const double v = sigma > 0 ? ns * std::exp(sigma * rng.normal()) : ns;
    return std::max<int64_t>(min_ns, std::llround(v));
}

}  // namespace segrank::synth
