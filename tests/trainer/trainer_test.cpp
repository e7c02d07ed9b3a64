// Trainer end to end on a tiny hand-built layout collection (tests/trainer/trainer_data_util.h):
// the loss falls, held-out configs are ranked better than by random scores, resume is exact, head
// finetuning changes the head only. The GST step itself is tested in tests/gst/gst_step_test.cpp.
#include "trainer/trainer.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "eval/metrics.h"
#include "gnn/core/parallel.h"
#include "gnn/core/rng.h"
#include "tests/gst/gst_util.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

double mean_of(const std::vector<double>& v, size_t begin, size_t end) {
    return std::accumulate(v.begin() + static_cast<long>(begin), v.begin() + static_cast<long>(end),
                           0.0) /
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
        for (int64_t c : e.configs)
            targets.push_back(static_cast<double>(full.config_runtime[static_cast<size_t>(c)]));
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
    MESSAGE("loss: mean of steps 1-5 = ", first, ", mean of steps 56-60 = ", last,
            "; held-out Kendall: before ", before.collections[0].kendall_tau, ", after ", tau,
            ", random baseline ", random);
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
    for (size_t i = 0; i < straight.size(); ++i)
        differing += std::memcmp(&straight[i], &resumed[i], sizeof(float)) != 0;
    MESSAGE("resume: ", differing, " of ", straight.size(),
            " parameters differ bitwise, max |diff| = ", max_abs_diff(straight, resumed));
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
            auto v = t.model().params().values().subspan(static_cast<size_t>(r.offset),
                                                         static_cast<size_t>(r.size()));
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
    MESSAGE("finetuning changed ", head_changed, " head tensors and ", other_changed,
            " other tensors");
    CHECK(head_changed >= 2);  // head1.weight, head2.weight (and biases)
    CHECK(other_changed == 0);
}

}  // namespace segrank::test
