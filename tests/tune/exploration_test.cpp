// Exploration of segrank tune's rounds: how many picks of a round explore (RoundSchedule::explore,
// tune/search.h), and which lines of measurements.jsonl were exploration picks, "explored" or,
// in a file written before that field, inferred (tune::exploration_picks,
// tune/measurements_file.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
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
    "bounds one by one, not their sum and product columns") {
    const Config d = default_layout(3);
    CHECK(knobs_apart(d, d) == 0);
    CHECK(knobs_apart(d, with_slot(d, 1, 2, 4)) == 1);  // 4 entries of one slot: one knob
    CHECK(knobs_apart(with_slot(d, 0, 0), with_slot(d, 0, 1)) == 2);
    CHECK(knobs_apart(with_slot(with_slot(d, 0, 0), 2, 1), d) == 2);
    Config a, b;
    a.tile.assign(24, 0.0f);
    b.tile = a.tile;
    // Kernel bound 3 with its block's sum (6) and product (7): one knob; with output bound 1
    // (entry 9) too: two.
    b.tile[3] = 4.0f;
    b.tile[6] = 4.0f;
    b.tile[7] = 2.0f;
    CHECK(knobs_apart(a, b) == 1);
    CHECK(one_knob_kind(a, b) == 0);
    b.tile[9] = 8.0f;
    b.tile[14] = 8.0f;
    CHECK(knobs_apart(a, b) == 2);
    CHECK(one_knob_kind(a, b) == -1);
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

TEST_CASE(
    "one_knob_kind names the kind of the one knob two configs set differently (a layout node's "
    "output or input or kernel and a tile's kernel or output or input bound) and -1 for none or "
    "several") {
    const Config d = default_layout(3);
    CHECK(one_knob_kind(d, with_slot(d, 2, 0)) == 0);
    CHECK(one_knob_kind(with_slot(d, 1, 1, 3), d) == 1);
    CHECK(one_knob_kind(d, with_slot(d, 0, 2, 4)) == 2);
    CHECK(one_knob_kind(d, d) == -1);
    CHECK(one_knob_kind(d, with_slot(with_slot(d, 0, 2), 1, 2)) == -1);  // two kernels
    Config a;
    a.tile.assign(24, 0.0f);
    Config b = a;
    b.tile[3] = 2.0f;  // columns 0-5: kernel bounds (6 and 7: their sum and product)
    CHECK(one_knob_kind(a, b) == 0);
    b.tile = a.tile;
    b.tile[8] = 2.0f;  // 8-13: output bounds
    CHECK(one_knob_kind(a, b) == 1);
    b.tile[21] = 4.0f;  // and 16-21: input bounds: two knobs
    CHECK(one_knob_kind(a, b) == -1);
    CHECK_THROWS_AS((void)one_knob_kind(d, a), Error);
}

TEST_CASE(
    "knob_sensitivity counts per kind the measured pairs one knob apart and those whose runtimes "
    "differ and weighs a kind (moved + 1) / (pairs + 2)") {
    const Config d = default_layout(2);
    // d 100; out of node 0 100 (same), kernel of node 0 130 and kernel of node 1 90 (both moved);
    // out of node 0 with kernel of node 0: 130, one knob from each of the two before it.
    const std::vector<Config> configs = {d, with_slot(d, 0, 0), with_slot(d, 0, 2),
                                         with_slot(d, 1, 2), with_slot(with_slot(d, 0, 0), 0, 2)};
    const std::vector<double> ns = {100.0, 100.0 * (1 + 1e-12), 130.0, 90.0, 130.0};
    const KnobSensitivity s = knob_sensitivity(configs, ns);
    // Output pairs: d-1 (same: within 1e-9), 2-4 (same). Kernel pairs: d-2, d-3 (moved), 1-4
    // (moved: 100 vs 130), 2-3? two kernels apart: no pair.
    CHECK(s.pairs == std::array<int64_t, kKnobKinds>{2, 0, 3});
    CHECK(s.moved == std::array<int64_t, kKnobKinds>{0, 0, 3});
    CHECK(s.weight(0) == doctest::Approx(1.0 / 4.0));
    CHECK(s.weight(1) == doctest::Approx(0.5));
    CHECK(s.weight(2) == doctest::Approx(4.0 / 5.0));
    CHECK_THROWS_AS((void)knob_sensitivity(configs, std::span<const double>(ns).first(2)), Error);
}

TEST_CASE(
    "last_round_improved is true only when a success of the last round beats every success "
    "before it") {
    using R = std::optional<double>;
    const std::vector<int64_t> rounds = {0, 1, 1, 2, 2};
    CHECK(last_round_improved(rounds, std::vector<R>{100.0, 90.0, 95.0, 89.0, R{}}));
    CHECK_FALSE(last_round_improved(rounds, std::vector<R>{100.0, 90.0, 95.0, 90.0, 120.0}));
    CHECK_FALSE(last_round_improved(rounds, std::vector<R>{100.0, 90.0, 95.0, R{}, R{}}));
    // Nothing succeeded before the last round: its first success improves.
    CHECK(last_round_improved(rounds, std::vector<R>{R{}, R{}, R{}, R{}, 5.0}));
    CHECK(last_round_improved({}, {}));
    CHECK_THROWS_AS((void)last_round_improved(std::vector<int64_t>{2, 1}, std::vector<R>{1.0, 2.0}),
                    Error);
}

TEST_CASE(
    "with knob sensitivities one-model exploration spreads the one-knob changes over the kinds by "
    "weight with the best-scored first within a kind and takes a change of a kind that moved the "
    "runtime before better-scored ones of kinds that did not") {
    const Config d = default_layout(6);
    std::vector<Config> open;
    std::vector<double> score;
    for (int64_t n = 0; n < 4; ++n) {  // 0..3: output changes, scored best (-10 .. -7)
        open.push_back(with_slot(d, n, 0));
        score.push_back(-10.0 + static_cast<double>(n));
    }
    for (int64_t n = 0; n < 3; ++n) {  // 4..6: kernel changes, scored 3, 1, 2
        open.push_back(with_slot(d, n, 2));
        score.push_back(n == 0 ? 3.0 : n == 1 ? 1.0 : 2.0);
    }
    open.push_back(with_slot(d, 5, 1));  // 7: an input change, scored 0
    score.push_back(0.0);
    open.push_back(with_slot(with_slot(d, 4, 0), 5, 2));  // 8: two knobs away
    score.push_back(-20.0);
    const std::vector<char> taken(open.size(), 0);
    KnobSensitivity s;
    s.pairs = {8, 0, 3};  // outputs never moved the runtime (1/10), kernels always did (4/5)
    s.moved = {0, 0, 3};  // inputs unmeasured (1/2)
    // Passes (taken + 1) / weight: kernel 1.25, 2.5, 3.75; input 2; output 10, 20, ...
    const std::vector<int64_t> order = exploration_order(open, score, taken, &d, 7, 3, &s);
    REQUIRE(order.size() == open.size());
    CHECK(std::vector<int64_t>(order.begin(), order.end() - 1) ==
          std::vector<int64_t>{5, 7, 6, 4, 0, 1, 2, 3});
    CHECK(order.back() == 8);
    // Without sensitivities: by score alone, the output changes first.
    const std::vector<int64_t> plain = exploration_order(open, score, taken, &d, 7, 3);
    CHECK(std::vector<int64_t>(plain.begin(), plain.begin() + 3) == std::vector<int64_t>{0, 1, 2});
    // Equal weights: a round robin over the kinds with a change left (output, input, kernel).
    const KnobSensitivity none;
    const std::vector<int64_t> even = exploration_order(open, score, taken, &d, 7, 3, &none);
    CHECK(std::vector<int64_t>(even.begin(), even.begin() + 6) ==
          std::vector<int64_t>{0, 7, 5, 1, 6, 2});
}
