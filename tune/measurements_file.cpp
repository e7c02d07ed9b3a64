// The one reader of measurements.jsonl (tune/measurements_file.h): the rules of segrank tune's
// writer, applied by tune --resume and by report.
#include "tune/measurements_file.h"

#include <cmath>
#include <set>

#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank::tune {

namespace fs = std::filesystem;

namespace {

// Checks one parsed line `j` (at = "file:line") against the writer's rules; `best` is the fastest
// runtime of the earlier lines, updated; `seen` the config names of the earlier lines; `bound` the
// graph's config count.
MeasurementLine check_line(const Json& j, const std::string& at, const ConfigBound& bound,
                           std::optional<double>& best, std::set<std::string>& seen) {
    SEGRANK_CHECK(j.is_object() && j.contains("round") && j["round"].is_number_integer(), at,
                  ": expected an object with an integer \"round\"");
    MeasurementLine m;
    m.round = j["round"].get<int64_t>();
    SEGRANK_CHECK(m.round >= 0, at, ": \"round\" is ", m.round, ", expected an integer >= 0");
    std::string name;
    if (j.contains("rows")) {
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
        m.error = j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>()
                                                                : std::string("not measured");
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
        MeasurementLine m = check_line(j, str(file.string(), ":", line_no), bound, best, seen);
        m.line = line_no;
        out.lines.push_back(std::move(m));
        out.kept += line + "\n";
    }
    return out;
}

}  // namespace segrank::tune
