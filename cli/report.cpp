// `segrank report RUN_DIR [--out report.html] [--eval eval.json] [--leaderboard table.csv|json]`:
// one self-contained HTML page of a run; `segrank report TUNE_DIR [--compare TUNE_DIR2 ...]`: the
// page of a tuning run.
#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cxxopts.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "data/collection.h"
#include "gnn/core/check.h"
#include "trainer/checkpoint.h"
#include "trainer/config.h"
#include "trainer/run_dir.h"
#include "util/atomic_file.h"
#include "util/json.h"
#include "util/user_input.h"

namespace segrank::cli {

namespace {

// What the page notes (absent files, a torn last line, a loss that is not finite) goes to stderr
// as well, so a partial page is never a silent one.
void print_notes(const std::vector<std::string>& notes) {
    for (const auto& n : notes)
        std::fprintf(stderr, "segrank report: note: %s\n",
                     echo_value(n, std::string_view::npos).c_str());
}

// The page of a tune directory (tune.json): written to --out, else DIR/report.html.
int report_tune_dir(const cxxopts::ParseResult& args, const std::filesystem::path& dir) {
    SEGRANK_CHECK(
        !args.count("eval") && !args.count("leaderboard") && !args.count("eval-of-other-run"),
        dir.string(), " is a tune directory: --eval and --leaderboard apply to training runs only");
    std::vector<std::filesystem::path> compare;
    if (args.count("compare"))
        for (const auto& c : args["compare"].as<std::vector<std::string>>()) {
            SEGRANK_CHECK(is_tune_dir(c), "--compare ", c,
                          ": not a tune directory (no tune.json; written by segrank tune --out)");
            compare.emplace_back(c);
        }
    const std::filesystem::path out = args.count("out")
                                          ? std::filesystem::path(args["out"].as<std::string>())
                                          : dir / "report.html";
    refuse_replacing_other_file(args.count("out") ? "--out" : "the page", out.string(),
                                is_segrank_report_page, "a page segrank report wrote",
                                "segrank report");
    std::vector<std::string> notes;
    const std::string html = render_tune_report_html(dir, compare, &notes);
    print_notes(notes);
    write_file_atomically(out, html);
    std::printf("segrank report: wrote %s (%zu bytes)\n", out.string().c_str(), html.size());
    return 0;
}

// What run `dir`'s checkpoints (last, best) record: the task (/extra/task) and their
// parameters_id. A checkpoint that cannot be read adds nothing but a note naming it (the page is
// still drawn: a broken checkpoint is evaluate's and resume's to refuse), so the checks that use
// it (config.toml's eval.metric against the checkpoint's) are not skipped without a word.
struct CheckpointFacts {
    std::optional<Task> task;
    std::vector<std::string> ids;
    /// eval.metric of the first readable checkpoint's stored config, and that checkpoint.
    std::string metric;
    std::filesystem::path metric_source;
    /// That stored config (last.ckpt.h5's when readable: the run's latest).
    std::optional<RunConfig> stored;
    /// /extra/world_size of last.ckpt.h5 (the ranks of the run's last part, as report.json's).
    std::optional<int64_t> last_world_size;
    /// /step of last.ckpt.h5 (a finished run saves it at its end: report.json's "steps").
    std::optional<int64_t> last_step;
    /// What each readable checkpoint says about the best evaluation: its /step, /extra/best_step
    /// and /extra/best_selection (the "%.17g" text, NaN when absent), and its stored config.
    struct Best {
        std::filesystem::path file;
        int64_t step = 0;
        std::optional<int64_t> best_step;
        std::optional<std::string> best_selection;
        std::optional<RunConfig> stored;
    };
    std::optional<Best> last, best;
    /// best.ckpt.h5 is a regular file (readable or not).
    bool best_present = false;
    /// "RUN/last.ckpt.h5: not readable as a checkpoint (REASON), not used" per unreadable one.
    std::vector<std::string> notes;
};
CheckpointFacts checkpoint_facts(const std::filesystem::path& dir) {
    CheckpointFacts f;
    for (const char* name : {"last.ckpt.h5", "best.ckpt.h5"}) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(dir / name, ec)) continue;
        try {
            const CheckpointReader r(dir / name);
            if (const auto task = r.attr_string("task"); task && !f.task)
                f.task = parse_task(*task);
            if (const auto toml = r.attr_string("config_toml"); toml && f.metric.empty()) {
                f.stored = load_stored_config(*toml, (dir / name).string() + ":config_toml");
                f.metric = cfg::to_string(f.stored->eval.metric);
                f.metric_source = dir / name;
            }
            const bool last = std::string_view(name) == "last.ckpt.h5";
            if (last) {
                f.last_world_size = r.attr_int("world_size");
                f.last_step = r.step();
            } else {
                f.best_present = true;
            }
            CheckpointFacts::Best b{dir / name, r.step(), r.attr_int("best_step"),
                                    r.attr_string("best_selection"), std::nullopt};
            if (const auto toml = r.attr_string("config_toml"))
                b.stored = load_stored_config(*toml, (dir / name).string() + ":config_toml");
            (last ? f.last : f.best) = std::move(b);
            f.ids.push_back(r.parameters_id());
        } catch (const Error& e) {
            if (std::string_view(name) == "best.ckpt.h5") f.best_present = true;
            const std::string file = (dir / name).string();
            std::string_view why = e.what();
            if (why.starts_with(file + ": ")) why.remove_prefix(file.size() + 2);  // named once
            f.notes.push_back(str(file, ": not readable as a checkpoint (", echo_value(why, 240),
                                  "), not used: its task, model id and eval.metric are not "
                                  "checked against the run's files"));
        }
    }
    return f;
}

// Two selections one writer wrote from the same double ("%.17g" in the checkpoint, the JSON
// writer's shortest round trip in report.json).
bool same_selection(double a, double b) {
    return a == b || std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b));
}

// report.json's "best_step" / "best_selection" against the checkpoints that record them:
// best.ckpt.h5 is saved by the evaluation that set them (its /step and /extra/best_step are
// best_step, its /extra/best_selection the selection), and last.ckpt.h5, saved at the run's end,
// carries the same selection state. best.ckpt.h5's stored config must be config.toml's in every
// key a resume cannot change (it is a model of this run). An absent best.ckpt.h5 adds a note (the
// page draws the best step of a model that is gone). Throws naming report.json, the field and the
// checkpoint that contradicts it.
void check_best_facts(const std::filesystem::path& file, const Json& rep, const RunConfig& cfg,
                      const CheckpointFacts& ck, std::vector<std::string>& notes) {
    const auto bs = rep.find("best_step");
    if (bs == rep.end() || !bs->is_number_integer() || bs->get<int64_t>() < 0) return;
    const int64_t best_step = bs->get<int64_t>();
    const auto sel = rep.find("best_selection");
    const bool has_sel = sel != rep.end() && sel->is_number();
    const std::filesystem::path best_file = file.parent_path() / "best.ckpt.h5";
    if (!ck.best_present)
        notes.push_back(str(file.string(), ": \"best_step\" is ", best_step, ", but ",
                            best_file.string(),
                            ", the model of that evaluation, is absent (deleted or moved?): the "
                            "best step and selection drawn are not checked against it"));
    for (const auto* c : {ck.best ? &*ck.best : nullptr, ck.last ? &*ck.last : nullptr}) {
        if (c == nullptr) continue;
        const bool is_best = c == (ck.best ? &*ck.best : nullptr);
        const std::string f = c->file.string();
        if (is_best) {
            SEGRANK_CHECK(c->step == best_step, file.string(), ": \"best_step\" is ", best_step,
                          ", but ", f, ", the model of the best evaluation, is at step ", c->step,
                          " (/step)");
            if (c->stored)
                for (const auto& [key, values] : config_differences(*c->stored, cfg))
                    SEGRANK_CHECK(
                        resume_may_change(key), (file.parent_path() / "config.toml").string(), ": ",
                        key, " = ", values.second, ", but ", f, " was trained with ", key, " = ",
                        values.first, " (a checkpoint of another run, or config.toml edited?)");
        }
        if (c->best_step)
            SEGRANK_CHECK(*c->best_step == best_step, file.string(), ": \"best_step\" is ",
                          best_step, ", but ", f, " records /extra/best_step = ", *c->best_step);
        if (has_sel && c->best_selection) {
            const double v = std::strtod(c->best_selection->c_str(), nullptr);
            SEGRANK_CHECK(same_selection(v, sel->get<double>()), file.string(),
                          ": \"best_selection\" is ", format_number(sel->get<double>()), ", but ",
                          f, " records /extra/best_selection = ", *c->best_selection);
        }
    }
}

// report.json's facts that the run's other files record: "world_size" is last.ckpt.h5's
// /extra/world_size (both written by the run's last part; a note in `notes` when that checkpoint
// is absent or unreadable), and "stopped_early" (not drawn) needs
// train.patience > 0 and "steps" below train.steps (early stopping ends a run before its steps).
// Throws naming report.json, the field and the file that contradicts it; an absent or unreadable
// report.json is load_run's to name.
void check_summary_facts(const std::filesystem::path& dir, const RunConfig& cfg,
                         const CheckpointFacts& ck, std::vector<std::string>& notes) {
    const std::filesystem::path file = dir / "report.json";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) return;
    Json rep;
    try {
        rep = read_json_file(file);
    } catch (const Error&) {
        return;  // named by load_run's checks
    }
    if (!rep.is_object()) return;
    if (rep.contains("world_size") && !ck.last_world_size)
        notes.push_back(str(file.string(), ": \"world_size\" is not checked (",
                            (dir / "last.ckpt.h5").string(),
                            ", which a finished run writes last, is absent or unreadable)"));
    if (const auto w = rep.find("world_size");
        w != rep.end() && w->is_number_integer() && ck.last_world_size)
        SEGRANK_CHECK(w->get<int64_t>() == *ck.last_world_size, file.string(),
                      ": \"world_size\" is ", w->get<int64_t>(), ", but ",
                      (dir / "last.ckpt.h5").string(), " was written by ", *ck.last_world_size,
                      " rank(s) (/extra/world_size)");
    if (const auto st = rep.find("steps");
        st != rep.end() && st->is_number_integer() && ck.last_step)
        SEGRANK_CHECK(st->get<int64_t>() == *ck.last_step, file.string(), ": \"steps\" is ",
                      st->get<int64_t>(), ", but ", (dir / "last.ckpt.h5").string(),
                      ", which a run saves at its end, is at step ", *ck.last_step);
    check_best_facts(file, rep, cfg, ck, notes);
    if (const auto e = rep.find("stopped_early");
        e != rep.end() && e->is_boolean() && e->get<bool>()) {
        SEGRANK_CHECK(cfg.train.patience > 0, file.string(),
                      ": \"stopped_early\" is true, but config.toml has train.patience = ",
                      cfg.train.patience, " (early stopping is off)");
        const auto steps = rep.find("steps");
        // Only with a step limit alone (train.epochs may end a run sooner).
        SEGRANK_CHECK(steps == rep.end() || !steps->is_number_integer() || cfg.train.steps <= 0 ||
                          cfg.train.epochs > 0 || steps->get<int64_t>() < cfg.train.steps,
                      file.string(), ": \"stopped_early\" is true, but its \"steps\" ",
                      steps->get<int64_t>(), " are config.toml's train.steps = ", cfg.train.steps,
                      " (a run stopped early ends before them)");
    }
}

// What a run's own files say about it: its eval.metric (config.toml's, which must be its
// checkpoint's; the checkpoint's when config.toml is absent; "" when neither is there) and its
// task (from config.toml's data.collections, else from its checkpoint; nullopt when neither
// tells: load_run then narrows it by the tasks its evaluations name). A run's config.toml that is
// not a TOML run config (garbage, a truncated write) is an error naming it, as a garbage line of
// metrics.jsonl is: the page would show it as the effective config.
struct RunIdentity {
    std::string metric;
    std::optional<Task> task;
    std::vector<std::string> checkpoint_ids;    ///< parameters_id of its readable checkpoints
    std::vector<std::string> checkpoint_notes;  ///< CheckpointFacts::notes
    /// The schedule keys of config.toml (nullopt when it is absent).
    std::optional<RunScheduleConfig> schedule;
};
RunIdentity check_run_config(const std::filesystem::path& dir) {
    const std::filesystem::path file = dir / "config.toml";
    std::error_code ec;
    RunIdentity id;
    const CheckpointFacts ck = checkpoint_facts(dir);
    id.checkpoint_ids = ck.ids;
    id.checkpoint_notes = ck.notes;
    if (!std::filesystem::exists(file, ec)) {  // noted as absent on the page
        id.metric = ck.metric;
        id.task = ck.task;
        return id;
    }
    const std::string text = read_input_file(file, "a TOML config file", kMaxConfigFileBytes);
    RunConfig cfg;
    try {
        cfg = load_stored_config(text, file.string());
        id.metric = std::string(cfg::to_string(cfg.eval.metric));
        for (const std::string& name : cfg.data.collections) {
            const Task t = CollectionId::parse(name).task;
            SEGRANK_CHECK(!id.task || *id.task == t,
                          "data.collections: one run trains one task; "
                          "found both ",
                          to_string(*id.task), " and ", to_string(t), " collections");
            id.task = t;
        }
    } catch (const Error& e) {
        throw Error(str(file.string(),
                        ": not a run config (expected the config.toml segrank train writes "
                        "into its run directory): ",
                        e.what()));
    }
    // The checkpoint's stored config is checksummed; config.toml is what train wrote beside it.
    SEGRANK_CHECK(ck.metric.empty() || ck.metric == id.metric, file.string(), ": eval.metric = \"",
                  id.metric, "\", but the run's checkpoint ", ck.metric_source.string(),
                  " was trained with eval.metric = \"", ck.metric,
                  "\" (config.toml was edited after training: restore it)");
    // Every key a resume cannot change (train --resume's rule): the page shows config.toml as the
    // run's effective config.
    // A finished run (report.json present: a resume removes it when it starts) wrote last.ckpt.h5
    // at its end with the config of its config.toml: then every key must match.
    std::error_code ec2;
    const bool finished = std::filesystem::is_regular_file(dir / "report.json", ec2) &&
                          ck.metric_source.filename() == "last.ckpt.h5";
    if (ck.stored)
        for (const auto& [key, values] : config_differences(*ck.stored, cfg)) {
            // A resume of a moved run writes its new folder into both files; a copied run keeps
            // the old one in both. They differ only by an edit: said, not refused.
            if (finished && key == "train.run_dir")
                id.checkpoint_notes.push_back(
                    str(file.string(), ": train.run_dir = ", values.second,
                        ", but the run's checkpoint ", ck.metric_source.string(),
                        ", written at the run's end, records ", values.first,
                        " (config.toml edited after training?)"));
            SEGRANK_CHECK(
                !finished ? resume_may_change(key) : key == "train.run_dir", file.string(), ": ",
                key, " = ", values.second, ", but the run's checkpoint ", ck.metric_source.string(),
                finished ? ", written at the run's end," : "", " was trained with ", key, " = ",
                values.first, " (config.toml was edited after training: restore it)");
        }
    check_summary_facts(dir, cfg, ck, id.checkpoint_notes);
    RunScheduleConfig sc;
    sc.lr.kind = cfg.optim.schedule;
    sc.lr.base_lr = cfg.optim.lr;
    sc.lr.warmup_steps = cfg.optim.warmup_steps;
    sc.steps = cfg.train.steps;
    sc.epochs = cfg.train.epochs;
    sc.eval_every = cfg.train.eval_every;
    sc.log_every = cfg.train.log_every;
    id.schedule = sc;
    if (!id.task) id.task = ck.task;
    return id;
}

}  // namespace

int run_report(int argc, char** argv) {
    cxxopts::Options options("segrank report",
                             "Writes one self-contained HTML page (inline SVG, no scripts, no "
                             "network) for a run directory: "
                             "training loss and learning-rate curves, validation metrics per "
                             "collection over steps, per-graph "
                             "Kendall bars (--eval, else report.json), the leaderboard of the "
                             "run's evaluations, an optional "
                             "external leaderboard (`segrank leaderboard --out-csv` or --json "
                             "output) and the effective config. For a `segrank tune` directory "
                             "(one with tune.json): the best-so-far runtime and the speedup over "
                             "the default against the measurement index, beside --compare runs.");
    options.add_options()("run_dir", "run directory (config.toml, metrics.jsonl, report.json)",
                          cxxopts::value<std::string>())(
        "out", "output HTML file (default <run_dir>/report.html)", cxxopts::value<std::string>())(
        "eval", "per-graph metrics from `segrank evaluate --json`", cxxopts::value<std::string>())(
        "leaderboard", "leaderboard table (CSV, or JSON when the name ends in .json)",
        cxxopts::value<std::string>())(
        "eval-of-other-run",
        "draw an --eval file whose recorded checkpoint is not one of RUN_DIR's (e.g. a copied "
        "run), with a note on the page and stderr, instead of refusing it")(
        "compare",
        "tune directory only: another tune directory whose curves are drawn beside (repeatable)",
        cxxopts::value<std::vector<std::string>>())("h,help", "show help");
    options.parse_positional({"run_dir"});
    options.positional_help("RUN_DIR | TUNE_DIR");
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("run_dir"), "missing RUN_DIR (see segrank report --help)");
    const std::filesystem::path dir = args["run_dir"].as<std::string>();
    require_input_folder(dir, "a run directory (segrank train) or a tune directory (segrank tune)");
    if (is_tune_dir(dir)) return report_tune_dir(args, dir);
    SEGRANK_CHECK(
        !args.count("compare"), "--compare: ", dir.string(),
        " is not a tune directory (no tune.json); --compare draws tuning runs beside one");
    ReportOptions opt;
    opt.run_dir = dir;
    if (args.count("eval")) opt.eval_json = args["eval"].as<std::string>();
    SEGRANK_CHECK(!args.count("eval-of-other-run") || opt.eval_json,
                  "--eval-of-other-run: needs "
                  "--eval FILE");
    opt.eval_of_other_run = args.count("eval-of-other-run") > 0;
    if (args.count("leaderboard")) opt.leaderboard = args["leaderboard"].as<std::string>();
    // The default output goes into RUN_DIR: only into a folder that is a run directory, never a
    // data folder or any other folder given by mistake.
    if (!args.count("out")) {
        std::error_code ec;
        SEGRANK_CHECK(std::filesystem::is_regular_file(opt.run_dir / "metrics.jsonl", ec) ||
                          std::filesystem::is_regular_file(opt.run_dir / "config.toml", ec),
                      opt.run_dir.string(),
                      ": not a run directory (no metrics.jsonl or config.toml), so report.html is "
                      "not written into it; give a run directory, or --out FILE explicitly");
    }
    const std::filesystem::path out = args.count("out")
                                          ? std::filesystem::path(args["out"].as<std::string>())
                                          : opt.run_dir / "report.html";

    // A mistyped --out naming a checkpoint, metrics.jsonl, a CSV or a data file is refused before
    // any work, so the page never destroys the run it reports on.
    refuse_replacing_other_file(args.count("out") ? "--out" : "the page", out.string(),
                                is_segrank_report_page, "a page segrank report wrote",
                                "segrank report");
    const RunIdentity id = check_run_config(opt.run_dir);
    opt.selection_metric = id.metric;
    opt.task = id.task;
    opt.run_checkpoint_ids = id.checkpoint_ids;
    opt.checkpoint_notes = id.checkpoint_notes;
    opt.schedule_config = id.schedule;
    std::vector<std::string> notes;
    const std::string html = render_report_html(opt, &notes);
    print_notes(notes);
    write_file_atomically(out, html);
    std::printf("segrank report: wrote %s (%zu bytes)\n", out.string().c_str(), html.size());
    return 0;
}

}  // namespace segrank::cli
