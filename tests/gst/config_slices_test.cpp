// GstGraphStep over slices of a graph's configs (dist.slice_configs,
// docs/distributed.md#config-slices): forward each slice apart, the loss on the joined scores, each
// slice's backward with its part of dscores: the gradients, scores and history rows of
// gst_train_graph on the whole graph.
#include <doctest/doctest.h>

#include <array>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/gst_util.h"

namespace segrank::test {

namespace {

struct SliceRun {
    std::vector<float> grads;
    std::vector<float> scores;
    double loss = 0.0;
};

// The step of `configs` trained in slices cut at `cuts` (positions, ascending), or whole when
// `cuts` is empty, on a fresh model (seed 7) and `table`.
SliceRun run_slices(const OneGraph& o, const Normalizer& norm, const GstOptions& opt,
                    std::span<const int64_t> configs, std::span<const int64_t> cuts,
                    HistoryTable& table, int64_t step, bool prior) {
    ModelConfig mc = tiny_model_config(Task::kLayout, norm.output_dim());
    mc.hwmodel_prior = prior;
    Model model(mc);
    model.params().initialize(7);
    PrepareOptions po = tiny_prepare_options(40);
    auto pg = prepare_graph(o.entry, norm, model, po);
    REQUIRE(pg->num_segments() >= 3);
    if (prior) CHECK(max_abs(pg->prior_z) > 0.01);
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(pg->targets[static_cast<size_t>(c)]);
    model.params().zero_grads();
    SliceRun out;
    if (cuts.empty()) {
        const GraphStepResult r =
            gst_train_graph(model, *pg, configs, targets, step, 0.5, table, opt);
        out.scores = r.scores;
        out.loss = r.loss;
    } else {
        std::vector<int64_t> bounds = {0};
        bounds.insert(bounds.end(), cuts.begin(), cuts.end());
        bounds.push_back(static_cast<int64_t>(configs.size()));
        std::vector<std::unique_ptr<GstGraphStep>> halves;
        std::vector<float> scores;
        for (size_t i = 0; i + 1 < bounds.size(); ++i) {
            halves.push_back(std::make_unique<GstGraphStep>(
                model, *pg,
                configs.subspan(static_cast<size_t>(bounds[i]),
                                static_cast<size_t>(bounds[i + 1] - bounds[i])),
                step, table, opt));
            const auto s = halves.back()->scores();
            scores.insert(scores.end(), s.begin(), s.end());
        }
        const std::vector<float> prior_z = prior_values(model, *pg, configs);
        std::vector<float> dscores(configs.size(), 0.0f);
        out.loss =
            graph_step_loss(model, *pg, configs, targets, prior_z, scores, dscores, step, 0.5, opt);
        model.prior_backward(dscores, prior_z);
        for (size_t i = 0; i < halves.size(); ++i)
            halves[i]->backward(std::span<const float>(dscores).subspan(
                static_cast<size_t>(bounds[i]), static_cast<size_t>(bounds[i + 1] - bounds[i])));
        out.scores = scores;
    }
    out.grads.assign(model.params().grads().begin(), model.params().grads().end());
    return out;
}

}  // namespace

TEST_CASE(
    "a graph's configs trained in slices give the whole graph's loss, scores, gradients and "
    "history rows") {
    // A synthetic HLO graph (costed by hwmodel: the prior's z differ between configs) with 8
    // configurable nodes spread over its segments: several take part, stale sums are read.
    OneGraph o = synth_one_graph("gst_slices", 8);
    const Normalizer norm = fit_normalizer(o.graph);
    const std::vector<int64_t> configs = {3, 0, 17, 5, 14, 9, 21, 23, 12, 8, 19};
    GstOptions opt = tiny_gst_options();
    opt.loss_terms = {LossTerm{LossKind::kListMle, 1.0}};  // smooth: dscores follow the scores
    opt.keep_prob = 0.5;
    for (const bool prior : {false, true}) {
        INFO("hwmodel_prior = ", prior);
        // Two steps: the second reads the rows the first wrote (stale sums from the table).
        HistoryTable whole_table(1, 0), slice_table(1, 0);
        std::vector<float> last_grads;
        for (int64_t step : {2, 3}) {
            const std::vector<int64_t> cuts = {4, 5, 9};  // slices of 4, 1, 4 and 2 configs
            const SliceRun whole = run_slices(o, norm, opt, configs, {}, whole_table, step, prior);
            const SliceRun sliced =
                run_slices(o, norm, opt, configs, cuts, slice_table, step, prior);
            const double gmax = max_abs(whole.grads);
            double l1 = 0;
            for (float g : whole.grads) l1 += std::abs(g);
            MESSAGE("step ", step, ": max |grad diff| ", max_abs_diff(whole.grads, sliced.grads),
                    " (max |grad| ", gmax, ", sum |grad| ", l1, ", loss ", whole.loss, ")");
            CHECK(gmax > 1e-4);
            CHECK(max_abs_diff(whole.grads, sliced.grads) <= 1e-5 * std::max(1.0, gmax));
            CHECK(max_abs_diff(whole.scores, sliced.scores) <=
                  1e-5 * std::max(1.0, max_abs(whole.scores)));
            CHECK(sliced.loss == doctest::Approx(whole.loss).epsilon(1e-6));
            // Step 3 reads what step 2 wrote: its gradients are not step 2's.
            if (!last_grads.empty()) CHECK(max_abs_diff(last_grads, whole.grads) > 1e-6);
            last_grads = whole.grads;
        }
        // The tables hold the same rows: what the next step of either would read.
        const auto rows = [](const HistoryTable& t) {
            const HistoryArrays a = t.export_arrays();
            std::map<std::array<int64_t, 3>, std::pair<int64_t, float>> m;  // key -> step, value
            for (int64_t e = 0; e < a.num_entries(); ++e)
                m[{a.keys[static_cast<size_t>(3 * e)], a.keys[static_cast<size_t>(3 * e + 1)],
                   a.keys[static_cast<size_t>(3 * e + 2)]}] = {a.steps[static_cast<size_t>(e)],
                                                               a.values[static_cast<size_t>(e)]};
            return m;
        };
        const auto a = rows(whole_table), b = rows(slice_table);
        REQUIRE(a.size() == b.size());
        CHECK(!a.empty());
        for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
            CHECK(ia->first == ib->first);
            CHECK(ia->second.first == ib->second.first);
            CHECK(ia->second.second == doctest::Approx(ib->second.second).epsilon(1e-5));
        }
    }
}

}  // namespace segrank::test
