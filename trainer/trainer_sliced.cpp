// dist.slice_configs (docs/distributed.md#config-slices): one step's graphs cut into slices of
// their sampled configs, the slices spread over all ranks by longest-processing-time, so a step
// waits for about 1 / kSlicesPerRank of a rank's share instead of for the largest graph.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/graph_memory.h"
#include "gnn/core/check.h"
#include "trainer/trainer.h"

namespace segrank {

namespace {

// One slice this rank trains: the member's sampled configs and the forward half of its slice.
struct SlicePiece {
    size_t member = 0;
    int64_t id = 0;
    const PreparedGraph* graph = nullptr;
    ConfigSet sample;
    int64_t begin = 0, end = 0;  // clamped to the sample's size
    bool first = false;          // the member's slice at position 0: its loss is counted here
    std::unique_ptr<GstGraphStep> half;
};

}  // namespace

double Trainer::sliced_step_work(std::span<const int64_t> global, double scale,
                                 const std::string& oom_settings, std::vector<int64_t>& trained,
                                 std::pair<double, double>& wait) {
    // Sampled-config positions per member: K, at most the pool and the graph's usable configs (a
    // deduplicated graph may sample fewer: the slices are clamped to what was sampled).
    std::vector<int64_t> k(global.size()), offset(global.size() + 1, 0);
    for (size_t i = 0; i < global.size(); ++i) {
        k[i] = step_config_positions(dataset_->train()[static_cast<size_t>(global[i])],
                                     cfg_.sampling.configs, cfg_.sampling.config_pool);
        offset[i + 1] = offset[i] + k[i];
    }
    const std::vector<StepUnit> units = owners_.step_units(global, k);

    // Forward of this rank's slices; their scores into the step's score vector.
    std::vector<float> scores(static_cast<size_t>(offset.back()), 0.0f);
    std::vector<SlicePiece> mine;
    for (const StepUnit& u : units) {
        if (u.rank != comm_.rank()) continue;
        SlicePiece p;
        p.member = static_cast<size_t>(u.member);
        p.id = global[p.member];
        const GraphEntry& e = dataset_->train()[static_cast<size_t>(p.id)];
        naming_graph_on_oom(e.info, "training on", oom_settings, [&] {
            p.graph = &train_graph(p.id);
            p.sample = samplers_.at(p.id)->sample(step_);
            const auto kg = static_cast<int64_t>(p.sample.indices.size());
            SEGRANK_ASSERT(kg <= k[p.member], "config slices: graph ", p.id, " sampled ", kg,
                           " configs, more than the ", k[p.member], " planned");
            p.begin = std::min(u.begin, kg);
            p.end = std::min(u.end, kg);
            p.first = u.begin == 0;
            if (p.end > p.begin) {
                p.half = std::make_unique<GstGraphStep>(
                    *model_, *p.graph,
                    std::span<const int64_t>(p.sample.indices)
                        .subspan(static_cast<size_t>(p.begin),
                                 static_cast<size_t>(p.end - p.begin)),
                    step_, *history_, gst_);
                const std::span<const float> s = p.half->scores();
                std::copy(s.begin(), s.end(), scores.begin() + offset[p.member] + p.begin);
            }
        });
        if (std::find(trained.begin(), trained.end(), p.id) == trained.end())
            trained.push_back(p.id);
        mine.push_back(std::move(p));
    }
    // Every slice's scores on every rank: each position is written by one rank, zeros elsewhere,
    // so the sum is exact.
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    comm_.allreduce_sum(std::span<float>(scores));
    wait = {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
            static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC};

    // Each slice: the loss of its whole graph, the gradient of its own configs.
    double loss = 0.0;
    for (SlicePiece& p : mine) {
        if (p.end <= p.begin && !p.first) continue;  // nothing sampled at these positions
        const std::vector<int64_t>& cfgs = p.sample.indices;
        const size_t kg = cfgs.size();
        std::vector<float> graph_scores(
            scores.begin() + offset[p.member],
            scores.begin() + offset[p.member] + static_cast<int64_t>(kg));
        const std::vector<float> prior = prior_values(*model_, *p.graph, cfgs);
        std::vector<float> dscores(kg, 0.0f);
        const GraphEntry& e = dataset_->train()[static_cast<size_t>(p.id)];
        naming_graph_on_oom(e.info, "training on", oom_settings, [&] {
            const double l = graph_step_loss(*model_, *p.graph, cfgs, p.sample.targets, prior,
                                             graph_scores, dscores, step_, scale, gst_);
            if (p.first) loss += l;
            if (p.end <= p.begin) return;
            const auto b = static_cast<size_t>(p.begin), n = static_cast<size_t>(p.end - p.begin);
            if (!prior.empty())
                model_->prior_backward(std::span<const float>(dscores).subspan(b, n),
                                       std::span<const float>(prior).subspan(b, n));
            p.half->backward(std::span<const float>(dscores).subspan(b, n));
        });
        p.half.reset();  // the saved state goes as soon as its backward is done
    }
    return loss;
}

}  // namespace segrank
