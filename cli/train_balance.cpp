// `segrank train --balance-model WORLDS` (docs/architecture.md#distribution).
#include "cli/train_balance.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "gnn/core/check.h"
#include "sampling/batch_sampler.h"
#include "sampling/ownership.h"
#include "sampling/segment_units.h"
#include "sampling/step_balance.h"
#include "trainer/dataset.h"
#include "trainer/trainer.h"
#include "util/json.h"
#include "util/user_input.h"

namespace segrank::cli {

std::vector<int> parse_world_sizes(const std::string& list) {
    std::vector<int> worlds;
    std::istringstream is(list);
    for (std::string item; std::getline(is, item, ',');) {
        const bool digits = !item.empty() && item.size() <= 6 &&
                            item.find_first_not_of("0123456789") == std::string::npos;
        const int w = digits ? std::stoi(item) : 0;
        SEGRANK_CHECK(w >= 1 && w <= 65536, "--balance-model ", echo_value(list), ": '",
                      echo_value(item),
                      "' is no world size (expected integers in [1, 65536] "
                      "separated by commas, e.g. 2,4,8,16,64)");
        SEGRANK_CHECK(std::find(worlds.begin(), worlds.end(), w) == worlds.end(),
                      "--balance-model ", echo_value(list), ": world size ", w, " is listed twice");
        worlds.push_back(w);
    }
    SEGRANK_CHECK(!worlds.empty(), "--balance-model: no world size given (e.g. 2,4,8,16,64)");
    return worlds;
}

int print_balance_model(const RunConfig& cfg, const std::vector<int>& worlds, int64_t from) {
    const Dataset data(cfg.data, static_cast<uint64_t>(cfg.sampling.seed));
    std::vector<int64_t> ids;
    for (const auto& e : data.train()) ids.push_back(e.id);
    const BatchSampler batches(ids, cfg.sampling.batch_graphs,
                               static_cast<uint64_t>(cfg.sampling.seed));
    // The run's step count as Trainer::plan_steps computes it.
    int64_t steps = cfg.train.steps;
    if (cfg.train.epochs > 0) {
        const int64_t by_epochs = cfg.train.epochs * batches.steps_per_epoch();
        steps = steps > 0 ? std::min(steps, by_epochs) : by_epochs;
    }
    SEGRANK_CHECK(from >= 0 && from < steps, "--balance-from ", from, ": expected a step in [0, ",
                  steps, ") (the run has ", steps, " steps: train.steps = ", cfg.train.steps,
                  ", train.epochs = ", cfg.train.epochs, ")");
    const std::vector<int64_t> visit = train_member_costs(data.train(), cfg.sampling.configs);
    const GstVisitShape shape = gst_visit_shape(cfg);
    const std::vector<int64_t> work = step_member_costs(data.train(), cfg.sampling.configs, shape);
    Json modes = Json::object();
    for (const auto& [mode, name] : enum_names(OwnershipMode{})) {
        Json by_world = Json::object();
        for (int w : worlds)
            by_world[std::to_string(w)] =
                predict_step_balance(batches, training_ownership(mode, visit, work, w), work, from,
                                     steps)
                    .efficiency();
        modes[std::string(name)] = by_world;
    }
    // per_step with dist.slice_configs: the members cut into config slices over the ranks.
    const std::vector<int64_t> positions =
        step_config_positions(data.train(), cfg.sampling.configs, cfg.sampling.config_pool);
    Json sliced = Json::object(), scaling = Json::object(), sliced_scaling = Json::object();
    for (int w : worlds) {
        const StepBalance b = predict_sliced_step_balance(
            batches, training_ownership(OwnershipMode::kPerStep, visit, work, w), work, positions,
            from, steps);
        sliced[std::to_string(w)] = b.efficiency();
        sliced_scaling[std::to_string(w)] = b.scaling_efficiency();
    }
    modes["per_step_slice_configs"] = sliced;
    // Segment units: each step's fresh and recomputed stale segments over the ranks.
    std::vector<int64_t> nodes(data.train().size(), 0);
    for (const auto& e : data.train()) nodes.at(static_cast<size_t>(e.id)) = e.info.num_nodes;
    Json segs = Json::object(), seg_scaling = Json::object();
    for (int w : worlds) {
        const StepBalance b = predict_segment_step_balance(
            batches, w, nodes, positions, shape, cfg.segments.keep_prob,
            static_cast<uint64_t>(cfg.sampling.seed), from, steps);
        segs[std::to_string(w)] = b.efficiency();
        seg_scaling[std::to_string(w)] = b.scaling_efficiency();
    }
    modes["per_step_segment_units"] = segs;
    // Whole graphs repeat no work: their scaling efficiency is their step efficiency.
    for (const auto& [name, by_world] : modes.items())
        if (name != "per_step_slice_configs" && name != "per_step_segment_units")
            scaling[name] = by_world;
    scaling["per_step_slice_configs"] = sliced_scaling;
    scaling["per_step_segment_units"] = seg_scaling;
    const Json out = {
        {"model",
         str("step efficiency = sum over steps of mean rank work / sum of the busiest rank's; "
             "work per member = K' x (3 f + ",
             shape.stale_forward, " x (nodes - f)), f = min(nodes, ", shape.fresh, " x ",
             shape.max_nodes, ") fresh nodes, K' = min(sampling.configs, usable configs)")},
        {"train_graphs", static_cast<int64_t>(ids.size())},
        {"batch_graphs", batches.batch_graphs()},
        {"steps", {from, steps}},
        {"efficiency", modes},
        {"scaling_efficiency_model",
         str("sum over steps of the step's work as whole graphs / world / sum of the busiest "
             "rank's; a config slice costs its share of the member's work plus ",
             kSliceFixedShare,
             " of it repeated per slice; a segment unit of len configs costs nodes x (",
             kSegmentBaseRows, " + len) (", kFreshPassCost, " x len fresh) plus ", kRowReadShare,
             " of its member's visit x the config range a rank's units of it span / K (rows "
             "read)")},
        {"scaling_efficiency", scaling}};
    std::printf("%s\n", dump_json(out).c_str());
    return 0;
}

}  // namespace segrank::cli
