// `segrank bench`'s time split (docs/benchmarks.md#where-the-step-goes): every mode that ran has a
// "time_split" whose categories and "other" add up to the median step (with 2 timed steps every
// median is a mean, and each step's categories plus its "other" are its wall time), and the text
// output prints one line of it per mode. No timed assertions: only sums and shapes.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "util/json_value.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

constexpr const char* kCategories[] = {"gemm",    "spmm",       "pointwise", "gather_scatter",
                                       "barrier", "allocation", "optimizer", "other"};

// Checks one time_split object against the mode's median step time.
void check_split(const JsonValue* split, double median_step_s) {
    REQUIRE(split != nullptr);
    const JsonValue* secs = split->find("seconds_per_step");
    const JsonValue* frac = split->find("fraction_of_step");
    REQUIRE(secs != nullptr);
    REQUIRE(frac != nullptr);
    CHECK(secs->members().size() == std::size(kCategories));
    double sum = 0, frac_sum = 0;
    for (const char* c : kCategories) {
        INFO("category ", c);
        REQUIRE(secs->number_at(c).has_value());
        REQUIRE(frac->number_at(c).has_value());
        CHECK(*secs->number_at(c) >= 0.0);
        CHECK(*frac->number_at(c) >= 0.0);
        CHECK(*frac->number_at(c) == doctest::Approx(*secs->number_at(c) / median_step_s));
        sum += *secs->number_at(c);
        frac_sum += *frac->number_at(c);
    }
    CHECK(sum == doctest::Approx(median_step_s).epsilon(1e-6));
    CHECK(frac_sum == doctest::Approx(1.0).epsilon(1e-6));
    CHECK(*secs->number_at("gemm") > 0.0);
    REQUIRE(split->number_at("scopes_per_step").has_value());
    CHECK(*split->number_at("scopes_per_step") > 0.0);
}

// `( command )`.
std::string subshell(const std::string& command) {
    std::string s = "( ";
    s += command;
    s += " )";
    return s;
}

}  // namespace

TEST_CASE(
    "segrank bench --json reports a time split per mode (full, segments, naive) that adds up to "
    "the median step, and the text output prints it per mode") {
    SEGRANK_REQUIRE_SHARED_DATA(shared);
    const fs::path npz = shared.parent_path() / "peers" / "synthetic_10k.npz";
    REQUIRE(fs::exists(npz));
    const fs::path dir = scratch_dir("bench_time_split");
    // A small model: the split's shape, not its values, is under test.
    const std::string args =
        " bench --steps 2 --warmup 1 --no-peer --configs 4 "
        "--hidden 32 --layers 1 --npz " +
        sq(npz.string());
    // In a subshell: run_command appends 2>&1 to the command line.
    const std::string bin = sq(segrank_binary().string());
    const std::string json_cmd = bin + args + " --modes full,segments,full_naive --json >" +
                                 sq((dir / "out.json").string()) + " 2>" +
                                 sq((dir / "err.txt").string());
    const auto r = run_command(subshell(json_cmd));
    INFO(read_file_text(dir / "err.txt"));
    REQUIRE(r.exit_code == 0);
    const JsonValue doc = parse_json(read_file_text(dir / "out.json"), (dir / "out.json").string());
    for (const char* mode : {"full_graph", "segments"}) {
        INFO("mode ", mode);
        const JsonValue* m = doc.find(mode);
        REQUIRE(m != nullptr);
        REQUIRE(m->number_at("median_step_s").has_value());
        check_split(m->find("time_split"), *m->number_at("median_step_s"));
    }
    const JsonValue* full = doc.find("full_graph");
    REQUIRE(full->number_at("naive_median_step_s").has_value());
    check_split(full->find("naive_time_split"), *full->number_at("naive_median_step_s"));
    CHECK(doc.find("segments")->find("naive_time_split") == nullptr);  // segments_naive not run

    const auto text = run_command(subshell(bin + args + " --modes segments 2>/dev/null"));
    REQUIRE(text.exit_code == 0);
    CHECK(contains_text(text.output, "segments: "));
    CHECK(contains_text(text.output, "\n  time split: gemm "));
    CHECK(contains_text(text.output, " %, other "));
}

}  // namespace segrank::test
