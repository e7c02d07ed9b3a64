// Submission and scores CSV (eval/submission.h): round trips and file:line validation errors.
#include "eval/submission.h"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "gnn/core/check.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

std::filesystem::path write_text(const std::string& name, const std::string& text) {
    const auto p = test::scratch_dir("submission") / name;
    std::ofstream(p) << text;
    return p;
}

}  // namespace

TEST_CASE("top_configs sorts by ascending score, keeps 5 for tile and all for layout, NaN last") {
    const std::vector<double> s = {5, 1, 3, 1, std::nan(""), 0, 9};
    CHECK(top_configs(s, Task::kTile) == std::vector<int64_t>{5, 1, 3, 2, 0});
    CHECK(top_configs(s, Task::kLayout) == std::vector<int64_t>{5, 1, 3, 2, 0, 6, 4});
    CHECK(top_configs(std::vector<double>{2, 1}, Task::kTile) == std::vector<int64_t>{1, 0});
}

TEST_CASE("submission IDs follow the Kaggle collection names") {
    CHECK(submission_id(CollectionId{Task::kTile, Source::kXla, Search::kNone, Split::kTest},
                        "abc") == "tile:xla:abc");
    CHECK(submission_id(CollectionId{Task::kLayout, Source::kNlp, Search::kRandom, Split::kTest},
                        "x") == "layout:nlp:random:x");
}

TEST_CASE("submission and scores CSVs round-trip") {
    const auto dir = test::scratch_dir("submission_rt");
    const std::vector<SubmissionRow> rows = {{"tile:xla:a", {3, 0, 1}, ""},
                                             {"layout:xla:default:b", {1, 0}, ""}};
    write_submission(dir / "sub.csv", rows);
    const auto back = read_submission(dir / "sub.csv");
    REQUIRE(back.size() == 2);
    CHECK(back[0].id == "tile:xla:a");
    CHECK(back[0].top_configs == std::vector<int64_t>{3, 0, 1});
    CHECK(back[1].where == (dir / "sub.csv").string() + ":3");
    const std::vector<ScoreRow> scores = {
        {"tile:xla:a", 0, 1234.5678901234567, ""},
        {"tile:xla:a", 1, std::numeric_limits<double>::infinity(), ""}};
    write_scores(dir / "scores.csv", scores);
    const auto sb = read_scores(dir / "scores.csv");
    REQUIRE(sb.size() == 2);
    CHECK(sb[0].score == 1234.5678901234567);
    CHECK(std::isinf(sb[1].score));
}

TEST_CASE("malformed submissions name the file and line") {
    CHECK_THROWS_WITH_AS(read_submission(write_text("h.csv", "id,top\n")),
                         doctest::Contains("h.csv:1"), Error);
    CHECK_THROWS_WITH_AS(read_submission(write_text("f.csv", "ID,TopConfigs\na,1;2\nb\n")),
                         doctest::Contains("f.csv:3: expected 2 fields"), Error);
    CHECK_THROWS_WITH_AS(read_submission(write_text("n.csv", "ID,TopConfigs\na,1;x\n")),
                         doctest::Contains("n.csv:2: TopConfigs entry 'x'"), Error);
    CHECK_THROWS_WITH_AS(read_submission(write_text("d.csv", "ID,TopConfigs\na,1\na,2\n")),
                         doctest::Contains("d.csv:3: ID 'a' repeated"), Error);
    CHECK_THROWS_WITH_AS(read_submission(write_text("r.csv", "ID,TopConfigs\na,1;1\n")),
                         doctest::Contains("r.csv:2: config index 1 repeated"), Error);
    CHECK_THROWS_WITH_AS(read_scores(write_text("s.csv", "ID,config,score\na,0,abc\n")),
                         doctest::Contains("s.csv:2: score 'abc'"), Error);
    CHECK_THROWS_WITH_AS(read_scores(write_text("c.csv", "ID,config,score\na,-1,2\n")),
                         doctest::Contains("c.csv:2: config '-1'"), Error);
    CHECK(read_submission(write_text("crlf.csv", "ID,TopConfigs\r\na,2;0\r\n"))[0].top_configs ==
          std::vector<int64_t>{2, 0});
}
