// Hostile config values (ctest label `hostile`): control characters in string values.
#include <doctest/doctest.h>

#include <string>

#include "tests/trainer/config_test_util.h"
#include "trainer/config.h"

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
}
