// Config errors of every kind in one pass (unknown keys, wrong types, bad enum names, ranges,
// cross-key rules, malformed --set), sorted by where they point; key_location for checks made after
// loading (model.config_join = "late" on data whose task only the Trainer learns).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gnn/core/check.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/config_test_util.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"
#include "trainer/config.h"
#include "trainer/trainer.h"

namespace segrank::test {
namespace {

namespace fs = std::filesystem;

// What constructing a Trainer on a tiny layout collection reports when the config file
// `dir / file_name` (data.collections unrestricted, so only the data shows the task) has
// `model_line` as its line 6. err is "" when the Trainer was built.
struct LayoutTrainerError {
    fs::path dir, file;
    std::string err;
};
LayoutTrainerError trainer_error_on_layout(const std::string& scratch,
                                           const std::string& model_line,
                                           const std::string& file_name) {
    LayoutTrainerError out;
    out.dir = scratch_dir(scratch);
    TinyLayoutSpec spec;
    spec.configs = 24;
    write_tiny_layout_collection(out.dir / "data", spec);
    // sq(): a TOML literal string.
    const std::string text = "[data]\nroot = " + sq((out.dir / "data").string()) +
                             "\nholdout = \"configs\"\n[model]\nhidden = 8\n" + model_line +
                             "\n[train]\nsteps = 2\nrun_dir = " + sq((out.dir / "run").string()) +
                             "\nprogress = false\n";
    out.file = out.dir / file_name;
    std::ofstream(out.file) << text;
    const RunConfig cfg = load_config(out.file.string());  // valid: the task is not in the config
    LocalCommunicator comm;
    try {
        Trainer t(cfg, comm);
    } catch (const Error& e) {
        out.err = e.what();
    }
    return out;
}

}  // namespace

TEST_CASE(
    "an unknown key, out-of-range values, wrong types and a bad enum in one file are all reported "
    "by line") {
    const std::string text =
        "[optim]\n"                // 1
        "lr = -1\n"                // 2  out of range
        "beta1 = 2.0\n"            // 3  out of range
        "[model]\n"                // 4
        "hiden = 3\n"              // 5  unknown key
        "hidden = 1.5\n"           // 6  wrong type
        "activation = \"tanh\"\n"  // 7  bad enum name
        "[train]\n"                // 8
        "progress = 1\n";          // 9  wrong type
    CHECK(load_error(text) ==
          "configs/x.toml:2:1: optim.lr: expected in (0, 1], got -1\n"
          "configs/x.toml:3:1: optim.beta1: expected in [0, 1), got 2\n"
          "configs/x.toml:5:1: model.hiden: unknown key (did you mean 'model.hidden'?)\n"
          "configs/x.toml:6:1: model.hidden: expected an integer, got float 1.5\n"
          "configs/x.toml:7:1: model.activation: expected one of \"gelu\", \"relu\", "
          "\"leaky_relu\", got string \"tanh\"\n"
          "configs/x.toml:9:1: train.progress: expected a boolean (true or false), got integer 1");
}

TEST_CASE(
    "a cross-key rule is reported beside a type error, but not about a key whose value was "
    "refused") {
    // sampling.configs is refused (string), so "config_pool >= sampling.configs = 32" would quote a
    // default the user never wrote: only the type error is reported for that pair.
    CHECK(load_error("[sampling]\nconfigs = \"many\"\nconfig_pool = 8\n") ==
          "configs/x.toml:2:1: sampling.configs: expected an integer, got string \"many\"");
    // An unrelated cross-key problem is still reported with the type error.
    CHECK(load_error("[train]\nsteps = 0\nseed = \"x\"\n") ==
          "configs/x.toml:2:1: train.steps: expected train.steps > 0 or train.epochs > 0, got both "
          "0\n"
          "configs/x.toml:3:1: train.seed: expected an integer, got string \"x\"");
    // Loss terms with a bad name: no "listed twice" about the two defaults left in their place.
    CHECK(load_error("[loss]\nterms = [{name = \"a\"}, {name = \"b\"}]\n") ==
          "configs/x.toml:2:1: loss.terms[0].name: expected one of \"pairwise_hinge\", "
          "\"pairwise_logistic\", "
          "\"listmle\", \"mse\", got string \"a\"\n"
          "configs/x.toml:2:1: loss.terms[1].name: expected one of \"pairwise_hinge\", "
          "\"pairwise_logistic\", "
          "\"listmle\", \"mse\", got string \"b\"");
}

TEST_CASE(
    "malformed and bad --set overrides are reported with the file's problems, after them, in "
    "order") {
    CHECK(load_error("[optim]\nlr = -1\n[model]\nhiden = 3\n",
                     {"lr=1", "model.hidden=abc", "train.steps=-2"}) ==
          "configs/x.toml:2:1: optim.lr: expected in (0, 1], got -1\n"
          "configs/x.toml:4:1: model.hiden: unknown key (did you mean 'model.hidden'?)\n"
          "--set lr=1: expected section.key=value (e.g. --set optim.lr=0.001)\n"
          "--set model.hidden=abc: model.hidden: expected an integer, got string \"abc\"\n"
          "--set train.steps=-2: train.steps: expected in [0, 2147483647], got -2");
    // An override of a key that is not a table in the file.
    CHECK(load_error("optim = 3\n", {"optim.lr=1"}) ==
          "configs/x.toml:1:1: optim: expected a table [optim], got integer 3\n"
          "--set optim.lr=1: optim: is not a table in the config");
}

TEST_CASE(
    "train.epochs above 2^31 - 1 is refused naming the key, not overflowed into a step count") {
    CHECK(load_error("[train]\nsteps = 0\n", {"train.epochs=4611686018427387904"}) ==
          "--set train.epochs=4611686018427387904: train.epochs: expected in [0, 2147483647], got "
          "4611686018427387904");
}

TEST_CASE("key_location names the file position or the override of a key, and == ignores it") {
    const RunConfig cfg = load_config_string(
        "[model]\nhidden = 8\n\n  config_join = \"late\"\n[data]\ncollections = [\"tile:xla\"]\n",
        "c.toml", {"optim.lr=0.5", "model.hidden=16"});
    CHECK(key_location(cfg, "model.config_join") == "c.toml:4:3");
    CHECK(key_location(cfg, "data.collections") == "c.toml:6:1");
    CHECK(key_location(cfg, "optim.lr") == "--set optim.lr=0.5");
    CHECK(key_location(cfg, "model.hidden") == "--set model.hidden=16");  // the override wins
    CHECK(key_location(cfg, "train.steps") == "c.toml");                  // a default: the file
    CHECK(key_location(RunConfig{}, "model.config_join").empty());        // built in code
    RunConfig same = cfg;
    same.sources = {};
    CHECK(same == cfg);
    CHECK(load_config_string(dump_config(cfg), "dump.toml") == cfg);
}

TEST_CASE(
    "model.config_join = late on layout data with unrestricted collections names the key's "
    "file:line") {
    const auto [dir, file, err] =
        trainer_error_on_layout("config_late_join_location", "config_join = \"late\"", "late.toml");
    CAPTURE(err);
    CHECK(err.starts_with(file.string() +
                          ":6:1: model.config_join: \"late\" applies to tile collections only"));
    CHECK(err.find("layout:xla:random") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "run"));
    // From a --set, the override is named instead.
    const RunConfig over = load_config(file.string(), {"model.config_join=\"late\""});
    LocalCommunicator comm;
    try {
        Trainer t(over, comm);
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).starts_with(
            "--set model.config_join=\"late\": model.config_join:"));
    }
}

TEST_CASE(
    "sampling.configs = 1 is refused whatever the loss (ranking terms, mse alone), naming the key" *
    doctest::test_suite("hostile")) {
    const std::string msg =
        "sampling.configs: expected >= 2 (the ranking losses compare configs of a graph and mse "
        "standardizes runtimes over a graph's sampled configs: with one config every loss is 0), "
        "got 1";
    // Default loss (listmle) and configs = 1: no pair in any graph.
    CHECK(load_error("[sampling]\nconfigs = 1\n") == "configs/x.toml:2:1: " + msg);
    // From --set, the override is named; a ranking term mixed with mse is refused too.
    CHECK(load_error("[loss]\nterms = [{name = \"mse\"}, {name = \"pairwise_hinge\", weight = "
                     "0.5}]\n",
                     {"sampling.configs=1"}) == "--set sampling.configs=1: " + msg);
    // mse alone: the standardized target of one config is 0, so the loss is 0 at every step.
    CHECK(load_error("[loss]\nterms = [{name = \"mse\"}]\n", {"sampling.configs=1"}) ==
          "--set sampling.configs=1: " + msg);
    CHECK(load_error("[sampling]\nconfigs = 1\n[loss]\nterms = [{name = \"mse\"}, "
                     "{name = \"listmle\", weight = 0}]\n") == "configs/x.toml:2:1: " + msg);
    CHECK_NOTHROW(load_config_string("[sampling]\nconfigs = 2\n", "configs/x.toml", {}));
    CHECK_NOTHROW(load_config_string(
        "[sampling]\nconfigs = 2\n[loss]\nterms = [{name = \"mse\"}]\n", "configs/x.toml", {}));
}

TEST_CASE("a --set float beyond a double is out of range of a double naming the key, not a string" *
          doctest::test_suite("hostile")) {
    CHECK(load_error("", {"optim.lr=1e400"}) ==
          "--set optim.lr=1e400: optim.lr: 1e400 is out of range of a double (expected in (0, "
          "1])");
    CHECK(load_error("", {"optim.weight_decay=-1e999"}) ==
          "--set optim.weight_decay=-1e999: optim.weight_decay: -1e999 is out of range of a "
          "double (expected in [0, 10])");
    CHECK(load_error("", {"train.steps=1e400"}) ==
          "--set train.steps=1e400: train.steps: out of range: expected an integer in [0, "
          "2147483647], got 1e400");
    CHECK(load_error("", {"optim.lr=1_0e400"}) ==
          "--set optim.lr=1_0e400: optim.lr: 1_0e400 is out of range of a double (expected in "
          "(0, 1])");
    // A string key keeps such a word as a bare string, as any other word that is not TOML.
    CHECK(load_config_string("", "configs/x.toml", {"train.run_dir=1e400"}).train.run_dir ==
          "1e400");
    // A representable float still loads.
    CHECK(load_config_string("", "configs/x.toml", {"optim.lr=1e-3"}).optim.lr == 1e-3);
}

TEST_CASE(
    "a float beyond a double in the config file is out of range of a double naming file, line "
    "and key, not a TOML parse error" *
    doctest::test_suite("hostile")) {
    CHECK(load_error("[optim]\nlr = 1e400\n") ==
          "configs/x.toml:2:1: optim.lr: 1e400 is out of range of a double (expected in (0, 1])");
    CHECK(load_error("[optim]\nweight_decay = -1.5e999  # comment\n") ==
          "configs/x.toml:2:1: optim.weight_decay: -1.5e999 is out of range of a double "
          "(expected in [0, 10])");
    CHECK(load_error("[train]\nsteps = 1_0e400\n") ==
          "configs/x.toml:2:1: train.steps: out of range: expected an integer in [0, "
          "2147483647], got 1_0e400");
    // In a file a string is quoted: a bare 1e400 for a string key is not taken as one.
    CHECK(load_error("[train]\nrun_dir = 1e400\n") ==
          "configs/x.toml:2:1: train.run_dir: expected a string, got float 1e400");
    CHECK(load_error("[train]\nprogress = 1e400\n") ==
          "configs/x.toml:2:1: train.progress: expected a boolean (true or false), got float "
          "1e400");
    // Other malformed floats stay TOML parse errors with file, line and column.
    const std::string bad = load_error("[optim]\nlr = 1e4x00\n");
    CHECK(bad.starts_with("configs/x.toml:2:"));
    CHECK(bad.find("TOML parse error") != std::string::npos);
}

TEST_CASE(
    "an integer beyond its field's range, in the file or from --set, is out of range with the "
    "valid range, even beyond 64 bits" *
    doctest::test_suite("hostile")) {
    const std::string range =
        "sampling.configs: out of range: expected an integer in [1, 2147483647], got ";
    // toml++ cannot hold the literal: it is still named by key, with the field's range.
    CHECK(load_error("", {"sampling.configs=99999999999999999999"}) ==
          "--set sampling.configs=99999999999999999999: " + range + "99999999999999999999");
    CHECK(load_error("[sampling]\nconfigs = 99999999999999999999\n") ==
          "configs/x.toml:2:1: " + range + "99999999999999999999");
    CHECK(load_error("[sampling]\nconfigs = 0x7fffffffffffffffff\n[model]\nhidden = "
                     "1_000_000_000_000_000_000_000 # H\n") ==
          "configs/x.toml:2:1: " + range +
              "0x7fffffffffffffffff\nconfigs/x.toml:4:1: model.hidden: out of range: expected an "
              "integer in [1, 4096], got 1_000_000_000_000_000_000_000");
    // Within 64 bits but beyond the field's type.
    CHECK(load_error("", {"sampling.configs=9999999999"}) ==
          "--set sampling.configs=9999999999: " + range + "9999999999");
    CHECK(load_error("", {"train.steps=-99999999999999999999"}) ==
          "--set train.steps=-99999999999999999999: train.steps: out of range: expected an "
          "integer in [0, 2147483647], got -99999999999999999999");
    // A float key and a string key given such a literal.
    CHECK(load_error("[optim]\nlr = 99999999999999999999\n") ==
          "configs/x.toml:2:1: optim.lr: out of range: 99999999999999999999 is beyond a 64-bit "
          "TOML integer; write a number of that size as a float (e.g. 1e20)");
    CHECK(load_error("", {"data.root=99999999999999999999"}) ==
          "--set data.root=99999999999999999999: data.root: expected a string, got integer "
          "99999999999999999999");
    // A malformed literal that is not an overflow is no range problem: the TOML parse error
    // (config_set_value_test.cpp).
    const std::string zeros = load_error("", {"sampling.configs=007"});
    CHECK(zeros.starts_with(
        "--set sampling.configs=007: sampling.configs: not a valid TOML value: "));
    CHECK(zeros.find("leading zeroes") != std::string::npos);
}

TEST_CASE(
    "model.config_attention takes a boolean, model.config_attention_dim an integer >= 1 and "
    "eval.tta_orders 1..1024, named by key") {
    CHECK(load_error("[model]\nconfig_attention = \"yes\"\nconfig_attention_dim = 0\n") ==
          "configs/x.toml:2:1: model.config_attention: expected a boolean (true or false), got "
          "string \"yes\"\n"
          "configs/x.toml:3:1: model.config_attention_dim: expected in [1, 1024], got 0");
    CHECK(load_error("", {"model.config_attention_dim=2.5"}) ==
          "--set model.config_attention_dim=2.5: model.config_attention_dim: expected an integer, "
          "got float 2.5");
    const RunConfig on = load_config_string(
        "[model]\nconfig_attention = true\nconfig_attention_dim = 8\n", "configs/x.toml", {});
    CHECK(on.model.config_attention);
    CHECK(on.model.config_attention_dim == 8);
    CHECK(load_error("[eval]\ntta_orders = 0\n") ==
          "configs/x.toml:2:1: eval.tta_orders: expected in [1, 1024], got 0");
}

TEST_CASE(
    "model.readout takes mean_max or mean, named by key, defaults to mean_max, and refuses the "
    "removed additive readout") {
    CHECK(load_error("[model]\nreadout = \"max\"\n") ==
          "configs/x.toml:2:1: model.readout: expected one of \"mean_max\", \"mean\", got string "
          "\"max\"");
    CHECK(load_error("", {"model.readout=1"}) ==
          "--set model.readout=1: model.readout: expected one of \"mean_max\", \"mean\", got "
          "integer 1");
    // Removed after it lost or tied on every case (docs/benchmarks.md#ablation-summary).
    CHECK(load_error("[model]\nreadout = \"additive\"\n") ==
          "configs/x.toml:2:1: model.readout: expected one of \"mean_max\", \"mean\", got string "
          "\"additive\"");
    CHECK(load_config_string("", "configs/x.toml", {}).model.readout == Readout::kMeanMax);
    CHECK(load_config_string("[model]\nreadout = \"mean\"\n", "configs/x.toml", {}).model.readout ==
          Readout::kMean);
}

TEST_CASE("train.threads and dist.threads_per_rank above 1024 or negative are refused by key") {
    CHECK(load_error("[train]\nthreads = 100000\n") ==
          "configs/x.toml:2:1: train.threads: expected in [0, 1024], got 100000");
    CHECK(load_error("[dist]\nthreads_per_rank = -3\n") ==
          "configs/x.toml:2:1: dist.threads_per_rank: expected in [0, 1024], got -3");
    CHECK(load_error("", {"train.threads=1025"}) ==
          "--set train.threads=1025: train.threads: expected in [0, 1024], got 1025");
    CHECK_NOTHROW(load_config_string("[train]\nthreads = 1024\n", "configs/x.toml", {}));
}

TEST_CASE(
    "a key earlier versions stored (hwmodel.noise_sigma) is dropped from a checkpoint's config but "
    "is an error naming what replaced it in a config file") {
    const std::string text = "[hwmodel]\nnoise_sigma = 0.05\nhardware = \"tpu_v2_core\"\n";
    const RunConfig stored = load_stored_config(text, "run/best.ckpt.h5:config_toml");
    CHECK(stored.hwmodel.hardware == "tpu_v2_core");  // the rest of the stored config is read
    CHECK(load_error(text) ==
          "configs/x.toml:2:1: hwmodel.noise_sigma: removed key (the label noise of synthetic data "
          "is `segrank synth --noise`); delete it");
    CHECK(load_error("", {"hwmodel.noise_sigma=0.1"}) ==
          "--set hwmodel.noise_sigma=0.1: hwmodel.noise_sigma: removed key (the label noise of "
          "synthetic data is `segrank synth --noise`); delete it");
    // A stored config still refuses keys that never existed and bad values.
    CHECK_THROWS_WITH_AS(load_stored_config("[hwmodel]\nnoise = 1\n", "c"),
                         doctest::Contains("hwmodel.noise: unknown key"), Error);
}

TEST_CASE(
    "model.tile_cost_features on layout data is an error: by line when layout collections are "
    "named, at the key's file:line when only the data shows the task") {
    CHECK(load_error("[model]\ntile_cost_features = true\n[data]\ncollections = "
                     "[\"layout:xla:random\"]\n") ==
          "configs/x.toml:2:1: model.tile_cost_features: true applies to tile collections only, "
          "but data.collections has \"layout:xla:random\"");
    CHECK(load_config_string("[model]\ntile_cost_features = true\n[data]\ncollections = "
                             "[\"tile:xla\"]\n",
                             "c.toml")
              .model.tile_cost_features);
    CHECK(load_error("[model]\ntile_cost_features = 1\n") ==
          "configs/x.toml:2:1: model.tile_cost_features: expected a boolean (true or false), got "
          "integer 1");

    const auto [dir, file, err] = trainer_error_on_layout("config_tile_cost_location",
                                                          "tile_cost_features = true", "cost.toml");
    CAPTURE(err);
    CHECK(err.starts_with(file.string() +
                          ":6:1: model.tile_cost_features: true applies to tile collections only"));
    CHECK(err.find("layout:xla:random") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "run"));
}

}  // namespace segrank::test
