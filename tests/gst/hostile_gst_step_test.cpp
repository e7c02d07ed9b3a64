// Hostile training steps (ctest label `hostile`): a step whose loss is not finite names the
// settings its caller gave as the hint (GstOptions::nonfinite_hint), so a user sees which keys
// scale the loss.
#include <doctest/doctest.h>

#include <limits>
#include <string>

#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/gst_util.h"

namespace segrank::test {

TEST_SUITE("hostile") {
    TEST_CASE("a non-finite loss at a training step names the graph, the configs and the hint") {
        OneGraph o = one_graph("gst_nonfinite", TinyLayoutSpec{});
        const Normalizer norm = fit_normalizer(o.graph);
        Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
        model.params().initialize(7);
        auto pg = prepare_graph(o.entry, norm, model, tiny_prepare_options(0));
        // Parameters that overflowed at an earlier step (an lr far too high).
        for (float& v : model.params().values()) v = std::numeric_limits<float>::infinity();
        const std::vector<int64_t> configs = {3, 0, 17};
        std::vector<double> targets;
        for (int64_t c : configs) targets.push_back(pg->targets[static_cast<size_t>(c)]);
        GstOptions opt = tiny_gst_options();
        opt.nonfinite_hint = " (the settings that scale the loss: optim.lr = 0.5)";
        HistoryTable table(1, 0);
        model.params().zero_grads();
        CHECK_THROWS_WITH_AS(
            gst_train_graph(model, *pg, configs, targets, /*step=*/4, 0.5, table, opt),
            doctest::Contains("non-finite loss at step 4 on graph 'tiny_train_0'"), Error);
        CHECK_THROWS_WITH_AS(
            gst_train_graph(model, *pg, configs, targets, /*step=*/4, 0.5, table, opt),
            doctest::Contains("with configs [3,0,17] (the settings that scale the loss: "
                              "optim.lr = 0.5)"),
            Error);
    }
}

}  // namespace segrank::test
