// Hostile config values (ctest label `hostile`): control characters in string values, a --set that
// holds a line break, and optimizer / loss scales beyond their documented bounds.
#include <doctest/doctest.h>

#include <string>

#include "tests/trainer/config_test_util.h"
#include "trainer/config.h"
#include "trainer/config_options.h"

using namespace segrank;
using segrank::test::load_error;

TEST_SUITE("hostile") {
    TEST_CASE(
        "a NUL or another control character in a string value is refused naming the key and where "
        "it was set") {
        // A NUL would cut the path the run opens (leaving a folder 'x') and every message quoting
        // it; the message shows it escaped and is the only one about the key.
        CHECK(load_error("[train]\nrun_dir = \"x\\u0000y\"\n") ==
              "configs/x.toml:2:1: train.run_dir: contains a NUL character (\\u0000 at offset 1); "
              "expected a path (no control characters)");
        CHECK(load_error("", {"data.root=\"/tmp/d\\u0000zzz\""}) ==
              "--set data.root=\"/tmp/d\\u0000zzz\": data.root: contains a NUL character (\\u0000 "
              "at offset 6); expected a path (no control characters)");
        CHECK(load_error("[eval]\nindices = \"a\\nb.json\"\n") ==
              "configs/x.toml:2:1: eval.indices: contains a line break (\\u000a at offset 1); "
              "expected a path (no control characters)");
        CHECK(load_error("[data]\ningest = [\"a.pb\", \"b\\u001b[2J.pb\"]\n") ==
              "configs/x.toml:2:1: data.ingest: element 1 contains an escape character (\\u001b at "
              "offset 1); expected a path (no control characters)");
        // Keys checked against a list of names: the one message, not the list's quoting the NUL.
        CHECK(
            load_error("[data]\ncollections = [\"tile:xla\\u0000\"]\nvalid_split = \"va\\tl\"\n") ==
            "configs/x.toml:2:1: data.collections: element 0 contains a NUL character (\\u0000 at "
            "offset 8); expected a name (no control characters)\n"
            "configs/x.toml:3:1: data.valid_split: contains a tab (\\u0009 at offset 2); "
            "expected a name (no control characters)");
        CHECK(load_error("", {"hwmodel.hardware=\"tpu\\u007f\""})
                  .find("hwmodel.hardware: contains a control character (\\u007f at offset 3)") !=
              std::string::npos);
        // A config built in code is checked the same way.
        RunConfig c;
        c.train.run_dir = std::string("run\0x", 5);
        CHECK_THROWS_WITH_AS(validate_config(c),
                             "train.run_dir: contains a NUL character (\\u0000 at offset 3); "
                             "expected a path (no control characters)",
                             Error);
    }

    TEST_CASE("a --set whose value holds a line break is refused, not cut to its first line") {
        // TOML would read the lines after the first as keys of the value's own document, which
        // the override drops: train.steps = 1 would silently not apply.
        CHECK(load_error("", {"model.hidden=16\n[train]\nsteps=1"}) ==
              "--set model.hidden=16\\n[train]\\nsteps=1: holds a line break (\\n at offset 15); "
              "expected one section.key=value on one line, e.g. --set optim.lr=0.001 (give each "
              "key its own --set)");
        CHECK(load_error("", {"data.collections=[\"tile:xla\",\r\n\"layout:xla:random\"]"})
                  .find("holds a line break (\\r at offset 29)") != std::string::npos);
        // Other messages about a --set show its control characters escaped: one message, one line.
        CHECK(load_error("", {"model.hid\tden=3"}).starts_with("--set model.hid\\tden=3: "));
    }

    TEST_CASE(
        "optimizer and loss scales beyond their documented upper bounds fail in the loader naming "
        "the key") {
        CHECK(load_error("[optim]\nlr = 1e308\n") ==
              "configs/x.toml:2:1: optim.lr: expected in (0, 1], got 1e+308");
        CHECK(load_error("", {"optim.lr=1e30"}) ==
              "--set optim.lr=1e30: optim.lr: expected in (0, 1], got 1e+30");
        CHECK(
            load_error("", {"optim.weight_decay=1e308"}) ==
            "--set optim.weight_decay=1e308: optim.weight_decay: expected in [0, 10], got 1e+308");
        CHECK(load_error("", {"optim.eps=1e308"}) ==
              "--set optim.eps=1e308: optim.eps: expected in (0, 1], got 1e+308");
        CHECK(load_error("", {"loss.temperature=1e308"}) ==
              "--set loss.temperature=1e308: loss.temperature: expected in [0.001, 1000], got "
              "1e+308");
        CHECK(load_error("", {"loss.temperature=1e-300"}).find("expected in [0.001, 1000]") !=
              std::string::npos);
        CHECK(load_error("", {"loss.margin=1e308"}) ==
              "--set loss.margin=1e308: loss.margin: expected in [0, 100], got 1e+308");
        CHECK(load_error("[loss]\nterms = [{name = \"listmle\", weight = 1e308}]\n") ==
              "configs/x.toml:2:1: loss.terms: expected weight <= 1000 for \"listmle\" "
              "(docs/config.md#model-size-bounds), got 1e+308");
        // AdamW scales each weight matrix by 1 - lr * weight_decay per step.
        CHECK(load_error("[optim]\nlr = 0.5\nweight_decay = 2\n") ==
              "configs/x.toml:3:1: optim.weight_decay: expected optim.lr * optim.weight_decay < 1 "
              "(AdamW scales each weight matrix by 1 - lr * weight_decay per step: 0 or less "
              "zeroes or flips it), got 0.5 * 2");
        // The bounds themselves are accepted.
        CHECK_NOTHROW(load_config_string(
            "[optim]\nlr = 1\neps = 1\nweight_decay = 0.5\n[loss]\ntemperature = 1000\nmargin = "
            "100\nterms = [{name = \"listmle\", weight = 1000}]\n",
            "configs/x.toml", {}));
        CHECK_NOTHROW(
            load_config_string("[optim]\nweight_decay = 10\nlr = 0.01\n[loss]\n"
                               "temperature = 0.001\n",
                               "configs/x.toml", {}));
    }

    TEST_CASE(
        "an inference budget out of range, or a cache that does not fit it, is refused naming the "
        "keys") {
        CHECK(load_error("[eval]\nmemory_mb = 8\n")
                  .starts_with(
                      "configs/x.toml:2:1: eval.memory_mb: expected in [16, 1048576], got 8"));
        CHECK(load_error("", {"eval.cache_mb=-2"}).find("eval.cache_mb: expected in [-1, ") !=
              std::string::npos);
        CHECK(load_error("[eval]\nmemory_mb = 256\ncache_mb = 200\n") ==
              "configs/x.toml:3:1: eval.cache_mb: expected at most half of eval.memory_mb = 256 "
              "(128 MiB: the inference cache is taken out of the memory budget, the rest holds "
              "the chunks), got 200; lower eval.cache_mb (-1 = a quarter of the budget) or raise "
              "eval.memory_mb");
        // Earlier checkpoints store eval.cache_mb = 256: the default budget takes it.
        CHECK_NOTHROW(load_config_string("[eval]\ncache_mb = 256\n", "configs/x.toml", {}));
        CHECK_NOTHROW(
            load_config_string("[eval]\nmemory_mb = 16\ncache_mb = 8\n", "configs/x.toml", {}));
    }

    TEST_CASE("the non-finite loss message of a training step names the keys that scale the loss") {
        const RunConfig c =
            load_config_string("[optim]\nlr = 0.5\n", "configs/x.toml", {"loss.temperature=2"});
        const std::string hint = gst_options_from(c).nonfinite_hint;
        CHECK(hint ==
              " (the settings that scale the loss, its gradients and the updates: optim.lr = 0.5 "
              "(configs/x.toml:2:1), optim.weight_decay = 0.01, optim.clip_norm = 1.0, loss.terms "
              "= [listmle weight 1.0], loss.temperature = 2.0 (--set loss.temperature=2), "
              "loss.margin = 0.1; lower the one set too high, docs/config.md#model-size-bounds)");
    }
}
