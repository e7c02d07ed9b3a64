// The per-graph inference cache of score_graph (docs/gst.md#inference-cache): scores with the cache
// on (every segment kept, or a bound that keeps only some) equal the scores with it off bit for
// bit, on graphs of several segments scored in several chunks, streamed from a store or held in
// memory, under both aggregates (embedding_mean scores the config-independent segments too), also
// with model.config_attention (whose base rows the cache holds after their attention); and with
// row deduplication (eval.dedupe_rows) the scores equal the dense path's to 1e-5 in every setting.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "data/graph_store.h"
#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_graphs.h"
#include "tests/support/tiny_layout_data.h"
#include "tests/support/tiny_tile_data.h"

namespace segrank::test {

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The model options whose config-independent state the cache holds differently: none and
// model.config_attention (base rows after their attention); and model.readout = "mean" (readout
// rows [K, H], so embedding_mean combines H-wide values).
struct CacheOption {
    const char* name;
    bool config_attention = false;
    Readout readout = Readout::kMeanMax;  // not a cache option: the width of the readout rows
};
constexpr CacheOption kCacheOptions[] = {
    {"defaults"}, {"config_attention", true}, {"readout=mean", false, Readout::kMean}};

ModelConfig cache_model_config(int64_t feat_dim, const CacheOption& o) {
    ModelConfig mc = tiny_model_config(Task::kLayout, feat_dim);
    mc.config_attention = o.config_attention;
    mc.config_attention_dim = 4;
    mc.readout = o.readout;
    mc.validate();
    return mc;
}

// Parameters drawn with `seed`; with config_attention also its output weights (zero at first).
void init_params(Model& model, uint64_t seed) {
    model.params().initialize(seed);
    randomize_attention_output(model.params(), seed + 1);
}

// Graphs of 400-420 nodes with 60 configs, scored in 60-node segments: few configurable nodes (3),
// so some segments have none (config-independent).
TinyLayoutSpec segmented_spec() {
    TinyLayoutSpec spec;
    spec.min_nodes = 400;
    spec.max_nodes = 420;
    spec.configs = 60;
    spec.config_nodes = 3;
    return spec;
}

}  // namespace

TEST_CASE("scores with the inference cache equal the scores without it bit for bit") {
    const std::filesystem::path dir = scratch_dir("gst_inference_cache");
    const GraphStore store(write_tiny_layout_store(dir, segmented_spec()),
                           LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    for (const CacheOption& option : kCacheOptions)
        for (bool in_memory : {false, true})
            for (SegmentAggregate aggregate :
                 {SegmentAggregate::kScoreSum, SegmentAggregate::kEmbeddingMean}) {
                INFO("option=", std::string(option.name), " in_memory=", in_memory,
                     " aggregate=", to_string(aggregate));
                Model model(cache_model_config(norm.output_dim(), option));
                init_params(model, 5);
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
                const std::vector<float> on =
                    score_graph(model, *g, g->configs, 7, opt, kMaxConfigChunkBytes,
                                kDefaultInferenceCacheBytes);
                CHECK(same_bits(on, off));
                // A bound that holds one or two segments' rows: the others are recomputed per
                // chunk.
                const std::vector<float> partial =
                    score_graph(model, *g, g->configs, 7, opt, kMaxConfigChunkBytes, 40000);
                CHECK(same_bits(partial, off));
                // One chunk of every config: the cache is filled and never read, same scores.
                const std::vector<float> one_chunk =
                    score_graph(model, *g, g->configs, 60, opt, kMaxConfigChunkBytes,
                                kDefaultInferenceCacheBytes);
                CHECK(same_bits(one_chunk, score_graph(model, *g, g->configs, 60, opt,
                                                       kMaxConfigChunkBytes, 0)));
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
    for (const CacheOption& option : kCacheOptions) {
        INFO("option=", std::string(option.name));
        Model model(cache_model_config(norm.output_dim(), option));
        init_params(model, 9);
        const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(0));
        REQUIRE(g->num_segments() == 1);
        const std::vector<int64_t> first = {0, 1, 2}, later = {5, 3, 19, 7, 11};
        SegmentInputBuffers buf;
        const ConfigBatch b1 = load_config_batch(*g, first);
        const SegmentInput in1 = make_segment_input(*g, 0, b1, first, buf);
        const EncodeBase base = model.encode_base(in1);
        CHECK(base.plan.has_base(model.config().layers));
        CHECK(base.memory_bytes() > 0);
        CHECK(base.memory_bytes() <= model.encode_base_bytes(in1.num_nodes()));
        const ConfigBatch b2 = load_config_batch(*g, later);
        const SegmentInput in = make_segment_input(*g, 0, b2, later, buf);
        const Tensor cached = model.encode(in, nullptr, false, nullptr, &base);
        const Tensor computed = model.encode(in, nullptr);
        REQUIRE(cached.size() == computed.size());
        CHECK(std::memcmp(cached.data(), computed.data(),
                          static_cast<size_t>(cached.size()) * sizeof(float)) == 0);
        EncodeSaved saved;
        CHECK_THROWS_AS(model.encode(in, &saved, false, nullptr, &base), Error);
        EncodeBase short_base = model.encode_base(in);  // a cache missing a layer is refused
        short_base.base.pop_back();
        CHECK_THROWS_WITH_AS(model.encode(in, nullptr, false, nullptr, &short_base),
                             doctest::Contains("not of this segment"), Error);
    }
}

TEST_CASE(
    "tile scores are the same with the inference cache, early join (every row depends on the "
    "config, nothing kept) and late join (base rows kept), with and without config attention") {
    const std::filesystem::path dir = scratch_dir("gst_inference_cache_tile");
    TinyTileSpec spec;
    spec.min_nodes = 300;
    spec.max_nodes = 320;
    spec.configs = 40;
    const GraphStore store(write_tiny_tile_store(dir, Split::kTrain, 1, spec),
                           LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    for (const auto join : {ConfigJoin::kEarly, ConfigJoin::kLate})
        for (bool attention : {false, true}) {
            INFO("join=", std::string(to_string(join)), " config_attention=", attention);
            ModelConfig mc = tiny_model_config(Task::kTile, norm.output_dim());
            mc.config_join = join;
            mc.config_attention = attention;
            mc.validate();
            Model model(mc);
            init_params(model, 4);
            const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(64));
            REQUIRE(g->num_segments() >= 4);
            const GstOptions opt = tiny_gst_options();
            const std::vector<float> off =
                score_graph(model, *g, g->configs, /*chunk=*/7, opt, kMaxConfigChunkBytes, 0);
            REQUIRE(off.size() == 40);
            CHECK(same_bits(off, score_graph(model, *g, g->configs, 7, opt, kMaxConfigChunkBytes,
                                             kDefaultInferenceCacheBytes)));
        }
}

TEST_CASE(
    "score_graph with row deduplication gives the dense scores to 1e-5 with the cache on, off and "
    "partial and at several chunk sizes") {
    const std::filesystem::path dir = scratch_dir("gst_inference_dedupe");
    const GraphStore store(write_tiny_layout_store(dir, segmented_spec()),
                           LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    for (const CacheOption& option : kCacheOptions) {
        INFO("option=", std::string(option.name));
        Model model(cache_model_config(norm.output_dim(), option));
        init_params(model, 7);
        const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(60));
        GstOptions dense = tiny_gst_options(), dedupe = tiny_gst_options();
        dense.dedupe_rows = false;
        dedupe.dedupe_rows = true;
        // config_attention scores depend on the chunk (and deduplication runs the dense encode
        // there): the reference is the dense score at the same chunk size.
        for (int64_t chunk : {int64_t{1}, int64_t{7}, int64_t{60}})
            for (int64_t cache : {int64_t{0}, int64_t{40000}, kDefaultInferenceCacheBytes}) {
                const std::vector<float> ref =
                    score_graph(model, *g, g->configs, chunk, dense, kMaxConfigChunkBytes, 0);
                INFO("chunk=", chunk, " cache=", cache);
                const std::vector<float> s =
                    score_graph(model, *g, g->configs, chunk, dedupe, kMaxConfigChunkBytes, cache);
                REQUIRE(s.size() == ref.size());
                for (size_t i = 0; i < s.size(); ++i)
                    CHECK(std::abs(s[i] - ref[i]) <= 1e-5f * std::max(1.0f, std::abs(ref[i])));
            }
    }
}

TEST_CASE(
    "deduplicated inference sizes the chunks after the probe so that the class tables stay within "
    "kDedupeStateBytes, between the probe size and the chunk bound") {
    // Nothing measured (a graph without dependent segments): the chunk bound.
    CHECK(dedupe_chunk_after_probe(16384, 0) == 16384);
    // 900 dep rows per config (the valid graphs of the scale rehearsal): 512 MiB / (176 x 900).
    const int64_t k = dedupe_chunk_after_probe(16384, 900);
    CHECK(k == kDedupeStateBytes / (kDedupeBytesPerDepRow * 900));
    CHECK(k * kDedupeBytesPerDepRow * 900 <= kDedupeStateBytes);
    CHECK(k > kDedupeProbeConfigs);
    // Few rows: the bound; very many rows: never below the probe size; small bounds are kept.
    CHECK(dedupe_chunk_after_probe(16384, 10) == 16384);
    CHECK(dedupe_chunk_after_probe(16384, 100000000) == kDedupeProbeConfigs);
    CHECK(dedupe_chunk_after_probe(60, 100000000) == 60);
    CHECK(dedupe_chunk_after_probe(60, 5) == 60);
}

TEST_CASE(
    "score_graph with row deduplication over more configs than the probe chunk gives the dense "
    "scores to 1e-5") {
    const std::filesystem::path dir = scratch_dir("gst_inference_dedupe_probe");
    TinyLayoutSpec spec = segmented_spec();
    spec.train_graphs = 1;
    spec.configs = kDedupeProbeConfigs + 700;
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    Model model(cache_model_config(norm.output_dim(), kCacheOptions[0]));
    init_params(model, 7);
    const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(60));
    REQUIRE(static_cast<int64_t>(g->configs.size()) == kDedupeProbeConfigs + 700);
    GstOptions dense = tiny_gst_options(), dedupe = tiny_gst_options();
    dense.dedupe_rows = false;
    dedupe.dedupe_rows = true;
    const std::vector<float> ref = score_graph(model, *g, g->configs, 256, dense);
    // A chunk bound above the probe size: the probe chunk, then chunks sized from its rows.
    const std::vector<float> s = score_graph(model, *g, g->configs, 16384, dedupe,
                                             kDedupeChunkBytesFactor * kMaxConfigChunkBytes);
    REQUIRE(s.size() == ref.size());
    for (size_t i = 0; i < s.size(); ++i)
        CHECK(std::abs(s[i] - ref[i]) <= 1e-5f * std::max(1.0f, std::abs(ref[i])));
}

}  // namespace segrank::test
