// util/json_value: the located JSON parser of user-written files (positions of values, exact
// integer literals, strict syntax), and that it reads what util/json.h writes.
#include "util/json_value.h"

#include <doctest/doctest.h>

#include <cmath>

#include "gnn/core/check.h"
#include "util/json.h"

using namespace segrank;

TEST_CASE("parsed JSON values record the line and column of their first character") {
    const JsonValue v = parse_json("{\"a\": [1,\n   true],\n\"b\":  \"x\"}", "p.json", 10);
    CHECK(v.line() == 10);
    CHECK(v.column() == 1);
    const JsonValue& a = *v.find("a");
    CHECK(a.line() == 10);
    CHECK(a.column() == 7);
    REQUIRE(a.items().size() == 2);
    CHECK(a.items()[0].column() == 8);
    CHECK(a.items()[1].line() == 11);
    CHECK(a.items()[1].column() == 4);
    const JsonValue& b = *v.find("b");
    CHECK(b.line() == 12);
    CHECK(b.column() == 7);
    CHECK(b.location("p.json") == "p.json:12:7");
    CHECK(JsonValue::number(1).line() == 0);
}

TEST_CASE(
    "integer literals keep their exact int64 value, fractions, exponents and overflow do not") {
    const JsonValue v =
        parse_json("[0, -7, 9007199254740993, 1.0, 1e2, 99999999999999999999, \"3\"]", "i");
    const auto& it = v.items();
    REQUIRE(it.size() == 7);
    CHECK(it[0].as_integer() == 0);
    CHECK(it[1].as_integer() == -7);
    CHECK(it[2].as_integer() == int64_t{9007199254740993});  // above 2^53: a double would round it
    CHECK_FALSE(it[3].as_integer().has_value());
    CHECK(it[3].as_number() == 1.0);
    CHECK_FALSE(it[4].as_integer().has_value());
    CHECK_FALSE(it[5].as_integer().has_value());
    CHECK(it[5].as_number() == doctest::Approx(1e20));
    CHECK_FALSE(it[6].as_integer().has_value());
}

TEST_CASE("syntax errors after newlines name the right line and column") {
    CHECK_THROWS_WITH_AS(parse_json("{\"a\": 1,\n\n   \"b\": x}", "e.json"),
                         doctest::Contains("e.json:3:9: expected a JSON value"), Error);
    CHECK_THROWS_WITH_AS(parse_json("[1,\r\n 2,,]", "e.json", 5), doctest::Contains("e.json:6:4:"),
                         Error);
}

TEST_CASE("strings and numbers written by dump_json parse back exactly through parse_json") {
    const std::string text = std::string("tab\there \"q\" back\\slash \x01 ") + "\xc3\xa9";
    CHECK(parse_json(dump_json(Json(text)), "q").as_string() == text);
    for (double d : {0.1, -2.5e-300, 1e300, 123456789.0, 1.0 / 3.0, 2.0, 1e-5, 5e-324}) {
        INFO(dump_json(Json(d)));
        CHECK(parse_json(dump_json(Json(d)), "n").as_number() == d);
    }
    CHECK(parse_json(dump_json(Json(NAN)), "n").is_null());
    CHECK(parse_json(dump_json(Json(-INFINITY)), "n").is_null());
}

TEST_CASE("parse_json reads objects, arrays, escapes and numbers, errors name line:column") {
    const JsonValue v = parse_json(
        "{\"a\": [1, -2.5e3, true, null],\n \"s\": \"x\\n\\u00e9\\ud83d\\ude00\"}", "t.json");
    REQUIRE(v.is_object());
    const auto& a = v.find("a")->items();
    REQUIRE(a.size() == 4);
    CHECK(a[1].as_number() == -2500.0);
    CHECK(a[2].as_bool());
    CHECK(a[3].is_null());
    CHECK(*v.string_at("s") == "x\n\xC3\xA9\xF0\x9F\x98\x80");
    CHECK_FALSE(v.number_at("s").has_value());
    CHECK_THROWS_WITH_AS(parse_json("{\"a\": 1,\n  \"b\" 2}", "t.json"),
                         doctest::Contains("t.json:2:7: expected ':' after an object key"), Error);
    CHECK_THROWS_WITH_AS(parse_json("[1, 2", "t.json"), doctest::Contains("expected ',' or ']'"),
                         Error);
    CHECK_THROWS_WITH_AS(parse_json("{\"a\":1,\"a\":2}", "t.json"),
                         doctest::Contains("\"a\" repeats"), Error);
    CHECK_THROWS_WITH_AS(parse_json("01", "t.json"),
                         doctest::Contains("end of input after the JSON value"), Error);
}
