// Model construction, validation, the config-dependence plan, the input layer and the head.
// Parameter names: opcode.weight [121, opcode_dim]; config.weight/bias (layout [cfg, 126] / tile
// [cfg, 24]); config_mismatch.weight [cfg, M] (layout with layout_bytes (9 columns),
// layout_access (15): M their sum; the name is historical);
// input.weight [H, F + opcode_dim (+ config_dim if early)], input.bias; sage<l>.*
// (SageConv); head1.weight/bias [H, W (+ config_dim if late)], W = 2H (readout mean_max) or H
// (mean), head2.weight/bias [1, H]; prior.weight [1, 1] (hwmodel_prior only); xattn<l>.w_q|w_k|w_v
// [d, H], xattn<l>.w_o [H, d] (config_attention); config_cost.weight [cfg, 14] (tile with
// tile_cost_features). The option parameters are declared last (prior.weight,
// config_mismatch.weight, xattn<l>.*, config_cost.weight), so with the options off the other
// parameters initialize exactly as without them.
#include "gnn/model.h"

#include <cstring>
#include <limits>

#include "gnn/ops/matmul.h"
#include "util/rss.h"

namespace segrank {

namespace {
constexpr EnumName<ConfigJoin> kConfigJoinNames[] = {{ConfigJoin::kEarly, "early"},
                                                     {ConfigJoin::kLate, "late"}};
constexpr EnumName<Readout> kReadoutNames[] = {{Readout::kMeanMax, "mean_max"},
                                               {Readout::kMean, "mean"}};
}  // namespace

std::span<const EnumName<Readout>> enum_names(Readout) { return kReadoutNames; }
Readout parse_readout(std::string_view s) { return parse_enum<Readout>("readout", s); }
std::string_view to_string(Readout r) { return enum_name(r); }

std::span<const EnumName<ConfigJoin>> enum_names(ConfigJoin) { return kConfigJoinNames; }
ConfigJoin parse_config_join(std::string_view s) {
    return parse_enum<ConfigJoin>("config join", s);
}
std::string_view to_string(ConfigJoin j) { return enum_name(j); }

void ModelConfig::validate() const {
    SEGRANK_CHECK(feat_dim >= 0, "model.feat_dim = ", feat_dim, ": expected >= 0");
    SEGRANK_CHECK(hidden >= 1, "model.hidden = ", hidden, ": expected >= 1");
    SEGRANK_CHECK(layers >= 0, "model.layers = ", layers, ": expected >= 0");
    SEGRANK_CHECK(opcode_dim >= 1, "model.opcode_dim = ", opcode_dim, ": expected >= 1");
    SEGRANK_CHECK(config_dim >= 1, "model.config_dim = ", config_dim, ": expected >= 1");
    SEGRANK_CHECK(!config_attention || config_attention_dim >= 1,
                  "model.config_attention_dim = ", config_attention_dim, ": expected >= 1");
    SEGRANK_CHECK(dropout >= 0.0f && dropout < 1.0f, "model.dropout = ", dropout,
                  ": expected 0 <= p < 1");
    SEGRANK_CHECK(!(task == Task::kLayout && config_join == ConfigJoin::kLate),
                  "model.config_join = \"late\" is only defined for the tile task "
                  "(docs/model.md#config-encoders)");
}

Model::Model(const ModelConfig& cfg, bool allocate) : cfg_(cfg) {
    cfg_.validate();
    const int64_t h = cfg_.hidden;
    opcode_ = OpEmbedding::create(params_, "opcode", cfg_.opcode_dim);
    if (cfg_.task == Task::kLayout)
        layout_cfg_ = LayoutConfigEncoder::create(params_, "config", cfg_.config_dim);
    else
        tile_cfg_ = TileConfigEncoder::create(params_, "config", cfg_.config_dim);
    const int64_t in = cfg_.feat_dim + cfg_.opcode_dim + (early() ? cfg_.config_dim : 0);
    w_in_ = params_.add("input.weight", h, in, true, ParamInit::kUniformFanIn, in);
    b_in_ = params_.add("input.bias", 1, h, false, ParamInit::kUniformFanIn, in);
    for (int64_t l = 0; l < cfg_.layers; ++l)
        convs_.push_back(SageConv::create(params_, str("sage", l), h, cfg_.activation));
    head_ = MlpHead::create(params_, "head", cfg_.readout_width() + (early() ? 0 : cfg_.config_dim),
                            h, cfg_.activation);
    if (cfg_.hwmodel_prior)  // initialized to 1: a lower estimate starts as a lower (faster) score
        prior_w_ = params_.add("prior.weight", 1, 1, false, ParamInit::kOnes);
    // Declared after prior.weight (both last), so the other parameters initialize as without it.
    if (cfg_.layout_feature_width() > 0)
        layout_feat_ = Linear::create(params_, "config_mismatch", cfg_.layout_feature_width(),
                                      cfg_.config_dim, /*with_bias=*/false);
    if (attn())  // declared last: the other parameters initialize as without it
        for (int64_t l = 0; l < cfg_.layers; ++l)
            xattn_.push_back(
                ConfigAttention::create(params_, str("xattn", l), h, cfg_.config_attention_dim));
    if (tile_cost())  // declared last: the other parameters initialize as without it
        cost_ = Linear::create(params_, "config_cost", kTileCostFeatures, cfg_.config_dim,
                               /*with_bias=*/false);
    if (allocate) params_.finalize();
}

void Model::add_prior(std::span<float> scores, std::span<const float> z) const {
    if (prior_w_ < 0) return;
    SEGRANK_CHECK(scores.size() == z.size(), "Model::add_prior: ", scores.size(), " scores, ",
                  z.size(), " prior values");
    const float w = params_.value(prior_w_).at(0, 0);
    for (size_t i = 0; i < scores.size(); ++i) scores[i] += w * z[i];
}

void Model::prior_backward(std::span<const float> dscores, std::span<const float> z) {
    if (prior_w_ < 0) return;
    SEGRANK_CHECK(dscores.size() == z.size(), "Model::prior_backward: ", dscores.size(),
                  " score gradients, ", z.size(), " prior values");
    double g = 0.0;
    for (size_t i = 0; i < z.size(); ++i) g += static_cast<double>(dscores[i]) * z[i];
    params_.grad(prior_w_).at(0, 0) += static_cast<float>(g);
}

DependencePlan Model::plan(const SegmentInput& in) const {
    return make_plan(in, cfg_.exploit_independence);
}

DependencePlan Model::make_plan(const SegmentInput& in, bool exploit) const {
    const int64_t n = in.num_nodes();
    SEGRANK_CHECK(n >= 1, "segment input: no nodes");
    SEGRANK_CHECK(in.node_feat.cols == cfg_.feat_dim, "segment input: node_feat has ",
                  in.node_feat.cols, " columns, model.feat_dim is ", cfg_.feat_dim);
    SEGRANK_CHECK(static_cast<int64_t>(in.opcode.size()) == n, "segment input: ", in.opcode.size(),
                  " opcodes for ", n, " nodes");
    SEGRANK_CHECK(in.operands && in.users, "segment input: operands and users Csr are required");
    SEGRANK_CHECK(in.operands->num_rows() == n && in.operands->num_cols() == n &&
                      in.users->num_rows() == n && in.users->num_cols() == n &&
                      in.users->nnz() == in.operands->nnz(),
                  "segment input: operands [", in.operands->num_rows(), "x",
                  in.operands->num_cols(), ", nnz ", in.operands->nnz(), "] and users [",
                  in.users->num_rows(), "x", in.users->num_cols(), ", nnz ", in.users->nnz(),
                  "] must both be ", n, "x", n, " and transposes of each other");
    SEGRANK_CHECK(in.num_pooled >= 1 && in.num_pooled <= n,
                  "segment input: num_pooled = ", in.num_pooled, " outside [1, ", n, "]");
    SEGRANK_CHECK(in.k >= 1, "segment input: K = ", in.k, ", expected >= 1");
    const int64_t nc = static_cast<int64_t>(in.config_node_local.size());
    if (cfg_.task == Task::kLayout) {
        SEGRANK_CHECK(static_cast<int64_t>(in.config_values.size()) == in.k * nc * kLayoutConfigDim,
                      "segment input: config_values has ", in.config_values.size(),
                      " values, expected K x nc x 18 = ", in.k, " x ", nc, " x 18");
        // Empty layout_features is accepted here (the plan does not depend on it); encode checks.
        // A model without the options ignores the rows.
        const int64_t mf = cfg_.layout_feature_width();
        SEGRANK_CHECK(in.layout_features.empty() || mf == 0 ||
                          static_cast<int64_t>(in.layout_features.size()) == in.k * nc * mf,
                      "segment input: layout_features has ", in.layout_features.size(),
                      " values, expected K x nc x ", mf, " = ", in.k, " x ", nc, " x ", mf,
                      " (model.layout_bytes / layout_access)");
    } else {
        SEGRANK_CHECK(in.tile_config.rows == in.k && in.tile_config.cols == kTileConfigDim,
                      "segment input: tile_config is [", in.tile_config.rows, ", ",
                      in.tile_config.cols, "], expected [K=", in.k, ", 24]");
    }
    const int64_t levels = cfg_.layers + 1;
    constexpr int32_t kFar = std::numeric_limits<int32_t>::max();
    std::vector<int32_t> hops(static_cast<size_t>(n), kFar);
    std::vector<int32_t> frontier;
    if (cfg_.task == Task::kLayout) {
        for (int64_t j = 0; j < nc; ++j) {
            const int32_t v = in.config_node_local[j];
            SEGRANK_CHECK(v >= 0 && v < n, "segment input: config_node_local[", j, "] = ", v,
                          " outside [0, ", n, ")");
            SEGRANK_CHECK(hops[v] != 0, "segment input: config_node_local lists node ", v,
                          " twice");
            hops[v] = 0;
            frontier.push_back(v);
        }
    }
    if (!exploit || (early() && cfg_.task == Task::kTile)) {
        std::fill(hops.begin(), hops.end(), 0);  // naive path, or every node sees the tile config
        frontier.clear();
    }
    for (int32_t d = 1; d < levels && !frontier.empty(); ++d) {
        std::vector<int32_t> next;
        for (int32_t v : frontier)
            for (const Csr* adj : {in.operands, in.users})
                for (int32_t u : adj->row(v))
                    if (hops[u] == kFar) hops[u] = d, next.push_back(u);
        frontier.swap(next);
    }
    DependencePlan p;
    p.nodes.resize(static_cast<size_t>(levels));
    p.pos.assign(static_cast<size_t>(levels), std::vector<int32_t>(static_cast<size_t>(n), -1));
    for (int64_t l = 0; l < levels; ++l)
        for (int32_t v = 0; v < n; ++v)
            if (hops[v] <= l) {
                p.pos[l][v] = static_cast<int32_t>(p.nodes[l].size());
                p.nodes[l].push_back(v);
            }
    return p;
}

bool Model::segment_depends_on_config(const SegmentInput& in) const {
    if (cfg_.task == Task::kTile) return true;  // early: every node; late: the head sees the config
    // Exact hops even when the naive path is configured: the answer must not depend on the path.
    const DependencePlan p = make_plan(in, /*exploit=*/true);
    for (int32_t v : p.nodes.back())
        if (v < in.num_pooled) return true;
    return false;
}

void check_model_fits_memory(const ModelConfig& mc, const std::string& settings) {
    const int64_t floats = Model(mc, /*allocate=*/false).params().total_size();
    const uint64_t bytes = static_cast<uint64_t>(floats) * 16, ram = physical_memory_bytes();
    SEGRANK_CHECK(bytes <= ram, settings, " make a model of ", floats, " parameters, ",
                  (bytes + (1 << 20) - 1) >> 20,
                  " MiB with gradients and AdamW's moments, more than this machine's physical "
                  "memory (",
                  ram >> 20, " MiB): lower them");
}

}  // namespace segrank
