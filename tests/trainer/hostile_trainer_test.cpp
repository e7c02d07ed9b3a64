// Hostile and unlucky trainer inputs (ctest label `hostile`): model sizes far beyond any use,
// collections of two tasks in one run, and checkpoints whose optimizer state is NaN or negative.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "data/h5_file.h"
#include "gnn/core/format.h"
#include "gnn/model.h"
#include "tests/support/small_model.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/config_test_util.h"
#include "trainer/checkpoint.h"
#include "trainer/trainer.h"

using namespace segrank;
using segrank::test::load_error;

namespace {

using test::small_model;

// A checkpoint of small_model() with moments after one step, edited by `edit` before it is saved.
template <typename F>
std::filesystem::path checkpoint_with(const std::string& name, F&& edit, int64_t step = 5) {
    const auto path = test::scratch_dir(name) / "last.ckpt.h5";
    Model a(small_model());
    a.params().initialize(3);
    AdamW opt(a.params(), AdamWConfig{});
    for (float& g : a.params().grads()) g = 0.25f;
    opt.step(a.params(), 1e-2f);
    edit(opt);
    CheckpointWriter w(path);
    w.put_params(a.params(), &opt);
    w.put_state(step, 0);
    w.commit();
    return path;
}

std::string resume_error(const std::filesystem::path& path) {
    Model b(small_model());
    AdamW opt(b.params(), AdamWConfig{});
    try {
        CheckpointReader(path).load_params(b.params(), &opt);
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "model sizes beyond their documented upper bounds fail in the loader naming the key") {
        CHECK(load_error("[model]\nhidden = 100000\n") ==
              "configs/x.toml:2:1: model.hidden: expected in [1, 4096], got 100000");
        CHECK(load_error("[model]\nlayers = 100000\n").find("model.layers: expected in [1, 64]") !=
              std::string::npos);
        CHECK(load_error("", {"model.opcode_dim=5000"})
                  .find("model.opcode_dim: expected in [1, 1024], got 5000") != std::string::npos);
        CHECK(load_error("", {"model.config_dim=5000"}).find("model.config_dim") !=
              std::string::npos);
        CHECK(load_error("", {"model.config_attention_dim=5000"})
                  .find("model.config_attention_dim: expected in [1, 1024]") != std::string::npos);
        // The bounds themselves are accepted.
        CHECK_NOTHROW(load_config_string("[model]\nhidden = 4096\nlayers = 64\nopcode_dim = 1024\n",
                                         "configs/x.toml", {}));
    }

    TEST_CASE(
        "a removed model option is an error naming it in a config file and a --set, and a "
        "checkpoint config that has it on is refused naming the file while one that has it off "
        "loads (model.norm: its one value left still loads everywhere)") {
        struct Removed {
            const char *key, *off, *on;
        };
        const std::string why =
            "removed key (it tied or lost on the transfer benchmark, "
            "docs/benchmarks.md#ablation-summary); delete it";
        for (const Removed& r :
             {Removed{"layout_mismatch", "false", "true"}, Removed{"layout_embedding", "0", "8"}}) {
            INFO("model.", r.key);
            const std::string key = str("model.", r.key);
            for (const char* value : {r.off, r.on}) {
                CHECK(load_error(str("[model]\n", r.key, " = ", value, "\n")) ==
                      str("configs/x.toml:2:1: ", key, ": ", why));
                CHECK(load_error("", {str(key, "=", value)}) ==
                      str("--set ", key, "=", value, ": ", key, ": ", why));
            }
            // A checkpoint written before the removal stores every key: off loads (the rest of
            // the config is read), on is refused.
            const RunConfig off =
                load_stored_config(str("[model]\n", r.key, " = ", r.off, "\nhidden = 8\n"),
                                   "run/best.ckpt.h5:config_toml");
            CHECK(off.model.hidden == 8);
            const std::string refused =
                str("run/best.ckpt.h5:config_toml:2:1: ", key,
                    ": this checkpoint was trained with ", key, " = ", r.on,
                    ", an option that was removed (it tied or lost on the transfer benchmark, "
                    "docs/benchmarks.md#ablation-summary); this version cannot use its parameters "
                    "(retrain without it)");
            CHECK_THROWS_WITH_AS(load_stored_config(str("[model]\n", r.key, " = ", r.on, "\n"),
                                                    "run/best.ckpt.h5:config_toml"),
                                 refused.c_str(), Error);
        }
        // model.norm lost its value "graph_instance": "layer", the one left, still loads from a
        // config file, a --set and a checkpoint; "graph_instance" is an error naming the key, and
        // a checkpoint that has it is refused.
        CHECK_NOTHROW(load_config_string("[model]\nnorm = \"layer\"\n", "configs/x.toml", {}));
        CHECK_NOTHROW(load_config_string("", "configs/x.toml", {"model.norm=layer"}));
        const std::string gone =
            "model.norm: \"graph_instance\" was removed (it tied or lost on the transfer "
            "benchmark, docs/benchmarks.md#ablation-summary); \"layer\" is the only value left: "
            "delete the key";
        CHECK(load_error("[model]\nnorm = \"graph_instance\"\n") == "configs/x.toml:2:1: " + gone);
        CHECK(load_error("", {"model.norm=graph_instance"}) ==
              "--set model.norm=graph_instance: " + gone);
        CHECK(load_stored_config("[model]\nnorm = \"layer\"\nhidden = 8\n", "c").model.hidden == 8);
        CHECK_THROWS_WITH_AS(load_stored_config("[model]\nnorm = \"graph_instance\"\n",
                                                "run/best.ckpt.h5:config_toml"),
                             doctest::Contains("run/best.ckpt.h5:config_toml:2:1: model.norm: this "
                                               "checkpoint was trained with model.norm = "
                                               "\"graph_instance\", an option that was removed"),
                             Error);
    }

    TEST_CASE("data.collections of two tasks fail in the loader, before any data is read") {
        const std::string msg =
            load_error("[data]\ncollections = [\"tile:xla\", \"layout:xla:random\"]\n");
        CHECK(msg.find("data.collections: one run trains one task") != std::string::npos);
        CHECK(msg.find("\"tile:xla\" is tile and \"layout:xla:random\" is layout") !=
              std::string::npos);
        CHECK_NOTHROW(load_config_string(
            "[data]\ncollections = [\"layout:xla:random\", \"layout:nlp:default\"]\n",
            "configs/x.toml", {}));
    }

    TEST_CASE("NaN or negative AdamW moments and a negative step in a checkpoint fail on load") {
        const auto nan_m = checkpoint_with("hostile_ckpt_nan_m", [](AdamW& o) {
            o.m()[1] = std::numeric_limits<float>::quiet_NaN();
        });
        std::string msg = resume_error(nan_m);
        CHECK(msg.find("last.ckpt.h5: dataset /adam_m/") != std::string::npos);
        CHECK(msg.find("entry 1 is nan") != std::string::npos);

        const auto neg_v =
            checkpoint_with("hostile_ckpt_neg_v", [](AdamW& o) { o.v()[0] = -1.0f; });
        msg = resume_error(neg_v);
        CHECK(msg.find("dataset /adam_v/") != std::string::npos);
        CHECK(msg.find("must be finite and >= 0") != std::string::npos);

        const auto neg_step = checkpoint_with(
            "hostile_ckpt_neg_step", [](AdamW&) {}, -3);
        CHECK(resume_error(neg_step).find("last.ckpt.h5: attribute /step = -3 is negative") !=
              std::string::npos);

        const auto ok = checkpoint_with("hostile_ckpt_ok", [](AdamW&) {});
        CHECK(resume_error(ok) == "<no error>");
    }

    TEST_CASE(
        "a NaN or infinite parameter in a checkpoint fails on load naming the dataset and entry") {
        // The parameter values are written from a model whose entry 2 of the first parameter is
        // replaced; load_params without an optimizer (evaluate, predict) checks them too.
        const auto path = test::scratch_dir("hostile_ckpt_nan_param") / "last.ckpt.h5";
        Model a(small_model());
        a.params().initialize(3);
        const ParamRef& p0 = a.params().refs().front();
        for (const float bad :
             {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
            a.params().values()[static_cast<size_t>(p0.offset + 2)] = bad;
            {
                CheckpointWriter w(path);
                w.put_params(a.params(), nullptr);
                w.commit();
            }
            Model b(small_model());
            try {
                CheckpointReader(path).load_params(b.params(), nullptr);
                FAIL("a non-finite parameter was loaded");
            } catch (const Error& e) {
                CHECK(std::string(e.what()) ==
                      path.string() + ": dataset /params/" + p0.name + " entry 2 is " +
                          (std::isnan(bad) ? "nan" : "inf") + " (parameters must be finite)");
            }
        }
    }

    TEST_CASE("a normalizer_input_dim other than the node feature count fails naming it") {
        const auto path = test::scratch_dir("hostile_ckpt_input_dim") / "last.ckpt.h5";
        for (const int64_t dim : {int64_t{0}, int64_t{kNodeFeatDim + 1}, int64_t{1} << 40}) {
            {
                CheckpointWriter w(path);
                w.put_attr("normalizer_input_dim", dim);
                const std::vector<int32_t> kept = {0};
                const std::vector<double> one = {1.0};
                w.put_array<int32_t>("normalizer/kept_columns", {1}, kept);
                w.put_array<double>("normalizer/means", {1}, one);
                w.put_array<double>("normalizer/stds", {1}, one);
                w.commit();
            }
            try {
                (void)load_checkpoint_normalizer(path);
                FAIL("a normalizer of another input width was loaded");
            } catch (const Error& e) {
                CHECK(std::string(e.what()) ==
                      path.string() + ": attribute /extra/normalizer_input_dim = " +
                          std::to_string(dim) + ": expected " + std::to_string(kNodeFeatDim) +
                          " (the node feature count, docs/files.md#node-features)");
            }
        }
    }

    TEST_CASE("a checkpoint task that is no task name fails in load_model naming the attribute") {
        const auto path = test::scratch_dir("hostile_ckpt_task") / "best.ckpt.h5";
        {
            CheckpointWriter w(path);
            w.put_attr("config_toml", std::string(""));
            w.put_attr("task", std::string("bogus"));
            w.commit();
        }
        try {
            (void)load_model(path);
            FAIL("a checkpoint of task 'bogus' was loaded");
        } catch (const Error& e) {
            const std::string msg = e.what();
            CHECK(msg.rfind(path.string() + ": attribute /extra/task: ", 0) == 0);
            CHECK(msg.find("\"bogus\"") != std::string::npos);
        }
    }

    TEST_CASE("an adam_step above the step of a checkpoint fails on load naming both") {
        const auto ahead = checkpoint_with(
            "hostile_ckpt_adam_ahead", [](AdamW&) {}, 0);
        CHECK(resume_error(ahead).find(
                  "last.ckpt.h5: attribute /adam_step = 1: expected at most /step = 0") !=
              std::string::npos);
        const auto ok = checkpoint_with(
            "hostile_ckpt_adam_ok", [](AdamW&) {}, 1);
        CHECK(resume_error(ok) == "<no error>");
    }

    TEST_CASE("a config holdout of fraction 0 fails in the loader: it would hold out nothing") {
        // holdout = "configs" evaluates the held-out configs of each graph; 0 selects none.
        const std::string msg =
            load_error("[data]\nholdout = \"configs\"\nholdout_fraction = 0.0\n");
        CHECK(msg.find("configs/x.toml:3:1: data.holdout_fraction: expected a fraction in (0, 1) "
                       "with data.holdout = \"configs\", got 0") != std::string::npos);
        CHECK(msg.find("leaves nothing to evaluate") != std::string::npos);
        // With a graph holdout the fraction is unused: 0 still loads.
        CHECK_NOTHROW(load_config_string("[data]\nholdout = \"graphs\"\nholdout_fraction = 0\n",
                                         "configs/x.toml", {}));
    }

    TEST_CASE("a data split that is not a split name fails in the loader naming the valid names") {
        const std::string msg = load_error("[data]\ntrain_split = \"bogus\"\n");
        CHECK(msg.find("configs/x.toml:2:1: data.train_split: expected one of \"train\", "
                       "\"valid\", \"test\", \"unknown\"") != std::string::npos);
        CHECK(msg.find("got \"bogus\"") != std::string::npos);
        const std::string valid = load_error("", {"data.valid_split=../train"});
        CHECK(valid.find("--set data.valid_split=../train: data.valid_split: expected one of") !=
              std::string::npos);
        CHECK_NOTHROW(load_config_string("[data]\ntrain_split = \"test\"\n", "configs/x.toml", {}));
    }

    TEST_CASE("a checkpoint with a parameter this model does not have fails on load naming it") {
        const auto path = checkpoint_with("hostile_ckpt_extra_param", [](AdamW&) {});
        {
            H5File f = H5File::open_write(path);
            const std::vector<float> w = {1.0f, 2.0f};
            f.root().open_group("params").write<float>("bogus.w", {1, 2}, w);
        }
        Model b(small_model());
        try {
            CheckpointReader(path).load_params(b.params(), nullptr);
            FAIL("an extra parameter was loaded silently");
        } catch (const Error& e) {
            const std::string msg = e.what();
            CHECK(msg.find(path.string() + ":/params/bogus.w: unexpected parameter 'bogus.w'") !=
                  std::string::npos);
        }
    }

    TEST_CASE("a parameter of another shape in a checkpoint fails naming expected and found") {
        const auto path = checkpoint_with("hostile_ckpt_shape", [](AdamW&) {});
        ModelConfig wider = small_model();
        wider.hidden = 5;
        Model b(wider);
        try {
            CheckpointReader(path).load_params(b.params(), nullptr);
            FAIL("a checkpoint of another model size loaded");
        } catch (const Error& e) {
            const std::string msg = e.what();
            INFO(msg);
            CHECK(msg.find(path.string() + ":/params/") != std::string::npos);
            CHECK(msg.find(": shape mismatch for parameter '") != std::string::npos);
            CHECK(msg.find("': expected [") != std::string::npos);
            CHECK(msg.find("], found [") != std::string::npos);
        }
    }
}
