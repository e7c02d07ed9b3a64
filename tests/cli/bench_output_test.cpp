// The benchmark scripts' file rules: scripts/bench/atomic_output.py writes outputs as the binary
// does (util/atomic_file.h: a regular file replaced through a temporary, a symlink followed and
// kept, a character device or FIFO written through, a directory refused before any work), and
// bench_scale.py never replaces or deletes a file or folder of --work it did not create (nor one
// made later under the name of one it deleted). Relative path options are the caller's (resolved
// against the current directory), and --json-out and --markdown naming one file are refused
// before any work.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_paths.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

std::string script(const char* name) { return sq((source_dir() / "scripts" / name).string()); }

}  // namespace

TEST_CASE(
    "atomic_output.py replaces a regular file, follows a symlink, writes through /dev/null and "
    "refuses a directory and a FIFO" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_output_rules");
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    const std::string code =
        "import os, sys\n"
        "sys.path.insert(0, \"" +
        (source_dir() / "scripts").string() +
        "\")\n"
        "from bench.atomic_output import OutputError, check_output, write_text_atomically\n"
        "d = sys.argv[1]\n"
        "p = os.path.join(d, 'plain.txt'); open(p, 'w').write('old')\n"
        "write_text_atomically(p, 'new'); assert open(p).read() == 'new'\n"
        "open(os.path.join(d, 'target.csv'), 'w').write('precious')\n"
        "os.symlink('target.csv', os.path.join(d, 'link.csv'))\n"
        "write_text_atomically(os.path.join(d, 'link.csv'), 'via link')\n"
        "assert os.path.islink(os.path.join(d, 'link.csv'))\n"
        "assert open(os.path.join(d, 'target.csv')).read() == 'via link'\n"
        "os.symlink('made.txt', os.path.join(d, 'dangling'))\n"
        "write_text_atomically(os.path.join(d, 'dangling'), 'x')\n"
        "assert os.path.islink(os.path.join(d, 'dangling'))\n"
        "assert open(os.path.join(d, 'made.txt')).read() == 'x'\n"
        "write_text_atomically('/dev/null', 'discarded')\n"
        "for bad in (d, os.path.join(d, 'no', 'such.txt'), os.path.join(d, 'fifo')):\n"
        "    try:\n"
        "        check_output(bad); raise SystemExit('accepted ' + bad)\n"
        "    except OutputError as e:\n"
        "        print('refused:', e)\n"
        "assert sorted(os.listdir(d)) == ['dangling', 'fifo', 'link.csv', 'made.txt', "
        "'plain.txt', 'target.csv'], os.listdir(d)\n";
    const fs::path py = scratch_dir("bench_output_rules_script") / "rules.py";
    std::ofstream(py) << code;
    const auto r = run_command("/usr/bin/python3 " + sq(py.string()) + " " + sq(dir.string()));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains_text(r.output, "refused: '" + dir.string() + "' is a directory"));
    CHECK(contains_text(r.output, "refused: '" + (dir / "no" / "such.txt").string() +
                                      "': the folder '" + (dir / "no").string() +
                                      "' does not exist"));
    // A named pipe would block the writer until a reader comes: refused, not opened.
    CHECK(contains_text(r.output, "refused: '" + (dir / "fifo").string() + "' is a FIFO"));
}

TEST_CASE(
    "bench_scale.py and bench_quality.py refuse a directory as --json-out / --markdown before any "
    "work" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_output_dir");
    fs::create_directories(dir / "out");
    const std::string bin = " --segrank " + sq(segrank_binary().string());
    auto r = run_command("python3 " + script("bench_scale.py") + bin + " --tiny --work " +
                         sq((dir / "ws").string()) + " --json-out " + sq((dir / "out").string()));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains_text(r.output, "--json-out: '" + (dir / "out").string() + "' is a directory"));
    CHECK_FALSE(fs::exists(dir / "ws"));
    r = run_command("/usr/bin/python3 " + script("bench_quality.py") + bin +
                    " --tiny --cases synth_tile --work " + sq((dir / "wq").string()) +
                    " --json-out " + sq((dir / "out").string()));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    const std::string quoted = sq((dir / "out").string());  // 'path', as the message quotes it
    CHECK(contains_text(r.output, quoted + " is a directory"));
    CHECK_FALSE(fs::exists(dir / "wq"));
}

TEST_CASE(
    "the benchmark scripts replace only an earlier output of their own as --json-out / --markdown, "
    "never a user's notes.md" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_output_kind");
    std::ofstream(dir / "notes.md") << "# My notes\nkeep me\n";
    std::ofstream(dir / "other.json") << "{\"benchmark\": \"mine\"}\n";
    const std::string bin = " --segrank " + sq(segrank_binary().string());
    const std::string quality = "/usr/bin/python3 " + script("bench_quality.py") + bin +
                                " --tiny --cases synth_tile --work " + sq((dir / "wq").string());
    const std::string scale =
        "python3 " + script("bench_scale.py") + bin + " --tiny --work " + sq((dir / "ws").string());
    const std::string tune = "/usr/bin/python3 " + script("bench_tune.py") + bin +
                             " --tiny --work " + sq((dir / "wt").string());
    for (const std::string& cmd : {quality, scale, tune}) {
        auto r = run_command(cmd + " --markdown " + sq((dir / "notes.md").string()));
        INFO(cmd, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, "--markdown: '" + (dir / "notes.md").string() +
                                          "' exists and is not a bench_"));
        r = run_command(cmd + " --json-out " + sq((dir / "other.json").string()));
        INFO(r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, "other.json' exists and is not a bench_"));
    }
    CHECK(read_file_text(dir / "notes.md") == "# My notes\nkeep me\n");
    CHECK_FALSE(fs::exists(dir / "wq"));
    CHECK_FALSE(fs::exists(dir / "ws"));
    CHECK_FALSE(fs::exists(dir / "wt"));
    // An empty file and an earlier output of the same script are replaced.
    const std::string code =
        "import sys\n"
        "sys.path.insert(0, \"" +
        (source_dir() / "scripts").string() +
        "\")\n"
        "from bench.atomic_output import json_output, markdown_output, write_text_atomically\n"
        "d = sys.argv[1]\n"
        "open(d + '/empty.md', 'w').close()\n"
        "md = markdown_output('bench_quality.py', 'Learning-quality benchmark:')\n"
        "write_text_atomically(d + '/empty.md', 'Learning-quality benchmark: 1\\n', md)\n"
        "write_text_atomically(d + '/empty.md', '\\nLearning-quality benchmark: 2\\n', md)\n"
        "assert open(d + '/empty.md').read() == '\\nLearning-quality benchmark: 2\\n'\n"
        "open(d + '/tune.json', 'w').write('{\"benchmark\": \"bench_tune\"}')\n"
        "js = json_output('bench_tune')\n"
        "write_text_atomically(d + '/tune.json', '{\"benchmark\": \"bench_tune\", \"n\": 2}', "
        "js)\n"
        "print('replaced')\n";
    const fs::path py = dir / "kinds.py";
    std::ofstream(py) << code;
    const auto r = run_command("/usr/bin/python3 " + sq(py.string()) + " " + sq(dir.string()));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains_text(r.output, "replaced"));
    CHECK(contains_text(read_file_text(dir / "tune.json"), "\"n\": 2"));
    CHECK(read_file_text(dir / "other.json") == "{\"benchmark\": \"mine\"}\n");
}

TEST_CASE(
    "bench_scale.py --work refuses to delete an npz/ folder it did not create, and leaves it as "
    "it was" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path work = scratch_dir("bench_scale_foreign_work");
    // A work folder of the script (its record, listing nothing) where the user put an npz/ folder.
    std::ofstream(work / ".bench_scale_made.json") << "[]";
    fs::create_directories(work / "npz" / "layout");
    std::ofstream(work / "npz" / "README_MY_DATA") << "my notes\n";
    const auto r = run_command("python3 " + script("bench_scale.py") + " --segrank " +
                               sq(segrank_binary().string()) + " --tiny --threads 1 --work " +
                               sq(work.string()));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(r.output, "bench_scale.py: error: --work " + work.string() + ": '" +
                                      (work / "npz").string() +
                                      "' exists and was not made by bench_scale.py"));
    CHECK(read_file_text(work / "npz" / "README_MY_DATA") == "my notes\n");
    CHECK(fs::is_directory(work / "npz" / "layout"));
    CHECK_FALSE(fs::exists(work / "h5"));
    // Refused before anything is written: no train.toml, the record as it was.
    CHECK_FALSE(fs::exists(work / "train.toml"));
    CHECK(read_file_text(work / ".bench_scale_made.json") == "[]");
}

TEST_CASE(
    "bench_scale.py forgets a folder it deleted (npz/ once packed, run/ emptied for a training "
    "that failed): a folder the user makes there later is refused and kept" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_forgets_deleted");
    const fs::path work = dir / "w", record = work / ".bench_scale_made.json";
    const std::string scale = "python3 " + script("bench_scale.py") +
                              " --tiny --threads 1 --work " + sq(work.string()) + " --segrank ";
    const std::string seg = sq(segrank_binary().string());
    auto refused = [&](const std::string& output, const std::string& name) {
        return contains_text(output, "bench_scale.py: error: --work " + work.string() + ": '" +
                                         (work / name).string() +
                                         "' exists and was not made by bench_scale.py");
    };
    auto r = run_command(scale + seg);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_FALSE(fs::exists(work / "npz"));  // deleted once the stores are packed
    CHECK_FALSE(contains_text(read_file_text(record), "\"npz\""));
    CHECK(contains_text(read_file_text(record), "\"run\""));

    // The user's npz/ made between two runs (trial 22 F-2: it was deleted, exit 0).
    fs::create_directories(work / "npz");
    write_file_text(work / "npz" / "README_MY_DATA", "my TpuGraphs data\n");
    r = run_command(scale + seg);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(refused(r.output, "npz"));
    CHECK(read_file_text(work / "npz" / "README_MY_DATA") == "my TpuGraphs data\n");
    fs::remove_all(work / "npz");

    // A run whose training fails after run/ was emptied for it: run/ leaves the record too.
    const fs::path wrapper = dir / "segrank";
    write_file_text(wrapper,
                    "#!/bin/sh\ncase \" $* \" in *\" train \"*) case \" $* \" in *\" --check \"*) "
                    ";; *) echo 'training refused by the test' >&2; exit 1;; esac;; "
                    "esac\nexec " +
                        seg + " \"$@\"\n");
    fs::permissions(wrapper, fs::perms::owner_all);
    r = run_command(scale + sq(wrapper.string()));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(r.output, "training refused by the test"));
    CHECK_FALSE(fs::exists(work / "run"));
    CHECK_FALSE(contains_text(read_file_text(record), "\"run\""));
    fs::create_directories(work / "run");
    write_file_text(work / "run" / "notes.txt", "mine\n");
    r = run_command(scale + seg);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(refused(r.output, "run"));
    CHECK(read_file_text(work / "run" / "notes.txt") == "mine\n");
}

TEST_CASE(
    "bench_scale.py and bench_quality.py refuse a --work that is a file or under one with exit 2 "
    "and write nothing" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_work_not_dir");
    std::ofstream(dir / "afile") << "mine\n";
    const std::string bin = " --segrank " + sq(segrank_binary().string());
    const std::string file = (dir / "afile").string();
    for (const std::string& w : {std::string("/dev/null"), file, file + "/sub"}) {
        const auto r =
            run_command("python3 " + script("bench_scale.py") + bin + " --tiny --work " + sq(w));
        INFO(w, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK_FALSE(contains_text(r.output, "Traceback"));
        CHECK(
            contains_text(r.output, "bench_scale.py: error: --work " + w +
                                        (w == file + "/sub" ? ": '" + file + "' is not a directory"
                                                            : ": not a directory")));
        const auto q = run_command("/usr/bin/python3 " + script("bench_quality.py") + bin +
                                   " --tiny --cases synth_tile --work " + sq(w));
        INFO(q.output);
        CHECK(q.exit_code == 2);
        CHECK_FALSE(contains_text(q.output, "Traceback"));
        CHECK(contains_text(q.output, "is not a directory"));
    }
    CHECK(read_file_text(dir / "afile") == "mine\n");
    // A recipe the rehearsal refuses writes nothing in a new --work either.
    const auto bad =
        run_command("python3 " + script("bench_scale.py") + bin + " --tiny --work " +
                    sq((dir / "w").string()) + " --recipe " + sq((dir / "afile").string()));
    INFO(bad.output);
    CHECK(bad.exit_code == 1);
    CHECK_FALSE(fs::exists(dir / "w"));
}

// The names under `dir` (one level), sorted, one per line.
std::string names_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += n + "\n";
    return out;
}

TEST_CASE(
    "bench_quality.py, bench_tune.py and bench_scale.py refuse a --work that is not empty and not "
    "their own with exit 2, and write nothing" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_work_foreign");
    // A training run directory: neither script's work folder.
    const fs::path run = dir / "run";
    fs::create_directories(run);
    std::ofstream(run / "metrics.jsonl") << "{}\n";
    std::ofstream(run / "config.toml") << "# mine\n";
    const std::string bin = " --segrank " + sq(segrank_binary().string());
    const std::pair<const char*, const char*> scripts[] = {
        {"bench_quality.py", ".bench_quality_made"},
        {"bench_tune.py", ".bench_tune_made"},
        {"bench_scale.py", ".bench_scale_made.json"}};
    for (const auto& [name, mark] : scripts) {
        const auto r = run_command("/usr/bin/python3 " + script(name) + bin + " --tiny --work " +
                                   sq(run.string()));
        INFO(name, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK_FALSE(contains_text(r.output, "Traceback"));
        CHECK(contains_text(r.output, std::string(name) + ": error: --work " + run.string() +
                                          ": the folder exists, is not empty (2 entries: "
                                          "config.toml, metrics.jsonl) and is not a work folder "
                                          "of " +
                                          name + " (no " + mark + ")"));
        CHECK(names_in(run) == "config.toml\nmetrics.jsonl\n");
        // Another script's work folder is not this one's.
        const fs::path other = dir / (std::string("other_") + name);
        fs::create_directories(other);
        const std::string foreign =
            std::string(name) == "bench_tune.py" ? ".bench_quality_made" : ".bench_tune_made";
        std::ofstream(other / foreign) << "\n";
        const auto o = run_command("/usr/bin/python3 " + script(name) + bin + " --tiny --work " +
                                   sq(other.string()));
        INFO(o.output);
        CHECK(o.exit_code == 2);
        CHECK(contains_text(o.output, "is not a work folder of " + std::string(name)));
        CHECK(names_in(other) == foreign + "\n");
        // An empty folder, and one the script marked, pass the --work check (the later error of
        // a missing --json-out folder, or binary, shows it).
        const fs::path empty = dir / (std::string("empty_") + name);
        const fs::path marked = dir / (std::string("marked_") + name);
        fs::create_directories(empty);
        fs::create_directories(marked);
        std::ofstream(marked / mark) << "[]";
        std::ofstream(marked / "commands.log") << "earlier\n";
        const bool scale = std::string(name) == "bench_scale.py";
        for (const fs::path& w : {empty, marked}) {
            const auto ok = run_command(
                "/usr/bin/python3 " + script(name) +
                (scale ? std::string(" --segrank /nonexistent/segrank") : bin) + " --tiny --work " +
                sq(w.string()) + " --json-out " + sq((dir / "no/such/out.json").string()));
            INFO(w.string(), "\n", ok.output);
            CHECK(ok.exit_code == 2);
            CHECK_FALSE(contains_text(ok.output, "not a work folder"));
            CHECK(contains_text(ok.output,
                                scale ? "segrank binary not found" : "output directory of"));
        }
    }
}

TEST_CASE(
    "bench_scale.py --work refuses to replace a run folder or a train.toml it did not create, and "
    "replaces its own" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_foreign_files");
    const std::string scale = "python3 " + script("bench_scale.py") + " --segrank " +
                              sq(segrank_binary().string()) + " --tiny --threads 1 --work ";
    // A trained run of the user's as work/run, and a config of theirs as work/train.toml, in work
    // folders of the script (its record, listing nothing).
    fs::create_directories(dir / "w1" / "run");
    std::ofstream(dir / "w1" / "run" / "best.ckpt.h5") << "my checkpoint\n";
    fs::create_directories(dir / "w2");
    std::ofstream(dir / "w2" / "train.toml") << "mine\n";
    for (const char* w : {"w1", "w2"}) std::ofstream(dir / w / ".bench_scale_made.json") << "[]";
    for (const auto& [work, name] : {std::pair<fs::path, std::string>{dir / "w1", "run"},
                                     std::pair<fs::path, std::string>{dir / "w2", "train.toml"}}) {
        const auto r = run_command(scale + sq(work.string()));
        INFO(work.string(), "\n", r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "bench_scale.py: error: --work " + work.string() + ": '" +
                                          (work / name).string() +
                                          "' exists and was not made by bench_scale.py"));
        // Refused before any work: nothing written, the record as it was.
        CHECK_FALSE(fs::exists(work / "npz"));
        CHECK_FALSE(fs::exists(work / "train.log"));
        CHECK(read_file_text(work / ".bench_scale_made.json") == "[]");
    }
    CHECK(read_file_text(dir / "w1" / "run" / "best.ckpt.h5") == "my checkpoint\n");
    CHECK_FALSE(fs::exists(dir / "w1" / "train.toml"));
    CHECK(read_file_text(dir / "w2" / "train.toml") == "mine\n");
    // What the script made, its record covers: a second run in the same folder replaces it all.
    const fs::path own = dir / "own";
    for (int i = 0; i < 2; ++i) {
        const auto r = run_command("(" + scale + sq(own.string()) + " > /dev/null)");
        INFO(i, "\n", r.output);
        REQUIRE(r.exit_code == 0);
    }
    const std::string record = read_file_text(own / ".bench_scale_made.json");
    for (const char* name : {"\"run\"", "\"train.toml\"", "\"train.log\"", "\"data.json\"",
                             "\"h5\"", "\"probe\"", "\"valid_submission.csv\""}) {
        CHECK(contains_text(record, name));
    }
    CHECK(fs::exists(own / "run" / "report.json"));
}

TEST_CASE(
    "bench_scale.py resolves relative --segrank, --work, --recipe, --json-out and --markdown "
    "against the current directory" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_scale_relative_paths");
    fs::copy_file(source_dir() / "configs" / "tpugraphs_layout_xla.toml", dir / "rec.toml");
    const std::string segrank = fs::relative(segrank_binary(), dir).string();
    // The recipe check and the training both read dir/rec.toml (the training runs in the
    // repository: a path left relative fails there after synth and pack).
    const auto r = run_command("(cd " + sq(dir.string()) + " && python3 " +
                               script("bench_scale.py") + " --segrank " + sq(segrank) +
                               " --tiny --threads 1 --work w --recipe rec.toml --json-out "
                               "out.json --markdown out.md > /dev/null)");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(fs::exists(dir / "w" / "run" / "report.json"));
    CHECK(contains_text(read_file_text(dir / "out.json"), "\"benchmark\": \"bench_scale\""));
    CHECK(contains_text(read_file_text(dir / "out.md"), "| step | measured |"));
}

TEST_CASE(
    "bench_quality.py and bench_tune.py resolve relative --work and --shared-data against the "
    "current directory" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_relative_work");
    const std::string segrank = fs::relative(segrank_binary(), dir).string();
    // The real cases need --shared-data files: a missing folder fails at once, naming the path
    // the script looked in.
    for (const char* name : {"bench_quality.py", "bench_tune.py"}) {
        const std::string work = std::string("runs/rel_work_") + (name[6] == 'q' ? "q" : "t");
        const auto r =
            run_command("cd " + sq(dir.string()) + " && /usr/bin/python3 " + script(name) +
                        " --segrank " + sq(segrank) + " --tiny --cases real_tile --work " + work +
                        " --shared-data nodata --json-out out.json");
        INFO(name, "\n", r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            (dir / "nodata" / "xla_tuning" / "op_tuning_data.pb").string()));
        CHECK(fs::exists(dir / work / "commands.log"));
        CHECK_FALSE(fs::exists(dir / "out.json"));
    }
}

TEST_CASE(
    "the benchmark scripts refuse --json-out and --markdown naming the same file, through a "
    "symlink too, before any work" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const fs::path dir = scratch_dir("bench_output_same_file");
    // An empty file is one either output may replace (atomic_output.py): only the check that
    // they are two files stops the run.
    std::ofstream(dir / "empty.out").close();
    fs::create_symlink("empty.out", dir / "link.md");
    const std::string bin = " --segrank " + sq(segrank_binary().string());
    const std::string quality = "/usr/bin/python3 " + script("bench_quality.py") + bin +
                                " --tiny --cases synth_tile --work " + sq((dir / "wq").string());
    const std::string scale = "python3 " + script("bench_scale.py") + bin +
                              " --tiny --threads 1 --work " + sq((dir / "ws").string());
    const std::string tune = "/usr/bin/python3 " + script("bench_tune.py") + bin +
                             " --tiny --work " + sq((dir / "wt").string());
    for (const std::string& cmd : {quality, scale, tune}) {
        // A new file named twice (once relative, through the current directory).
        auto r = run_command("cd " + sq(dir.string()) + " && " + cmd + " --json-out " +
                             sq((dir / "new.out").string()) + " --markdown ./new.out");
        INFO(cmd, "\n", r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, "--json-out '" + (dir / "new.out").string() +
                                          "' and --markdown '" + (dir / "new.out").string() +
                                          "' name the same file"));
        CHECK_FALSE(fs::exists(dir / "new.out"));
        // An existing file and a symbolic link to it.
        r = run_command(cmd + " --json-out " + sq((dir / "empty.out").string()) + " --markdown " +
                        sq((dir / "link.md").string()));
        INFO(r.output);
        CHECK(r.exit_code == 2);
        CHECK(contains_text(r.output, "name the same file"));
    }
    CHECK(fs::file_size(dir / "empty.out") == 0);
    // bench_scale.py: nor a file the rehearsal writes in --work itself.
    const auto r = run_command(scale + " --markdown " + sq((dir / "ws" / "train.log").string()));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains_text(r.output, "is the train.log the rehearsal writes in --work"));
    CHECK_FALSE(fs::exists(dir / "wq"));
    CHECK_FALSE(fs::exists(dir / "ws"));
    CHECK_FALSE(fs::exists(dir / "wt"));
}

}  // namespace segrank::test
