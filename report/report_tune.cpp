// `segrank report TUNE_DIR`: the page of a `segrank tune` run (see report.h): best-so-far runtime
// and speedup over the default against the measurement index, beside other runs (--compare).
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <span>
#include <sstream>

#include "gnn/core/check.h"
#include "report/report.h"
#include "report/report_page.h"
#include "report/report_svg.h"
#include "tune/measurements_file.h"
#include "util/user_input.h"

namespace segrank {
namespace {

using namespace report_page;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A number member, NaN when absent or null.
double number(const Json& v, const char* key) { return json_number_or_nan(v, key); }

std::string text_of(const Json& v, const char* key) {
    if (!v.is_object() || !v.contains(key)) return "";
    const Json& x = v[key];
    if (x.is_string()) return x.get<std::string>();
    if (x.is_null()) return "";
    return dump_json(x);
}

// A runtime in the unit that suits it (ns, us, ms, s).
std::string runtime(double ns) {
    if (!std::isfinite(ns)) return "";
    if (ns >= 1e9) return fmt(ns / 1e9, "%.4g s");
    if (ns >= 1e6) return fmt(ns / 1e6, "%.4g ms");
    if (ns >= 1e3) return fmt(ns / 1e3, "%.4g us");
    return fmt(ns, "%.4g ns");
}

// The series label of a run: its directory name and strategy.
std::string run_label(const TuneRecords& r) {
    std::string name = std::filesystem::absolute(r.dir).lexically_normal().filename().string();
    if (name.empty())
        name =
            std::filesystem::absolute(r.dir).lexically_normal().parent_path().filename().string();
    const std::string strategy = text_of(r.tune, "strategy");
    return strategy.empty() || name.find(strategy) != std::string::npos
               ? name
               : name + " (" + strategy + ")";
}

// 1-based index of the first measurement whose best so far is within `within` of `target`; 0 when
// none is.
int64_t first_within(const TuneRecords& r, double target, double within) {
    for (size_t i = 0; i < r.points.size(); ++i)
        if (std::isfinite(r.points[i].best_ns) && r.points[i].best_ns <= target * (1 + within))
            return static_cast<int64_t>(i + 1);
    return 0;
}

std::string summary_section(const TuneRecords& r, const std::vector<TuneRecords>& others) {
    const Json& g = r.tune["graph"];
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"tune directory", r.dir.string()});
    rows.push_back({"graph", text_of(g, "name") + " (" + text_of(g, "task") + ", " +
                                 text_of(g, "num_configs") + " recorded configs)"});
    rows.push_back({"graph file", text_of(r.tune, "where")});
    rows.push_back({"measure", text_of(r.tune, "measure")});
    rows.push_back({"candidates", text_of(r.tune, "candidates")});
    rows.push_back({"strategy", r.tune.contains("strategy") ? text_of(r.tune, "strategy")
                                                            : std::string("model")});
    rows.push_back({"checkpoints", text_of(r.tune, "checkpoints")});
    int64_t failed = 0;
    for (const auto& p : r.points) failed += std::isnan(p.measured_ns);
    rows.push_back({"measurements", str(r.points.size(), " (", failed, " failed)")});
    rows.push_back({"default runtime", runtime(r.default_ns)});
    const double best = r.points.empty() ? kNaN : r.points.back().best_ns;
    rows.push_back({"best runtime", runtime(best)});
    if (std::isfinite(best)) {
        // the first measurement of the best runtime (the one segrank tune keeps)
        const TunePoint* at = nullptr;
        for (const auto& p : r.points)
            if (at == nullptr && p.measured_ns == best) at = &p;
        rows.push_back(
            {"best config", at && at->config
                                ? std::to_string(*at->config)
                                : std::string("a searched config (not a row of the file)")});
    }
    rows.push_back({"speedup over the default", fmt(r.default_ns / best, "%.4fx")});
    if (std::isfinite(best))
        rows.push_back({"measurements to within 1 % of the best",
                        std::to_string(first_within(r, best, 0.01))});
    std::string body = html_table({"item", "value"}, rows);
    if (!others.empty()) {
        std::vector<std::vector<std::string>> cmp;
        double all_best = best;
        for (const auto& o : others)
            if (!o.points.empty() && !(o.points.back().best_ns >= all_best))
                all_best = o.points.back().best_ns;
        auto row = [&](const TuneRecords& t) {
            const double b = t.points.empty() ? kNaN : t.points.back().best_ns;
            const int64_t n = std::isfinite(all_best) ? first_within(t, all_best, 0.01) : 0;
            return std::vector<std::string>{run_label(t),
                                            std::to_string(t.points.size()),
                                            runtime(t.default_ns),
                                            runtime(b),
                                            fmt(t.default_ns / b, "%.4f"),
                                            n > 0 ? std::to_string(n) : std::string("never")};
        };
        cmp.push_back(row(r));
        for (const auto& o : others) cmp.push_back(row(o));
        body += para(
            "Runs compared (the best of all of them is the reference of the last "
            "column):");
        body += html_table({"run", "measurements", "default", "best", "speedup",
                            "measurements to within 1 % of the best of all runs"},
                           cmp);
    }
    for (const auto& n : r.notes) body += para(n, "note");
    for (const auto& o : others)
        for (const auto& n : o.notes) body += para(n, "note");
    return section("summary", "Summary", body);
}

std::string curves_section(const std::vector<const TuneRecords*>& runs) {
    std::vector<SvgSeries> best, speedup, measured;
    bool positive = true;
    for (const TuneRecords* r : runs) {
        SvgSeries b{run_label(*r), {}, {}}, s{run_label(*r), {}, {}},
            m{run_label(*r) + ": each measurement", {}, {}};
        for (size_t i = 0; i < r->points.size(); ++i) {
            const double x = static_cast<double>(i + 1);
            b.x.push_back(x);
            b.y.push_back(r->points[i].best_ns);
            s.x.push_back(x);
            s.y.push_back(r->default_ns / r->points[i].best_ns);
            m.x.push_back(x);
            m.y.push_back(r->points[i].measured_ns);
        }
        best.push_back(std::move(b));
        speedup.push_back(std::move(s));
        measured.push_back(std::move(m));
    }
    for (const auto& s : measured)
        for (double y : s.y) positive = positive && !(y <= 0);
    LineChartOptions bo{"Best runtime so far", "measurement", "runtime (ns)", false, 560, 300};
    bo.references.push_back({"default of " + run_label(*runs[0]), runs[0]->default_ns});
    LineChartOptions so{
        "Speedup over the default", "measurement", "default / best so far", false, 560, 300};
    so.references.push_back({"the default (1x)", 1.0});
    LineChartOptions mo{"Each measured runtime (failures are gaps)",
                        "measurement",
                        "runtime (ns)",
                        positive,
                        560,
                        300};
    std::string body = "<div class=\"charts\">";
    body += svg_line_chart(best, bo);
    body += svg_line_chart(speedup, so);
    body += svg_line_chart(measured, mo);
    body += "</div>";
    body += para(
        "x: the measurement index (1 = the first line of measurements.jsonl, the "
        "compiler default in a segrank tune run). Each run's speedup is over its own "
        "default.");
    return section("curves", "Tuning curves", body);
}

std::string rounds_section(const TuneRecords& r) {
    std::map<int64_t, std::vector<const TunePoint*>> by_round;
    for (const auto& p : r.points) by_round[p.round].push_back(&p);
    std::vector<std::vector<std::string>> rows;
    std::vector<bool> hl;
    size_t seen = 0;
    double prev = kNaN;
    for (const auto& [round, ps] : by_round) {
        int64_t failed = 0;
        double fastest = kNaN;
        for (const TunePoint* p : ps) {
            failed += std::isnan(p->measured_ns);
            if (!(p->measured_ns >= fastest)) fastest = p->measured_ns;
        }
        seen += ps.size();
        const double b = ps.back()->best_ns;
        rows.push_back({std::to_string(round), std::to_string(ps.size()), std::to_string(failed),
                        std::to_string(seen), runtime(fastest), runtime(b),
                        fmt(r.default_ns / b, "%.4f")});
        hl.push_back(std::isfinite(b) && !(b >= prev));
        prev = b;
    }
    std::string body = para("Highlighted: rounds that improved the best so far.");
    body += html_table({"round", "measured", "failed", "measurements so far", "fastest of round",
                        "best so far", "speedup over default"},
                       rows, hl);
    return section("rounds", "Rounds", body);
}

// A measurement line for a message: "DIR/measurements.jsonl:2 (round 1, config 11, 1500 ns)".
std::string line_text(const std::string& file, const tune::MeasurementLine& m) {
    return str(file, ":", m.line, " (round ", m.round, ", ",
               m.config ? str("config ", *m.config) : std::string("a searched config"), ", ",
               m.measured_ns ? format_number(*m.measured_ns) + " ns"
                             : "failed: " + echo_value(m.error, 200),
               ")");
}

// best.json `b` (read from `file`, an object) held to `lines`, the first lines of
// measurements.jsonl (`meas`) that it was written after, by the rules of its writer
// (cli/tune_rounds.cpp, TuneRun::note; cli/tune_files.cpp, write_best_json): "config" and
// "runtime_ns" (and the rows, "config_feat" / "node_config_feat", when the line has "rows") are
// those of the first line whose runtime is below every earlier one's (null when none succeeded);
// "default_runtime_ns" and "default_config" those of the round-0 line (the default's measurement;
// null runtime when it failed); "speedup_over_default" is their ratio. A member that is absent is
// not checked. On a tile graph "default_config" may lie above the round-0 line's config: tune names
// a config by the first recorded config with its rows, and the default may repeat an earlier
// config's rows. Throws segrank::Error naming `file`, the field, its value and the line that
// contradicts it.
void check_best_json(const Json& b, const std::string& file, const std::string& meas,
                     std::span<const tune::MeasurementLine> lines, const tune::ConfigBound& bound) {
    const tune::MeasurementLine* fastest = nullptr;
    const tune::MeasurementLine* def = nullptr;
    for (const tune::MeasurementLine& m : lines) {
        if (m.round == 0 && def == nullptr) def = &m;
        if (m.measured_ns && (fastest == nullptr || *m.measured_ns < *fastest->measured_ns))
            fastest = &m;
    }
    const std::string scope =
        str("the ", lines.size(), " line(s) of ", meas, " that it counts (\"measured\")");
    auto is = [&](const char* key) {
        return str(file, ": \"", key, "\" is ", echo_value(dump_json(b[key]), 200), ", expected ");
    };
    const std::string best_is =
        fastest ? str(": the fastest measurement of ", scope, " is ", line_text(meas, *fastest),
                      " (segrank tune keeps the first of equal runtimes)")
                : str(": no measurement of ", scope, " succeeded");
    if (b.contains("runtime_ns")) {
        const Json want = fastest ? Json(*fastest->measured_ns) : Json(nullptr);
        SEGRANK_CHECK(b["runtime_ns"] == want, is("runtime_ns"), dump_json(want), best_is);
    }
    if (b.contains("config")) {
        const Json want = fastest && fastest->config ? Json(*fastest->config) : Json(nullptr);
        SEGRANK_CHECK(b["config"] == want, is("config"), dump_json(want), best_is);
    }
    const char* rows_key = bound.task == "tile" ? "config_feat" : "node_config_feat";
    if (fastest && fastest->rows && b.contains(rows_key))
        SEGRANK_CHECK(b[rows_key] == *fastest->rows, is(rows_key), "the \"rows\" of ", meas, ":",
                      fastest->line, " (", echo_value(dump_json(*fastest->rows), 200), ")",
                      best_is);
    const std::string def_is =
        def ? str(": the default's measurement is ", line_text(meas, *def))
            : str(": ", scope, " hold no round-0 line (the default's measurement)");
    if (b.contains("default_runtime_ns")) {
        const Json want = def && def->measured_ns ? Json(*def->measured_ns) : Json(nullptr);
        SEGRANK_CHECK(b["default_runtime_ns"] == want, is("default_runtime_ns"), dump_json(want),
                      def_is);
    }
    if (def && def->config && b.contains("default_config")) {
        const Json& v = b["default_config"];
        const bool above = bound.task == "tile" && v.is_number_integer() &&
                           v.get<int64_t>() > *def->config && v.get<int64_t>() < bound.num_configs;
        SEGRANK_CHECK(v == Json(*def->config) || above, is("default_config"), *def->config, def_is);
    }
    if (b.contains("speedup_over_default")) {
        const double d = number(b, "default_runtime_ns"), r = number(b, "runtime_ns");
        const double s = number(b, "speedup_over_default");
        const bool known = std::isfinite(d) && std::isfinite(r);
        SEGRANK_CHECK(
            known ? std::abs(s - d / r) <= 1e-9 * (d / r) : b["speedup_over_default"].is_null(),
            is("speedup_over_default"),
            known ? format_number(d / r) + " (\"default_runtime_ns\" / \"runtime_ns\")"
                  : std::string("null (no default or best runtime)"));
    }
}

}  // namespace

bool is_tune_dir(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(fs::symlink_status(dir / "tune.json", ec))) return true;  // whatever it is
    // One that lost its tune.json: a tune's files and nothing of a training run.
    const bool tune_files =
        fs::exists(dir / "measurements.jsonl", ec) || fs::exists(dir / "best.json", ec);
    const bool run_files =
        fs::exists(dir / "metrics.jsonl", ec) || fs::exists(dir / "config.toml", ec);
    return tune_files && !run_files;
}

bool is_segrank_report_page(std::string_view head) {
    if (head.find(kReportGeneratorMeta) != std::string_view::npos) return true;
    if (!head.starts_with("<!DOCTYPE html>\n<html lang=\"en\"><head>")) return false;
    return head.find("<title>segrank run report: ") != std::string_view::npos ||
           head.find("<title>segrank tuning report: ") != std::string_view::npos;
}

TuneRecords load_tune_dir(const std::filesystem::path& dir) {
    SEGRANK_CHECK(std::filesystem::is_directory(dir), dir.string(), ": not a tune directory");
    const auto tune_path = dir / "tune.json";
    SEGRANK_CHECK(is_tune_dir(dir), dir.string(),
                  ": not a tune directory (no tune.json; written by segrank tune --out)");
    // A FIFO, folder or dangling link named tune.json is named as such (never opened).
    require_regular_input(tune_path, "the tune.json segrank tune --out writes");
    TuneRecords r;
    r.dir = dir;
    r.tune = read_json_file(tune_path);
    // tune.json and measurements.jsonl are held to the rules of segrank tune's writer, as tune
    // --resume applies them (one reader, tune/measurements_file.h): a page draws no number or name
    // that tune itself would refuse (an unknown task or strategy, a runtime <= 0, a config
    // measured twice, "rows" that do not fit the graph, rounds out of order, a "best_ns" that is
    // not the fastest runtime so far). A "config" is an index of the graph's recorded configs:
    // tune.json's num_configs bounds it, as the loaded graph does on --resume.
    const tune::ConfigBound bound = tune::check_tune_json(r.tune, tune_path.string());
    // best.json first: a running tune appends lines before it rewrites best.json, so the lines
    // read after it hold every measurement it counts.
    const auto best_path = dir / "best.json";
    std::error_code ec;
    if (std::filesystem::exists(best_path, ec)) {
        r.best = read_json_file(best_path);
        SEGRANK_CHECK(r.best->is_object(), best_path.string(), ": expected a JSON object");
        // What segrank tune writes: runtimes and the speedup are positive numbers (or null).
        for (const char* key : {"default_runtime_ns", "runtime_ns", "speedup_over_default"}) {
            if (!r.best->contains(key) || (*r.best)[key].is_null()) continue;
            const Json& v = (*r.best)[key];
            SEGRANK_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0,
                          best_path.string(), ": \"", key, "\" is ", echo_value(dump_json(v)),
                          ", expected a positive number (or null)");
        }
        const Json* counted = r.best->contains("measured") ? &(*r.best)["measured"] : nullptr;
        SEGRANK_CHECK(!counted || (counted->is_number_integer() && counted->get<int64_t>() >= 0),
                      best_path.string(), ": \"measured\" is ",
                      echo_value(dump_json(counted ? *counted : Json())),
                      ", expected an integer >= 0 (the measurements it was written after)");
    }
    const auto meas_path = dir / "measurements.jsonl";
    std::vector<tune::MeasurementLine> lines;
    if (std::filesystem::exists(meas_path, ec)) {
        tune::MeasurementsFile mf = tune::read_measurements_file(meas_path, bound);
        if (mf.torn)
            r.notes.push_back(str(meas_path.string(), ":", mf.torn_line,
                                  ": torn last line skipped (no line end or not JSON: is the run "
                                  "still measuring?)"));
        lines = std::move(mf.lines);
    } else {
        r.notes.push_back(meas_path.string() + ": absent (nothing measured yet)");
    }
    if (!r.best) r.notes.push_back(best_path.string() + ": absent (no round finished yet)");
    // best so far from the measured runtimes (equal to each line's "best_ns" when present)
    double best = kNaN;
    for (const tune::MeasurementLine& m : lines) {
        TunePoint p;
        p.line = m.line;
        p.round = m.round;
        p.config = m.config;
        p.measured_ns = m.measured_ns.value_or(kNaN);
        p.error = m.measured_ns ? std::string() : m.error;
        if (!std::isnan(p.measured_ns) && !(p.measured_ns >= best)) best = p.measured_ns;
        p.best_ns = best;
        r.points.push_back(std::move(p));
    }
    // best.json is rewritten after the default's measurement, after each round of a model-guided
    // run and at the end of a run: it describes the first "measured" lines (fewer after a kill
    // mid-round, or while the run measures), and is held to them. More than the file holds means
    // lines were lost (the file emptied or cut): the curves miss them, and what best.json says of
    // them cannot be checked.
    const int64_t counted = r.best && r.best->contains("measured")
                                ? (*r.best)["measured"].get<int64_t>()
                                : static_cast<int64_t>(lines.size());
    if (r.best && counted > static_cast<int64_t>(lines.size()))
        r.notes.push_back(str(best_path.string(), ": records ", counted, " measurements, but ",
                              meas_path.string(), " holds ", lines.size(),
                              ": the curves miss the lost ones"));
    else if (r.best)
        check_best_json(
            *r.best, best_path.string(), meas_path.string(),
            std::span<const tune::MeasurementLine>(lines).first(static_cast<size_t>(counted)),
            bound);
    // The default's runtime: the round-0 line's; best.json's only when that line was lost.
    if (!r.points.empty() && r.points[0].round == 0)
        r.default_ns = r.points[0].measured_ns;
    else
        r.default_ns = r.best ? number(*r.best, "default_runtime_ns") : kNaN;
    return r;
}

std::string render_tune_report_html(const std::filesystem::path& dir,
                                    const std::vector<std::filesystem::path>& compare,
                                    std::vector<std::string>* notes) {
    const TuneRecords run = load_tune_dir(dir);
    std::vector<TuneRecords> others;
    for (const auto& c : compare) {
        others.push_back(load_tune_dir(c));
        // Curves of two graphs share no default and no runtime scale: only runs of one graph
        // (tune.json "graph": name, sizes and a hash of its runtimes) are compared.
        const Json& mine = run.tune["graph"];
        const Json& theirs = others.back().tune["graph"];
        // "content" (the file's digest) is compared when both record it (older tune.json lack it).
        Json a = mine, b = theirs;
        if (a.is_object() && b.is_object() && (!a.contains("content") || !b.contains("content"))) {
            a.erase("content");
            b.erase("content");
        }
        SEGRANK_CHECK(a == b, "--compare ", c.string(), ": tunes graph ", text_of(theirs, "name"),
                      " (", dump_json(theirs), "), not the graph of ", dir.string(), ", ",
                      text_of(mine, "name"), " (", dump_json(mine),
                      "): the graphs differ, and --compare draws tuning runs of one graph");
    }
    if (notes) {
        *notes = run.notes;
        for (const auto& o : others) notes->insert(notes->end(), o.notes.begin(), o.notes.end());
    }
    std::vector<const TuneRecords*> all{&run};
    for (const auto& o : others) all.push_back(&o);
    const std::string title =
        "segrank tuning report: " + run_label(run) + " on " + text_of(run.tune["graph"], "name");
    std::string html = str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
                           kReportGeneratorMeta, "<title>", html_escape(title), "</title><style>",
                           kReportStyle, "</style></head><body>\n");
    html += str("<h1>", html_escape(title), "</h1>");
    html += summary_section(run, others);
    html += curves_section(all);
    html += rounds_section(run);
    html +=
        "<p class=\"meta\">Generated by segrank report; self-contained (inline SVG, no scripts, no "
        "network).</p>\n";
    return html + "</body></html>\n";
}

}  // namespace segrank
