// The per-graph inference cache of score_graph (docs/gst.md#inference-cache): scores with the cache
// on (every segment kept, or a bound that keeps only some) equal the scores with it off bit for
// bit, on graphs of several segments scored in several chunks, streamed from a store or held in
// memory, under both aggregates (embedding_mean scores the config-independent segments too).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "data/graph_store.h"
#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

namespace segrank::test {

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("scores with the inference cache equal the scores without it bit for bit") {
    const std::filesystem::path dir = scratch_dir("gst_inference_cache");
    TinyLayoutSpec spec;
    spec.min_nodes = 400;
    spec.max_nodes = 420;
    spec.configs = 60;
    spec.config_nodes = 3;  // few: some 60-node segments have none (config-independent)
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    for (bool in_memory : {false, true})
        for (SegmentAggregate aggregate :
             {SegmentAggregate::kScoreSum, SegmentAggregate::kEmbeddingMean}) {
            INFO("in_memory=", in_memory, " aggregate=", to_string(aggregate));
            Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
            model.params().initialize(5);
            PrepareOptions prep = tiny_prepare_options(60);
            prep.stream = !in_memory;
            const auto g = prepare_graph(entry_of(store), norm, model, prep);
            REQUIRE(g->num_segments() >= 6);
            REQUIRE(g->kept_segments.empty() == !in_memory);
            const auto dependent =
                std::count(g->segment_dependent.begin(), g->segment_dependent.end(), 1);
            REQUIRE(dependent >= 2);
            REQUIRE(dependent < g->num_segments());
            GstOptions opt = tiny_gst_options();
            opt.aggregate = aggregate;
            const std::vector<float> off =
                score_graph(model, *g, g->configs, /*chunk=*/7, opt, kMaxConfigChunkBytes, 0);
            REQUIRE(off.size() == 60);
            const std::vector<float> on = score_graph(
                model, *g, g->configs, 7, opt, kMaxConfigChunkBytes, kDefaultInferenceCacheBytes);
            CHECK(same_bits(on, off));
            // A bound that holds one or two segments' rows: the others are recomputed per chunk.
            const std::vector<float> partial =
                score_graph(model, *g, g->configs, 7, opt, kMaxConfigChunkBytes, 40000);
            CHECK(same_bits(partial, off));
            // One chunk of every config: the cache is filled and never read, same scores.
            const std::vector<float> one_chunk = score_graph(
                model, *g, g->configs, 60, opt, kMaxConfigChunkBytes, kDefaultInferenceCacheBytes);
            CHECK(same_bits(one_chunk,
                            score_graph(model, *g, g->configs, 60, opt, kMaxConfigChunkBytes, 0)));
        }
}

TEST_CASE("an encode reading cached base rows equals the encode computing them, for any K") {
    const std::filesystem::path dir = scratch_dir("gst_inference_cache_encode");
    TinyLayoutSpec spec;
    spec.min_nodes = 200;
    spec.max_nodes = 220;
    spec.configs = 20;
    spec.config_nodes = 4;
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    model.params().initialize(9);
    const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(0));
    REQUIRE(g->num_segments() == 1);
    const std::vector<int64_t> first = {0, 1, 2}, later = {5, 3, 19, 7, 11};
    SegmentInputBuffers buf;
    const ConfigBatch b1 = load_config_batch(*g, first);
    const EncodeBase base = model.encode_base(make_segment_input(*g, 0, b1, first, buf));
    CHECK(base.plan.has_base(model.config().layers));
    CHECK(base.memory_bytes() > 0);
    const ConfigBatch b2 = load_config_batch(*g, later);
    const SegmentInput in = make_segment_input(*g, 0, b2, later, buf);
    const Tensor cached = model.encode(in, nullptr, false, nullptr, &base);
    const Tensor computed = model.encode(in, nullptr);
    REQUIRE(cached.size() == computed.size());
    CHECK(std::memcmp(cached.data(), computed.data(),
                      static_cast<size_t>(cached.size()) * sizeof(float)) == 0);
    EncodeSaved saved;
    CHECK_THROWS_AS(model.encode(in, &saved, false, nullptr, &base), Error);
}

}  // namespace segrank::test
