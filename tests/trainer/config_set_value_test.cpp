// `--set key=value` values toml++ cannot parse (docs/config.md#errors): a value meant as TOML (a
// number, array, inline table, boolean, quoted string) that does not parse is reported with the
// parser's reason for a key that holds no string; a number beyond a double or 64 bits inside an
// array or table is out of range naming its item; bare words stay strings.
#include <doctest/doctest.h>

#include <string>

#include "gnn/core/check.h"
#include "tests/trainer/config_test_util.h"
#include "trainer/config.h"
#include "trainer/config_literal.h"

namespace segrank::test {

TEST_CASE("looks_like_toml_value: numbers, arrays, tables, quotes and true/false-ish words" *
          doctest::test_suite("hostile")) {
    using cfg::detail::looks_like_toml_value;
    for (const char* v : {"1e400x", "12x", "-kendall", "+1", ".5", "[tile:xla]", "{a=1", "\"abc",
                          "'abc", "True", "FALSE", "falsey"})
        CHECK_MESSAGE(looks_like_toml_value(v), v);
    for (const char* v : {"", "kendall", "tile:xla", "tru", "runs/x", "abc1"})
        CHECK_MESSAGE(!looks_like_toml_value(v), v);
}

TEST_CASE("a --set value meant as TOML that does not parse names the key and the parser's reason" *
          doctest::test_suite("hostile")) {
    const std::string lr = load_error("", {"optim.lr=1e400x"});
    CHECK(lr.starts_with("--set optim.lr=1e400x: optim.lr: not a valid TOML value: "));
    CHECK(lr.find("saw 'x'") != std::string::npos);
    CHECK(lr.find("got string") == std::string::npos);
    CHECK(load_error("", {"model.hidden=12x"})
              .starts_with("--set model.hidden=12x: model.hidden: not a valid TOML value: "));
    CHECK(load_error("", {"data.normalize=True"})
              .starts_with("--set data.normalize=True: data.normalize: not a valid TOML value: "));
    const std::string terms = load_error("", {"loss.terms=[{name=\"mse\",weight=1}"});
    CHECK(
        terms.starts_with("--set loss.terms=[{name=\"mse\",weight=1}: loss.terms: not a valid "
                          "TOML value: "));
    CHECK(terms.find("end-of-file") != std::string::npos);
    CHECK(load_error("", {"data.collections=[tile:xla]"})
              .starts_with("--set data.collections=[tile:xla]: data.collections: not a valid "
                           "TOML value: "));
    // Only that message for the key: no follow-up problem about its default.
    CHECK(lr.find('\n') == std::string::npos);
}

TEST_CASE(
    "a --set number beyond a double inside an array of tables is out of range naming the "
    "item" *
    doctest::test_suite("hostile")) {
    CHECK(load_error("", {"loss.terms=[{name=\"mse\",weight=1e400}]"}) ==
          "--set loss.terms=[{name=\"mse\",weight=1e400}]: loss.terms[0].weight: 1e400 is out of "
          "range of a double (expected a finite number)");
    const std::string both = load_error("", {"loss.terms=[{kind=\"mse\",weight=1e400}]"});
    CHECK(both.find("loss.terms[0]: unknown key 'kind' (valid: name, weight)") !=
          std::string::npos);
    CHECK(both.find("loss.terms[0].weight: 1e400 is out of range of a double") !=
          std::string::npos);
    CHECK(load_error("", {"loss.terms=[{name=\"mse\",weight=99999999999999999999}]"})
              .find("loss.terms[0].weight: out of range: 99999999999999999999 is beyond a 64-bit "
                    "TOML integer") != std::string::npos);
    // The top-level value keeps its message.
    CHECK(load_error("", {"optim.lr=1e400"}) ==
          "--set optim.lr=1e400: optim.lr: 1e400 is out of range of a double (expected in (0, "
          "1])");
}

TEST_CASE("bare --set words stay strings: enum names, paths, single collections" *
          doctest::test_suite("hostile")) {
    const RunConfig cfg = load_config_string("", "configs/x.toml",
                                             {"eval.metric=kendall", "train.run_dir=1run",
                                              "data.root=[odd", "data.collections=tile:xla"});
    CHECK(cfg.eval.metric == cfg::EvalMetric::kKendall);
    CHECK(cfg.train.run_dir == "1run");
    CHECK(cfg.data.root == "[odd");
    CHECK(cfg.data.collections == std::vector<std::string>{"tile:xla"});
    // A word that is no TOML value for a number key is still "expected a number, got string".
    CHECK(load_error("", {"optim.lr=abc"}) ==
          "--set optim.lr=abc: optim.lr: expected a number, got string \"abc\"");
}

}  // namespace segrank::test
