// Random valid configurations for synthetic modules (docs/hwmodel.md#synthetic-collections):
// per-node layout configs of the configurable nodes (docs/files.md#layout-config-features) and
// tile-size configs of a kernel (docs/hwmodel.md#tile-units), plus the log-normal label noise
// (docs/hwmodel.md#synthetic-collections).
#pragma once
#include <cstdint>
#include <vector>

#include "data/hlo/module.h"
#include "gnn/core/rng.h"
#include "hwmodel/kernel_cost.h"

namespace segrank::synth {

/// Node indices (flattened order, docs/files.md#node-order-and-edges) of the configurable nodes of
/// a layout module: every convolution, dot and reshape outside fused and reducer computations (the
/// opcodes configurable in the real data). Strictly increasing.
std::vector<int64_t> configurable_nodes(const hlo::HloModule& m);

/// Ranks of the tensors a layout config addresses for `ins` (docs/files.md#layout-config-features):
/// output, then operand 0 (input / lhs), then operand 1 for convolution and dot (kernel / rhs).
std::vector<int64_t> layout_tensor_ranks(const hlo::HloModule& m, const hlo::Instruction& ins);

/// Knobs of random layout configs.
struct LayoutSampling {
    double default_prob = 0.3;  ///< a tensor keeps the compiler default (empty dims -> 18 x -1)
    double partial_prob = 0.2;  ///< only the two most-minor dims are given (as in the fixture)
};

/// A random layout of one configurable node: per tensor of rank r a random minor_to_major
/// permutation of 0..r-1 (or its 2 most-minor entries, or empty = default). Values are < 6.
hlo::NodeLayoutConfig random_node_layout(Rng& rng, const std::vector<int64_t>& tensor_ranks,
                                         const LayoutSampling& opt = {});

/// A random tile config of `kernel` (docs/hwmodel.md#tile-units): output bounds per physical dim of
/// the iterated array (tile units) drawn from powers of two below the extent and the extent itself;
/// kernel bounds likewise over the conv/dot weight operand (empty when the kernel has none);
/// input bounds empty. Draws again (up to 32 times) when the model says the config does not fit
/// VMEM; falls back to kernel.best_tile().
hlo::TileSizeConfig random_tile_config(Rng& rng, const hw::KernelModel& kernel);

/// `ns` times exp(sigma * N(0, 1)), rounded to an integer ns and at least `min_ns`.
int64_t noisy_runtime_ns(Rng& rng, double ns, double sigma, int64_t min_ns = 2);

}  // namespace segrank::synth
