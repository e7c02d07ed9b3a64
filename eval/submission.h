// Kaggle-style submission CSV (`ID,TopConfigs`) and per-configuration scores CSV
// (`ID,config,score`): writers and validating parsers shared by `segrank hwmodel`, `predict` and
// `leaderboard`. IDs: `tile:xla:<stem>` and `layout:<xla|nlp>:<default|random>:<stem>`.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/collection.h"

namespace segrank {

/// One submission row: the graph's ID and its configuration indices, fastest first.
struct SubmissionRow {
    std::string id;
    std::vector<int64_t> top_configs;
    std::string where;  ///< "file:line" of a parsed row (empty for rows built in memory)
};

/// One scores row: a configuration's predicted score (lower = faster; hwmodel: runtime in ns).
struct ScoreRow {
    std::string id;
    int64_t config = 0;
    double score = 0;
    std::string where;  ///< "file:line" of a parsed row
};

/// Submission ID of graph `stem` (npz file stem) in collection `c`: "tile:xla:<stem>" or
/// "layout:<source>:<search>:<stem>".
std::string submission_id(const CollectionId& c, const std::string& stem);

/// Configuration indices sorted by ascending score (ties: lower index first), truncated to
/// min(5, c) for tile and kept whole (all c) for layout. scores: [c]; NaN sorts last.
std::vector<int64_t> top_configs(std::span<const double> scores, Task task);

/// Writes `ID,TopConfigs` then one row per entry, indices joined by ';', with write_file_atomically
/// (util/atomic_file.h: a regular file is replaced whole, /dev/stdout written through).
/// Throws segrank::Error naming the path on I/O failure or when an ID contains ',' or a newline.
void write_submission(const std::filesystem::path& path, const std::vector<SubmissionRow>& rows);
/// The bytes write_submission writes (same checks; `path` only names the file in messages).
std::string format_submission(const std::filesystem::path& path,
                              const std::vector<SubmissionRow>& rows);

/// Parses a submission CSV. Throws segrank::Error naming "file:line" when the header is not
/// `ID,TopConfigs`, a row has != 2 fields, an ID is empty or repeated, an index is not a
/// non-negative integer or repeats within its row. CRLF line ends are accepted.
std::vector<SubmissionRow> read_submission(const std::filesystem::path& path);

/// True when `head` (the first bytes of a file) starts with the submission header `ID,TopConfigs`
/// followed by a line end (LF or CRLF) or the end of `head`: the file is an earlier submission.
bool is_submission_head(std::string_view head);
/// The same for the scores header `ID,config,score`.
bool is_scores_head(std::string_view head);

/// Writes `ID,config,score` rows (score with 17 significant digits; +inf as "inf"), as
/// write_submission does.
void write_scores(const std::filesystem::path& path, const std::vector<ScoreRow>& rows);
/// The bytes write_scores writes (same checks; `path` only names the file in messages).
std::string format_scores(const std::filesystem::path& path, const std::vector<ScoreRow>& rows);

/// Writes the submission `rows` to `out` and, when `scores` is not empty, the `score_rows` to
/// `scores`: both files or neither (write_files_atomically, util/atomic_file.h), so a failure
/// writing one (a full disk, /dev/full, a missing folder) leaves the other as it was. Throws
/// segrank::Error as write_submission / write_scores, naming the file that failed.
void write_submission_and_scores(const std::filesystem::path& out,
                                 const std::vector<SubmissionRow>& rows,
                                 const std::filesystem::path& scores,
                                 const std::vector<ScoreRow>& score_rows);

/// Parses a scores CSV. Throws segrank::Error naming "file:line" on a wrong header, a row with != 3
/// fields, a negative or non-integer config, a non-numeric score (inf is accepted, NaN is not) or
/// a repeated (ID, config) pair.
std::vector<ScoreRow> read_scores(const std::filesystem::path& path);

}  // namespace segrank
