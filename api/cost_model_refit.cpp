// CostModel::refit (include/segrank/cost_model.h): fine-tunes the members of a graph's task on
// measured runtimes of its configs with the pairwise hinge loss, the whole model or its head only.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "api/cost_model_internal.h"
#include "gnn/core/check.h"
#include "gnn/core/rng.h"
#include "gnn/loss.h"
#include "gnn/optim.h"
#include "gst/gst.h"
#include "segments/history_table.h"

namespace segrank {

namespace {

// At most this many measured configs per step (a random subset when more): the pairwise loss
// is O(K^2) and a full-model step holds K configs' activations.
constexpr size_t kMaxRefitConfigs = 64;

// Head scope: the encoder is frozen, so each config's segment readouts (and its tile rows, tile
// cost rows and prior) are computed once, for all refit configs.
struct HeadInputs {
    std::vector<Tensor> readouts;
    Tensor tile_all, tile_cost_all;
    std::vector<float> prior_all;
};

HeadInputs head_inputs(Model& model, PreparedGraph& pg, const std::vector<int64_t>& all,
                       const GstOptions& opt) {
    HeadInputs h;
    h.readouts = segment_readouts(model, pg, all, opt);
    if (pg.task == Task::kTile) {
        h.tile_all = tile_rows(pg, load_config_batch(pg, all), all);
        h.tile_cost_all = tile_cost_rows(pg, all);
    }
    h.prior_all = prior_values(model, pg, all);
    return h;
}

// Head scope: the parameter values to restore after each step (`frozen`) and which of them are
// the head's (`head_mask`, 1 = trained).
void freeze_encoder(Model& model, std::vector<float>& frozen, std::vector<uint8_t>& head_mask) {
    auto values = model.params().values();
    frozen.assign(values.begin(), values.end());
    head_mask.assign(values.size(), 0);
    for (const auto& r : model.params().refs())
        if (r.name.rfind("head", 0) == 0)
            std::fill_n(head_mask.begin() + r.offset, r.rows * r.cols, uint8_t{1});
}

// The positions of the configs one step trains on: all n, or kMaxRefitConfigs of them drawn
// from `rng` when more.
std::vector<size_t> refit_pick(Rng& rng, size_t n) {
    std::vector<size_t> pick(n);
    std::iota(pick.begin(), pick.end(), size_t{0});
    if (pick.size() > kMaxRefitConfigs) {
        for (size_t i = 0; i < kMaxRefitConfigs; ++i)
            std::swap(
                pick[i],
                pick[i + static_cast<size_t>(rng.uniform() * static_cast<double>(pick.size() - i)) %
                             (pick.size() - i)]);
        pick.resize(kMaxRefitConfigs);
    }
    return pick;
}

// One head-only step on the configs `pick` (runtimes `ts`): scores them from the cached inputs
// `h`, accumulates the head's gradients of the pairwise hinge loss and returns the loss.
double head_step(Model& model, const HeadInputs& h, const std::vector<size_t>& pick,
                 const std::vector<double>& ts, const GstOptions& opt) {
    const auto k = static_cast<int64_t>(pick.size());
    const bool sum = opt.aggregate == SegmentAggregate::kScoreSum;
    double last = 0.0;
    auto gather = [&](const Tensor& src) {
        Tensor out(k, src.cols());
        for (int64_t i = 0; i < k; ++i)
            std::copy_n(src.data() + static_cast<int64_t>(pick[i]) * src.cols(), src.cols(),
                        out.data() + i * src.cols());
        return out;
    };
    Tensor tile = h.tile_all.size() ? gather(h.tile_all) : Tensor();
    Tensor tcost = h.tile_cost_all.size() ? gather(h.tile_cost_all) : Tensor();
    std::vector<float> prior;
    if (!h.prior_all.empty())
        for (size_t i : pick) prior.push_back(h.prior_all[i]);
    std::vector<Tensor> rs;
    for (const auto& r : h.readouts) rs.push_back(gather(r));
    std::vector<float> dscores(static_cast<size_t>(k), 0.0f);
    std::vector<double> sd(static_cast<size_t>(k)), dsd(static_cast<size_t>(k), 0.0);
    if (sum) {
        std::vector<HeadSaved> hs(rs.size());
        Tensor scores(k);
        for (size_t j = 0; j < rs.size(); ++j) {
            Tensor sc = model.head(rs[j].cview(), tile.cview(), &hs[j], tcost.cview());
            for (int64_t i = 0; i < k; ++i) scores[i] += sc[i];
        }
        model.add_prior(scores.span(), prior);
        for (int64_t i = 0; i < k; ++i) sd[static_cast<size_t>(i)] = scores[i];
        last = pairwise_hinge_loss(sd, ts, opt.loss_options.margin, dsd);
        for (int64_t i = 0; i < k; ++i)
            dscores[static_cast<size_t>(i)] = static_cast<float>(dsd[static_cast<size_t>(i)]);
        for (size_t j = 0; j < rs.size(); ++j) model.head_backward(dscores, hs[j], MatrixView{});
    } else {
        Tensor mean(k, rs.empty() ? 0 : rs[0].cols());
        for (const auto& r : rs)
            for (int64_t i = 0; i < r.size(); ++i) mean[i] += r[i] / static_cast<float>(rs.size());
        HeadSaved hs;
        Tensor scores = model.head(mean.cview(), tile.cview(), &hs, tcost.cview());
        model.add_prior(scores.span(), prior);
        for (int64_t i = 0; i < k; ++i) sd[static_cast<size_t>(i)] = scores[i];
        last = pairwise_hinge_loss(sd, ts, opt.loss_options.margin, dsd);
        for (int64_t i = 0; i < k; ++i)
            dscores[static_cast<size_t>(i)] = static_cast<float>(dsd[static_cast<size_t>(i)]);
        model.head_backward(dscores, hs, MatrixView{});
    }
    return last;
}

// Refits member `mem` on g's configs `configs` (runtimes ns); returns the last step's loss (0
// when steps == 0). Throws segrank::Error when the loss is not finite.
double refit_member(CostMember& mem, Graph::Impl& gi, std::span<const int64_t> configs,
                    std::span<const double> runtimes_ns, CostModel::RefitScope scope, int steps,
                    double lr, const std::function<bool()>& stop) {
    using RefitScope = CostModel::RefitScope;
    double last = 0.0;
    Model& model = *mem.lm.model;
    std::unique_ptr<PreparedGraph> local;
    PreparedGraph& pg = *prepared_for(mem.lm, gi, local);
    GstOptions opt = gst_options_from(mem.lm.cfg);
    opt.loss_terms = {LossTerm{LossKind::kPairwiseHinge, 1.0}};
    AdamWConfig acfg;
    acfg.weight_decay = static_cast<float>(mem.lm.cfg.optim.weight_decay);
    AdamW adam(model.params(), acfg);
    std::vector<float> frozen;
    std::vector<uint8_t> head_mask;
    if (scope == RefitScope::kHead) freeze_encoder(model, frozen, head_mask);
    std::vector<int64_t> all(configs.begin(), configs.end());
    std::vector<double> all_t(runtimes_ns.begin(), runtimes_ns.end());
    HeadInputs h;
    if (scope == RefitScope::kHead) h = head_inputs(model, pg, all, opt);
    HistoryTable table(1, 0);
    Rng rng = Rng::derive(opt.seed, 0, stream_id(gi.entry.name), "refit");
    for (int step = 0; step < steps; ++step) {
        if (stop && stop()) break;
        const std::vector<size_t> pick = refit_pick(rng, all.size());
        std::vector<int64_t> cs;
        std::vector<double> ts;
        for (size_t i : pick) {
            cs.push_back(all[i]);
            ts.push_back(all_t[i]);
        }
        model.params().zero_grads();
        if (scope == RefitScope::kAll) {
            GstOptions full = opt;
            full.fresh = static_cast<int32_t>(std::max<int64_t>(1, pg.num_segments()));
            full.keep_prob = 1.0;
            last = gst_train_graph(model, pg, cs, ts, step, 1.0, table, full).loss;
        } else {
            last = head_step(model, h, pick, ts, opt);
        }
        clip_grad_norm(model.params(), mem.lm.cfg.optim.clip_norm);
        adam.step(model.params(), static_cast<float>(lr));
        if (scope == RefitScope::kHead) {
            auto values = model.params().values();
            for (size_t i = 0; i < values.size(); ++i)
                if (!head_mask[i]) values[i] = frozen[i];
        }
    }
    SEGRANK_CHECK(std::isfinite(last), mem.name, ": refit on ", gi.where, " diverged (loss ", last,
                  "); lower the learning rate");
    return last;
}

}  // namespace

double CostModel::refit(const Graph& g, std::span<const int64_t> configs,
                        std::span<const double> runtimes_ns, RefitScope scope, int steps, double lr,
                        const std::function<bool()>& stop) {
    std::lock_guard<std::recursive_mutex> lock(cost_model_mutex());
    Graph::Impl& gi = *g.impl();
    require_member(*impl_, gi);
    SEGRANK_CHECK(configs.size() == runtimes_ns.size(), "refit: ", configs.size(), " configs but ",
                  runtimes_ns.size(), " runtimes");
    SEGRANK_CHECK(steps >= 0 && lr > 0 && std::isfinite(lr),
                  "refit: expected steps >= 0 and lr > 0, got ", steps, " and ", lr);
    for (size_t i = 0; i < configs.size(); ++i) {
        SEGRANK_CHECK(configs[i] >= 0 && configs[i] < g.num_configs(), gi.where, ": refit config ",
                      configs[i], " is out of range (the graph has ", g.num_configs(), " configs)");
        SEGRANK_CHECK(std::isfinite(runtimes_ns[i]) && runtimes_ns[i] > 0, gi.where,
                      ": refit runtime of config ", configs[i], " is ", runtimes_ns[i],
                      " (expected a positive number of ns)");
    }
    if (std::adjacent_find(runtimes_ns.begin(), runtimes_ns.end(), std::not_equal_to<>()) ==
        runtimes_ns.end())
        return 0.0;  // fewer than two distinct runtimes: no pair to rank
    double last = 0.0;
    for (auto& mem : impl_->members) {
        if (mem.lm.task != gi.entry.collection.task) continue;
        last = refit_member(mem, gi, configs, runtimes_ns, scope, steps, lr, stop);
    }
    return last;
}

}  // namespace segrank
