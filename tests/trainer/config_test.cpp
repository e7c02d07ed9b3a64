// RunConfig loading (docs/config.md): defaults equal configs/default.toml, every error
// names file:line:col and the key, overrides, and dump round-trips.
#include "trainer/config.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "gnn/core/check.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/config_test_util.h"

using namespace segrank;

namespace {

using segrank::test::load_error;
using segrank::test::read_file_text;

}  // namespace

TEST_CASE("configs/default.toml loads to exactly RunConfig{}") {
    const auto path = test::source_dir() / "configs" / "default.toml";
    const RunConfig cfg = load_config(path.string());
    CHECK(cfg == RunConfig{});
}

TEST_CASE("configs/default.toml lists every key with a one-line comment") {
    const std::string text = read_file_text(test::source_dir() / "configs" / "default.toml");
    std::string section;
    std::set<std::string> documented;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("[")) section = line.substr(1, line.find(']') - 1);
        const auto eq = line.find(" = ");
        if (eq == std::string::npos || line.starts_with("#")) continue;
        if (line.find('#', eq) != std::string::npos)
            documented.insert(section + "." + line.substr(0, eq));
    }
    const auto keys = config_keys();
    CHECK(keys.size() >= 60);
    for (const auto& k : keys) {
        CAPTURE(k.key);
        CHECK(documented.count(k.key) == 1);
        CHECK(!k.doc.empty());
    }
}

TEST_CASE("configs/tiny.toml is a valid config with a small step count") {
    const RunConfig cfg = load_config((test::source_dir() / "configs" / "tiny.toml").string());
    CHECK(cfg.train.steps > 0);
    CHECK(cfg.train.steps <= 200);
}

TEST_CASE(
    "every file in configs/ loads and validates, and the recipes keep their documented keys") {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(test::source_dir() / "configs")) {
        if (e.path().extension() != ".toml") continue;
        CAPTURE(e.path().string());
        const RunConfig cfg = load_config(e.path().string());
        CHECK_NOTHROW(validate_config(cfg));
        ++n;
    }
    CHECK(n >= 9);
    // The full-data-set recipes read HDF5 stores for layout (partial config reads) and keep
    // GST segments of 1000 nodes; tile trains whole kernels. The cross-graph layout configs (the
    // recipes and the quickstart) use the mean readout with 2-hop pruning, the combination that
    // ranked unseen graphs best (docs/benchmarks.md#ablation-summary); the U-Net fixture config,
    // scored on configs held out of its own graph, keeps mean_max without pruning.
    for (const char* name :
         {"tpugraphs_layout_xla.toml", "tpugraphs_layout_nlp.toml", "quickstart.toml"}) {
        CAPTURE(name);
        const RunConfig cfg = load_config((test::source_dir() / "configs" / name).string());
        if (std::string(name) != "quickstart.toml") {
            CHECK(cfg.data.store == StoreFormat::kHdf5);
            CHECK(cfg.segments.max_nodes == 1000);
        }
        CHECK(cfg.model.readout == Readout::kMean);
        CHECK(cfg.model.prune_hops == 2);
    }
    const RunConfig fixture =
        load_config((test::source_dir() / "configs" / "xla_fixture_layout.toml").string());
    CHECK(fixture.model.readout == Readout::kMeanMax);
    CHECK(fixture.model.prune_hops == -1);
    const RunConfig tile =
        load_config((test::source_dir() / "configs" / "tpugraphs_tile.toml").string());
    CHECK(tile.data.collections == std::vector<std::string>{"tile:xla"});
    CHECK(tile.segments.max_nodes == 0);
}

TEST_CASE("an empty config is the defaults, keys set in the file are read with their types") {
    CHECK(load_config_string("", "empty.toml") == RunConfig{});
    const RunConfig cfg = load_config_string(R"(
[data]
collections = "tile:xla"
holdout = "configs"
[model]
hidden = 64
activation = "leaky_relu"
[optim]
lr = 1          # an integer is accepted for a float key
[loss]
terms = [{name = "pairwise_hinge", weight = 0.5}, {name = "mse"}]
margin = 0.2
)",
                                             "t.toml");
    CHECK(cfg.data.collections == std::vector<std::string>{"tile:xla"});
    CHECK(cfg.data.holdout == cfg::Holdout::kConfigs);
    CHECK(cfg.model.hidden == 64);
    CHECK(cfg.model.activation == Activation::kLeakyRelu);
    CHECK(cfg.optim.lr == 1.0);
    REQUIRE(cfg.loss.terms.size() == 2);
    CHECK(cfg.loss.terms[0] == LossTerm{LossKind::kPairwiseHinge, 0.5});
    CHECK(cfg.loss.terms[1] == LossTerm{LossKind::kMse, 1.0});
    CHECK(cfg.loss.margin == 0.2);
    CHECK(cfg.train == cfg::TrainSection{});
}

TEST_CASE("the older top-level loss array is read as [loss] terms") {
    const RunConfig cfg = load_config_string(
        "loss = [{name=\"listmle\", weight=1.0}, {name=\"mse\", weight=0.02}]\n", "t.toml");
    REQUIRE(cfg.loss.terms.size() == 2);
    CHECK(cfg.loss.terms[1] == LossTerm{LossKind::kMse, 0.02});
    CHECK(load_error("loss = [{name=\"listmlee\"}]\n")
              .starts_with("configs/x.toml:1:1: loss.terms[0].name:"));
}

TEST_CASE("an unknown key is an error at its line with the nearest valid key suggested") {
    const std::string msg = load_error("[optim]\nlr = 0.1\nlearning_rat = 0.1\n");
    CHECK(msg == "configs/x.toml:3:1: optim.learning_rat: unknown key");
    CHECK(load_error("[optim]\nlrr = 0.1\n") ==
          "configs/x.toml:2:1: optim.lrr: unknown key (did you mean 'optim.lr'?)");
    CHECK(load_error("[optim]\nsteps = 3\n") ==
          "configs/x.toml:2:1: optim.steps: unknown key (did you mean 'train.steps'?)");
    CHECK(load_error("[segment]\nfresh = 1\n") ==
          "configs/x.toml:1:2: segment: unknown section (did you mean 'segments'?)");
    CHECK(load_error("lr = 0.1\n") ==
          "configs/x.toml:1:1: lr: unknown top-level key (did you mean 'optim.lr'?)");
}

TEST_CASE("a wrong type is an error naming file:line, the key, the expected and the given type") {
    CHECK(load_error("\n[model]\nhidden = 1.5\n") ==
          "configs/x.toml:3:1: model.hidden: expected an integer, got float 1.5");
    CHECK(load_error("[optim]\nlr = \"fast\"\n") ==
          "configs/x.toml:2:1: optim.lr: expected a number, got string \"fast\"");
    CHECK(load_error("[train]\nprogress = 1\n") ==
          "configs/x.toml:2:1: train.progress: expected a boolean (true or false), got integer 1");
    CHECK(load_error("[model]\nhidden = 99999999999\n") ==
          "configs/x.toml:2:1: model.hidden: out of range: expected an integer in [1, 4096], got "
          "99999999999");
    CHECK(load_error("optim = 3\n") ==
          "configs/x.toml:1:1: optim: expected a table [optim], got integer 3");
    CHECK(load_error("[data]\ncollections = [\"tile:xla\", 3]\n")
              .starts_with("configs/x.toml:2:1: data.collections: expected strings in the array "
                           "(element 1), got integer 3"));
}

TEST_CASE("an out-of-range value is an error in the documented form") {
    CHECK(load_error("[optim]\n\n\n\n\n\n\n\n\n\n\nlr = -1\n") ==
          "configs/x.toml:12:1: optim.lr: expected in (0, 1], got -1");
    CHECK(load_error("[segments]\nkeep_prob = 1.5\n") ==
          "configs/x.toml:2:1: segments.keep_prob: expected in [0, 1], got 1.5");
    CHECK(load_error("[model]\ndropout = 1.0\n") ==
          "configs/x.toml:2:1: model.dropout: expected in [0, 1), got 1");
    CHECK(load_error("[optim]\nlr = nan\n") ==
          "configs/x.toml:2:1: optim.lr: expected in (0, 1], got nan");
    CHECK(load_error("[sampling]\nbatch_graphs = 0\n") ==
          "configs/x.toml:2:1: sampling.batch_graphs: expected >= 1, got 0");
}

TEST_CASE("inconsistent keys are errors naming the key") {
    CHECK(
        load_error("[sampling]\nconfig_pool = 8\n") ==
        "configs/x.toml:2:1: sampling.config_pool: expected 0 or >= sampling.configs = 32, got 8");
    CHECK(load_error("[data]\nholdout_folds = 5\nholdout_fold = 5\n") ==
          "configs/x.toml:3:1: data.holdout_fold: expected < data.holdout_folds = 5, got 5");
    CHECK(load_error("[data]\nholdout_folds = 1\n")
              .starts_with("configs/x.toml:2:1: data.holdout_folds: expected -1"));
    CHECK(load_error("[train]\nsteps = 0\n") ==
          "configs/x.toml:2:1: train.steps: expected train.steps > 0 or train.epochs > 0, got both "
          "0");
    CHECK(load_error("[data]\ncollections = [\"layout:xla:rand\"]\n")
              .starts_with("configs/x.toml:2:1: data.collections: expected \"tile:xla\" or"));
    CHECK(
        load_error("[data]\ncollections=[\"layout:xla:random\"]\n[model]\nconfig_join = \"late\"\n")
            .starts_with("configs/x.toml:4:1: model.config_join: \"late\" applies to tile "
                         "collections only"));
    CHECK(load_error("[loss]\nterms = []\n") ==
          "configs/x.toml:2:1: loss.terms: expected at least one term, got []");
    CHECK(
        load_error("[hwmodel]\nhardware = \"tpu_v9\"\n")
            .starts_with("configs/x.toml:2:1: hwmodel.hardware: expected one of \"tpu_v3_core\""));
    // Config slices: per_step ownership only, and configs whose scores do not depend on each other.
    CHECK(load_error("[dist]\nslice_configs = true\n") ==
          "configs/x.toml:2:1: dist.slice_configs: applies with dist.ownership = \"per_step\" (any "
          "rank trains any graph), got \"modulo\"");
    CHECK(load_error("[model]\nconfig_attention = true\n[dist]\nownership = \"per_step\"\n"
                     "slice_configs = true\n")
              .starts_with("configs/x.toml:5:1: dist.slice_configs: cannot split a graph's configs "
                           "with model.config_attention = true"));
    CHECK(load_config_string("[dist]\nownership = \"per_step\"\nslice_configs = true\n",
                             "configs/x.toml", {})
              .dist.slice_configs);
    // Segment units: per_step only, not with config slices, score_sum, no config attention.
    CHECK(load_error("[dist]\nsegment_units = true\n") ==
          "configs/x.toml:2:1: dist.segment_units: applies with dist.ownership = \"per_step\" (any "
          "rank trains any graph), got \"modulo\"");
    CHECK(load_error("[dist]\nownership = \"per_step\"\nslice_configs = true\nsegment_units = "
                     "true\n")
              .starts_with("configs/x.toml:4:1: dist.segment_units: and dist.slice_configs = true "
                           "exclude each other"));
    CHECK(load_error("[model]\naggregate = \"embedding_mean\"\n[dist]\nownership = "
                     "\"per_step\"\nsegment_units = true\n")
              .starts_with("configs/x.toml:5:1: dist.segment_units: needs model.aggregate = "
                           "\"score_sum\""));
    CHECK(load_error("[model]\nconfig_attention = true\n[dist]\nownership = \"per_step\"\n"
                     "segment_units = true\n")
              .starts_with("configs/x.toml:5:1: dist.segment_units: cannot split a graph's configs "
                           "with model.config_attention = true"));
    CHECK(load_config_string("[dist]\nownership = \"per_step\"\nsegment_units = true\n",
                             "configs/x.toml", {})
              .dist.segment_units);
}

TEST_CASE("a bad enum name lists the valid names") {
    CHECK(load_error("[segments]\npartition = \"kway\"\n") ==
          "configs/x.toml:2:1: segments.partition: expected one of \"contiguous\", \"splits\", "
          "\"metis\", "
          "got string \"kway\"");
    CHECK(load_error("[sampling]\nstrategy = \"biased\"\n") ==
          "configs/x.toml:2:1: sampling.strategy: expected one of \"uniform\", \"fast_biased\", "
          "\"stratified\", "
          "got string \"biased\"");
    CHECK(load_error("[eval]\nmetric = 5\n") ==
          "configs/x.toml:2:1: eval.metric: expected one of \"kaggle\", \"kendall\", \"opa\", "
          "\"slowdown_1\", "
          "\"slowdown_5\", \"slowdown_10\", got integer 5");
}

// Every name in the table of the enum behind `dotted` loads (--set) to its value and is written
// back by dump_config.
template <typename E, typename Get>
void check_names_round_trip(const std::string& dotted, Get get) {
    const std::string key = dotted.substr(dotted.find('.') + 1);
    for (const auto& e : enum_names(E{})) {
        CAPTURE(dotted);
        CAPTURE(e.name);
        const RunConfig c =
            load_config_string("", "<string>", {dotted + "=\"" + std::string(e.name) + "\""});
        CHECK(get(c) == e.value);
        CHECK(dump_config(c).find("\n" + key + " = \"" + std::string(e.name) + "\"") !=
              std::string::npos);
    }
}

TEST_CASE("enum keys read and write the names of the one table beside each enum") {
    check_names_round_trip<StoreFormat>("data.store",
                                        [](const RunConfig& c) { return c.data.store; });
    check_names_round_trip<cfg::Holdout>("data.holdout",
                                         [](const RunConfig& c) { return c.data.holdout; });
    check_names_round_trip<Activation>("model.activation",
                                       [](const RunConfig& c) { return c.model.activation; });
    check_names_round_trip<ConfigJoin>("model.config_join",
                                       [](const RunConfig& c) { return c.model.config_join; });
    check_names_round_trip<SegmentAggregate>("model.aggregate",
                                             [](const RunConfig& c) { return c.model.aggregate; });
    check_names_round_trip<PartitionMethod>(
        "segments.partition", [](const RunConfig& c) { return c.segments.partition; });
    check_names_round_trip<HistoryInit>("segments.history_init",
                                        [](const RunConfig& c) { return c.segments.history_init; });
    check_names_round_trip<ConfigStrategy>("sampling.strategy",
                                           [](const RunConfig& c) { return c.sampling.strategy; });
    check_names_round_trip<DedupeMode>("sampling.dedupe",
                                       [](const RunConfig& c) { return c.sampling.dedupe; });
    check_names_round_trip<LrScheduleKind>("optim.schedule",
                                           [](const RunConfig& c) { return c.optim.schedule; });
    check_names_round_trip<cfg::EvalMetric>("eval.metric",
                                            [](const RunConfig& c) { return c.eval.metric; });
    for (const auto& e : enum_names(LossKind{})) {
        CAPTURE(e.name);
        const std::string term = str("{ name = \"", e.name, "\", weight = 1.0 }");
        const RunConfig c = load_config_string("", "<string>", {"loss.terms=[" + term + "]"});
        CHECK(c.loss.terms == std::vector<LossTerm>{{e.value, 1.0}});
        CHECK(dump_config(c).find("\nterms = [" + term + "]") != std::string::npos);
    }
}

TEST_CASE("several problems are all reported, one per line") {
    const std::string msg = load_error("[optim]\nlr = -1\nbeta1 = 2.0\n[model]\nhiden = 3\n");
    CHECK(msg ==
          "configs/x.toml:2:1: optim.lr: expected in (0, 1], got -1\n"
          "configs/x.toml:3:1: optim.beta1: expected in [0, 1), got 2\n"
          "configs/x.toml:5:1: model.hiden: unknown key (did you mean 'model.hidden'?)");
    const std::string ranges = load_error("[optim]\nlr = -1\nbeta1 = 2.0\n");
    CHECK(ranges ==
          "configs/x.toml:2:1: optim.lr: expected in (0, 1], got -1\n"
          "configs/x.toml:3:1: optim.beta1: expected in [0, 1), got 2");
}

TEST_CASE("--set overrides are typed like the file and errors name the override") {
    const RunConfig cfg = load_config_string(
        "[optim]\nlr = 0.1\n", "t.toml",
        {"optim.lr=0.5", "train.run_dir=/tmp/run x", "data.collections=[\"tile:xla\"]",
         "model.activation=\"relu\"", "loss.terms=[{name=\"mse\", weight=2}]", "train.steps = 7"});
    CHECK(cfg.optim.lr == 0.5);
    CHECK(cfg.train.run_dir == "/tmp/run x");
    CHECK(cfg.data.collections == std::vector<std::string>{"tile:xla"});
    CHECK(cfg.model.activation == Activation::kRelu);
    CHECK(cfg.loss.terms == std::vector<LossTerm>{{LossKind::kMse, 2.0}});
    CHECK(cfg.train.steps == 7);

    CHECK(load_error("", {"optim.lr=-1"}) ==
          "--set optim.lr=-1: optim.lr: expected in (0, 1], got -1");
    CHECK(load_error("", {"optim.lr=abc"}) ==
          "--set optim.lr=abc: optim.lr: expected a number, got string \"abc\"");
    CHECK(load_error("[optim]\nlr = 0.1\n", {"optim.lrr=1"}) ==
          "--set optim.lrr=1: optim.lrr: unknown key (did you mean 'optim.lr'?)");
    CHECK(load_error("", {"optimm.lr=1"}) ==
          "--set optimm.lr=1: optimm: unknown section (did you mean 'optim'?)");
    CHECK(load_error("", {"lr=1"}) ==
          "--set lr=1: expected section.key=value (e.g. --set optim.lr=0.001)");
    CHECK(load_error("", {"optim.lr"}) ==
          "--set optim.lr: expected section.key=value (e.g. --set optim.lr=0.001)");
}

TEST_CASE("dump_config round-trips through load_config exactly") {
    CHECK(load_config_string(dump_config(RunConfig{}), "dump.toml") == RunConfig{});
    RunConfig c;
    c.data.root = "weird \"path\"\\with spaces";  // a control character (\t) is refused
    c.data.collections = {"layout:xla:random", "layout:nlp:default"};  // one task
    c.data.ingest = {"a.pb", "b.pb"};
    c.model.dropout = 0.1 + 0.2;  // not exactly representable in short decimal
    c.optim.lr = 3e-4;
    c.optim.eps = 1e-12;
    c.optim.schedule = LrScheduleKind::kConstant;
    c.loss.terms = {{LossKind::kListMle, 1.0}, {LossKind::kMse, 0.02}};
    c.segments.history_max_mb = 1LL << 40;
    c.train.progress = false;
    c.eval.metric = cfg::EvalMetric::kSlowdown10;
    const std::string text = dump_config(c);
    CHECK(load_config_string(text, "dump.toml") == c);
    CHECK(text.find("lr = 0.0003") != std::string::npos);
}

TEST_CASE("validate_config reports problems of a programmatic config by key") {
    RunConfig c;
    CHECK_NOTHROW(validate_config(c));
    c.optim.beta2 = 1.0;
    c.segments.fresh = 0;
    CHECK_THROWS_WITH_AS(
        validate_config(c),
        "segments.fresh: expected >= 1, got 0\noptim.beta2: expected in [0, 1), got 1", Error);
}

TEST_CASE("a missing file and a TOML syntax error name the file") {
    CHECK_THROWS_WITH_AS(load_config("/nonexistent/x.toml"),
                         "/nonexistent/x.toml: no such file (expected a TOML config file)", Error);
    const std::string msg = load_error("[optim]\nlr = = 1\n");
    CHECK(msg.starts_with("configs/x.toml:2:"));
    CHECK(msg.find("TOML parse error") != std::string::npos);
}

TEST_CASE("a directory given as the config file is an error naming it, not an empty config") {
    const std::string dir = segrank::test::scratch_dir("config_is_dir").string();
    CHECK_THROWS_WITH_AS(load_config(dir), (dir + ": is a directory, expected a TOML file").c_str(),
                         Error);
}

TEST_CASE("resolve_threads: explicit counts win, 0 divides the cores among local ranks") {
    RunConfig c;
    CHECK(resolve_threads(c, 1, 8) == 8);
    CHECK(resolve_threads(c, 2, 8) == 4);
    CHECK(resolve_threads(c, 4, 2) == 1);
    c.train.threads = 3;
    c.dist.threads_per_rank = 2;
    CHECK(resolve_threads(c, 1, 8) == 3);
    CHECK(resolve_threads(c, 2, 8) == 2);
}

TEST_CASE("edit_distance is the Levenshtein distance") {
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("lr", "lrr") == 1);
    CHECK(edit_distance("kitten", "sitting") == 3);
    CHECK(edit_distance("abc", "") == 3);
}

TEST_CASE("save_config writes the effective config that load_config reads back") {
    RunConfig c;
    c.train.steps = 42;
    c.sampling.strategy = ConfigStrategy::kStratified;
    const auto file = test::scratch_dir("save_config") / "run" / "config.toml";
    save_config(c, file);
    CHECK(load_config(file.string()) == c);
    CHECK(std::distance(std::filesystem::directory_iterator(file.parent_path()), {}) ==
          1);  // no temporary file
}

TEST_CASE("loss terms: unknown keys, a missing name and a non-table are errors at the terms key") {
    CHECK(load_error("[loss]\nterms = [{name = \"mse\", wieght = 2}]\n") ==
          "configs/x.toml:2:1: loss.terms[0]: unknown key 'wieght' (valid: name, weight) (did you "
          "mean 'weight'?)");
    CHECK(load_error("[loss]\nterms = [{weight = 2}]\n") ==
          "configs/x.toml:2:1: loss.terms[0]: missing key 'name'");
    CHECK(load_error("[loss]\nterms = [\"mse\"]\n") ==
          "configs/x.toml:2:1: loss.terms[0]: expected a table {name = \"...\", weight = ...}, got "
          "string \"mse\"");
    CHECK(load_error("[loss]\nterms = [{name = \"mse\", weight = -1}]\n") ==
          "configs/x.toml:2:1: loss.terms: expected weight >= 0 for \"mse\", got -1");
}
