// Trainer end to end on a tiny hand-built layout collection (tests/trainer/trainer_data_util.h):
// the loss falls, held-out configs are ranked better than by random scores, resume is exact; and the
// GST facts of issue 6 item 6: S = 1 equals full-graph training, the config-independence skip only
// shifts scores by a per-graph constant, streaming inference equals the full-graph score.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "data/normalizer.h"
#include "gnn/core/parallel.h"
#include "gnn/core/rng.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/gst_util.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"
#include "eval/metrics.h"
#include "trainer/trainer.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

double mean_of(const std::vector<double>& v, size_t begin, size_t end) {
    return std::accumulate(v.begin() + static_cast<long>(begin), v.begin() + static_cast<long>(end), 0.0) /
           static_cast<double>(end - begin);
}

// Mean over graphs (and 32 seeds) of the Kendall tau of uniform random scores on each graph's
// held-out configs: the random-ranking baseline.
double random_baseline_kendall(const Dataset& ds) {
    double acc = 0.0;
    int n = 0;
    for (const GraphEntry& e : ds.eval()) {
        LayoutGraph full = load_layout_npz(e.info.source, LabelPolicy::kRequirePositive);
        std::vector<double> targets;
        for (int64_t c : e.configs) targets.push_back(static_cast<double>(full.config_runtime[static_cast<size_t>(c)]));
        for (uint64_t seed = 0; seed < 32; ++seed) {
            Rng rng = Rng::derive(seed, static_cast<uint64_t>(e.id), 0, "test_random_scores");
            std::vector<float> scores(targets.size());
            for (auto& s : scores) s = static_cast<float>(rng.uniform());
            acc += evaluate_graph(e.name, scores, targets).kendall_tau;
            ++n;
        }
    }
    return acc / n;
}

// Normalizer fitted on one graph's features (for the GST tests, which bypass the Trainer).
Normalizer fit_normalizer(const LayoutGraph& g) {
    NormalizerFitter f(kNodeFeatDim);
    f.add(g.node_feat.cview(), g.name);
    return f.finish();
}

struct OneGraph {
    fs::path root;
    LayoutGraph graph;
    std::unique_ptr<Dataset> dataset;
};

// A collection with a single train graph written from `spec`.
OneGraph one_graph(const std::string& name, TinyLayoutSpec spec) {
    spec.train_graphs = 1;
    spec.valid_graphs = 1;  // holdout by graphs: the train graph keeps all its configs
    OneGraph o;
    o.root = write_tiny_layout_collection(scratch_dir(name), spec);
    o.graph = load_layout_npz(o.root / "npz/layout/xla/random/train/tiny_train_0.npz", LabelPolicy::kRequirePositive);
    cfg::DataSection d;
    d.root = o.root.string();
    o.dataset = std::make_unique<Dataset>(d, 0);
    return o;
}

}  // namespace

TEST_CASE("the trainer lowers the loss and beats random ranking on held-out configs") {
    const fs::path dir = scratch_dir("trainer_learns");
    write_tiny_layout_collection(dir / "data");
    RunConfig cfg = tiny_run_config(dir / "data", dir / "run", 60);
    LocalCommunicator comm;
    Trainer t(cfg, comm);
    const EvalResult before = t.evaluate();
    std::vector<double> losses;
    for (int i = 0; i < 60; ++i) losses.push_back(t.step());
    const double first = mean_of(losses, 0, 5), last = mean_of(losses, 55, 60);
    const EvalResult after = t.evaluate();
    const double random = random_baseline_kendall(t.dataset());
    REQUIRE(after.collections.size() == 1);
    const double tau = after.collections[0].kendall_tau;
    MESSAGE("loss: mean of steps 1-5 = ", first, ", mean of steps 56-60 = ", last, "; held-out Kendall: before ",
            before.collections[0].kendall_tau, ", after ", tau, ", random baseline ", random);
    CHECK(last < 0.6 * first);
    CHECK(std::abs(random) < 0.1);
    CHECK(tau > random + 0.25);
    CHECK(tau > before.collections[0].kendall_tau);
}

TEST_CASE("resuming after N steps gives bit-identical parameters to an uninterrupted 2N-step run") {
    const fs::path dir = scratch_dir("trainer_resume");
    write_tiny_layout_collection(dir / "data");
    // GST with several segments per graph, so the HistoryTable must be saved and restored too.
    auto make_cfg = [&](const char* run) {
        RunConfig c = tiny_run_config(dir / "data", dir / run, 12);
        c.segments.max_nodes = 16;
        c.segments.keep_prob = 0.5;
        c.sampling.configs = 8;
        return c;
    };
    constexpr int kN = 6;
    LocalCommunicator comm;
    std::vector<float> straight;
    {
        Trainer a(make_cfg("straight"), comm);
        for (int i = 0; i < 2 * kN; ++i) a.step();
        REQUIRE(a.history().stats().entries > 0);
        straight.assign(a.model().params().values().begin(), a.model().params().values().end());
    }
    {
        Trainer b(make_cfg("split"), comm);
        for (int i = 0; i < kN; ++i) b.step();
        b.save_checkpoint("last");
    }
    Trainer c(make_cfg("split"), comm, dir / "split");
    CHECK(c.current_step() == kN);
    for (int i = 0; i < kN; ++i) c.step();
    CHECK(c.current_step() == 2 * kN);
    auto resumed = c.model().params().values();
    REQUIRE(resumed.size() == straight.size());
    size_t differing = 0;
    for (size_t i = 0; i < straight.size(); ++i) differing += std::memcmp(&straight[i], &resumed[i], sizeof(float)) != 0;
    MESSAGE("resume: ", differing, " of ", straight.size(), " parameters differ bitwise, max |diff| = ",
            max_abs_diff(straight, resumed));
    CHECK(differing == 0);
}

TEST_CASE("head finetuning (segments.finetune_epochs) changes the head parameters only") {
    const fs::path dir = scratch_dir("trainer_finetune");
    write_tiny_layout_collection(dir / "data");
    LocalCommunicator comm;
    auto run = [&](const char* name, int finetune_epochs) {
        RunConfig c = tiny_run_config(dir / "data", dir / name, 4);
        c.segments.max_nodes = 16;
        c.segments.finetune_epochs = finetune_epochs;
        Trainer t(c, comm);
        t.run();
        std::vector<std::pair<std::string, std::vector<float>>> out;
        for (const auto& r : t.model().params().refs()) {
            auto v = t.model().params().values().subspan(static_cast<size_t>(r.offset), static_cast<size_t>(r.size()));
            out.emplace_back(r.name, std::vector<float>(v.begin(), v.end()));
        }
        return out;
    };
    const auto plain = run("plain", 0), tuned = run("tuned", 1);
    REQUIRE(plain.size() == tuned.size());
    int head_changed = 0, other_changed = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
        const bool changed = plain[i].second != tuned[i].second;
        if (plain[i].first.rfind("head", 0) == 0) {
            head_changed += changed;
        } else {
            other_changed += changed;
            CHECK_MESSAGE(!changed, plain[i].first, " changed during head finetuning");
        }
    }
    MESSAGE("finetuning changed ", head_changed, " head tensors and ", other_changed, " other tensors");
    CHECK(head_changed >= 2);  // head1.weight, head2.weight (and biases)
    CHECK(other_changed == 0);
}

TEST_CASE("GST with one segment (max_nodes = 0) gives the gradients of full-graph training") {
    OneGraph o = one_graph("gst_s1", TinyLayoutSpec{});
    const GraphEntry& e = o.dataset->train().front();
    const Normalizer norm = fit_normalizer(o.graph);
    RunConfig cfg = tiny_run_config(o.root, o.root / "unused", 1);
    cfg.segments.max_nodes = 0;
    cfg.segments.keep_prob = 0.3;
    Model model(model_config_from(cfg, Task::kLayout, norm.output_dim()));
    model.params().initialize(7);
    auto pg = prepare_graph(e, norm, model, prepare_options_from(cfg));
    REQUIRE(pg->num_segments() == 1);

    const std::vector<int64_t> configs = {3, 0, 17, 5, 44, 9, 21, 30, 12, 8};
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(pg->targets[static_cast<size_t>(c)]);
    const GstOptions opt = gst_options_from(cfg);
    const double scale = 0.5;

    HistoryTable table(1, 0);
    model.params().zero_grads();
    GraphStepResult r = gst_train_graph(model, *pg, configs, targets, /*step=*/4, scale, table, opt);
    std::vector<float> g_gst(model.params().grads().begin(), model.params().grads().end());

    model.params().zero_grads();
    WholeGraphInput whole = whole_graph_input(o.graph, norm, configs);
    std::vector<float> s_full = full_graph_step(model, whole, targets, opt.loss_terms, opt.loss_options, scale);
    std::vector<float> g_full(model.params().grads().begin(), model.params().grads().end());

    const double gdiff = max_abs_diff(g_gst, g_full), gmax = max_abs(g_full);
    MESSAGE("S = 1: max |grad diff| = ", gdiff, " (max |grad| ", gmax, "), max |score diff| = ",
            max_abs_diff(r.scores, s_full));
    CHECK(gmax > 1e-4);  // the comparison is not between two zero vectors
    CHECK(gdiff <= 1e-6 * std::max(1.0, gmax));
    CHECK(max_abs_diff(r.scores, s_full) <= 1e-6 * std::max(1.0, max_abs(s_full)));
}

TEST_CASE("the config-independence skip changes gradients and scores only by per-graph constants") {
    TinyLayoutSpec spec;
    spec.min_nodes = 150;
    spec.max_nodes = 160;
    spec.config_nodes = 2;  // sparse: most 25-node segments cannot see a configurable node
    OneGraph o = one_graph("gst_skip", spec);
    const GraphEntry& e = o.dataset->train().front();
    const Normalizer norm = fit_normalizer(o.graph);

    struct Side {
        RunConfig cfg;
        std::unique_ptr<Model> model;
        std::unique_ptr<PreparedGraph> pg;
        GstOptions opt;
    };
    auto make_side = [&](bool independence) {
        Side s;
        s.cfg = tiny_run_config(o.root, o.root / "unused", 1);
        s.cfg.segments.max_nodes = 25;
        s.cfg.segments.fresh = 100;  // every segment fresh: the comparison is exact, not in expectation
        s.cfg.model.config_independence = independence;
        s.model = std::make_unique<Model>(model_config_from(s.cfg, Task::kLayout, norm.output_dim()));
        s.model->params().initialize(11);
        s.pg = prepare_graph(e, norm, *s.model, prepare_options_from(s.cfg));
        s.opt = gst_options_from(s.cfg);
        return s;
    };
    Side skip = make_side(true), naive = make_side(false);
    REQUIRE(skip.opt.skip_independent);
    REQUIRE_FALSE(naive.opt.skip_independent);
    REQUIRE(max_abs_diff(skip.model->params().values(), naive.model->params().values()) == 0.0);

    std::vector<int64_t> configs(16);
    std::iota(configs.begin(), configs.end(), 0);
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(skip.pg->targets[static_cast<size_t>(c)]);

    HistoryTable t1(1, 0), t2(1, 0);
    skip.model->params().zero_grads();
    naive.model->params().zero_grads();
    GraphStepResult rs = gst_train_graph(*skip.model, *skip.pg, configs, targets, 2, 1.0, t1, skip.opt);
    GraphStepResult rn = gst_train_graph(*naive.model, *naive.pg, configs, targets, 2, 1.0, t2, naive.opt);
    MESSAGE("segments: ", naive.pg->num_segments(), ", taking part with the skip: ", rs.active_segments,
            ", without: ", rn.active_segments);
    CHECK(rn.active_segments == naive.pg->num_segments());
    CHECK(rs.active_segments >= 1);
    CHECK(rs.active_segments < rn.active_segments);  // the skip is exercised

    auto gs = skip.model->params().grads();
    auto gn = naive.model->params().grads();
    const double gdiff = max_abs_diff(gs, gn), gmax = max_abs(gn);
    const double sdev = max_dev_from_constant_shift(rs.scores, rn.scores);
    MESSAGE("skip vs naive: max |grad diff| = ", gdiff, " (max |grad| ", gmax, "); scores differ by ",
            rn.scores[0] - rs.scores[0], " +- ", sdev);
    CHECK(gmax > 1e-4);
    CHECK(gdiff <= 1e-5 * gmax);
    CHECK(sdev <= 1e-5 * std::max(1.0, max_abs(rn.scores)));
    CHECK(max_abs_diff(rs.scores, rn.scores) > 1e-3);  // the constant is real (independent segments were left out)

    // Streaming inference, several chunks: the same constant-shift relation.
    std::vector<float> is = score_graph(*skip.model, *skip.pg, configs, 5, skip.opt);
    std::vector<float> in = score_graph(*naive.model, *naive.pg, configs, 5, naive.opt);
    CHECK(max_dev_from_constant_shift(is, in) <= 1e-5 * std::max(1.0, max_abs(in)));
    // With every segment fresh and dropout off, the training scores equal the inference scores.
    CHECK(max_abs_diff(is, rs.scores) <= 1e-5 * std::max(1.0, max_abs(in)));
}

TEST_CASE("streaming score_graph with max_nodes above the graph size equals the full-graph head score") {
    OneGraph o = one_graph("gst_infer", TinyLayoutSpec{});
    const GraphEntry& e = o.dataset->train().front();
    const Normalizer norm = fit_normalizer(o.graph);
    RunConfig cfg = tiny_run_config(o.root, o.root / "unused", 1);
    cfg.segments.max_nodes = 100000;
    Model model(model_config_from(cfg, Task::kLayout, norm.output_dim()));
    model.params().initialize(5);
    auto pg = prepare_graph(e, norm, model, prepare_options_from(cfg));
    REQUIRE(pg->num_segments() == 1);
    std::vector<int64_t> configs(pg->num_configs);
    std::iota(configs.begin(), configs.end(), 0);
    const std::vector<float> streamed = score_graph(model, *pg, configs, /*chunk=*/7, gst_options_from(cfg));

    WholeGraphInput whole = whole_graph_input(o.graph, norm, configs);
    Tensor r = model.encode(whole.input(), nullptr);
    Tensor s = model.head(r.cview(), {}, nullptr);
    const double dev = max_dev_from_constant_shift(streamed, s.span());
    MESSAGE("streamed vs full graph: max |diff| = ", max_abs_diff(streamed, s.span()), ", from a constant shift ", dev);
    CHECK(max_abs(s.span()) > 0.0);
    CHECK(dev <= 1e-5 * std::max(1.0, max_abs(s.span())));
    CHECK(max_abs_diff(streamed, s.span()) <= 1e-5 * std::max(1.0, max_abs(s.span())));
}

}  // namespace segrank::test
