// Exploration of segrank tune's rounds: how many picks of a round explore (RoundSchedule::explore,
// tune/search.h), and which lines of measurements.jsonl were exploration picks, "explored" or,
// in a file written before that field, inferred (tune::exploration_picks,
// tune/measurements_file.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gnn/core/check.h"
#include "tests/support/test_paths.h"
#include "tune/explore.h"
#include "tune/measurements_file.h"
#include "tune/search.h"

using namespace segrank;
using namespace segrank::tune;
namespace fs = std::filesystem;

namespace {

// The rounds of a run of `budget` measurements with `schedule` after the default: per round
// {configs, exploration picks}.
std::vector<std::pair<int64_t, int64_t>> rounds_of(const RoundSchedule& schedule, int64_t budget) {
    std::vector<std::pair<int64_t, int64_t>> out;
    int64_t measured = 1, explored = 0;
    while (measured < budget) {
        const int64_t k = std::min(schedule.size(measured), budget - measured);
        const int64_t x = schedule.explore(k, measured, explored);
        out.emplace_back(k, x);
        measured += k;
        explored += x;
    }
    return out;
}

int64_t explored_in(const std::vector<std::pair<int64_t, int64_t>>& rounds, size_t first_rounds) {
    int64_t n = 0;
    for (size_t i = 0; i < first_rounds && i < rounds.size(); ++i) n += rounds[i].second;
    return n;
}

// A layout line of a graph with 2 configurable nodes; `config` names it.
std::string line(int64_t round, int64_t config, const std::string& tail) {
    return str(R"({"round":)", round, R"(,"config":)", config, R"(,"measured_ns":)", 100 + config,
               tail, "}\n");
}

MeasurementsFile read(const fs::path& file, const std::string& text) {
    test::write_file_text(file, text);
    return read_measurements_file(file, ConfigBound{12, "tune.json", "layout", 2});
}

std::string read_message(const fs::path& file, const std::string& text) {
    try {
        (void)read(file, text);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE(
    "a fixed round explores a quarter of itself, at least one config of a round of 2 or "
    "more, whatever the run explored before") {
    const RoundSchedule fixed = RoundSchedule::fixed(8);
    CHECK(fixed.explore(1, 10, 0) == 0);
    CHECK(fixed.explore(2, 1, 0) == 1);
    CHECK(fixed.explore(5, 50, 50) == 1);
    CHECK(fixed.explore(8, 3, 0) == 2);
    CHECK(fixed.explore(8, 100, 90) == 2);
    // Rounds of 5 over 100 measurements: 20 rounds (the last of 4), one exploration pick each.
    CHECK(explored_in(rounds_of(RoundSchedule::fixed(5), 100), 100) == 20);
}

TEST_CASE(
    "growing rounds explore only while fewer than a quarter of the measurements so far were "
    "exploration picks, so rounds of 2 alternate exploring and exploiting") {
    const RoundSchedule grow = RoundSchedule::growing(8);
    CHECK(grow.explore(2, 1, 0) == 1);    // after the default: 0 of 1 explored
    CHECK(grow.explore(2, 3, 1) == 0);    // 1 of 3 is a quarter or more: both picks best-ranked
    CHECK(grow.explore(2, 5, 1) == 1);    // 1 of 5 is less
    CHECK(grow.explore(8, 41, 10) == 2);  // a large round explores a quarter of itself
    CHECK(grow.explore(8, 40, 10) == 0);
    CHECK(grow.explore(1, 100, 0) == 0);  // a round of 1 goes to the best-ranked config
    const auto rounds = rounds_of(grow, 100);
    // Rounds of 2 up to 21 measured: every other one explores (5 of the first 21 measurements).
    REQUIRE(rounds.size() == 25);
    for (size_t i = 0; i < 10; ++i) {
        INFO("round ", i + 1);
        CHECK(rounds[i] == std::pair<int64_t, int64_t>{2, i % 2 == 0 ? 1 : 0});
    }
    CHECK(explored_in(rounds, 10) == 5);
    // 21 of 100 in all (per round explore() of 2, 3, 4: 1; of 8: 2), against 27 when every
    // round of 2 or more explored a quarter of itself.
    CHECK(explored_in(rounds, rounds.size()) == 21);
    int64_t per_round = 0;
    for (const auto& [k, x] : rounds) per_round += RoundSchedule::fixed(k).explore(k, 1, 0);
    CHECK(per_round == 27);
}

TEST_CASE("RoundSchedule::explore refuses counts no run can have") {
    const RoundSchedule grow = RoundSchedule::growing(8);
    CHECK_THROWS_WITH(grow.explore(0, 5, 0), doctest::Contains("expected k >= 1"));
    CHECK_THROWS_WITH(grow.explore(2, 5, 6), doctest::Contains("6 explored of 5 measured"));
    CHECK_THROWS_WITH(grow.explore(2, 5, -1), doctest::Contains("0 <= explored <= measured"));
}

TEST_CASE(
    "measurements.jsonl: \"explored\" is read, a file without it counts the last quarter of "
    "each round as explored, and a value tune cannot write is refused") {
    const fs::path dir = test::scratch_dir("tune_exploration_lines");
    const fs::path file = dir / "measurements.jsonl";
    // Written by segrank tune with the field: taken as written.
    const MeasurementsFile with =
        read(file, line(0, 0, R"(,"explored":false)") + line(1, 1, R"(,"explored":false)") +
                       line(1, 2, R"(,"explored":true)") + line(2, 3, R"(,"explored":false)") +
                       line(2, 4, R"(,"explored":false)"));
    REQUIRE(with.lines.size() == 5);
    CHECK(with.lines[2].explored == true);
    CHECK(with.lines[3].explored == false);
    CHECK(exploration_picks(with.lines) == std::vector<bool>{false, false, true, false, false});
    // Written before the field (the per-round rule): rounds of 2, 8 and 1 lines.
    std::string old = line(0, 0, "");
    for (int64_t c = 1; c <= 2; ++c) old += line(1, c, "");
    for (int64_t c = 3; c <= 10; ++c) old += line(2, c, "");
    old += line(3, 11, "");
    const MeasurementsFile without = read(file, old);
    REQUIRE(without.lines.size() == 12);
    CHECK_FALSE(without.lines[2].explored.has_value());
    std::vector<bool> want(12, false);
    want[2] = want[9] = want[10] = true;  // the last of round 1, the last 2 of round 2's 8
    CHECK(exploration_picks(without.lines) == want);

    CHECK(
        read_message(file, line(0, 0, "") + line(1, 1, R"(,"explored":"yes")"))
            .find(file.string() + ":2: round 1: \"explored\" is \"yes\", expected true or false") !=
        std::string::npos);
    CHECK(read_message(file, line(0, 0, R"(,"explored":true)"))
              .find(":1: round 0: \"explored\" is true, expected false (round 0 measures the "
                    "default)") != std::string::npos);
    CHECK(read_message(file, line(0, 0, R"(,"explored":1)")).find("\"explored\" is 1") !=
          std::string::npos);
}

namespace {

// A layout config of `nodes` configurable nodes, every slot at the default (-1).
Config default_layout(int64_t nodes) {
    Config c;
    c.layout.assign(static_cast<size_t>(nodes * 18), int8_t{-1});
    return c;
}

// `c` with the (node, tensor) slot set to the dims 0..rank-1 reversed (tensor 0 output, 1 input,
// 2 kernel).
Config with_slot(Config c, int64_t node, int tensor, int rank = 2) {
    for (int d = 0; d < rank; ++d)
        c.layout[static_cast<size_t>(node * 18 + tensor * 6 + d)] =
            static_cast<int8_t>(rank - 1 - d);
    return c;
}

}  // namespace

TEST_CASE(
    "knobs_apart counts a layout node's output, input and kernel as one knob each and a tile's "
    "bounds one by one") {
    const Config d = default_layout(3);
    CHECK(knobs_apart(d, d) == 0);
    CHECK(knobs_apart(d, with_slot(d, 1, 2, 4)) == 1);  // 4 entries of one slot: one knob
    CHECK(knobs_apart(with_slot(d, 0, 0), with_slot(d, 0, 1)) == 2);
    CHECK(knobs_apart(with_slot(with_slot(d, 0, 0), 2, 1), d) == 2);
    Config a, b;
    a.tile.assign(24, 0.0f);
    b.tile = a.tile;
    b.tile[3] = 4.0f;
    b.tile[7] = 2.0f;
    CHECK(knobs_apart(a, b) == 2);
    b.tile = a.tile;
    b.tile[5] = -0.0f;  // -0 and 0 are the same bound
    CHECK(knobs_apart(a, b) == 0);
    CHECK_THROWS_AS((void)knobs_apart(d, a), Error);
    CHECK_THROWS_AS((void)knobs_apart(d, default_layout(2)), Error);
}

TEST_CASE(
    "one-model exploration takes the one-knob changes of the incumbent first, the best-scored "
    "first, then the other configs in an order drawn from the seed and round, and without an "
    "incumbent all in the drawn order") {
    const Config d = default_layout(4);
    const Config incumbent = with_slot(d, 3, 0);  // the best measured so far
    std::vector<Config> open;
    std::vector<double> score;
    // 0: one knob from the default but two from the incumbent: the incumbent counts.
    open.push_back(with_slot(d, 0, 0));
    score.push_back(-9.0);
    open.push_back(with_slot(incumbent, 0, 1));  // 1: one knob, score 0.5
    score.push_back(0.5);
    open.push_back(with_slot(with_slot(incumbent, 0, 1), 1, 1));  // 2: two knobs, best scored
    score.push_back(-10.0);
    open.push_back(with_slot(incumbent, 2, 2, 3));  // 3: one knob, score -1
    score.push_back(-1.0);
    open.push_back(with_slot(incumbent, 1, 0));  // 4: one knob, but taken by the best-ranked picks
    score.push_back(-2.0);
    open.push_back(with_slot(incumbent, 3, 0, 3));  // 5: the incumbent's own slot changed again
    score.push_back(NAN);                           // a NaN score ranks last of the one-knob ones
    for (int64_t i = 0; i < 20; ++i) {              // 6..25: far from the incumbent
        open.push_back(with_slot(with_slot(with_slot(d, 0, 0, 1 + i % 4), 1, 2), 2, 1));
        score.push_back(static_cast<double>(i));
    }
    std::vector<char> taken(open.size(), 0);
    taken[4] = 1;
    const std::vector<int64_t> order = exploration_order(open, score, taken, &incumbent, 7, 3);
    REQUIRE(order.size() == open.size() - 1);
    CHECK(std::vector<int64_t>(order.begin(), order.begin() + 3) == std::vector<int64_t>{3, 1, 5});
    std::vector<int64_t> rest(order.begin() + 3, order.end());
    CHECK(std::find(rest.begin(), rest.end(), 4) == rest.end());
    std::vector<int64_t> sorted = rest;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> want = {0, 2};
    for (int64_t i = 6; i < 26; ++i) want.push_back(i);
    CHECK(sorted == want);  // every other untaken config once
    CHECK(rest != sorted);  // drawn, not by index or score
    // The same (seed, round) gives the same order; another round another draw of the rest.
    CHECK(exploration_order(open, score, taken, &incumbent, 7, 3) == order);
    const std::vector<int64_t> next = exploration_order(open, score, taken, &incumbent, 7, 4);
    CHECK(std::vector<int64_t>(next.begin(), next.begin() + 3) == std::vector<int64_t>{3, 1, 5});
    CHECK(next != order);
    CHECK_THROWS_AS((void)exploration_order(open, std::span<const double>(score).first(3), taken,
                                            &incumbent, 7, 3),
                    Error);
    // Without an incumbent (the first half of the budget): every untaken config in the seeded
    // order, the one-knob changes among them.
    const std::vector<int64_t> drawn = exploration_order(open, score, taken, nullptr, 7, 3);
    std::vector<int64_t> all = drawn;
    std::sort(all.begin(), all.end());
    want = {0, 1, 2, 3, 5};
    for (int64_t i = 6; i < 26; ++i) want.push_back(i);
    CHECK(all == want);
    CHECK(std::vector<int64_t>(drawn.begin(), drawn.begin() + 3) != std::vector<int64_t>{3, 1, 5});
    CHECK(exploration_order(open, score, taken, nullptr, 7, 3) == drawn);
}
