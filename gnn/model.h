// The layout/tile GNN (docs/model.md): input layer, L SAGE layers, mean+max (or mean) readout, MLP
// head, with
// explicit forward/backward (docs/style.md#forward-and-backward) and exact config independence
// (docs/model.md#config-independence): per layer, the nodes whose state cannot depend on the config
// are computed once (K = 1, the "base" rows) and broadcast; only the nodes within l hops of a
// configurable node carry K config rows ("dep" rows).
//
// Usage (one training step over one segment):
//   Model model(cfg); model.params().initialize(seed);
//   EncodeSaved es; Tensor r = model.encode(in, &es, /*training=*/true, &rng);   // [K, W]
//   HeadSaved hs;   Tensor s = model.head(r.cview(), in.tile_config, &hs);        // [K]
//   ... loss -> dscores [K] ...
//   Tensor dr(K, W); model.head_backward(dscores, hs, dr.view());
//   model.encode_backward(dr.cview(), es);
// W = ModelConfig::readout_width(): 2H for the mean+max readout, H for the mean alone.
// Gradients accumulate into model.params().grads() (zero them once per optimizer step).
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gnn/core/csr.h"
#include "gnn/core/enum_names.h"
#include "gnn/core/rng.h"
#include "gnn/core/task.h"
#include "gnn/layers/config_attention.h"
#include "gnn/layers/config_encoder.h"
#include "gnn/layers/linear.h"
#include "gnn/layers/mlp.h"
#include "gnn/layers/op_embedding.h"
#include "gnn/layers/sage_conv.h"
#include "gnn/param_store.h"

namespace segrank {

struct MixedGrads;  // gnn/ops/mixed_rows.h

/// `model.config_join` (docs/model.md#config-encoders): "early" (at the input) or "late" (tile
/// only: before the head).
enum class ConfigJoin { kEarly, kLate };
/// Names: "early", "late".
std::span<const EnumName<ConfigJoin>> enum_names(ConfigJoin);
/// Parses "early" | "late"; throws segrank::Error listing both.
ConfigJoin parse_config_join(std::string_view s);
std::string_view to_string(ConfigJoin j);

/// `model.readout` (docs/model.md#readout-and-head): how a segment's last-layer rows are pooled
/// per config, "mean_max" ([mean, max] over the pooled nodes, width 2H) or "mean" (the mean alone,
/// width H).
enum class Readout { kMeanMax, kMean };
/// Names: "mean_max", "mean".
std::span<const EnumName<Readout>> enum_names(Readout);
/// Parses "mean_max" | "mean"; throws segrank::Error listing them.
Readout parse_readout(std::string_view s);
std::string_view to_string(Readout r);

/// Every size of the model (docs/model.md). Plain values, read once from the run config.
struct ModelConfig {
    Task task = Task::kLayout;
    int64_t feat_dim = 140;  ///< normalized node_feat columns F (after dropping constant columns)
    int64_t hidden = 128;    ///< H
    int64_t layers = 3;      ///< L SAGE layers
    int64_t opcode_dim = 32;
    int64_t config_dim = 32;
    Activation activation = Activation::kGelu;
    float dropout = 0.0f;  ///< on each SAGE layer's act output (training only)
    ConfigJoin config_join = ConfigJoin::kEarly;
    bool exploit_independence =
        true;  ///< false = naive path (every node carries K rows; tests, benchmark)
    /// model.hwmodel_prior (docs/model.md#analytical-prior): the graph score of config c gets
    /// + w * z_c, z the graph's standardized log hwmodel estimate, w the parameter prior.weight.
    bool hwmodel_prior = false;
    /// `model.layout_bytes` (layout only; docs/model.md#layout-byte-features): the SegmentInput
    /// carries kLayoutByteFeatures values per (config, configurable node) (padded bytes of the
    /// configured layouts and the copies they imply), added to the config code through
    /// "config_mismatch.weight" [config_dim, 9] (the name earlier versions gave it, kept so their
    /// checkpoints load).
    bool layout_bytes = false;
    /// `model.layout_access` (layout only; docs/model.md#layout-access-features): the feature rows
    /// carry kLayoutAccessFeatures more values after the byte features (which tensors a config
    /// relayouts, whether the lane and sublane dims move, the contiguous runs of the copy),
    /// through the same "config_mismatch.weight" [config_dim, M].
    bool layout_access = false;
    /// `model.loop_depth` (layout only; docs/model.md#loop-depth): one more node feature column,
    /// each node's while-loop depth (data/loop_depth.h); feat_dim counts it.
    bool loop_depth = false;
    /// `model.trip_counts` (layout only; docs/model.md#loop-trip-counts): two more node feature
    /// columns after the depth one, log2 of the product of the enclosing loops' trip counts and
    /// whether one of them is unknown (data/graph.h node_loop_trips); feat_dim counts them.
    bool trip_counts = false;
    /// Width M of the layout feature rows (layout; 0 for tile): kLayoutByteFeatures with
    /// layout_bytes, plus kLayoutAccessFeatures with layout_access, in this order.
    int64_t layout_feature_width() const {
        if (task != Task::kLayout) return 0;
        return (layout_bytes ? kLayoutByteFeatures : 0) +
               (layout_access ? kLayoutAccessFeatures : 0);
    }
    /// `model.readout` (docs/model.md#readout-and-head).
    Readout readout = Readout::kMeanMax;
    /// Width W of a readout row, the MLP head's input (without the late join's config_dim): 2H for
    /// mean_max, H for mean.
    int64_t readout_width() const { return readout == Readout::kMean ? hidden : 2 * hidden; }
    /// `model.config_attention` (docs/model.md#cross-config-attention): after each SAGE layer the
    /// K config rows of every node attend to each other ("xattn<l>.*", l = 0..L-1).
    bool config_attention = false;
    /// `model.config_attention_dim`: the width d of its queries, keys and values (>= 1).
    int64_t config_attention_dim = 32;
    /// `model.tile_cost_features` (tile only; docs/model.md#tile-cost-features): the SegmentInput
    /// carries kTileCostFeatures kernel-model features per config, added to the tile config code
    /// through "config_cost.weight" [config_dim, M] (early and late join).
    bool tile_cost_features = false;
    /// Throws segrank::Error naming the field when a size is out of range or late join is used for
    /// layout.
    void validate() const;
};

/// One segment (or whole graph) to encode for K configs. All views borrow: they must stay alive
/// until encode_backward returns.
struct SegmentInput {
    ConstMatrixView node_feat;        ///< [n, F] normalized features
    std::span<const int32_t> opcode;  ///< [n] ids 0..120
    const Csr* operands = nullptr;    ///< [n x n] row v: nodes v reads
    const Csr* users = nullptr;       ///< [n x n] row v: nodes reading v (operands transposed)
    int64_t num_pooled = 0;           ///< the first num_pooled nodes are pooled; the rest is halo
    std::span<const int32_t>
        config_node_local;  ///< layout: [nc_s] distinct local ids of configurable nodes
    std::span<const int8_t> config_values;  ///< layout: [K, nc_s, 18] values -1..5
    /// layout with ModelConfig::layout_bytes or layout_access: [K, nc_s, M], M =
    /// ModelConfig::layout_feature_width() (the byte, access and tiling blocks that are on, in this
    /// order; else empty)
    std::span<const float> layout_features;
    ConstMatrixView tile_config;  ///< tile: [K, 24] raw config_feat
    /// tile with ModelConfig::tile_cost_features: [K, kTileCostFeatures] (else empty)
    ConstMatrixView tile_cost;
    int64_t k = 1;  ///< K configs

    int64_t num_nodes() const { return node_feat.rows; }
};

/// Which nodes carry K rows at each layer (docs/model.md#config-independence). nodes[l] sorted
/// ascending; pos[l][v] = row of v in layer l's dep rows or -1. Layer 0 is the input layer.
struct DependencePlan {
    std::vector<std::vector<int32_t>> nodes;  ///< [L+1][m_l]
    std::vector<std::vector<int32_t>> pos;    ///< [L+1][n]
    bool has_base(int64_t l) const { return nodes[l].size() < pos[l].size(); }
};

/// The config-independent state of one segment (docs/model.md#config-independence), computed once
/// by Model::encode_base and reused by inference encodes of any K: the dependence plan, the input
/// layer's config-independent part P = W_feat x + W_op e + b [n, H] and the base rows of every
/// layer (docs/gst.md#inference-cache). Encodes
/// that read it give bit for bit the readout of encodes that compute it (the same kernels on the
/// same rows). Valid only for the segment and parameters it was computed from.
struct EncodeBase {
    DependencePlan plan;
    Tensor input_p;            ///< [n, H] P of every node
    std::vector<Tensor> base;  ///< [L+1] [n, H] base rows of layer l (empty when it has none)

    /// Heap bytes held.
    int64_t memory_bytes() const;
};

/// Saved state of one encode (training). Owned by the caller; one per segment in flight.
struct EncodeSaved {
    SegmentInput input;
    DependencePlan plan;
    bool training = false;
    uint64_t dropout_seed = 0;
    Tensor emb;                ///< [n, opcode_dim]
    Tensor pre_base, pre_dep;  ///< input-layer pre-activations [n, H], [m0*K, H]
    Tensor x_cfg;              ///< [m0*K, config_dim] config codes of the layer-0 dep rows (layout)
    std::vector<int8_t>
        cfg_values;  ///< [rows, 18] values of the configurable dep rows, in row order
    std::vector<int64_t>
        cfg_rows;  ///< dep rows (of x_cfg) that are configurable; the others hold the zero code
    Tensor cfg_features;            ///< [rows, M] layout feature rows of those rows (layout_bytes)
    Tensor tile_code;               ///< [K, config_dim] (tile early join)
    std::vector<Tensor> base, dep;  ///< per layer 0..L: [n, H] (empty if unused), [m_l * K, H]
    std::vector<SageConv::Saved> base_conv, dep_conv;  ///< per SAGE layer 1..L (index l-1)
    /// config_attention: its saved state after SAGE layer l (index l-1), base and dep rows
    std::vector<ConfigAttention::Saved> base_xattn, dep_xattn;
    std::vector<int32_t> argmax;  ///< [K*H] readout max argmax node ids (mean_max; else empty)
    /// Inference with cached base rows (not owned): P and the base rows are read from here.
    const EncodeBase* cached = nullptr;
};

/// Row counts of one deduplicated inference encode (Model::encode_dedupe), per layer 0..L: the dep
/// rows a dense encode computes (m_l x K) and the distinct rows computed instead.
struct DedupeStats {
    std::vector<int64_t> dense_rows;   ///< [L+1]
    std::vector<int64_t> unique_rows;  ///< [L+1]
};

/// Saved state of one head call.
struct HeadSaved {
    MlpHead::Saved mlp;
    Tensor tile_config;  ///< [K, 24] copy (late join)
    Tensor tile_cost;    ///< [K, kTileCostFeatures] copy (late join with tile_cost_features)
};

class Model {
public:
    /// Declares every parameter (names in the .cpp) in a finalized, zero-valued ParamStore; call
    /// params().initialize(seed) before use. With `allocate` false the store is left unfinalized
    /// (nothing allocated): params().total_size() then tells the model's size before a caller
    /// commits the memory. Throws segrank::Error on an invalid config.
    explicit Model(const ModelConfig& cfg, bool allocate = true);

    const ModelConfig& config() const { return cfg_; }
    ParamStore& params() { return params_; }
    const ParamStore& params() const { return params_; }

    /// The layers at which each node depends on the config (exact,
    /// docs/model.md#config-independence). Validates the input.
    DependencePlan plan(const SegmentInput& in) const;
    /// Whether the segment's readout can differ between configs; false means every config gets the
    /// same readout, so under a ranking loss with score_sum the segment can be skipped
    /// (docs/model.md#config-independence).
    bool segment_depends_on_config(const SegmentInput& in) const;

    /// Readout r = [mean_v h_L, max_v h_L] per config ([K, 2H]), or r = mean_v h_L ([K, H]) with
    /// model.readout = "mean": returns [K, W]. saved null = inference (no
    /// saved state, layer states freed as it goes). training enables dropout, whose masks come from
    /// rng (required when training with dropout > 0). Throws segrank::Error on invalid input
    /// (shapes, ids).
    /// With `cached` (Model::encode_base of this segment with the current parameters; inference
    /// only: saved must be null and training false) the config-independent rows are read from it
    /// instead of being computed, with the same result bit for bit.
    Tensor encode(const SegmentInput& in, EncodeSaved* saved, bool training = false,
                  Rng* rng = nullptr, const EncodeBase* cached = nullptr);
    /// Whether encode_dedupe deduplicates rows of `in` (layout, no config_attention, K > 1); else
    /// it runs the dense encode.
    bool dedupes(const SegmentInput& in) const;
    /// Inference readout [K, W] of encode(in, nullptr, false, nullptr, cached), computing each
    /// distinct row of every layer once (docs/model.md#row-deduplication): configs that give a
    /// node the same inputs within its receptive field share its row. Layer 0 is keyed by the
    /// node's config values (and layout feature row), layer l by the classes of the node and its
    /// neighbours at layer l - 1, so no row is compared by value after the input. Equal to the
    /// dense encode up to float rounding of the GEMMs over fewer rows (the aggregation,
    /// normalization and readout use the same arithmetic). Memory besides the distinct rows: three
    /// [m_l x K] int32 class tables. stats (optional) receives the row counts. Falls back to the
    /// dense encode when !dedupes(in). Throws segrank::Error on invalid input, as encode.
    Tensor encode_dedupe(const SegmentInput& in, const EncodeBase* cached = nullptr,
                         DedupeStats* stats = nullptr);
    /// The config-independent state of segment `in` (its plan, P and base rows; K and the config
    /// values of `in` are not read beyond validation),
    /// for encodes of any configs of the same segment. Memory: at most encode_base_bytes(n).
    /// Throws segrank::Error on invalid input.
    EncodeBase encode_base(const SegmentInput& in) const;
    /// Upper bound of EncodeBase::memory_bytes() for a segment of n nodes: (L + 2) x n x H floats
    /// and the plan's (L + 1) x 2n ids.
    int64_t encode_base_bytes(int64_t n) const;
    /// Accumulates parameter gradients from dreadout [K, W]. Consumes `saved`: each layer's
    /// activations are freed as soon as the backward has passed them (peak memory); a second call
    /// on the same state throws segrank::Error.
    void encode_backward(ConstMatrixView dreadout, EncodeSaved& saved);

    /// Scores [K] from readout [K, W] (layout: tile_config unused; tile late join: [K, 24]
    /// required, and with model.tile_cost_features tile_cost [K, kTileCostFeatures]). Throws
    /// segrank::Error on other shapes.
    Tensor head(ConstMatrixView readout, ConstMatrixView tile_config, HeadSaved* saved,
                ConstMatrixView tile_cost = {}) const;
    /// Accumulates head gradients; dreadout [K, W] += d/dreadout when dreadout.data is non-null.
    void head_backward(std::span<const float> dscores, const HeadSaved& saved, MatrixView dreadout);

    /// Whether the analytical prior is on (ModelConfig::hwmodel_prior).
    bool has_prior() const { return prior_w_ >= 0; }
    /// The analytical prior (docs/model.md#analytical-prior), added once per graph score:
    /// scores[i] += w * z[i], w = prior.weight. z [K] are the configs' standardized log hwmodel
    /// estimates (PreparedGraph::prior_z). No-op when the prior is off. Throws segrank::Error when
    /// the sizes differ.
    void add_prior(std::span<float> scores, std::span<const float> z) const;
    /// Accumulates dprior.weight += sum_i dscores[i] * z[i]. No-op when the prior is off. Throws
    /// segrank::Error when the sizes differ.
    void prior_backward(std::span<const float> dscores, std::span<const float> z);

private:
    DependencePlan make_plan(const SegmentInput& in, bool exploit) const;
    void input_forward(const SegmentInput& in, const DependencePlan& plan, EncodeSaved& st) const;
    // P = W_feat x + W_op e + b [n, H]; the opcode embedding goes to emb [n, opcode_dim].
    Tensor input_projection(const SegmentInput& in, Tensor& emb) const;
    // Layer-0 base rows act(P + W_cfg c0) into base0, with their pre-activations pre_base.
    void input_base(const Tensor& p, Tensor& pre_base, Tensor& base0) const;
    // Base rows of SAGE layer l [n, H] from prev [n, H] (the layer-l-1 base rows).
    // With config_attention the layer's attention on base rows follows (its state to xsaved).
    // When base_rows_subset(plan, l), only the rows of nodes independent at layer l are computed
    // (saved state, attention's too, of those rows only); the others are 0
    // (docs/model.md#config-independence).
    void base_layer_forward(const SegmentInput& in, const DependencePlan& plan, int64_t l,
                            ConstMatrixView prev, Tensor& out, SageConv::Saved* saved,
                            ConfigAttention::Saved* xsaved, const DropoutSpec* ds) const;
    void input_backward(const EncodeSaved& st, ConstMatrixView dbase, ConstMatrixView ddep);
    // The steps of encode (gnn/model_encode.cpp). encode_setup: st gets the plan, the input, the
    // dropout seed (from rng when training with dropout) and one slot per layer; throws
    // segrank::Error as encode. layer_forward: layer l's base rows (unless cached) and dep rows
    // [m_l * K, H] (dep_layer_forward) from layer l-1's; keep = false frees layer l-1.
    void encode_setup(const SegmentInput& in, EncodeSaved& st, bool training, Rng* rng,
                      const EncodeBase* cached) const;
    void layer_forward(EncodeSaved& st, int64_t l, bool keep) const;
    void dep_layer_forward(EncodeSaved& st, int64_t l, bool keep) const;
    // The steps of encode_backward, layer l from d(its output) dbase [n, H] / ddep [m_l * K, H] to
    // the layer-l-1 gradients pbase / pg (accumulated). layer_grads: zeroed gradients of layer l
    // (dbase empty without base rows). attention_backward: through the cross-config attention, in
    // place. dep_layer_backward: the dep rows (ddep is overwritten). base_subset_backward /
    // base_full_backward: the base rows of the nodes independent at layer l / of every node.
    void layer_grads(const EncodeSaved& st, int64_t l, Tensor& dbase, Tensor& ddep) const;
    void attention_backward(EncodeSaved& st, int64_t l, Tensor& dbase, Tensor& ddep);
    void dep_layer_backward(EncodeSaved& st, int64_t l, Tensor& ddep, const MixedGrads& pg);
    void base_subset_backward(EncodeSaved& st, int64_t l, const Tensor& dbase, Tensor& pbase);
    void base_full_backward(EncodeSaved& st, int64_t l, const Tensor& dbase, Tensor& pbase);
    // Throws segrank::Error unless `cached` is an EncodeBase of plan p for this model.
    void check_cached(const DependencePlan& p, const EncodeBase& cached) const;

    bool early() const { return cfg_.config_join == ConfigJoin::kEarly; }
    /// Whether layer l computes base rows: when some node is config-independent.
    bool need_base(const DependencePlan& p, int64_t l) const { return p.has_base(l); }
    /// Whether base layer l computes only the rows of nodes independent at layer l (the base rows
    /// of dep nodes are never read): when some node is dep.
    bool base_rows_subset(const DependencePlan& p, int64_t l) const {
        return !p.nodes[static_cast<size_t>(l)].empty();
    }

    ModelConfig cfg_;
    ParamStore params_;
    OpEmbedding opcode_;
    LayoutConfigEncoder layout_cfg_;
    TileConfigEncoder tile_cfg_;
    Linear layout_feat_;  ///< "config_mismatch" [config_dim, M], no bias (layout_bytes only)
    Linear cost_;         ///< "config_cost" [config_dim, M], no bias (tile_cost_features only)
    ParamId w_in_ = -1,
            b_in_ = -1;  ///< input.weight [H, F + opcode_dim (+ config_dim)], input.bias [1, H]
    std::vector<SageConv> convs_;
    MlpHead head_;
    ParamId prior_w_ = -1;                ///< prior.weight [1, 1] (hwmodel_prior only)
    std::vector<ConfigAttention> xattn_;  ///< "xattn<l>.*" per SAGE layer (config_attention only)
    bool attn() const { return cfg_.config_attention; }
    bool tile_cost() const { return cfg_.task == Task::kTile && cfg_.tile_cost_features; }
    // code [K, config_dim] += W_tc x_cost (tile_cost_features; a no-op otherwise). Throws
    // segrank::Error when cost is not [K, kTileCostFeatures].
    void add_tile_cost(MatrixView code, ConstMatrixView cost) const;
};

/// Refuses, before anything is allocated, a model of `mc` whose parameters with their gradients
/// and AdamW's two moments (16 bytes per parameter) exceed the machine's physical memory
/// (util/rss.h physical_memory_bytes): such a model would be zeroed page by page until the kernel
/// ends the process. `settings` names what sized it ("model.hidden = 4096 and model.layers = 64").
/// Throws segrank::Error "<settings> make a model of N parameters, M MiB with gradients and
/// AdamW's moments, more than this machine's physical memory (P MiB): lower them".
void check_model_fits_memory(const ModelConfig& mc, const std::string& settings);

}  // namespace segrank
