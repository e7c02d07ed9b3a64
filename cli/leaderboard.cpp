// `segrank leaderboard --truth <root|store.h5> [--split valid] [--out-md F] [--out-csv F] [--json]
// sub.csv ...`: validates, scores and ranks Kaggle-format submissions
// (docs/metrics.md#submissions-and-validation).
#include "eval/leaderboard.h"

#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "gnn/core/check.h"
#include "util/atomic_file.h"
#include "util/exit_status.h"
#include "util/user_input.h"

namespace segrank::cli {
namespace {

constexpr size_t kMaxPrintedIssues = 50;  // per file on stderr; --json carries all of them

// The entry of a submission that ran out of memory while it was read, checked or scored: invalid,
// with one error naming the file, its size and the memory it could get (docs/files.md).
LeaderboardEntry out_of_memory_entry(const std::string& file) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(file, ec);
    const std::string generic = out_of_memory_message();
    LeaderboardEntry e;
    e.file = file;
    e.name = std::filesystem::path(file).stem().string();
    e.valid = false;
    e.overall = std::numeric_limits<double>::quiet_NaN();
    e.issues.push_back({Severity::kError, file,
                        str("out of memory while reading and scoring this submission",
                            ec ? std::string() : str(" of ", bytes, " bytes"), " ",
                            generic.substr(std::min(generic.find('('), generic.size())),
                            "; the other submissions are scored")});
    return e;
}

const char* kDescription =
    "Validates Kaggle-format submissions (ID,TopConfigs) against ground-truth runtimes, scores "
    "every "
    "collection with the metrics of `segrank evaluate` and prints a ranked table.\n"
    "  tile score   = 1 - slowdown@5 on runtime/normalizer (K clamped to the number of configs)\n"
    "  layout score = Kendall tau-b between the submitted order and the runtimes\n"
    "  overall      = mean over the collections of the truth\n"
    "Checks (errors and warnings name file:line): header, ID format, duplicate IDs, unknown graphs "
    "(error), indices that are not integers, out of range or repeated, tile rows with fewer than "
    "min(5,c) entries (more than 5: warning, the first 5 count), layout rows that are not "
    "permutations of 0..c-1. Rows of collections absent from the truth are ignored with a "
    "warning.\n"
    "Missing graphs (in the truth, no row): --missing worst (default) warns and scores each as the "
    "worst possible submission (slowest configs first), so leaving graphs out never helps; skip "
    "warns and leaves them out of the means; error makes the submission invalid.\n"
    "Every problem of every file is reported; invalid submissions are listed unranked and not "
    "scored; the exit code is 1 when any submission is invalid, else 0.\n"
    "The truth must have runtimes: the public test split (all 0) is refused with an error.\n"
    "--out-md and --out-csv replace only an earlier table of their own kind; a path given twice, "
    "or naming a submission or the truth, is refused before any work.";

// An earlier --out-csv table (format_leaderboard_csv: the header row first).
bool is_leaderboard_csv(std::string_view head) { return head.starts_with("rank,name,overall,"); }

// An earlier --out-md table (format_leaderboard_markdown: the header row first).
bool is_leaderboard_markdown(std::string_view head) {
    return head.starts_with("| rank | name | overall |");
}

// Refuses, before any work, a submission given twice (it would be scored and ranked twice), an
// output path given for both tables, an output naming an input (a submission or the truth), and
// an output replacing a file that is not an earlier table of its kind.
void check_paths(const cxxopts::ParseResult& args) {
    const auto subs = args["submissions"].as<std::vector<std::string>>();
    for (size_t i = 0; i < subs.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            SEGRANK_CHECK(!same_file(subs[i], subs[j]), "submission ", subs[i],
                          " is given twice (as argument ", j + 1, " and ", i + 1,
                          "): give each submission once");
    std::vector<std::string> inputs = subs;
    for (const auto& t : args["truth"].as<std::vector<std::string>>()) inputs.push_back(t);
    if (args.count("out-md") && args.count("out-csv")) {
        const std::string md = args["out-md"].as<std::string>();
        const std::string csv = args["out-csv"].as<std::string>();
        refuse_same_output("--out-md", md, "--out-csv", csv);
    }
    for (const char* opt : {"out-md", "out-csv"}) {
        if (!args.count(opt)) continue;
        const std::string out = args[opt].as<std::string>();
        for (const auto& in : inputs)
            SEGRANK_CHECK(!same_file(out, in), "--", opt, " ", out, ": is the input ", in,
                          ", which segrank leaderboard reads; give another path");
        const bool md = std::string_view(opt) == "out-md";
        refuse_replacing_other_file(str("--", opt), out,
                                    md ? is_leaderboard_markdown : is_leaderboard_csv,
                                    md ? "a leaderboard Markdown table (| rank | name | overall |)"
                                       : "a leaderboard CSV (rank,name,overall,...)",
                                    "segrank leaderboard");
    }
}

}  // namespace

int run_leaderboard(int argc, char** argv) {
    cxxopts::Options options("segrank leaderboard", kDescription);
    options.add_options()(
        "truth",
        "npz root or collection folder, folder of `segrank pack` stores, or .h5 store (repeatable)",
        cxxopts::value<std::vector<std::string>>())(
        "split",
        "split of the truth to score against (train, valid, test); explicit .h5 files are used as "
        "is",
        cxxopts::value<std::string>()->default_value("valid"))(
        "missing", "missing graphs: worst | skip | error",
        cxxopts::value<std::string>()->default_value("worst"))(
        "out-md", "also write the ranked table as Markdown to this file",
        cxxopts::value<std::string>())("out-csv", "also write the ranked table as CSV to this file",
                                       cxxopts::value<std::string>())(
        "json", "print JSON (scores per collection and every issue) instead of the table")(
        "submissions", "submission CSV files", cxxopts::value<std::vector<std::string>>())(
        "h,help", "show help");
    options.parse_positional({"submissions"});
    options.positional_help("sub1.csv [sub2.csv ...]");
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("truth"),
                  "missing --truth <collection root | store.h5> (see segrank leaderboard --help)");
    SEGRANK_CHECK(args.count("submissions"),
                  "no submission CSV given (see segrank leaderboard --help)");
    check_paths(args);
    const Split split = parse_split(split_option(args));
    const MissingPolicy missing = parse_missing_policy(args["missing"].as<std::string>());
    std::vector<std::filesystem::path> truth_paths;
    for (const auto& t : args["truth"].as<std::vector<std::string>>()) truth_paths.emplace_back(t);

    const Truth truth = load_truth(truth_paths, split);
    std::vector<LeaderboardEntry> entries;
    for (const auto& file : args["submissions"].as<std::vector<std::string>>()) {
        LeaderboardEntry e;
        try {
            const CheckedSubmission sub = check_submission(file, truth, missing);
            e = score_submission(sub, truth, missing);
        } catch (const std::bad_alloc&) {
            // What the submission held is freed by now: the others are still scored.
            e = out_of_memory_entry(file);
        }
        size_t printed = 0;
        for (const Issue& is : e.issues) {
            // The file name and the CSV's fields in it are shown escaped (a name with a line
            // break stays on its line).
            if (printed++ < kMaxPrintedIssues)
                std::fprintf(stderr, "%s\n",
                             echo_value(is.to_string(), std::string_view::npos).c_str());
        }
        if (e.issues.size() > kMaxPrintedIssues) {
            std::fprintf(stderr, "%s: ... and %zu more issues (see --json)\n",
                         echo_value(file, std::string_view::npos).c_str(),
                         e.issues.size() - kMaxPrintedIssues);
        }
        entries.push_back(std::move(e));
    }
    rank_entries(entries);

    // Both tables or neither: a failure writing one leaves the other as it was.
    const std::string md_text = args.count("out-md") ? format_leaderboard_markdown(entries) : "";
    const std::string csv_text = args.count("out-csv") ? format_leaderboard_csv(entries) : "";
    std::vector<OutputFile> tables;
    if (args.count("out-md")) tables.push_back({args["out-md"].as<std::string>(), md_text});
    if (args.count("out-csv")) tables.push_back({args["out-csv"].as<std::string>(), csv_text});
    write_files_atomically(tables);
    std::string text;
    if (args.count("json")) {
        text = format_leaderboard_json(entries, split, missing);
    } else {
        int64_t graphs = 0;
        for (size_t i = 0; i < truth.collections().size(); ++i) graphs += truth.collection_size(i);
        std::string colls;
        for (const auto& c : truth.collections()) {
            if (!colls.empty()) colls += ", ";
            colls += c.full_name();
        }
        text = str("segrank leaderboard: ", entries.size(), " submission(s) against ", graphs,
                   " graph(s) (", colls, ")\n", format_leaderboard_text(entries));
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    const bool any_invalid =
        std::any_of(entries.begin(), entries.end(), [](const auto& e) { return !e.valid; });
    return any_invalid ? 1 : 0;
}

}  // namespace segrank::cli
