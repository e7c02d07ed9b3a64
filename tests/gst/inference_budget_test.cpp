// The inference memory budget (docs/gst.md#memory-budget): its split, the chunk sizes derived from
// it, the scores at a tiny budget against the default one, and budgets refused naming the keys.
#include "gst/inference_budget.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

namespace segrank::test {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Graphs of 400-420 nodes with 60 configs and 3 configurable nodes, cut into 60-node segments.
TinyLayoutSpec budget_spec() {
    TinyLayoutSpec spec;
    spec.min_nodes = 400;
    spec.max_nodes = 420;
    spec.configs = 60;
    spec.config_nodes = 3;
    return spec;
}

}  // namespace

TEST_CASE("the default eval.memory_mb splits into the sizes inference used before the budget") {
    const InferenceBudget b = inference_budget(kDefaultInferenceMemoryMb, -1);
    CHECK(b.cache_bytes == kDefaultInferenceCacheBytes);
    CHECK(b.state_bytes == kDedupeStateBytes);
    CHECK(b.dedupe_rows_bytes == kDedupeChunkBytesFactor * kMaxConfigChunkBytes);
    CHECK(b.dense_rows_bytes == kMaxConfigChunkBytes);
    CHECK(b.probe_configs == kDedupeProbeConfigs);
    // The cache default of earlier checkpoints (eval.cache_mb = 256) is the same split.
    const InferenceBudget old = inference_budget(1024, 256);
    CHECK(old.cache_bytes == b.cache_bytes);
    CHECK(old.state_bytes == b.state_bytes);
    CHECK(old.dedupe_rows_bytes == b.dedupe_rows_bytes);
}

TEST_CASE("every part of the inference budget fits it, and an explicit cache shifts the rest") {
    for (int64_t mb : {int64_t{16}, int64_t{64}, int64_t{300}, int64_t{1024}, int64_t{1} << 20})
        for (int64_t cache : {int64_t{-1}, int64_t{0}, mb / 2}) {
            INFO("memory_mb=", mb, " cache_mb=", cache);
            const InferenceBudget b = inference_budget(mb, cache);
            CHECK(b.cache_bytes + b.state_bytes + b.dedupe_rows_bytes <= mb * kMiB);
            CHECK(b.dense_rows_bytes <= b.dedupe_rows_bytes);
            CHECK(b.cache_bytes == (cache < 0 ? mb * kMiB / 4 : cache * kMiB));
            CHECK(b.probe_configs >= 1);
            CHECK(b.probe_configs * (int64_t{512} << 10) <= std::max(b.state_bytes, int64_t{1}));
        }
    // The smallest budget: a 16-config probe chunk, 8 MiB of chunk state.
    const InferenceBudget small = inference_budget(16, -1);
    CHECK(small.probe_configs == 16);
    CHECK(small.state_bytes == 8 * kMiB);
    // Later deduplicated chunks keep their class tables and distinct rows within the state share:
    // 900 dep rows per config, 10 distinct rows per config in the largest layer, H = 128; never
    // below the probe's size (the probe already held that many).
    const int64_t k =
        dedupe_chunk_after_probe(16384, 900, 10.0, 128, small.state_bytes, small.probe_configs);
    CHECK(k * (kDedupeBytesPerDepRow * 900 + kDedupeBytesPerUniqueUnit * 128 * 10) <=
          small.state_bytes);
    CHECK(k > small.probe_configs);
    CHECK(dedupe_chunk_after_probe(16384, 900, 300.0, 128, small.state_bytes,
                                   small.probe_configs) == small.probe_configs);
    // More distinct rows, smaller chunks; no distinct rows counted: the class tables alone.
    const InferenceBudget def = inference_budget(kDefaultInferenceMemoryMb, -1);
    CHECK(dedupe_chunk_after_probe(16384, 900, 300.0, 128, def.state_bytes, def.probe_configs) <
          dedupe_chunk_after_probe(16384, 900, 3.0, 128, def.state_bytes, def.probe_configs));
    CHECK(dedupe_chunk_after_probe(16384, 900, 0.0, 128, kDedupeStateBytes, kDedupeProbeConfigs) ==
          dedupe_chunk_after_probe(16384, 900));
}

TEST_CASE(
    "inference_chunk takes the config rows, chunk state and probe size of the budget, and scores "
    "at the smallest budget equal those at the default budget") {
    const std::filesystem::path dir = scratch_dir("gst_inference_budget");
    const GraphStore store(write_tiny_layout_store(dir, budget_spec()),
                           LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    model.params().initialize(5);
    const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(60));
    REQUIRE(g->num_segments() >= 6);
    const InferenceBudget def = inference_budget(kDefaultInferenceMemoryMb, -1);
    const InferenceBudget tiny = inference_budget(kMinInferenceMemoryMb, -1);
    for (bool dedupe : {true, false}) {
        INFO("dedupe_rows=", dedupe);
        GstOptions opt = tiny_gst_options();
        opt.dedupe_rows = dedupe;
        const InferenceChunk dc = inference_chunk(model, opt, 256, 16384, def);
        const InferenceChunk tc = inference_chunk(model, opt, 256, 16384, tiny);
        CHECK(dc.configs == (dedupe ? 16384 : 256));
        CHECK(dc.max_bytes == (dedupe ? def.dedupe_rows_bytes : def.dense_rows_bytes));
        CHECK(tc.max_bytes == (dedupe ? tiny.dedupe_rows_bytes : tiny.dense_rows_bytes));
        CHECK(tc.state_bytes == tiny.state_bytes);
        CHECK(tc.probe_configs == 16);  // the 60 configs: a 16-config probe, then one more chunk
        const std::vector<float> at_default =
            score_graph(model, *g, g->configs, dc, opt, def.cache_bytes);
        // The default budget scores as before it existed (same chunks), bit for bit.
        CHECK(same_bits(at_default, score_graph(model, *g, g->configs, dc.configs, opt,
                                                dc.max_bytes, kDefaultInferenceCacheBytes)));
        const std::vector<float> at_tiny =
            score_graph(model, *g, g->configs, tc, opt, tiny.cache_bytes);
        REQUIRE(at_tiny.size() == at_default.size());
        for (size_t i = 0; i < at_tiny.size(); ++i)
            CHECK(std::abs(at_tiny[i] - at_default[i]) <=
                  1e-5f * std::max(1.0f, std::abs(at_default[i])));
    }
}

TEST_SUITE("hostile") {
    TEST_CASE(
        "an inference budget out of range or a cache over half of it is refused naming the "
        "keys") {
        CHECK_THROWS_WITH_AS(inference_budget(8, -1),
                             doctest::Contains("eval.memory_mb: expected 16 to 1048576"), Error);
        CHECK_THROWS_WITH_AS(inference_budget(int64_t{1} << 21, -1),
                             doctest::Contains("eval.memory_mb: expected 16 to 1048576"), Error);
        CHECK_THROWS_WITH_AS(inference_budget(1024, -2), doctest::Contains("eval.cache_mb"), Error);
        CHECK_THROWS_WITH_AS(inference_budget(256, 200, "--memory-mb", "--cache-mb"),
                             doctest::Contains("--cache-mb = 200 does not fit --memory-mb = 256"),
                             Error);
        CHECK_NOTHROW(inference_budget(256, 128));
    }
}

}  // namespace segrank::test
