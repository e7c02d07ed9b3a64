// dist.segment_units (docs/distributed.md#segment-units): one step's work cut by GST segment (and
// by config range where a segment is large against a rank's share), the units spread over all ranks
// by longest-processing-time, so a step waits for about 1 / kSlicesPerRank of a rank's share
// instead of for its largest graph, and no unit repeats another's rows.
#include <algorithm>
#include <chrono>
#include <climits>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/graph_memory.h"
#include "gnn/core/check.h"
#include "gst/segment_step.h"
#include "sampling/segment_units.h"
#include "trainer/trainer.h"

namespace segrank {

namespace {

// One member of the step as every rank sees it.
struct StepMember {
    int64_t id = 0;
    const PreparedGraph* graph = nullptr;
    ConfigSet sample;
    SegmentStepPlan plan;
    size_t offset = 0;  // of its [fresh sums K x width, stale sums K x width] in the exchange
    int32_t loss_rank = 0;
    // This rank's config range [first, last) of the member's sampled configs and their rows,
    // read once for all its pieces of the member.
    int64_t first = 0, last = 0;
    ConfigBatch rows;
};

// A fresh unit this rank trains.
struct FreshPiece {
    size_t member = 0;
    int64_t begin = 0, end = 0;
    std::unique_ptr<FreshSegmentSlice> slice;
};

// What the helpers of one step share: the model, the history replica, the GST options, the step,
// the training entries (for out-of-memory messages) and this rank.
struct StepContext {
    Model& model;
    HistoryTable& table;
    const GstOptions& opt;
    int64_t step;
    const std::vector<GraphEntry>& entries;
    const std::string& oom_settings;
    int me;
};

// This rank's pieces: the config rows of the range it holds of each member, read once, then every
// piece's values added into the member's rows of `sums`; `holds` marks the members it touched.
void forward_pieces(const StepContext& cx, std::span<const SegmentUnit> units,
                    std::span<const SegmentWork> work, std::span<const int64_t> k,
                    std::vector<StepMember>& mem, std::vector<float>& sums,
                    std::vector<FreshPiece>& fresh, std::vector<char>& holds) {
    const int me = cx.me;
    // This rank's config range of each member, its rows read once.
    for (StepMember& m : mem) {
        m.first = INT64_MAX;
        m.last = INT64_MIN;
    }
    for (const SegmentUnit& u : units) {
        if (u.rank != me || u.end <= u.begin) continue;
        StepMember& m = mem[static_cast<size_t>(work[static_cast<size_t>(u.work)].member)];
        m.first = std::min(m.first, u.begin);
        m.last = std::max(m.last, u.end);
    }
    for (StepMember& m : mem) {
        if (m.first >= m.last) continue;
        const GraphEntry& e = cx.entries[static_cast<size_t>(m.id)];
        naming_graph_on_oom(e.info, "training on", cx.oom_settings, [&] {
            load_config_batch(
                *m.graph,
                std::span<const int64_t>(m.sample.indices)
                    .subspan(static_cast<size_t>(m.first), static_cast<size_t>(m.last - m.first)),
                m.rows);
        });
    }

    // This rank's units: their values summed into the members' rows of the exchange.
    for (const SegmentUnit& u : units) {
        if (u.rank != me || u.end <= u.begin) continue;
        const SegmentWork& w = work[static_cast<size_t>(u.work)];
        const auto i = static_cast<size_t>(w.member);
        StepMember& m = mem[i];
        const std::span<const int64_t> cfgs =
            std::span<const int64_t>(m.sample.indices)
                .subspan(static_cast<size_t>(u.begin), static_cast<size_t>(u.end - u.begin));
        const int64_t width = m.plan.width;
        const size_t at =
            m.offset + static_cast<size_t>((w.fresh ? 0 : k[i]) * width + u.begin * width);
        const GraphEntry& e = cx.entries[static_cast<size_t>(m.id)];
        naming_graph_on_oom(e.info, "training on", cx.oom_settings, [&] {
            Tensor values;
            const Tensor* v = &values;
            if (w.fresh) {
                fresh.push_back(
                    {i, u.begin, u.end,
                     std::make_unique<FreshSegmentSlice>(cx.model, *m.graph, m.plan, w.segment,
                                                         m.rows, cfgs, cx.step, cx.opt)});
                v = &fresh.back().slice->value();
            } else {
                values = stale_segment_values(cx.model, *m.graph, m.plan, w.segment, m.rows, cfgs,
                                              cx.step, cx.table, cx.opt);
            }
            for (int64_t j = 0; j < v->size(); ++j) sums[at + static_cast<size_t>(j)] += (*v)[j];
        });
        holds[i] = 1;
    }
}

// Each member with a fresh piece here or whose loss this rank counts: its scores (the summed values
// combined), its loss on all K and dscores; then this rank's fresh pieces' backward and history
// writes. Returns the losses this rank counts.
double losses_and_backward(const StepContext& cx, std::span<const int64_t> k,
                           std::vector<StepMember>& mem, std::span<const float> sums,
                           std::vector<FreshPiece>& fresh, double scale) {
    const int me = cx.me;
    double loss = 0.0;
    std::vector<std::vector<float>> dscores(mem.size());
    for (size_t i = 0; i < mem.size(); ++i) {
        StepMember& m = mem[i];
        const bool has_fresh = std::any_of(fresh.begin(), fresh.end(),
                                           [&](const FreshPiece& p) { return p.member == i; });
        const bool counts = m.loss_rank == me;
        if (!has_fresh && !counts) continue;
        if (m.plan.active.empty() && !cx.model.has_prior()) continue;  // nothing is trained
        const size_t kg = static_cast<size_t>(k[i]);
        std::vector<float> scores(kg, 0.0f);
        if (!m.plan.active.empty()) {
            const auto width = static_cast<size_t>(m.plan.width);
            const float* fs = sums.data() + m.offset;
            const float* ss = fs + kg * width;
            const bool stale = !m.plan.choice.stale_kept.empty();
            for (size_t c = 0; c < kg; ++c)  // score_sum: width 1, as combine_segments_forward
                scores[c] = static_cast<float>(
                    m.plan.weights.fresh * static_cast<double>(fs[c]) +
                    (stale ? m.plan.weights.stale * static_cast<double>(ss[c]) : 0.0));
        }
        const std::vector<float> prior = prior_values(cx.model, *m.graph, m.sample.indices);
        dscores[i].assign(kg, 0.0f);
        const GraphEntry& e = cx.entries[static_cast<size_t>(m.id)];
        naming_graph_on_oom(e.info, "training on", cx.oom_settings, [&] {
            const double l = graph_step_loss(cx.model, *m.graph, m.sample.indices, m.sample.targets,
                                             prior, scores, dscores[i], cx.step, scale, cx.opt);
            if (!counts) return;
            loss += l;
            cx.model.prior_backward(dscores[i], prior);
        });
    }
    // The backward of this rank's fresh units, then their values into the history.
    for (FreshPiece& p : fresh) {
        const StepMember& m = mem[p.member];
        const GraphEntry& e = cx.entries[static_cast<size_t>(m.id)];
        naming_graph_on_oom(e.info, "training on", cx.oom_settings, [&] {
            Tensor dvalue(p.end - p.begin, 1);
            for (int64_t c = p.begin; c < p.end; ++c)
                dvalue[c - p.begin] =
                    m.plan.weights.fresh * dscores[p.member][static_cast<size_t>(c)];
            p.slice->backward(dvalue.cview());
            p.slice->write(cx.table);
        });
        p.slice.reset();  // the saved state goes as soon as its backward is done
    }
    return loss;
}

}  // namespace

double Trainer::segment_step_work(std::span<const int64_t> global, double scale,
                                  const std::string& oom_settings, std::vector<int64_t>& trained,
                                  std::pair<double, double>& wait) {
    const int me = comm_.rank();
    // Every rank: each member's graph, sampled configs and segment plan, and the work items.
    std::vector<StepMember> mem(global.size());
    std::vector<int64_t> k(global.size());
    std::vector<SegmentWork> work;
    size_t floats = 0;
    for (size_t i = 0; i < global.size(); ++i) {
        StepMember& m = mem[i];
        m.id = global[i];
        const GraphEntry& e = dataset_->train()[static_cast<size_t>(m.id)];
        naming_graph_on_oom(e.info, "training on", oom_settings, [&] {
            m.graph = &train_graph(m.id);
            m.sample = samplers_.at(m.id)->sample(step_);
            m.plan = plan_segment_step(*model_, *m.graph, step_, gst_);
        });
        k[i] = static_cast<int64_t>(m.sample.indices.size());
        m.offset = floats;
        floats += static_cast<size_t>(2 * k[i] * m.plan.width);
        const auto nodes = [&](int32_t pos) {
            return static_cast<int64_t>(
                m.graph->segment_table.num_nodes(m.plan.active[static_cast<size_t>(pos)]));
        };
        const auto member = static_cast<int64_t>(i);
        for (int32_t pos : m.plan.choice.fresh) work.push_back({member, pos, nodes(pos), true});
        // A kept segment read as 0 when absent (history_init = "zero") costs its lookups only.
        const bool recompute = gst_.history_init == HistoryInit::kFresh;
        for (int32_t pos : m.plan.choice.stale_kept)
            work.push_back({member, pos, recompute ? nodes(pos) : 0, false});
        m.loss_rank = static_cast<int32_t>(i % static_cast<size_t>(comm_.size()));
    }
    const std::vector<SegmentUnit> units = segment_units(work, k, comm_.size());
    // A member's loss (and prior gradient) is counted by the rank of its first fresh unit.
    for (const SegmentUnit& u : units) {
        const SegmentWork& w = work[static_cast<size_t>(u.work)];
        StepMember& m = mem[static_cast<size_t>(w.member)];
        if (w.fresh && u.begin == 0 && w.segment == m.plan.choice.fresh.front())
            m.loss_rank = u.rank;
    }

    std::vector<float> sums(floats, 0.0f);
    std::vector<FreshPiece> fresh;
    std::vector<char> holds(global.size(), 0);
    const StepContext cx{*model_, *history_, gst_, step_, dataset_->train(), oom_settings, me};
    forward_pieces(cx, units, work, k, mem, sums, fresh, holds);
    for (size_t i = 0; i < global.size(); ++i)
        if (holds[i] && std::find(trained.begin(), trained.end(), mem[i].id) == trained.end())
            trained.push_back(mem[i].id);
    // Every member's fresh and stale sums on every rank (each unit's rows come from one rank).
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    comm_.allreduce_sum(std::span<float>(sums));
    wait = {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
            static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC};

    return losses_and_backward(cx, k, mem, sums, fresh, scale);
}

}  // namespace segrank
