// Submission CSV: the leaderboard's validation (check_submission_text) against a fixed ground truth
// under each missing-graph policy, scoring and every table format of valid submissions, and the
// submission / scores CSV readers (eval/submission.h) on the same bytes.
#include <cstddef>
#include <cstdint>

#include "eval/leaderboard.h"
#include "eval/submission.h"
#include "fuzz/fuzz_util.h"
#include "gnn/core/check.h"

using namespace segrank;

namespace {

// Two layout graphs (4 and 3 configs, one with tied runtimes) and two tile graphs (7 and 2
// configs).
const Truth& truth() {
    static const Truth t = [] {
        Truth t;
        const CollectionId layout{Task::kLayout, Source::kXla, Search::kRandom, Split::kValid};
        const CollectionId tile{Task::kTile, Source::kXla, Search::kNone, Split::kValid};
        t.add(layout, "bert", {4, 1, 3, 2}, "truth");
        t.add(layout, "unet", {5, 5, 6}, "truth");
        t.add(tile, "conv", {1.5, 1.0, 2.0, 1.2, 3.0, 1.1, 1.3}, "truth");
        t.add(tile, "dot", {1.0, 2.0}, "truth");
        return t;
    }();
    return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    std::vector<LeaderboardEntry> entries;
    for (const MissingPolicy p :
         {MissingPolicy::kWorst, MissingPolicy::kSkip, MissingPolicy::kError}) {
        const CheckedSubmission sub = check_submission_text(text, "fuzz.csv", truth(), p);
        for (const auto& issue : sub.issues) (void)issue.to_string();
        entries.push_back(score_submission(sub, truth(), p));
    }
    rank_entries(entries);
    (void)format_leaderboard_text(entries);
    (void)format_leaderboard_markdown(entries);
    (void)format_leaderboard_csv(entries);
    const auto path = fuzz::write_temp("csv", data, size);
    try {
        (void)read_submission(path);
    } catch (const Error&) {
    }
    try {
        (void)read_scores(path);
    } catch (const Error&) {
    }
    return 0;
}
