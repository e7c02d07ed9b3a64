// Submission and scores CSV files (see submission.h).
#include "eval/submission.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_set>

#include "gnn/core/check.h"
#include "util/atomic_file.h"
#include "util/user_input.h"

namespace segrank {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t p = s.find(sep, start);
        out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
        if (p == std::string::npos) break;
        start = p + 1;
    }
    return out;
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
    require_input_size(path, "a CSV file", kMaxLinesFileBytes);
    require_readable_input(path, "a CSV file");
    std::ifstream in(path, std::ios::binary);
    SEGRANK_CHECK(in.good(), path.string(), ": cannot open for reading (expected a CSV file): ",
                  std::generic_category().message(errno));
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(std::move(line));
    }
    SEGRANK_CHECK(!in.bad(), path.string(), ": read error");
    return lines;
}

std::optional<int64_t> parse_index(const std::string& s) {
    int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) return std::nullopt;
    return v;
}

void check_id(const std::string& id, const std::filesystem::path& path) {
    SEGRANK_CHECK(!id.empty() && id.find_first_of(",\n\r") == std::string::npos, path.string(),
                  ": ID '", echo_value(id), "' is empty or contains ',' or a line break");
}

}  // namespace

std::string submission_id(const CollectionId& c, const std::string& stem) {
    return c.name() + ":" + stem;
}

std::vector<int64_t> top_configs(std::span<const double> scores, Task task) {
    std::vector<int64_t> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const double x = scores[static_cast<size_t>(a)], y = scores[static_cast<size_t>(b)];
        if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
        return x < y;
    });
    if (task == Task::kTile && order.size() > 5) order.resize(5);
    return order;
}

std::string format_submission(const std::filesystem::path& path,
                              const std::vector<SubmissionRow>& rows) {
    std::string text = "ID,TopConfigs\n";
    for (const auto& r : rows) {
        check_id(r.id, path);
        text += r.id;
        text += ',';
        for (size_t i = 0; i < r.top_configs.size(); ++i) {
            if (i) text += ';';
            text += std::to_string(r.top_configs[i]);
        }
        text += '\n';
    }
    return text;
}

void write_submission(const std::filesystem::path& path, const std::vector<SubmissionRow>& rows) {
    write_file_atomically(path, format_submission(path, rows));
}

std::vector<SubmissionRow> read_submission(const std::filesystem::path& path) {
    const auto lines = read_lines(path);
    const std::string file = path.string();
    SEGRANK_CHECK(!lines.empty() && lines[0] == "ID,TopConfigs", file,
                  ":1: header must be 'ID,TopConfigs', got '",
                  echo_value(lines.empty() ? "" : lines[0]), "'");
    std::vector<SubmissionRow> rows;
    std::unordered_set<std::string> ids;
    for (size_t l = 1; l < lines.size(); ++l) {
        if (lines[l].empty()) continue;
        const std::string where = str(file, ":", l + 1);
        const auto fields = split(lines[l], ',');
        SEGRANK_CHECK(fields.size() == 2, where, ": expected 2 fields 'ID,TopConfigs', got ",
                      fields.size());
        SubmissionRow r{fields[0], {}, where};
        SEGRANK_CHECK(!r.id.empty(), where, ": empty ID");
        SEGRANK_CHECK(ids.insert(r.id).second, where, ": ID '", echo_value(r.id), "' repeated");
        std::set<int64_t> seen;
        if (!fields[1].empty())
            for (const auto& tok : split(fields[1], ';')) {
                const auto v = parse_index(tok);
                SEGRANK_CHECK(v.has_value(), where, ": TopConfigs entry '", echo_value(tok),
                              "' is not a non-negative integer");
                SEGRANK_CHECK(seen.insert(*v).second, where, ": config index ", *v, " repeated");
                r.top_configs.push_back(*v);
            }
        rows.push_back(std::move(r));
    }
    return rows;
}

std::string format_scores(const std::filesystem::path& path, const std::vector<ScoreRow>& rows) {
    std::string text = "ID,config,score\n";
    char buf[64];
    for (const auto& r : rows) {
        check_id(r.id, path);
        SEGRANK_CHECK(!std::isnan(r.score), path.string(), ": score of ", r.id, " config ",
                      r.config, " is NaN");
        if (std::isinf(r.score)) {
            std::snprintf(buf, sizeof buf, "%s", r.score > 0 ? "inf" : "-inf");
        } else {
            std::snprintf(buf, sizeof buf, "%.17g", r.score);
        }
        text += r.id + "," + std::to_string(r.config) + "," + buf + "\n";
    }
    return text;
}

void write_scores(const std::filesystem::path& path, const std::vector<ScoreRow>& rows) {
    write_file_atomically(path, format_scores(path, rows));
}

void write_submission_and_scores(const std::filesystem::path& out,
                                 const std::vector<SubmissionRow>& rows,
                                 const std::filesystem::path& scores,
                                 const std::vector<ScoreRow>& score_rows) {
    const std::string sub_text = format_submission(out, rows);
    const std::string scores_text = scores.empty() ? "" : format_scores(scores, score_rows);
    std::vector<OutputFile> files{{out, sub_text}};
    if (!scores.empty()) files.push_back({scores, scores_text});
    write_files_atomically(files);
}

std::vector<ScoreRow> read_scores(const std::filesystem::path& path) {
    const auto lines = read_lines(path);
    const std::string file = path.string();
    SEGRANK_CHECK(!lines.empty() && lines[0] == "ID,config,score", file,
                  ":1: header must be 'ID,config,score', got '",
                  echo_value(lines.empty() ? "" : lines[0]), "'");
    std::vector<ScoreRow> rows;
    std::set<std::pair<std::string, int64_t>> seen;
    for (size_t l = 1; l < lines.size(); ++l) {
        if (lines[l].empty()) continue;
        const std::string where = str(file, ":", l + 1);
        const auto fields = split(lines[l], ',');
        SEGRANK_CHECK(fields.size() == 3, where, ": expected 3 fields 'ID,config,score', got ",
                      fields.size());
        SEGRANK_CHECK(!fields[0].empty(), where, ": empty ID");
        const auto cfg = parse_index(fields[1]);
        SEGRANK_CHECK(cfg.has_value(), where, ": config '", echo_value(fields[1]),
                      "' is not a non-negative integer");
        double score = 0;
        const std::string& s = fields[2];
        if (s == "inf" || s == "+inf") {
            score = std::numeric_limits<double>::infinity();
        } else if (s == "-inf") {
            score = -std::numeric_limits<double>::infinity();
        } else {
            const auto r = std::from_chars(s.data(), s.data() + s.size(), score);
            SEGRANK_CHECK(r.ec == std::errc() && r.ptr == s.data() + s.size() && !std::isnan(score),
                          where, ": score '", echo_value(s), "' is not a number");
        }
        SEGRANK_CHECK(seen.emplace(fields[0], *cfg).second, where, ": (", fields[0], ", ", *cfg,
                      ") repeated");
        rows.push_back({fields[0], *cfg, score, where});
    }
    return rows;
}

namespace {

bool starts_with_line(std::string_view head, std::string_view header) {
    if (!head.starts_with(header)) return false;
    const std::string_view rest = head.substr(header.size());
    return rest.empty() || rest[0] == '\n' || rest.starts_with("\r\n") || rest == "\r";
}

}  // namespace

bool is_submission_head(std::string_view head) { return starts_with_line(head, "ID,TopConfigs"); }

bool is_scores_head(std::string_view head) { return starts_with_line(head, "ID,config,score"); }

}  // namespace segrank
