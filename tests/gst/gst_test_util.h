// Setup for the GST tests without the trainer: the model, step and segmentation values of the tiny
// trainer config (tests/trainer/trainer_data_util.h tiny_run_config: H = 16, 2 layers, opcode and
// config widths 8, pairwise hinge, contiguous segments), a normalizer fitted on one graph, and one
// npz graph of the tiny layout collection as a GraphEntry.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "data/collection.h"
#include "data/graph_entry.h"
#include "data/graph_source.h"
#include "data/normalizer.h"
#include "gnn/model.h"
#include "gst/gst.h"
#include "gst/prepared_graph.h"
#include "hwmodel/synth/synth.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

namespace segrank::test {

/// The tiny model for `task` over `feat_dim` normalized features (config_independence on).
inline ModelConfig tiny_model_config(Task task, int64_t feat_dim, bool config_independence = true) {
    ModelConfig m;
    m.task = task;
    m.feat_dim = feat_dim;
    m.hidden = 16;
    m.layers = 2;
    m.opcode_dim = 8;
    m.config_dim = 8;
    m.exploit_independence = config_independence;
    m.validate();
    return m;
}

/// The step options: score_sum, one fresh segment, keep_prob 0.5, history_init fresh, seed 0,
/// pairwise hinge; the independence skip follows `config_independence` (the loss is ranking-only).
inline GstOptions tiny_gst_options(bool config_independence = true) {
    GstOptions o;
    o.loss_terms = {LossTerm{LossKind::kPairwiseHinge, 1.0}};
    o.skip_independent = config_independence && ranking_only(o.loss_terms);
    return o;
}

/// Contiguous segments of at most `max_nodes` nodes (0 = one segment), no halo, no pruning.
inline PrepareOptions tiny_prepare_options(int64_t max_nodes) {
    PrepareOptions p;
    p.partition.method = PartitionMethod::kContiguous;
    p.partition.max_nodes = max_nodes;
    return p;
}

/// Normalizer fitted on one graph's features.
inline Normalizer fit_normalizer(const GraphStructure& g) {
    NormalizerFitter f(kNodeFeatDim);
    f.add(g.node_feat.cview(), g.name);
    return f.finish();
}

/// A tiny layout collection with one train graph (and one valid graph), read from its npz file.
struct OneGraph {
    std::filesystem::path root;
    LayoutGraph graph;                       ///< the train graph as loaded from its npz
    std::unique_ptr<NpzGraphSource> source;  ///< the train split
    GraphEntry entry;                        ///< graph 0 of `source`, every config usable
};

/// o.source and o.entry: the train split under o.root and its graph 0.
inline void open_train_split(OneGraph& o) {
    for (Collection& c : discover_collections(o.root))
        if (c.id.split == Split::kTrain) o.source = std::make_unique<NpzGraphSource>(std::move(c));
    o.entry.source = o.source.get();
    o.entry.collection = o.source->collection();
    o.entry.info = o.source->info(0);
    o.entry.name = o.entry.info.name;
}

/// Writes the collection of `spec` (one train graph) under scratch_dir(name).
inline OneGraph one_graph(const std::string& name, TinyLayoutSpec spec) {
    spec.train_graphs = 1;
    spec.valid_graphs = 1;
    OneGraph o;
    o.root = write_tiny_layout_collection(scratch_dir(name), spec);
    o.graph = load_layout_npz(o.root / "npz/layout/xla/random/train/tiny_train_0.npz",
                              LabelPolicy::kRequirePositive);
    open_train_split(o);
    return o;
}

// Synthetic graphs (hwmodel/synth), which the hwmodel costs (the tiny random graphs of
// tests/support are not valid HLO): 150-200 nodes, `config_nodes` configurable nodes (layout; with
// 2, several 25-node segments are config-independent), `configs` configs, no label noise.
inline synth::SynthOptions synth_options(int64_t configs = 24, int64_t config_nodes = 2) {
    synth::SynthOptions o;
    o.seed = 5;
    o.min_nodes = 150;
    o.max_nodes = 200;
    o.configs = configs;
    o.max_config_nodes = config_nodes;
    return o;
}

/// One synthetic layout graph (synth_options(24, config_nodes)) as the train split of an npz
/// collection under scratch_dir(name).
inline OneGraph synth_one_graph(const std::string& name, int64_t config_nodes = 2) {
    OneGraph o;
    o.root = scratch_dir(name);
    o.graph = synth::synth_layout(synth_options(24, config_nodes), 0).graph;
    const auto dir = o.root / "npz/layout/xla/random/train";
    std::filesystem::create_directories(dir);
    save_layout_npz(o.graph, dir / (o.graph.name + ".npz"));
    o.graph = load_layout_npz(dir / (o.graph.name + ".npz"), LabelPolicy::kRequirePositive);
    open_train_split(o);
    return o;
}

}  // namespace segrank::test
