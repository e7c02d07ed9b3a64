// The one reader of measurements.jsonl (tune/measurements_file.h): the rules of segrank tune's
// writer, applied by tune --resume and by report.
#include "tune/measurements_file.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "gnn/core/check.h"
#include "gnn/core/format.h"
#include "tune/measure.h"
#include "util/user_input.h"

namespace segrank::tune {

namespace fs = std::filesystem;

namespace {

// Checks "rows" `j` of a line (at = "file:line") against the graph's shape in `bound` (the rules
// of tune --resume's config_from_json; nothing is checked when `bound` names no task).
void check_rows(const Json& j, const ConfigBound& bound, const std::string& at) {
    if (bound.task == "tile") {
        bool ok = j.is_array() && j.size() == kTileConfigDim;
        for (size_t i = 0; ok && i < j.size(); ++i)
            ok = j[i].is_number() && std::isfinite(j[i].get<double>());
        SEGRANK_CHECK(ok, at, ": \"rows\" must be 24 numbers (a tile config_feat row)");
    } else if (bound.task == "layout") {
        const auto nc = static_cast<size_t>(bound.num_config_nodes);
        SEGRANK_CHECK(j.is_array() && j.size() == nc, at, ": \"rows\" must be ", nc,
                      " rows of 18 integers (one per configurable node)");
        for (const auto& row : j) {
            SEGRANK_CHECK(row.is_array() && row.size() == kLayoutConfigDim, at,
                          ": \"rows\" must be rows of 18 integers");
            for (const auto& v : row)
                SEGRANK_CHECK(
                    v.is_number_integer() && v.get<int64_t>() >= -1 && v.get<int64_t>() <= 127, at,
                    ": layout values must be integers -1..127");
        }
    }
}

// Member `key` of `obj` as shown in a message ("missing" when absent).
std::string shown(const Json& obj, const char* key) {
    return obj.contains(key) ? echo_value(dump_json(obj[key]), 60) : std::string("missing");
}

// `key` of `obj` is an integer >= lo (at = what names obj; `expected` says it in words, e.g.
// "a positive integer (...)"; empty: "an integer >= lo").
int64_t tune_json_integer(const Json& obj, const char* key, int64_t lo, const std::string& at,
                          const std::string& expected = "") {
    SEGRANK_CHECK(
        obj.contains(key) && obj[key].is_number_integer() && obj[key].get<int64_t>() >= lo, at,
        "\"", key, "\" is ", shown(obj, key), ", expected ",
        expected.empty() ? str("an integer >= ", lo) : expected);
    return obj[key].get<int64_t>();
}

// A present `key` of `obj` is one of `names` (a string).
void tune_json_enum(const Json& obj, const char* key, std::initializer_list<const char*> names,
                    const std::string& at) {
    if (!obj.contains(key)) return;
    bool ok = false;
    std::string list;
    for (const char* n : names) {
        ok = ok || obj[key] == n;
        list += (list.empty() ? "" : ", ") + std::string(n);
    }
    SEGRANK_CHECK(ok, at, "\"", key, "\" is ", shown(obj, key), ", expected one of ", list);
}

}  // namespace

ConfigBound check_tune_json(const Json& doc, const std::string& file) {
    SEGRANK_CHECK(doc.is_object() && doc.contains("graph") && doc["graph"].is_object(), file,
                  ": expected an object with a \"graph\" object");
    const Json& g = doc["graph"];
    const std::string at = file + ": \"graph\": ";
    for (const char* key : {"name", "runtimes_fnv1a"})
        SEGRANK_CHECK(g.contains(key) && g[key].is_string(), at, "\"", key, "\" is ", shown(g, key),
                      ", expected a string");
    SEGRANK_CHECK(g.contains("task"), at, "\"task\" is missing, expected tile or layout");
    tune_json_enum(g, "task", {"tile", "layout"}, at);
    (void)tune_json_integer(g, "num_nodes", 0, at);
    ConfigBound b;
    b.source = "tune.json";
    b.task = g["task"].get<std::string>();
    b.num_configs = tune_json_integer(
        g, "num_configs", 1, at, "a positive integer (the graph's number of recorded configs)");
    b.num_config_nodes = tune_json_integer(g, "num_config_nodes", 0, at);
    const std::string top = file + ": ";
    tune_json_enum(doc, "candidates", {"recorded", "search"}, top);
    tune_json_enum(doc, "strategy", {"model", "anneal", "random"}, top);
    SEGRANK_CHECK(!doc.contains("where") || doc["where"].is_string(), top, "\"where\" is ",
                  shown(doc, "where"), ", expected the graph file (a string)");
    if (doc.contains("noise"))  // --noise: a log-normal sigma (tune/measure.cpp make_measurer)
        SEGRANK_CHECK(doc["noise"].is_number() && doc["noise"].get<double>() >= 0 &&
                          doc["noise"].get<double>() <= 5,
                      top, "\"noise\" is ", shown(doc, "noise"),
                      ", expected a log-normal sigma in [0, 5] (--noise)");
    if (doc.contains("measure")) {
        SEGRANK_CHECK(doc["measure"].is_string(), top, "\"measure\" is ", shown(doc, "measure"),
                      ", expected a --measure value (recorded, hwmodel[:FAMILY], exec:CMD)");
        try {
            (void)parse_measure_spec(doc["measure"].get<std::string>());
        } catch (const Error& e) {
            throw Error(str(top, "\"measure\" is ", shown(doc, "measure"), ": ", e.what()));
        }
    }
    if (doc.contains("checkpoints")) {
        bool ok = doc["checkpoints"].is_array();
        for (size_t i = 0; ok && i < doc["checkpoints"].size(); ++i)
            ok = doc["checkpoints"][i].is_string();
        SEGRANK_CHECK(ok, top, "\"checkpoints\" is ", shown(doc, "checkpoints"),
                      ", expected an array of checkpoint paths (strings)");
    }
    return b;
}

namespace {

// Checks one parsed line `j` (at = "file:line") against the writer's rules; `best` is the fastest
// runtime of the earlier lines, updated; `seen` the config names of the earlier lines; `bound` the
// graph's config count.
MeasurementLine check_line(const Json& j, const std::string& at, const ConfigBound& bound,
                           std::optional<double>& best, std::set<std::string>& seen,
                           int64_t previous_round) {
    SEGRANK_CHECK(j.is_object() && j.contains("round") && j["round"].is_number_integer(), at,
                  ": expected an object with an integer \"round\"");
    MeasurementLine m;
    m.round = j["round"].get<int64_t>();
    SEGRANK_CHECK(m.round >= 0, at, ": \"round\" is ", m.round, ", expected an integer >= 0");
    SEGRANK_CHECK(m.round >= previous_round, at, ": \"round\" is ", m.round, ", before round ",
                  previous_round,
                  " of the previous line (segrank tune writes the rounds in order)");
    std::string name;
    if (j.contains("rows")) {
        check_rows(j["rows"], bound, at);
        m.rows = j["rows"];
        name = "rows " + dump_json(j["rows"]);
    } else {
        SEGRANK_CHECK(j.contains("config") && j["config"].is_number_integer(), at,
                      ": expected an integer \"config\" or \"rows\"");
    }
    if (j.contains("config") && j["config"].is_number_integer()) {
        m.config = j["config"].get<int64_t>();
        SEGRANK_CHECK(*m.config >= 0 && *m.config < bound.num_configs, at, ": config ", *m.config,
                      " is out of range (", bound.source.empty() ? "" : bound.source + ": ",
                      "the graph has ", bound.num_configs, " configs)");
        if (!m.rows) name = str("config ", *m.config);
    }
    SEGRANK_CHECK(seen.insert(name).second, at, ": ", echo_value(name), " is measured twice");
    // Every line segrank tune writes has "measured_ns": a runtime, or null for a failed
    // measurement (with its "error"). Anything else is refused: a string or a missing member
    // would otherwise resume as a failure and never be measured again.
    const std::string field = str(at, ": round ", m.round, ": \"measured_ns\" ");
    SEGRANK_CHECK(j.contains("measured_ns"), field,
                  "is missing, expected a positive number of ns (or null for a failed "
                  "measurement)");
    const Json& mv = j["measured_ns"];
    if (mv.is_number()) {
        m.measured_ns = mv.get<double>();
        SEGRANK_CHECK(std::isfinite(*m.measured_ns) && *m.measured_ns > 0, field, "is ",
                      *m.measured_ns, ", expected a positive number of ns");
        if (!best || *m.measured_ns < *best) best = m.measured_ns;
    } else {
        SEGRANK_CHECK(mv.is_null(), field, "is ", echo_value(dump_json(mv)),
                      ", expected a positive number of ns (or null for a failed measurement)");
        // A failed measurement keeps why (segrank tune writes "not measured" when the backend
        // said nothing).
        const bool has_error =
            j.contains("error") && j["error"].is_string() && !j["error"].get<std::string>().empty();
        SEGRANK_CHECK(
            has_error, at, ": round ", m.round, ": \"measured_ns\" is null and \"error\" is ",
            j.contains("error") ? echo_value(dump_json(j["error"])) : std::string("missing"),
            ", expected why the measurement failed (a non-empty string)");
        m.error = j["error"].get<std::string>();
    }
    SEGRANK_CHECK(!m.measured_ns || !j.contains("error"), at, ": round ", m.round,
                  ": both \"measured_ns\" ", *m.measured_ns, " and \"error\" ",
                  echo_value(dump_json(j["error"])),
                  ": a line is a measurement or a failure, not both");
    if (j.contains("explored")) {
        const Json& e = j["explored"];
        SEGRANK_CHECK(e.is_boolean() && !(m.round == 0 && e.get<bool>()), at, ": round ", m.round,
                      ": \"explored\" is ", echo_value(dump_json(e)), ", expected ",
                      m.round == 0 ? "false (round 0 measures the default)" : "true or false");
        m.explored = e.get<bool>();
    }
    if (j.contains("best_ns")) {
        const Json& bv = j["best_ns"];
        const std::string expected =
            best ? str(*best, " (the fastest \"measured_ns\" of this and the earlier lines)")
                 : std::string("null (no measurement succeeded up to this line)");
        const bool same = best ? bv.is_number() && bv.get<double>() == *best : bv.is_null();
        SEGRANK_CHECK(same, at, ": round ", m.round, ": \"best_ns\" is ", echo_value(dump_json(bv)),
                      ", expected ", expected);
        m.best_ns = best;
    }
    return m;
}

}  // namespace

MeasurementsFile read_measurements_file(const fs::path& file, const ConfigBound& bound) {
    MeasurementsFile out;
    std::error_code ec;
    if (!fs::exists(file, ec)) return out;
    const std::string text = read_input_file(file, "a measurements.jsonl file", kMaxLinesFileBytes);
    std::set<std::string> seen;
    std::optional<double> best;
    int64_t round = 0;  // of the previous line
    size_t pos = 0;
    for (int64_t line_no = 1; pos < text.size(); ++line_no) {
        const size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) {
            out.torn = true;  // written up to the kill: that measurement is taken again
            out.torn_line = line_no;
            break;
        }
        const std::string line = text.substr(pos, nl - pos);
        const bool last = nl + 1 >= text.size();
        pos = nl + 1;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        Json j;
        try {
            j = read_json(line, file.string(), line_no);
        } catch (const Error&) {
            if (last) {
                out.torn = true;
                out.torn_line = line_no;
                break;
            }
            throw;
        }
        MeasurementLine m =
            check_line(j, str(file.string(), ":", line_no), bound, best, seen, round);
        round = m.round;
        m.line = line_no;
        out.lines.push_back(std::move(m));
        out.kept += line + "\n";
    }
    return out;
}

std::vector<bool> exploration_picks(const std::vector<MeasurementLine>& lines) {
    std::vector<bool> out(lines.size(), false);
    for (size_t begin = 0; begin < lines.size();) {
        size_t end = begin;  // the lines of one round: [begin, end)
        while (end < lines.size() && lines[end].round == lines[begin].round) ++end;
        const auto n = static_cast<int64_t>(end - begin);
        const int64_t inferred = lines[begin].round > 0 && n >= 2 ? std::max<int64_t>(1, n / 4) : 0;
        for (size_t i = begin; i < end; ++i)
            out[i] = lines[i].explored.value_or(static_cast<int64_t>(end - i) <= inferred);
        begin = end;
    }
    return out;
}

}  // namespace segrank::tune
