// util/json: the one writer and number format of segrank's JSON, and reading it back with errors
// that name file:line:col.
#include "util/json.h"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "gnn/core/check.h"
#include "tests/support/test_paths.h"

using namespace segrank;

TEST_CASE("dump_json writes compact JSON with keys in insertion order") {
    const Json doc = {
        {"phase", "train"}, {"step", 5}, {"b", true}, {"a", Json::array({1, 2})}, {"z", nullptr}};
    CHECK(dump_json(doc) == R"({"phase":"train","step":5,"b":true,"a":[1,2],"z":null})");
}

TEST_CASE("doubles are spelled in one shortest round-trip form, non-finite values as null") {
    CHECK(format_number(0.1) == "0.1");
    CHECK(format_number(2.0) == "2.0");
    CHECK(format_number(-0.25) == "-0.25");
    CHECK(format_number(1e-5) == "1e-05");
    CHECK(format_number(1.5e20) == "1.5e+20");
    CHECK(format_number(1.0 / 3.0) == "0.3333333333333333");
    CHECK(format_number(NAN) == "null");
    CHECK(format_number(-INFINITY) == "null");
    CHECK(dump_json(Json{{"x", 0.1}, {"n", int64_t{3}}}) == R"({"x":0.1,"n":3})");
    for (double d : {0.1, 1.0 / 3.0, 6.02214076e23, -2.5e-300, 123456789.125}) {
        CHECK(read_json(format_number(d), "n").get<double>() == d);
    }
}

TEST_CASE(
    "dump_json escapes quotes and control characters and replaces invalid UTF-8 instead of "
    "throwing") {
    CHECK(dump_json(Json("a\"b\\c\n\x01")) == R"("a\"b\\c\n\u0001")");
    CHECK(dump_json(Json("caf\xC3\xA9")) == "\"caf\xC3\xA9\"");
    CHECK(dump_json(Json("bad\xFF")) == "\"bad\xEF\xBF\xBD\"");  // U+FFFD
}

TEST_CASE("read_json errors name where, line and column, counting from first_line") {
    CHECK_THROWS_WITH_AS(read_json("{oops", "m.jsonl", 2),
                         doctest::Contains("m.jsonl:2:2: syntax error"), Error);
    CHECK_THROWS_WITH_AS(read_json("{\"a\": 1,\n  \"b\" 2}", "t.json"),
                         doctest::Contains("t.json:2:7: "), Error);
    CHECK_THROWS_WITH_AS(read_json("[1, 2", "t.json"), doctest::Contains("t.json:1:"), Error);
    const auto dir = test::scratch_dir("util_json");
    CHECK_THROWS_WITH_AS(read_json_file(dir / "absent.json"),
                         doctest::Contains("absent.json: no such file (expected a JSON file)"),
                         Error);
    std::ofstream(dir / "ok.json") << R"({"k": [1]})";
    CHECK(read_json_file(dir / "ok.json")["k"][0] == 1);
}

TEST_CASE(
    "read_json names where, line and column of a number beyond the double range instead of "
    "throwing nlohmann's out_of_range" *
    doctest::test_suite("hostile")) {
    CHECK_THROWS_WITH_AS(read_json(R"({"step":1,"loss":1e999})", "r/metrics.jsonl", 4),
                         doctest::Contains("r/metrics.jsonl:4:"), Error);
    CHECK_THROWS_WITH_AS(read_json(R"({"step":1,"loss":1e999})", "m.jsonl"),
                         doctest::Contains("number overflow parsing '1e999'"), Error);
    CHECK_THROWS_WITH_AS(read_json("{\n  \"a\": [1,\n  -2E+400]}", "t.json"),
                         doctest::Contains("t.json:3:"), Error);
    try {
        read_json("[1e999]", "x.json");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("json.exception") == std::string::npos);
    }
    const auto dir = test::scratch_dir("util_json_overflow");
    std::ofstream(dir / "best.json") << "{\"score\": 1e999}\n";
    const std::string named = (dir / "best.json").string() + ":1:";
    CHECK_THROWS_WITH_AS(read_json_file(dir / "best.json"), doctest::Contains(named.c_str()),
                         Error);
    // Large but finite numbers and big integers still parse.
    CHECK(read_json("1e308", "n").get<double>() == 1e308);
    CHECK(read_json("123456789012345678901234567890", "n").is_number());
}

TEST_CASE("json_number_or_nan and json_string read members leniently") {
    const Json v = read_json(R"({"x": 1.5, "n": null, "s": "t", "i": 7})", "v");
    CHECK(json_number_or_nan(v, "x") == 1.5);
    CHECK(json_number_or_nan(v, "i") == 7.0);
    CHECK(std::isnan(json_number_or_nan(v, "n")));
    CHECK(std::isnan(json_number_or_nan(v, "s")));
    CHECK(std::isnan(json_number_or_nan(v, "absent")));
    CHECK(std::isnan(json_number_or_nan(Json::array({1}), "x")));
    CHECK(json_string(v, "s") == std::optional<std::string>("t"));
    CHECK_FALSE(json_string(v, "x").has_value());
    CHECK_FALSE(json_string(Json(3), "s").has_value());
}
