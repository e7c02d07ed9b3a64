// Synthetic HLO modules by model family (docs/files.md#hlo-module-model,
// docs/hwmodel.md#synthetic-collections): pre-fusion layout modules (conv nets with batch norm,
// transformer blocks, while loops, all-reduces) and tile kernels (one fusion with its fused
// computation), built through the HLO module model with valid shapes, layouts, windows and
// convolution dimension numbers. Sizes come from the caller's Rng.
#pragma once
#include <cstdint>
#include <string>

#include "data/hlo/module.h"
#include "gnn/core/rng.h"

namespace segrank::synth {

/// Model family of a layout module.
enum class Family { kConvNet, kTransformer };

/// A pre-fusion module like the real layout collection: an entry computation made of family
/// blocks (conv + batch-norm-style statistics with reduce/reducer computations, or transformer
/// blocks with dot/reshape/transpose chains, softmax and layer norm), while loops whose body runs
/// a block (trip count = compare(get-tuple-element(param, 0), constant N),
/// docs/hwmodel.md#trip-counts) and all-reduces (cross-replica batch norm / tensor-parallel
/// projections). The total instruction count (all computations) equals `target_nodes` whenever
/// target_nodes >= 64 (smaller targets give the smallest module of the family). Element types bf16
/// or f32.
hlo::HloModule make_layout_module(Rng& rng, Family family, int64_t target_nodes,
                                  const std::string& name);

/// Kinds of tile kernels.
enum class KernelKind { kConvolution, kDot, kLoop, kReduce };

/// A tile-collection kernel like the real tile collection: an entry computation with parameters
/// and one fusion instruction (the root) whose fused computation holds a convolution (kOutput),
/// a dot (kOutput), an elementwise DAG (kLoop) or an elementwise + reduce (kLoop, with a reducer
/// computation). The instruction count equals `target_nodes` whenever target_nodes >= 32.
/// Kernel inputs may carry non-default layouts (e.g. {3,0,2,1}), as post-layout-assignment kernels
/// do.
hlo::HloModule make_tile_module(Rng& rng, KernelKind kind, int64_t target_nodes,
                                const std::string& name);

}  // namespace segrank::synth
