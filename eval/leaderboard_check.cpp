// Submission validation for the leaderboard: every problem of a file is collected as an Issue
// naming file:line (unlike eval/submission.h's read_submission, which stops at the first).
#include <algorithm>
#include <charconv>
#include <sstream>

#include "eval/leaderboard.h"
#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {

std::string Issue::to_string() const {
    return str(severity == Severity::kError ? "error: " : "warning: ", where, ": ", message);
}

MissingPolicy parse_missing_policy(std::string_view s) {
    if (s == "worst") return MissingPolicy::kWorst;
    if (s == "skip") return MissingPolicy::kSkip;
    if (s == "error") return MissingPolicy::kError;
    throw Error(str("--missing: unknown policy '", s, "' (expected worst, skip or error)"));
}

const char* to_string(MissingPolicy p) {
    switch (p) {
        case MissingPolicy::kWorst:
            return "worst";
        case MissingPolicy::kSkip:
            return "skip";
        case MissingPolicy::kError:
            return "error";
    }
    return "?";
}

bool CheckedSubmission::valid() const {
    return std::none_of(issues.begin(), issues.end(),
                        [](const Issue& i) { return i.severity == Severity::kError; });
}

namespace {

constexpr size_t kMaxListed = 5;  // values quoted per message before "..."

// What a file that is not text is ("an HDF5 file (a graph store?)"), or "" for text: a known
// signature, else a NUL byte in the first 4 KiB (a CSV never holds one).
std::string binary_kind(std::string_view text) {
    if (text.substr(0, 8) == std::string_view("\x89HDF\r\n\x1a\n", 8))
        return "an HDF5 file (a graph store?)";
    if (text.substr(0, 4) == std::string_view("PK\x03\x04", 4))
        return "a zip archive (an .npz graph?)";
    if (text.substr(0, 6) == std::string_view("\x93NUMPY", 6)) return "a numpy .npy array";
    const size_t nul = text.substr(0, 4096).find('\0');
    if (nul != std::string_view::npos) return str("binary data (a NUL byte at offset ", nul, ")");
    return "";
}

std::vector<std::string_view> split_view(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t start = 0;
    while (true) {
        const size_t p = s.find(sep, start);
        out.push_back(
            s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
        if (p == std::string_view::npos) break;
        start = p + 1;
    }
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// Collection name ("tile:xla", "layout:nlp:random") of a well-formed ID, else empty.
std::string id_collection(std::string_view id) {
    const auto parts = split_view(id, ':');
    if (parts.size() >= 3 && parts[0] == "tile" && parts[1] == "xla") {
        return id.size() > 9 ? "tile:xla" : "";  // "tile:xla:" + non-empty stem
    }
    if (parts.size() >= 4 && parts[0] == "layout" && (parts[1] == "xla" || parts[1] == "nlp") &&
        (parts[2] == "default" || parts[2] == "random")) {
        const std::string name = str("layout:", parts[1], ":", parts[2]);
        return id.size() > name.size() + 1 ? name : "";
    }
    return "";
}

std::string join_listed(const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size() && i < kMaxListed; ++i) {
        if (i) out += ", ";
        out += v[i];
    }
    if (v.size() > kMaxListed) out += str(", ... (", v.size(), " in all)");
    return out;
}

struct Checker {
    const Truth& truth;
    CheckedSubmission& sub;

    void error(const std::string& where, const std::string& msg) {
        sub.issues.push_back({Severity::kError, where, msg});
    }
    void warning(const std::string& where, const std::string& msg) {
        sub.issues.push_back({Severity::kWarning, where, msg});
    }

    // Validates the TopConfigs of a truth graph's row; returns false (after reporting) if invalid.
    bool check_indices(std::string_view field, const TruthGraph& g, Task task,
                       const std::string& where, std::vector<int64_t>& out) {
        const auto c = static_cast<int64_t>(g.targets.size());
        if (trim(field).empty()) {
            error(where, str(g.id, ": TopConfigs is empty, expected config indices joined by ';'"));
            return false;
        }
        std::vector<std::string> not_int, out_of_range, repeated;
        std::vector<int64_t> first_entry(static_cast<size_t>(c), -1);
        const auto tokens = split_view(field, ';');
        for (size_t e = 0; e < tokens.size(); ++e) {
            const std::string_view tok = trim(tokens[e]);
            int64_t v = -1;
            const auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
            if (tok.empty() || r.ec != std::errc() || r.ptr != tok.data() + tok.size() || v < 0) {
                not_int.push_back(str("'", echo_value(tok), "' (entry ", e + 1, ")"));
                continue;
            }
            if (v >= c) {
                out_of_range.push_back(str(v, " (entry ", e + 1, ")"));
                continue;
            }
            auto& first = first_entry[static_cast<size_t>(v)];
            if (first >= 0) {
                repeated.push_back(str(v, " (entries ", first + 1, " and ", e + 1, ")"));
                continue;
            }
            first = static_cast<int64_t>(e);
            out.push_back(v);
        }
        bool ok = true;
        if (!not_int.empty()) {
            error(
                where,
                str(g.id, ": config index is not a non-negative integer: ", join_listed(not_int)));
            ok = false;
        }
        if (!out_of_range.empty()) {
            error(where, str(g.id, ": config index out of range [0, ", c,
                             "): ", join_listed(out_of_range)));
            ok = false;
        }
        if (!repeated.empty()) {
            error(where, str(g.id, ": config index repeated: ", join_listed(repeated)));
            ok = false;
        }
        const auto listed = static_cast<int64_t>(out.size());
        if (task == Task::kTile) {
            const int64_t need = std::min<int64_t>(5, c);
            if (listed < need) {
                error(where,
                      str(g.id, ": tile row lists ", listed,
                          " valid config(s), expected min(5, c) = ", need, " (c = ", c, ")"));
                ok = false;
            } else if (ok && static_cast<int64_t>(tokens.size()) > 5) {
                warning(where, str(g.id, ": tile row lists ", tokens.size(),
                                   " configs; only the first 5 count (slowdown@5)"));
            }
            if (ok && listed > 5) out.resize(5);
        } else if (listed != c) {
            std::vector<std::string> absent;
            for (int64_t k = 0; k < c; ++k) {
                if (first_entry[static_cast<size_t>(k)] < 0) absent.push_back(std::to_string(k));
            }
            error(where,
                  str(g.id, ": layout row is not a permutation of 0..", c - 1, ": lists ", listed,
                      " distinct valid config(s) of ", c, "; absent: ", join_listed(absent)));
            ok = false;
        }
        return ok;
    }

    void run(std::string_view text, MissingPolicy missing) {
        const std::string& file = sub.file;
        if (const std::string kind = binary_kind(text); !kind.empty()) {
            error(file, str("is ", kind, ", a submission CSV (ID,TopConfigs) was expected"));
            return;
        }
        if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
        std::vector<std::string_view> lines = split_view(text, '\n');
        if (!lines.empty() && lines.back().empty()) lines.pop_back();  // final newline
        for (auto& l : lines) {
            if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        }
        if (lines.empty()) {
            error(file + ":1", "empty file, expected the header 'ID,TopConfigs'");
        } else if (lines[0] != "ID,TopConfigs") {
            error(file + ":1",
                  str("header is '", echo_value(lines[0]), "', expected 'ID,TopConfigs'"));
        }
        std::map<std::string, std::string> seen;  // ID -> where first seen
        std::map<std::string, std::pair<int64_t, std::string>>
            foreign;  // collection -> rows, first
        for (size_t i = 1; i < lines.size(); ++i) {
            const std::string where = str(file, ":", i + 1);
            const std::string_view line = lines[i];
            if (trim(line).empty()) continue;
            const auto fields = split_view(line, ',');
            if (fields.size() != 2) {
                error(where, str("expected 2 fields 'ID,TopConfigs', found ", fields.size()));
                continue;
            }
            const std::string id(fields[0]);
            const std::string coll = id_collection(id);
            if (coll.empty()) {
                error(where,
                      str("malformed ID '", echo_value(id), "': expected tile:xla:<stem> or ",
                          "layout:<xla|nlp>:<default|random>:<stem>"));
                continue;
            }
            if (const auto it = seen.find(id); it != seen.end()) {
                error(where,
                      str("duplicate ID '", echo_value(id), "' (first at ", it->second, ")"));
                continue;
            }
            seen.emplace(id, where);
            const int64_t ci = truth.collection_index(coll);
            if (ci < 0) {
                auto& f = foreign[coll];
                if (f.first++ == 0) f.second = where;
                continue;
            }
            const TruthGraph* g = truth.find(id);
            if (g == nullptr) {
                error(where, str("unknown graph '", echo_value(id), "': not in the truth of ", coll,
                                 " (", truth.collection_size(static_cast<size_t>(ci)), " graphs)"));
                continue;
            }
            std::vector<int64_t> top;
            if (check_indices(fields[1], *g, truth.collections()[g->collection].task, where, top))
                sub.rows.push_back({id, std::move(top), where});
        }
        for (const auto& [coll, f] : foreign) {
            warning(file, str(f.first, " row(s) of collection ", coll,
                              " ignored: not in the truth (first at ", f.second, ")"));
        }
        for (size_t ci = 0; ci < truth.collections().size(); ++ci) {
            std::vector<std::string> absent;
            int64_t total = 0;
            for (const TruthGraph& g : truth.graphs()) {
                if (g.collection != ci) continue;
                ++total;
                if (!seen.count(g.id)) absent.push_back(g.id);
            }
            if (absent.empty()) continue;
            const std::string msg =
                str(absent.size(), " of ", total, " graph(s) of ", truth.collections()[ci].name(),
                    " have no row: ", join_listed(absent));
            switch (missing) {
                case MissingPolicy::kWorst:
                    warning(
                        file,
                        msg +
                            "; each is scored as the worst possible submission (--missing worst)");
                    break;
                case MissingPolicy::kSkip:
                    warning(file, msg + "; left out of the means (--missing skip)");
                    break;
                case MissingPolicy::kError:
                    error(file, msg + " (--missing error)");
                    break;
            }
        }
    }
};

std::string stem_of(const std::string& file) { return std::filesystem::path(file).stem().string(); }

}  // namespace

CheckedSubmission check_submission_text(std::string_view text, const std::string& file,
                                        const Truth& truth, MissingPolicy missing) {
    CheckedSubmission sub;
    sub.file = file;
    sub.name = stem_of(file);
    Checker{truth, sub}.run(text, missing);
    return sub;
}

CheckedSubmission check_submission(const std::filesystem::path& path, const Truth& truth,
                                   MissingPolicy missing) {
    auto unreadable = [&](std::string why) {
        CheckedSubmission sub;
        sub.file = path.string();
        sub.name = stem_of(sub.file);
        sub.issues.push_back({Severity::kError, sub.file, std::move(why)});
        return sub;
    };
    std::string text;
    try {
        // A directory, a missing file, a FIFO or a link loop is named as such; so is a file over
        // the size bound.
        text = read_input_file(path, "a submission CSV file (ID,TopConfigs)", kMaxLinesFileBytes);
    } catch (const Error& e) {  // one invalid submission, not the whole run
        std::string why = e.what();
        const std::string prefix = path.string() + ": ";
        if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
        return unreadable(why);
    }
    return check_submission_text(text, path.string(), truth, missing);
}

}  // namespace segrank
