// `segrank report` page assembly: sections of render_report_html (see report.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "gnn/core/check.h"
#include "report/report.h"
#include "report/report_page.h"
#include "report/report_svg.h"
#include "report/run_checks.h"
#include "util/user_input.h"

namespace segrank {
namespace report_page {

const char* const kReportStyle = R"(
body { font-family: sans-serif; margin: 24px auto; max-width: 1140px; padding: 0 8px; color: #222; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 18px; border-bottom: 1px solid #ccc; padding-bottom: 4px; margin-top: 32px; }
.meta { color: #666; font-size: 13px; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.best td { font-weight: bold; background: #eef6ee; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: 10px; font-size: 12px; overflow-x: auto; }
.note { color: #8a6d00; font-size: 13px; }
)";

std::string fmt(double v, const char* f) {
    if (!std::isfinite(v)) return "";
    char buf[48];
    std::snprintf(buf, sizeof(buf), f, v);
    return buf;
}

bool numeric_cell(const std::string& s) {
    if (s.empty()) return false;
    char* end = nullptr;
    std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size();
}

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::vector<bool>& highlight) {
    std::string out = "<table><thead><tr>";
    for (const auto& h : header) out += "<th>" + html_escape(h) + "</th>";
    out += "</tr></thead><tbody>";
    for (size_t r = 0; r < rows.size(); ++r) {
        out += r < highlight.size() && highlight[r] ? "<tr class=\"best\">" : "<tr>";
        for (const auto& c : rows[r])
            out += str(numeric_cell(c) ? "<td class=\"num\">" : "<td>", html_escape(c), "</td>");
        out += "</tr>";
    }
    return out + "</tbody></table>";
}

std::string section(const char* id, const char* title, const std::string& body) {
    return str("<section id=\"", id, "\"><h2>", title, "</h2>", body, "</section>\n");
}

std::string para(const std::string& text, const char* cls) {
    return cls ? str("<p class=\"", cls, "\">", html_escape(text), "</p>")
               : "<p>" + html_escape(text) + "</p>";
}

}  // namespace report_page

namespace {

using namespace report_page;

constexpr const char* kKaggle[] = {"tile:xla", "layout:xla:default", "layout:xla:random",
                                   "layout:nlp:default", "layout:nlp:random"};

std::string summary_section(const RunRecords& run, const std::string& title) {
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"run directory", run.dir.string()});
    rows.push_back({"train log points", std::to_string(run.train.size())});
    rows.push_back({"evaluations", std::to_string(run.evals.size())});
    if (run.report) {
        const Json& rep = *run.report;
        auto add = [&](const char* key, const char* label, const char* f) {
            if (const double v = json_number_or_nan(rep, key); !std::isnan(v))
                rows.push_back({label, fmt(v, f)});
        };
        add("steps", "steps", "%.0f");
        add("best_step", "best step", "%.0f");
        add("best_selection", "best selection metric", "%.6f");
        add("world_size", "MPI ranks", "%.0f");
        if (rep.is_object() && rep.contains("final")) {
            if (const double o = json_number_or_nan(rep["final"], "overall"); !std::isnan(o))
                rows.push_back({"final overall score", fmt(o, "%.6f")});
        }
    }
    // No throughput, memory or "stopped_early" row: nothing else in a run confirms them (the
    // logged rate spans evaluations, a peak may come from an earlier resumed process, and whether a
    // run limited by train.epochs stopped early depends on its data). bench measures them.
    std::string body = html_table({"item", "value"}, rows);
    for (const auto& n : run.notes) body += para(n, "note");
    return str("<h1>", html_escape(title), "</h1>") + section("summary", "Summary", body);
}

std::string training_section(const RunRecords& run) {
    if (run.train.empty())
        return section("training", "Training curves",
                       para("No training log lines in metrics.jsonl."));
    SvgSeries loss{"loss (mean over the log interval)", {}, {}}, lr{"learning rate", {}, {}};
    bool loss_positive = true;
    for (const auto& p : run.train) {
        loss.x.push_back(static_cast<double>(p.step));
        loss.y.push_back(p.loss);
        lr.x.push_back(static_cast<double>(p.step));
        lr.y.push_back(p.lr);
        if (std::isfinite(p.loss) && p.loss <= 0) loss_positive = false;
    }
    std::string body = "<div class=\"charts\">";
    body += svg_line_chart({loss}, {"Training loss", "step", "loss", false, 560, 300});
    body += svg_line_chart({lr}, {"Learning rate", "step", "lr", false, 560, 300});
    if (loss_positive)
        body +=
            svg_line_chart({loss}, {"Training loss (log scale)", "step", "loss", true, 560, 300});
    return section("training", "Training curves", body + "</div>");
}

std::vector<std::string> collection_names(const std::vector<RunEval>& evals) {
    std::vector<std::string> names;
    for (const auto& e : evals) {
        for (const auto& c : e.collections) {
            if (std::find(names.begin(), names.end(), c.collection) == names.end())
                names.push_back(c.collection);
        }
    }
    return names;
}

/// The hwmodel row of an external leaderboard: the first row whose name contains "hwmodel" (any
/// case), with its score per collection column; nullopt when there is none.
struct LeaderboardLevel {
    std::string name;
    std::map<std::string, double> score;  ///< collection -> Kaggle score
};

std::optional<LeaderboardLevel> hwmodel_level(const TextTable* t) {
    if (t == nullptr) return std::nullopt;
    const auto name_col = std::find(t->header.begin(), t->header.end(), "name") - t->header.begin();
    if (name_col >= static_cast<long>(t->header.size())) return std::nullopt;
    for (const auto& row : t->rows) {
        std::string name = row[static_cast<size_t>(name_col)];
        std::string lower = name;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (lower.find("hwmodel") == std::string::npos) continue;
        LeaderboardLevel level{name, {}};
        for (const char* c : kKaggle) {
            const auto col = std::find(t->header.begin(), t->header.end(), c) - t->header.begin();
            if (col < static_cast<long>(t->header.size()) && col < static_cast<long>(row.size()) &&
                numeric_cell(row[static_cast<size_t>(col)]))
                level.score[c] = std::strtod(row[static_cast<size_t>(col)].c_str(), nullptr);
        }
        return level;
    }
    return std::nullopt;
}

std::string validation_section(const RunRecords& run, const TextTable* leaderboard,
                               const std::string& leaderboard_source) {
    if (run.evals.empty())
        return section("validation", "Validation metrics per collection",
                       para("No evaluations in metrics.jsonl."));
    const auto names = collection_names(run.evals);
    struct Metric {
        const char* title;
        const char* label;
        double CollectionMetrics::*field;
    };
    const Metric metrics[] = {
        {"Kaggle score per collection", "score", &CollectionMetrics::score},
        {"Kendall tau per collection", "kendall tau", &CollectionMetrics::kendall_tau},
        {"OPA per collection", "ordered pair accuracy", &CollectionMetrics::opa},
        {"slowdown@5 per collection", "slowdown@5", &CollectionMetrics::slowdown_5}};
    const auto hwmodel = hwmodel_level(leaderboard);
    // One level per collection; the collection is named only when the run has several.
    auto level_name = [&](const std::string& what, const std::string& collection) {
        return names.size() > 1 ? what + ", " + collection : what;
    };
    std::string body = "<div class=\"charts\">";
    for (const Metric& m : metrics) {
        std::vector<SvgSeries> series;
        if (m.field == &CollectionMetrics::score) {
            SvgSeries overall{"overall (mean)", {}, {}, true};
            for (const auto& e : run.evals) {
                overall.x.push_back(static_cast<double>(e.step));
                overall.y.push_back(e.overall);
            }
            series.push_back(std::move(overall));
        }
        for (const auto& name : names) {
            SvgSeries s{name, {}, {}};
            for (const auto& e : run.evals) {
                for (const auto& c : e.collections) {
                    if (c.collection != name) continue;
                    s.x.push_back(static_cast<double>(e.step));
                    s.y.push_back(c.*(m.field));
                }
            }
            series.push_back(std::move(s));
        }
        LineChartOptions opt{m.title, "step", m.label, false, 560, 300};
        for (const auto& name : names) {
            if (hwmodel && m.field == &CollectionMetrics::score) {
                if (const auto it = hwmodel->score.find(name); it != hwmodel->score.end())
                    opt.references.push_back(
                        {level_name("hwmodel", name), it->second, "#222", "7 3"});
            }
            if (run.random_baseline) {
                for (const auto& c : run.random_baseline->collections) {
                    if (c.collection == name)
                        opt.references.push_back(
                            {level_name("random", name), c.*(m.field), "#888", "2 3"});
                }
            }
        }
        body += svg_line_chart(series, opt);
    }
    body += "</div>";
    std::string levels;
    if (run.random_baseline)
        levels +=
            "random: the run's random-ranking baseline (uniform random scores on the configs "
            "of its evaluations, mean over seeds; the random_baseline line of "
            "metrics.jsonl). ";
    else
        levels +=
            "No random level: metrics.jsonl has no random_baseline line (written when "
            "training ends). ";
    if (hwmodel)
        levels += "hwmodel: the score of the leaderboard row \"" + hwmodel->name + "\" of " +
                  leaderboard_source +
                  " (comparable when that leaderboard scored the split and configs the run "
                  "evaluates). ";
    else
        levels +=
            "No hwmodel level: pass --leaderboard with a row for a `segrank hwmodel` "
            "submission of the evaluated split. ";
    body += para("Horizontal lines: " + levels);
    return section("validation", "Validation metrics per collection", body);
}

std::string graphs_section(const std::vector<GraphMetrics>& graphs, const std::string& source) {
    if (graphs.empty()) {
        return section("graphs", "Per-graph Kendall tau",
                       para("No per-graph metrics: pass --eval eval.json (written by `segrank "
                            "evaluate --json`)."));
    }
    std::vector<SvgBar> bars;
    double sum = 0;
    int64_t n = 0;
    for (const auto& g : graphs) {
        bars.push_back({g.name, g.kendall_tau});
        if (std::isfinite(g.kendall_tau)) {
            sum += g.kendall_tau;
            ++n;
        }
    }
    std::stable_sort(bars.begin(), bars.end(), [](const SvgBar& a, const SvgBar& b) {
        const double va = std::isnan(a.value) ? -2 : a.value,
                     vb = std::isnan(b.value) ? -2 : b.value;
        return va > vb;
    });
    const std::string title = str("Kendall tau per graph (", graphs.size(), " graphs, mean ",
                                  n ? fmt(sum / static_cast<double>(n)) : "n/a", ")");
    std::string body =
        para("Source: " + source +
             ". Graphs sorted by tau (of the predicted order, score ties broken by config index as "
             "in a submission); NaN (constant targets) shown as n/a.");
    body += svg_bar_chart(bars, {title, "Kendall tau-b", -1.0, 1.0, 1100});
    return section("graphs", "Per-graph Kendall tau", body);
}

std::string run_leaderboard_section(const RunRecords& run) {
    if (run.evals.empty())
        return section("run-leaderboard", "Leaderboard of the run's evaluations",
                       para("No evaluations."));
    std::vector<size_t> order(run.evals.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const double oa = std::isnan(run.evals[a].overall) ? -1e300 : run.evals[a].overall;
        const double ob = std::isnan(run.evals[b].overall) ? -1e300 : run.evals[b].overall;
        return oa > ob;
    });
    std::vector<std::string> header = {"rank", "phase", "step", "overall"};
    for (const char* c : kKaggle) header.push_back(c);
    header.push_back("selection");
    std::vector<std::vector<std::string>> rows;
    std::vector<bool> best;
    for (size_t r = 0; r < order.size(); ++r) {
        const RunEval& e = run.evals[order[r]];
        std::vector<std::string> row = {std::to_string(r + 1), e.phase, std::to_string(e.step),
                                        fmt(e.overall)};
        for (const char* name : kKaggle) {
            std::string cell;
            for (const auto& c : e.collections) {
                if (c.collection == name) cell = fmt(c.score);
            }
            row.push_back(cell);
        }
        row.push_back(fmt(e.selection, "%.6f"));
        rows.push_back(std::move(row));
        best.push_back(r == 0);
    }
    return section("run-leaderboard", "Leaderboard of the run's evaluations",
                   para("Every evaluation in metrics.jsonl ranked by overall score (mean of the "
                        "collection scores; "
                        "tile = 1 - slowdown@5, layout = Kendall tau).") +
                       html_table(header, rows, best));
}

std::string external_leaderboard_section(const TextTable& t, const std::string& source) {
    std::string body = para("Source: " + source);
    // Scores (round-trip numbers in --out-csv) are shown with 4 decimals; counts stay integers.
    auto rows = t.rows;
    for (auto& row : rows) {
        for (size_t k = 0; k < row.size() && k < t.header.size(); ++k) {
            const std::string& h = t.header[k];
            const bool count_column = h == "rank" || h == "graphs" || h == "missing" || h == "step";
            if (!count_column && numeric_cell(row[k]))
                row[k] = fmt(std::strtod(row[k].c_str(), nullptr));
        }
    }
    body += html_table(t.header, rows, std::vector<bool>(t.rows.size() > 0 ? 1 : 0, true));
    const auto name_col = std::find(t.header.begin(), t.header.end(), "name") - t.header.begin();
    const auto overall_col =
        std::find(t.header.begin(), t.header.end(), "overall") - t.header.begin();
    if (name_col < static_cast<long>(t.header.size()) &&
        overall_col < static_cast<long>(t.header.size())) {
        std::vector<SvgBar> bars;
        for (const auto& row : t.rows) {
            const std::string& v = row[static_cast<size_t>(overall_col)];
            bars.push_back({row[static_cast<size_t>(name_col)],
                            numeric_cell(v) ? std::strtod(v.c_str(), nullptr) : std::nan("")});
        }
        body += svg_bar_chart(
            bars, {"Overall score by submission", "overall", std::nullopt, std::nullopt, 900});
    }
    return section("leaderboard", "Leaderboard", body);
}

}  // namespace

std::string render_report_html(const ReportOptions& opt, std::vector<std::string>* notes) {
    RunRecords run = load_run(opt.run_dir, opt.selection_metric, opt.task);
    run.notes.insert(run.notes.begin(), opt.checkpoint_notes.begin(), opt.checkpoint_notes.end());
    if (opt.schedule_config) check_train_schedule(run, *opt.schedule_config, opt.run_dir);
    std::vector<GraphMetrics> graphs;
    std::string graph_source;
    if (opt.eval_json) {
        // A missing path, a link loop, a folder, a device: said as such, not "not evaluate output".
        require_regular_input(*opt.eval_json,
                              "`segrank evaluate --json` output, the JSON file --eval reads");
        Json doc;
        try {
            doc = read_json_file(*opt.eval_json);
        } catch (const Error& e) {  // a Markdown note, a CSV, a TOML file given by mistake
            throw Error(str(opt.eval_json->string(),
                            ": not `segrank evaluate --json` output (--eval expects that JSON "
                            "file): ",
                            e.what()));
        }
        check_evaluate_json(doc, opt.eval_json->string(), run.task);
        if (const std::string other =
                eval_checkpoint_mismatch(doc, opt.run_dir, opt.run_checkpoint_ids);
            !other.empty()) {
            SEGRANK_CHECK(opt.eval_of_other_run, opt.eval_json->string(), ": ", other,
                          ": evaluate this run (segrank evaluate --checkpoint ",
                          opt.run_dir.string(),
                          " --json FILE), or give --eval-of-other-run to "
                          "draw it anyway with a note");
            run.notes.push_back(str(opt.eval_json->string(), ": ", other,
                                    "; drawn as asked (--eval-of-other-run)"));
        }
        graphs = graph_metrics_from_json(doc, opt.eval_json->string());
        SEGRANK_CHECK(!graphs.empty(), opt.eval_json->string(),
                      ": no \"graphs\" array of per-graph metrics (expected `segrank evaluate "
                      "--json` output)");
        graph_source = opt.eval_json->string();
        // Which graphs of which data (evaluate --json since it records them).
        const std::string evaluated = json_string(doc, "evaluated").value_or("");
        const std::string data_root = json_string(doc, "data_root").value_or("");
        if (!evaluated.empty())
            graph_source += str(": ", evaluated, data_root.empty() ? "" : " of ", data_root);
    } else if (run.report) {
        graphs = graph_metrics_from_json(*run.report, (run.dir / "report.json").string());
        graph_source = (run.dir / "report.json").string();
    }
    if (notes) *notes = run.notes;
    std::string name =
        std::filesystem::absolute(opt.run_dir).lexically_normal().filename().string();
    if (name.empty())
        name = std::filesystem::absolute(opt.run_dir)
                   .lexically_normal()
                   .parent_path()
                   .filename()
                   .string();
    const std::string title = "segrank run report: " + name;
    std::string html = str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
                           kReportGeneratorMeta, "<title>", html_escape(title), "</title><style>",
                           report_page::kReportStyle, "</style></head><body>\n");
    html += summary_section(run, title);
    html += training_section(run);
    std::optional<TextTable> leaderboard;
    if (opt.leaderboard) leaderboard = load_leaderboard_table(*opt.leaderboard);
    html += validation_section(run, leaderboard ? &*leaderboard : nullptr,
                               opt.leaderboard ? opt.leaderboard->string() : "");
    html += graphs_section(graphs, graph_source);
    html += run_leaderboard_section(run);
    if (leaderboard) html += external_leaderboard_section(*leaderboard, opt.leaderboard->string());
    html += section("config", "Effective config",
                    run.config_text.empty() ? para("config.toml is absent.")
                                            : "<pre>" + html_escape(run.config_text) + "</pre>");
    html +=
        "<p class=\"meta\">Generated by segrank report; self-contained (inline SVG, no scripts, no "
        "network).</p>\n";
    return html + "</body></html>\n";
}

}  // namespace segrank
