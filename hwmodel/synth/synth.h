// One synthetic graph at a time (docs/hwmodel.md#synthetic-collections,
// docs/files.md#hlo-module-model): generate a module of a model family, draw random valid
// configurations, label them with hwmodel (plus log-normal noise) and featurize with the featurizer
// of the real data (data/hlo/featurizer.h). Deterministic by (seed, task, graph index): graphs can
// be produced in any order or in parallel.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/graph.h"
#include "data/hlo/module.h"
#include "hwmodel/costs/cost_family.h"
#include "hwmodel/hardware.h"
#include "hwmodel/op_cost.h"
#include "hwmodel/synth/configs.h"

namespace segrank::synth {

/// Upper bounds of `segrank synth`'s sizes (SynthOptions::validate, the CLI): far above TpuGraphs
/// (at most a few thousand graphs, 44k-node layout graphs, 100k configs per graph) and the
/// 10^7-node rehearsal, low enough that a mistyped huge value is refused instead of exhausting
/// memory.
inline constexpr int64_t kMaxGraphs = 1'000'000;   ///< graphs per collection
inline constexpr int64_t kMaxNodes = 100'000'000;  ///< nodes per graph
inline constexpr int64_t kMaxConfigs = 1'000'000;  ///< configs per graph

/// Size and labelling knobs shared by both collections.
struct SynthOptions {
    uint64_t seed = 0;
    int64_t min_nodes = 200;  ///< instruction count range of a module (all computations)
    int64_t max_nodes = 2000;
    int64_t configs = 64;  ///< configurations per graph, the default configuration included
    /// With max_configs > configs: each graph draws its count log-uniformly from [configs,
    /// max_configs] (its own stream, so other draws do not change); 0 = every graph has `configs`.
    int64_t max_configs = 0;
    /// Node counts drawn log-uniformly over [min_nodes, max_nodes] instead of uniformly.
    bool log_uniform_nodes = false;
    /// Layout graphs: when > 0, at most max(1, round(fraction x nodes)) configurable nodes (and at
    /// most max_config_nodes), so configurable nodes grow with the graph; 0 = off.
    double config_node_fraction = 0.0;
    double noise_sigma =
        0.0;  ///< log-normal sigma of labels: runtime = model ns x exp(sigma N(0,1))
    /// Layout graphs: at most this many configurable nodes (a seeded random subset of the conv /
    /// dot / reshape nodes when there are more; real graphs configure a few percent of their
    /// nodes).
    int64_t max_config_nodes = 1000;
    /// Layout graphs: when > 0, each configurable node draws this many candidate layouts once per
    /// graph (stream "synth-layout-choices") and every config j > 0 picks one of them uniformly,
    /// so a node has at most this many distinct non-default rows across configs (real layout
    /// files: at most ~8, mean ~5); 0 = a fresh random layout per node and config. In [0, 1000].
    int64_t layout_choices = 0;
    /// Layout graphs of more than this many nodes are built in stages
    /// (docs/hwmodel.md#very-large-graphs): ceil(nodes / stage_nodes) modules of the graph's
    /// family, each of about nodes / stages instructions, run one after another (each stage's
    /// first entry parameter consumes the previous stage's entry root; runtime = the sum of the
    /// stages'), so `synth` holds one stage at a time. 0 = never; else >= 1000.
    int64_t stage_nodes = int64_t{1} << 18;
    hw::HwParams hw = hw::tpu_v3_core();
    /// Layout graphs: parts of the timing model their labels leave out (all on by default;
    /// step_overhead is a tile cost the module model never charges;
    /// `segrank synth --cost-off`, docs/hwmodel.md#synthetic-collections). Only the runtimes
    /// change: modules, configs and the noise draws stay those of the full model. Tile kernels
    /// ignore it (their draws depend on the kernel model).
    hw::CostOptions cost;
    /// The timing model that labels the graphs (docs/hwmodel.md#cost-families; `segrank synth
    /// --cost`). Modules, configs and noise draws do not depend on it (tile configs are drawn and
    /// checked valid under tpu_v3 whatever the family), so collections of one seed labelled by
    /// different families hold the same graphs and configs. A layout family cannot label tile
    /// graphs and vice versa (segrank::Error from synth_tile / synth_layout).
    hw::CostFamily cost_family = hw::CostFamily::kTpuV3;
    LayoutSampling layout;

    /// Throws segrank::Error naming the bad field (min/max nodes >= 2, min <= max, configs >= 2,
    /// max_configs 0 or >= configs, noise_sigma in [0, 5], max_config_nodes >= 1,
    /// config_node_fraction in [0, 1], layout_choices in [0, 1000], stage_nodes 0 or >= 1000).
    void validate() const;
};

/// Configurations of graph `index` of the collection of `task` under opt (opt.configs, or the
/// log-uniform draw over [configs, max_configs]).
int64_t graph_configs(const SynthOptions& opt, Task task, int64_t index);

/// A synthetic tile graph and, when kept, what produced it.
struct SynthTile {
    hlo::HloModule module;                     ///< empty unless keep_sources
    std::vector<hlo::TileSizeConfig> configs;  ///< [c] unless keep_sources; [0] is the default
    TileGraph graph;                           ///< config_feat [c, 24], runtimes in ns
};

/// A synthetic layout graph and, when kept, what produced it.
struct SynthLayout {
    hlo::HloModule module;                                    ///< empty unless keep_sources
    std::vector<std::vector<hlo::NodeLayoutConfig>> configs;  ///< [c][nc] unless keep_sources
    LayoutGraph graph;  ///< node_config_feat [c, nc, 18]; config 0 = all -1 (compiler default)
};

/// Graph `index` of the synthetic tile collection, named "synth_tile_<index>" (6 digits). The
/// kernel kind (conv / dot / loop / reduce fusion) and sizes come from Rng::derive(seed, 0, index,
/// "synth-module"). Config 0 is the compiler-default stand-in (hw::KernelModel::best_tile) and its
/// noisy runtime is every config's normalizer; configs 1.. are random_tile_config draws.
/// Runtimes in ns (>= 2). Memory: the module plus c x 24 floats; the module is freed on return
/// unless keep_sources. Throws segrank::Error on invalid options.
SynthTile synth_tile(const SynthOptions& opt, int64_t index, bool keep_sources = false);

/// Graph `index` of the synthetic layout collection, "synth_layout_<index>": a conv net or a
/// transformer module (family from the seed), configurable nodes = conv/dot/reshape, config 0 =
/// all compiler defaults, configs 1.. random_node_layout per node (or, with layout_choices N > 0,
/// one of N per-node candidates drawn once per graph); runtimes from hw::LayoutModel (ns, >= 2,
/// noisy). Memory: the module plus c x nc x 18 bytes (plus N x nc x 18 bytes of candidate rows,
/// and their NodeLayoutConfig objects only when keep_sources); the hwmodel's per-node memo is
/// dropped (the model rebuilt) every ~2^19 node evaluations, so it stays bounded for 10^5
/// configurations.
/// A graph of more than opt.stage_nodes nodes is built in stages (see synth_layout_parts) and
/// gathered into one record here; its sources cannot be kept (segrank::Error).
SynthLayout synth_layout(const SynthOptions& opt, int64_t index, bool keep_sources = false);

/// Stages of layout graph `index` under opt: 1 when its drawn node count is at most
/// opt.stage_nodes (or stage_nodes is 0), else ceil(nodes / stage_nodes).
int64_t layout_stages(const SynthOptions& opt, int64_t index);

/// Layout graph `index` built stage by stage (docs/hwmodel.md#very-large-graphs) without holding
/// it whole: for each stage, `on_part` receives its nodes' structure (node_feat [p, 140],
/// node_opcode [p], edge_index with whole-graph node ids, the edge joining it to the previous
/// stage included) and may move from it; the stage's module is freed before the next. Returns the
/// graph's name, node_config_ids, node_config_feat [c, nc, 18], config_runtime (ns: the stages'
/// hwmodel runtimes summed, then noise) and node_splits (last = total nodes); its structure
/// fields are empty. Configurable nodes: the cap of opt (from the drawn node count) split evenly
/// over the stages, at least one per stage. Used for any stage count, but a graph of one stage
/// is not the same graph as synth_layout's (its streams differ). Memory: one stage's module and
/// features plus c x nc x 18 bytes of config rows. Throws segrank::Error on invalid options.
LayoutGraph synth_layout_parts(const SynthOptions& opt, int64_t index,
                               const std::function<void(GraphStructure&)>& on_part);

/// The tpu_graphs form of a kept synthetic graph (module + runs; run 0 is_default), which
/// hlo::featurize_tile / featurize_layout turn into the same graph (used by tests).
/// Throws segrank::Error when the sources were not kept.
hlo::ModuleTuning to_module_tuning(const SynthTile& s);
hlo::ModuleTuning to_module_tuning(const SynthLayout& s);

}  // namespace segrank::synth
