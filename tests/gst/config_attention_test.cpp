// What a config's inference score depends on under model.config_attention
// (docs/model.md#cross-config-attention): the configs of its chunk of eval.chunk_configs. Scoring
// is deterministic for a fixed chunking, a chunk of one config is that config alone, and the same
// config scored in two different chunks gets different scores; without the option the chunking
// does not matter. Test-time averaging over config orders (eval.tta_orders).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "data/graph_store.h"
#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_graphs.h"
#include "tests/support/tiny_layout_data.h"

namespace segrank::test {

TEST_CASE(
    "with config attention a config's score depends on the configs of its inference chunk, and "
    "only on them") {
    const std::filesystem::path dir = scratch_dir("gst_config_attention_chunks");
    TinyLayoutSpec spec;
    spec.min_nodes = 300;
    spec.max_nodes = 320;
    spec.configs = 30;
    spec.config_nodes = 4;
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    const GstOptions opt = tiny_gst_options();
    for (bool attention : {true, false}) {
        INFO("config_attention=", attention);
        ModelConfig mc = tiny_model_config(Task::kLayout, norm.output_dim());
        mc.config_attention = attention;
        mc.config_attention_dim = 4;
        mc.validate();
        Model model(mc);
        model.params().initialize(3);
        randomize_attention_output(model.params(), 4);
        const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(100));
        REQUIRE(g->num_segments() >= 3);
        const std::vector<int64_t>& all = g->configs;
        REQUIRE(all.size() == 30);
        const std::vector<float> whole = score_graph(model, *g, all, /*chunk=*/30, opt);
        const std::vector<float> again = score_graph(model, *g, all, 30, opt);
        CHECK(std::memcmp(whole.data(), again.data(), whole.size() * sizeof(float)) == 0);
        const std::vector<float> sevens = score_graph(model, *g, all, 7, opt);
        const std::vector<float> ones = score_graph(model, *g, all, 1, opt);
        int differ = 0;
        for (size_t i = 0; i < all.size(); ++i) {
            // A chunk of one: the config alone.
            const std::vector<int64_t> alone = {all[i]};
            CHECK(score_graph(model, *g, alone, 5, opt)[0] == ones[i]);
            const double tol = 1e-5 * std::max(1.0f, std::abs(whole[i]));
            differ += std::abs(sevens[i] - whole[i]) > tol;
            if (!attention) {
                CHECK(std::abs(sevens[i] - whole[i]) <= tol);
                CHECK(std::abs(ones[i] - whole[i]) <= tol);
            }
        }
        if (attention) CHECK(differ >= 20);  // nearly every config: its chunk-mates changed
        // Config 0 with {1, 2} and with {3, 4}; and with {1, 2} again in another order.
        const std::vector<int64_t> a = {all[0], all[1], all[2]}, b = {all[0], all[3], all[4]},
                                   c = {all[2], all[0], all[1]};
        const float sa = score_graph(model, *g, a, 3, opt)[0];
        const float sb = score_graph(model, *g, b, 3, opt)[0];
        const float sc = score_graph(model, *g, c, 3, opt)[1];
        CHECK(sc == doctest::Approx(sa).epsilon(1e-5));
        if (attention)
            CHECK(std::abs(sa - sb) > 1e-5 * std::max(1.0f, std::abs(sa)));
        else
            CHECK(sb == doctest::Approx(sa).epsilon(1e-5));
    }
}

TEST_CASE(
    "test-time averaging scores each config in several fixed orders and averages, only with config "
    "attention") {
    const std::filesystem::path dir = scratch_dir("gst_config_attention_tta");
    TinyLayoutSpec spec;
    spec.min_nodes = 200;
    spec.max_nodes = 220;
    spec.configs = 24;
    spec.config_nodes = 3;
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
        return a.size() == b.size() &&
               std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    for (bool attention : {true, false}) {
        INFO("config_attention=", attention);
        ModelConfig mc = tiny_model_config(Task::kLayout, norm.output_dim());
        mc.config_attention = attention;
        mc.validate();
        Model model(mc);
        model.params().initialize(7);
        randomize_attention_output(model.params(), 8);
        const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(80));
        const std::vector<int64_t>& all = g->configs;
        GstOptions one = tiny_gst_options(), four = one;
        four.tta_orders = 4;
        const std::vector<float> s1 = score_graph(model, *g, all, /*chunk=*/5, one);
        const std::vector<float> s4 = score_graph(model, *g, all, 5, four);
        CHECK(same_bits(s4, score_graph(model, *g, all, 5, four)));  // fixed seed: deterministic
        if (!attention) {
            CHECK(same_bits(s4, s1));  // ignored without the option
            continue;
        }
        int differ = 0;
        for (size_t i = 0; i < all.size(); ++i)
            differ += std::abs(s4[i] - s1[i]) > 1e-5 * std::max(1.0f, std::abs(s1[i]));
        CHECK(differ >= 12);  // other chunk-mates in orders 1..3
        // Chunks of one config: every order scores each config alone, the mean is that score.
        CHECK(same_bits(score_graph(model, *g, all, 1, four), score_graph(model, *g, all, 1, one)));
        // One chunk holding every config: the orders differ only by rounding.
        const std::vector<float> w1 = score_graph(model, *g, all, 24, one);
        const std::vector<float> w4 = score_graph(model, *g, all, 24, four);
        for (size_t i = 0; i < all.size(); ++i)
            CHECK(w4[i] == doctest::Approx(w1[i]).epsilon(1e-5));
    }
}

}  // namespace segrank::test
