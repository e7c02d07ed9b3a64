// A RunConfig that trains on the tiny layout collection of tests/support/tiny_layout_data.h in
// seconds (the collection builders are included with it).
#pragma once
#include <filesystem>

#include "tests/support/tiny_layout_data.h"
#include "trainer/config.h"

namespace segrank::test {

/// A small, fast RunConfig on the tiny collection: config holdout (25%), H = 16, 2 layers,
/// 2 graphs x 16 configs per step, pairwise hinge, no evaluation during run(), JSONL lines every
/// 1000 steps.
inline RunConfig tiny_run_config(const std::filesystem::path& data_root,
                                 const std::filesystem::path& run_dir, int64_t steps) {
    RunConfig c;
    c.data.root = data_root.string();
    c.data.collections = {"layout:xla:random"};
    c.data.holdout = cfg::Holdout::kConfigs;
    c.data.holdout_fraction = 0.25;
    c.model.hidden = 16;
    c.model.layers = 2;
    c.model.opcode_dim = 8;
    c.model.config_dim = 8;
    c.segments.max_nodes = 0;
    c.sampling.batch_graphs = 2;
    c.sampling.configs = 16;
    c.loss.terms = {LossTerm{LossKind::kPairwiseHinge, 1.0}};
    c.optim.lr = 0.005;
    c.optim.warmup_steps = 3;
    c.train.steps = steps;
    c.train.eval_every = 0;
    c.train.log_every = 1000;
    c.train.run_dir = run_dir.string();
    c.train.progress = false;
    c.eval.metric = cfg::EvalMetric::kKendall;
    validate_config(c);
    return c;
}

}  // namespace segrank::test
