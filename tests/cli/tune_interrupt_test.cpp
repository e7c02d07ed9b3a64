// A measurement interrupted by SIGINT/SIGTERM (the exec backend gives a hung harness up and throws
// tune::MeasurementInterrupted): the rounds write no line for it, stop, and --resume measures it
// (cli/tune_rounds.cpp, docs/tune.md#resume-and-interrupts).
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/tune_rounds.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"
#include "util/json.h"

using namespace segrank;
using namespace segrank::test;
namespace fs = std::filesystem;

TEST_CASE(
    "segrank tune: a measurement interrupted by a signal leaves no line, the run stops with every "
    "measurement taken, and --resume measures that config") {
    const fs::path dir = scratch_dir("tune_interrupt");
    const fs::path run = train_tiny_layout_run(dir, "run", 3);
    TinyLayoutSpec spec;
    spec.configs = 30;
    const LayoutGraph lg = tiny_layout_graph("tune_interrupt", 3, spec);
    const std::vector<int64_t> rt = lg.config_runtime;
    const fs::path npz = dir / "g.npz";
    save_layout_npz(lg, npz);
    CostModel model({run.string()});
    const Graph g = Graph::open(npz.string());
    const tune::TuneGraph record =
        tune::load_tune_graph(npz, Task::kLayout, LabelPolicy::kRequirePositive);
    std::atomic<int> stop{0};
    int calls = 0;
    int64_t interrupted_config = -1;
    std::vector<int64_t> measured;
    auto measure = [&](std::span<const tune::Config> configs) {
        std::vector<cli::Measured> m;
        for (const tune::Config& x : configs) {
            int64_t c = 0;
            while (!(record.recorded_config(c) == x)) ++c;
            // SIGINT while the harness measures the model's first pick (the default came first)
            if (++calls == 2 && stop.load() == 0) {
                stop.store(2);
                interrupted_config = c;
                throw tune::MeasurementInterrupted("exec 'harness': request 2: interrupted");
            }
            measured.push_back(c);
            m.push_back({static_cast<double>(rt[static_cast<size_t>(c)]), ""});
        }
        return m;
    };
    cli::TuneOptions o;
    o.budget = 8;
    o.batch = tune::RoundSchedule::fixed(3);
    o.out = dir / "out";
    o.measure = "recorded";
    o.progress = false;
    o.stop = &stop;
    const cli::TuneResult r = cli::tune_rounds(model, g, record, measure, o);
    CHECK(r.interrupted_by == 2);
    CHECK(r.measured == 1);
    std::set<int64_t> lines;
    {
        std::istringstream is(read_file_text(o.out / "measurements.jsonl"));
        for (std::string line; std::getline(is, line);)
            if (!line.empty()) lines.insert(read_json(line, "m")["config"].get<int64_t>());
    }
    CHECK(lines.size() == 1);
    CHECK(lines.count(interrupted_config) == 0);  // not recorded as a failure
    stop.store(0);
    o.resume = true;
    const cli::TuneResult r2 = cli::tune_rounds(model, g, record, measure, o);
    CHECK(r2.interrupted_by == 0);
    CHECK(r2.measured == 8);
    CHECK(std::set<int64_t>(measured.begin(), measured.end()).size() == measured.size());
    CHECK(std::set<int64_t>(measured.begin(), measured.end()).count(interrupted_config) == 1);
}
