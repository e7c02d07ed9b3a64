// TextTable (util/text_table.h): aligned text, Markdown and CSV renderings of the same cells.
#include "util/text_table.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace segrank;

TEST_CASE(
    "format_text pads every column to its widest cell, names left, numbers right, no trailing "
    "blanks") {
    TextTable t;
    t.header = {"graph", "configs", "score"};
    t.rows = {{"a", "3", "0.5000"}, {"longer_name", "1001", ""}};
    CHECK(format_text(t) ==
          "graph        configs   score\n"
          "a                  3  0.5000\n"
          "longer_name     1001\n");
    CHECK(format_text(t, 1, "  ") ==
          "  graph       configs  score\n"
          "  a                 3 0.5000\n"
          "  longer_name    1001\n");
}

TEST_CASE("explicit alignment and rows shorter than the header") {
    TextTable t;
    t.header = {"rank", "name", "status"};
    t.align = {Align::kRight, Align::kLeft, Align::kLeft};
    t.rows = {{"1", "model", "ok"}, {"", "broken"}};
    CHECK(format_text(t) ==
          "rank  name    status\n"
          "   1  model   ok\n"
          "      broken\n");
}

TEST_CASE("format_markdown escapes pipes and writes the alignment row") {
    TextTable t;
    t.header = {"rank", "name"};
    t.align = {Align::kRight, Align::kLeft};
    t.rows = {{"1", "a|b"}};
    CHECK(format_markdown(t) == "| rank | name |\n| ---: | --- |\n| 1 | a\\|b |\n");
    CHECK(format_markdown(TextTable{}) == "");
}

TEST_CASE("format_csv quotes fields with commas, quotes and line breaks") {
    TextTable t;
    t.header = {"name", "note"};
    t.rows = {{"x,y", "say \"hi\""}, {"plain", "two\nlines"}};
    CHECK(format_csv(t) == "name,note\n\"x,y\",\"say \"\"hi\"\"\"\nplain,\"two\nlines\"\n");
}

TEST_CASE("format_fixed rounds to the given decimals and maps non-finite values") {
    CHECK(format_fixed(0.123456, 4) == "0.1235");
    CHECK(format_fixed(-1.0, 2) == "-1.00");
    CHECK(format_fixed(std::nan(""), 4) == "");
    CHECK(format_fixed(INFINITY, 4, "nan") == "nan");
}

TEST_CASE(
    "parse_csv_records reads back what format_csv writes, with the line each record starts on") {
    TextTable t;
    t.header = {"name", "note"};
    t.rows = {{"x,y", "say \"hi\""}, {"plain", "two\nlines"}, {"last", ""}};
    const auto recs = parse_csv_records(format_csv(t), "t.csv");
    REQUIRE(recs.size() == 4);
    CHECK(recs[0].fields == t.header);
    CHECK(recs[1].fields == t.rows[0]);
    CHECK(recs[2].fields == t.rows[1]);
    CHECK(recs[3].fields == t.rows[2]);
    CHECK(recs[3].line == 5);  // the quoted line break moved it down one line
    const auto crlf = parse_csv_records("a,b\r\n\r\n1,2\r\n", "c.csv");
    REQUIRE(crlf.size() == 2);
    CHECK(crlf[1].fields == std::vector<std::string>{"1", "2"});
    CHECK(crlf[1].line == 3);
    CHECK_THROWS_WITH(parse_csv_records("a,b\n\"open,2\n", "u.csv"),
                      doctest::Contains("u.csv:2: unterminated quoted field"));
}
