// Checkpoints whose content is inconsistent but whose checksums are valid (edited with h5py, then
// re-signed by tests/support/ckpt_resign.py) given to `segrank train --resume`: each is refused
// with exit 1 and a message naming the file, the dataset or attribute and what was expected,
// never a crash, an internal error, an out-of-bounds read or a silent resume
// (docs/files.md#checkpoints).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_cli_run.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 1); }

// configs/tiny.toml trained for 2 steps (no evaluation) on the tiny layout collection: its
// last.ckpt.h5 holds history entries of both steps.
fs::path trained_run(const fs::path& dir) { return segrank_tiny_layout_run(dir); }

// One edit: a name (the copy's run directory) and Python statements over the open h5py file `f`
// (numpy as np; ds(path, array) replaces a dataset).
using Edit = std::pair<std::string, std::string>;

// Copies `run` to dir/<name> for every edit, applies it to the copy's last.ckpt.h5 and re-signs
// it, in one Python process.
void make_edited_runs(const fs::path& run, const fs::path& dir, const std::vector<Edit>& edits) {
    std::string py =
        "import h5py, numpy as np, sys\n"
        "sys.path.insert(0, " +
        sq((source_dir() / "tests/support").string()) +
        ")\n"
        "from ckpt_resign import resign\n"
        "def ds(path, a):\n"
        "    del f[path]\n"
        "    f.create_dataset(path, data=a)\n";
    for (const auto& [name, edit] : edits) {
        const fs::path copy = dir / name;
        fs::copy(run, copy, fs::copy_options::recursive);
        const std::string ckpt = (copy / "last.ckpt.h5").string();
        py += "with h5py.File(" + sq(ckpt) + ", 'r+') as f:\n";
        size_t start = 0;
        while (start < edit.size()) {
            const size_t nl = edit.find('\n', start);
            py += "    " + edit.substr(start, nl - start) + "\n";
            start = nl == std::string::npos ? edit.size() : nl + 1;
        }
        py += "resign(" + sq(ckpt) + ")\n";
    }
    const fs::path script = dir / "edit.py";
    {
        std::FILE* out = std::fopen(script.c_str(), "w");
        REQUIRE(out != nullptr);
        std::fputs(py.c_str(), out);
        std::fclose(out);
    }
    const auto r = run_command("/usr/bin/python3 " + sq(script.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
}

// `train --resume dir/name` for 2 more steps: must exit 1 with every piece of `expected` in its
// output, and leave the checkpoint as it was (no partial output).
void expect_refused(const fs::path& dir, const std::string& name,
                    const std::vector<std::string>& expected) {
    const fs::path copy = dir / name;
    const auto before = fs::last_write_time(copy / "last.ckpt.h5");
    const auto r = run_segrank("train --resume " + sq(copy.string()) + " --set train.steps=4");
    INFO(name);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("internal error") == std::string::npos);
    CHECK(r.output.find(": error: " + (copy / "last.ckpt.h5").string() + ": ") !=
          std::string::npos);
    for (const std::string& piece : expected)
        CHECK_MESSAGE(r.output.find(piece) != std::string::npos, piece);
    CHECK(fs::last_write_time(copy / "last.ckpt.h5") == before);
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "train --resume refuses history datasets of inconsistent lengths or out-of-range entries "
        "naming the file, the dataset and what was expected") {
        const fs::path dir = scratch_dir("hostile_resume_history");
        const fs::path run = trained_run(dir);
        const std::string h = "extra/history/rank_0/";
        const std::string d = "dataset /extra/history/rank_0/";
        make_edited_runs(
            run, dir,
            {
                {"graphs_long", "ds('" + h + "graphs', np.zeros((1000000,), np.int64))"},
                {"steps_long", "ds('" + h + "steps', np.zeros((2000000,), np.int64))"},
                {"values_short", "ds('" + h + "values', f['" + h + "values'][()][:1])"},
                {"keys_badshape",
                 "ds('" + h + "keys', np.zeros((f['" + h + "steps'].shape[0], 2), np.int64))"},
                {"values_nan",
                 "a = f['" + h + "values'][()]; a.flat[0] = np.nan; ds('" + h + "values', a)"},
                {"graph_neg", "a = f['" + h + "keys'][()]; a[0, 0] = -1; ds('" + h + "keys', a)"},
                {"graph_huge",
                 "a = f['" + h + "keys'][()]; a[0, 0] = 999999; ds('" + h + "keys', a)"},
                {"config_huge",
                 "a = f['" + h + "keys'][()]; a[0, 1] = 5000; ds('" + h + "keys', a)"},
                {"seg_neg", "a = f['" + h + "graph_segments'][()]; a[0] = -3; ds('" + h +
                                "graph_segments', a)"},
                {"seg_huge", "a = f['" + h + "graph_segments'][()]; a[0] = 2**30; ds('" + h +
                                 "graph_segments', a)"},
                {"steps_future", "ds('" + h + "steps', f['" + h + "steps'][()] * 0 + 10**12)"},
            });
        expect_refused(dir, "graphs_long",
                       {d + "graph_segments: shape [", "], expected [1000000]"});
        expect_refused(dir, "steps_long", {d + "keys: shape [", "expected [2000000, 3]"});
        expect_refused(dir, "values_short", {d + "values: shape [1, 1], expected ["});
        expect_refused(dir, "keys_badshape", {d + "keys: shape [", ", 2], expected ["});
        expect_refused(dir, "values_nan", {d + "values[0, 0] = nan: expected a finite value"});
        expect_refused(dir, "graph_neg",
                       {d + "keys[0, 0] = -1: expected a graph id listed in /extra/history/"
                            "rank_0/graphs"});
        expect_refused(dir, "graph_huge", {d + "keys[0, 0] = 999999: expected a graph id"});
        expect_refused(dir, "config_huge",
                       {d + "keys[0, 1] = 5000: expected a config index of graph "});
        expect_refused(dir, "seg_neg",
                       {d + "graph_segments[0] = -3: expected a segment count in [1, "});
        expect_refused(dir, "seg_huge", {d + "graph_segments[0] = 1073741824: expected"});
        expect_refused(dir, "steps_future",
                       {d + "steps[0] = 1000000000000: expected a step in [0, 2)"});
        // The unedited run resumes.
        const auto ok = run_segrank("train --resume " + sq(run.string()) + " --set train.steps=3");
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }

    TEST_CASE(
        "train --resume refuses a best_selection attribute that is not a finite number naming "
        "the file and the attribute") {
        const fs::path dir = scratch_dir("hostile_resume_best_selection");
        const fs::path run = trained_run(dir);
        const std::vector<std::string> values = {"abc", "nan", "inf", "", "0.5x"};
        std::vector<Edit> edits;
        for (size_t i = 0; i < values.size(); ++i)
            edits.push_back(
                {"best_" + std::to_string(i),
                 "f['extra'].attrs['best_selection'] = np.bytes_('" + values[i] + "')"});
        make_edited_runs(run, dir, edits);
        for (size_t i = 0; i < values.size(); ++i)
            expect_refused(dir, "best_" + std::to_string(i),
                           {"attribute /extra/best_selection = \"" + values[i] +
                            "\": expected a finite number"});
    }

    TEST_CASE(
        "train --resume refuses an adam_step, evals_without_improvement, world_size, "
        "history_ranks or task the writer cannot have written, naming the file and the "
        "attribute") {
        const fs::path dir = scratch_dir("hostile_resume_state");
        const fs::path run = trained_run(dir);
        make_edited_runs(run, dir,
                         {
                             {"adam_step_huge", "f.attrs['adam_step'] = 2**62"},
                             {"adam_step_ahead", "f.attrs['adam_step'] = 3"},
                             {"ewi_neg", "f['extra'].attrs['evals_without_improvement'] = -1"},
                             {"best_step_future", "f['extra'].attrs['best_step'] = 3"},
                             {"world_0", "f['extra'].attrs['world_size'] = 0"},
                             {"world_1000", "f['extra'].attrs['world_size'] = 1000"},
                             {"ranks_0", "f['extra'].attrs['history_ranks'] = 0"},
                             {"ranks_5", "f['extra'].attrs['history_ranks'] = 5"},
                             {"task_tile", "f['extra'].attrs['task'] = np.bytes_('tile')"},
                             {"task_bogus", "f['extra'].attrs['task'] = np.bytes_('bogus')"},
                         });
        expect_refused(dir, "adam_step_huge",
                       {"attribute /adam_step = 4611686018427387904: expected at most /step = 2"});
        expect_refused(dir, "adam_step_ahead", {"attribute /adam_step = 3: expected at most"});
        expect_refused(dir, "ewi_neg",
                       {"attribute /extra/evals_without_improvement = -1: expected >= 0"});
        expect_refused(dir, "best_step_future",
                       {"attribute /extra/best_step = 3: expected -1 (no evaluation yet) or a "
                        "step in [0, 2]"});
        expect_refused(dir, "world_0", {"attribute /extra/world_size = 0: expected >= 1"});
        expect_refused(dir, "world_1000",
                       {"attribute /extra/history_ranks = 1: expected 1000 (/extra/world_size"});
        expect_refused(dir, "ranks_0", {"attribute /extra/history_ranks = 0: expected 1"});
        expect_refused(dir, "ranks_5", {"attribute /extra/history_ranks = 5: expected 1"});
        expect_refused(dir, "task_tile", {"attribute /extra/task = \"tile\": expected \"layout\""});
        expect_refused(dir, "task_bogus",
                       {"attribute /extra/task = \"bogus\": expected \"layout\""});
    }

    TEST_CASE(
        "train --resume refuses a data manifest that is not one, naming the file and the "
        "dataset, before comparing it with the data") {
        const fs::path dir = scratch_dir("hostile_resume_manifest");
        const fs::path run = trained_run(dir);
        const std::string m = "ds('extra/data/manifest', np.frombuffer(";
        make_edited_runs(run, dir,
                         {
                             {"garbage", m + "b'\\xff\\xfe garbage', np.uint8))"},
                             {"empty", m + "b'', np.uint8))"},
                             {"role", m + "b'test\\tc\\tg\\t1\\t2\\t3\\n', np.uint8))"},
                             {"nodes", m + "b'train\\tc\\tg\\tx\\t2\\t3\\n', np.uint8))"},
                         });
        const std::string d = "dataset /extra/data/manifest: not a data manifest (";
        expect_refused(dir, "garbage",
                       {d + "line 1 is \"\\xff\\xfe garbage\"; expected train|eval"});
        expect_refused(dir, "empty", {d + "it is empty"});
        expect_refused(dir, "role", {d + "line 1 is \"test\\tc\\tg\\t1\\t2\\t3\"; expected"});
        expect_refused(dir, "nodes", {d + "line 1 is \"train\\tc\\tg\\tx\\t2\\t3\"; expected"});
    }

    TEST_CASE(
        "train --resume refuses a best_selection outside the range of the run's eval.metric "
        "naming the file and the attribute") {
        const fs::path dir = scratch_dir("hostile_resume_best_selection_range");
        const fs::path run = trained_run(dir);  // layout, eval.metric = "kaggle": Kendall tau
        const std::vector<std::string> values = {"5", "-1.5", "1.0000000000000002"};
        std::vector<Edit> edits;
        for (size_t i = 0; i < values.size(); ++i)
            edits.push_back(
                {"best_" + std::to_string(i),
                 "f['extra'].attrs['best_selection'] = np.bytes_('" + values[i] + "')"});
        edits.push_back({"best_ok", "f['extra'].attrs['best_selection'] = np.bytes_('0.99')"});
        make_edited_runs(run, dir, edits);
        for (size_t i = 0; i < values.size(); ++i)
            expect_refused(dir, "best_" + std::to_string(i),
                           {"attribute /extra/best_selection = " + values[i] +
                            ": expected [-1, 1] (the Kendall tau of a layout run) for "
                            "eval.metric = \"kaggle\", or -1e300 (no evaluation yet)"});
        // A value in range resumes (and the run's own -1e300, "no evaluation yet", did above).
        const auto ok = run_segrank("train --resume " + sq((dir / "best_ok").string()) +
                                    " --set train.steps=3");
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }

    TEST_CASE(
        "train --resume notes an eval.indices file with other content than the checkpoint's "
        "selections were measured on, not the same content at another path") {
        const fs::path dir = scratch_dir("hostile_resume_eval_indices");
        write_file_text(dir / "a.json", "{\"tiny_valid_0\": [0, 1, 2]}");
        write_file_text(dir / "a2.json", "{\"tiny_valid_0\": [0, 1, 2]}");
        write_file_text(dir / "b.json", "{\"tiny_valid_0\": [3, 4, 5]}");
        const fs::path run = segrank_tiny_layout_run(
            dir, 2, 1, "--set eval.indices=" + sq("\"" + (dir / "a.json").string() + "\""));
        auto resume = [&](int steps, const fs::path& indices) {
            const auto r = run_segrank("train --resume " + sq(run.string()) +
                                       " --set train.steps=" + std::to_string(steps) +
                                       " --set eval.indices=" + sq("\"" + indices.string() + "\""));
            INFO(r.output);
            CHECK(r.exit_code == 0);
            return r.output;
        };
        CHECK_FALSE(contains_text(resume(3, dir / "a2.json"), "the evaluation set changed"));
        const std::string out = resume(4, dir / "b.json");
        CHECK(contains_text(out, "segrank train: note: --resume " + run.string() +
                                     ": the evaluation set changed since the checkpoint "
                                     "(eval.indices: xxh3_64 "));
        CHECK(contains_text(out, (dir / "b.json").string() + " xxh3_64 "));
        CHECK(contains_text(out, "the selections logged up to step 3"));
    }

    TEST_CASE("train --resume names a repeated line of the data manifest as a duplicate") {
        const fs::path dir = scratch_dir("hostile_resume_manifest_duplicate");
        const fs::path run = trained_run(dir);
        make_edited_runs(
            run, dir,
            {{"dup",
              "m = bytes(f['extra/data/manifest'][()])\n"
              "ds('extra/data/manifest', np.frombuffer(m + m.split(b'\\n')[0] + b'\\n', "
              "np.uint8))"}});
        expect_refused(dir, "dup",
                       {"dataset /extra/data/manifest: line ", " repeats train graph ",
                        ") of line 1 (a data manifest lists each graph of the run once)"});
    }

    TEST_CASE(
        "train --resume notes on stderr that an emptied or truncated metrics.jsonl lost the "
        "curves up to the checkpoint step, and resumes") {
        const fs::path dir = scratch_dir("hostile_resume_lost_metrics");
        const fs::path run = segrank_tiny_layout_run(dir, 4, 1, "--set train.log_every=1");
        for (const char* name : {"emptied", "truncated", "whole"}) {
            const fs::path copy = dir / name;
            fs::copy(run, copy, fs::copy_options::recursive);
            const std::string log = read_file_text(copy / "metrics.jsonl");
            if (std::string(name) == "emptied") write_file_text(copy / "metrics.jsonl", "");
            if (std::string(name) == "truncated")  // the lines of steps 1 and 2 only
                write_file_text(copy / "metrics.jsonl",
                                log.substr(0, log.find("{\"phase\":\"train\",\"step\":3")));
            const auto r =
                run_segrank("train --resume " + sq(copy.string()) + " --set train.steps=6");
            INFO(name, r.output);
            CHECK(r.exit_code == 0);
            const std::string note = "segrank train: note: --resume " + copy.string() + ": " +
                                     (copy / "metrics.jsonl").string();
            if (std::string(name) == "whole") {
                CHECK_FALSE(contains_text(r.output, "note: --resume"));
                continue;
            }
            CHECK(contains_text(r.output, note));
            CHECK(contains_text(r.output, std::string(name) == "emptied"
                                              ? " holds no lines, but the checkpoint is at step 4"
                                              : " holds no lines after step 2, but the checkpoint "
                                                "is at step 4"));
            CHECK(
                contains_text(r.output, "the model is intact and training continues from step 4"));
            CHECK(contains_text(read_file_text(copy / "metrics.jsonl"), "\"step\":6"));
        }
    }
}
