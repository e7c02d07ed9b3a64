// The --measure factory and the two in-process backends: `recorded` (the file's runtimes) and
// `hwmodel` (the analytical model with log-normal noise). `exec:CMD` is in tune/exec_measurer.cpp.
#include "tune/measure.h"

#include <cmath>
#include <unordered_map>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"
#include "hwmodel/from_graph.h"
#include "hwmodel/graph_estimates.h"
#include "hwmodel/hardware.h"
#include "hwmodel/kernel_cost.h"
#include "tune/exec_measurer.h"

namespace segrank::tune {

namespace {

std::string where_of(const TuneGraph& g) { return g.path.empty() ? g.name : g.path.string(); }

class RecordedMeasurer : public Measurer {
public:
    explicit RecordedMeasurer(const TuneGraph& g) : graph_(g) {
        const int64_t c = g.num_recorded();
        for (int64_t j = 0; j < c; ++j) {
            SEGRANK_CHECK(g.recorded_runtime_ns(j) > 0, where_of(g), ": --measure recorded needs ",
                          "recorded runtimes, but config ", j, " has config_runtime ",
                          g.recorded_runtime_ns(j), " (a test split?)");
            // Duplicated rows keep the first recorded runtime.
            runtime_.emplace(config_key(g.recorded_config(j)), g.recorded_runtime_ns(j));
        }
    }

    std::vector<Measurement> measure(std::span<const Config> configs) override {
        std::vector<Measurement> out;
        for (const Config& c : configs) {
            check_config_shape(graph_, c);
            const auto it = runtime_.find(config_key(c));
            if (it == runtime_.end())
                out.push_back(Measurement::failure("config not recorded in " + where_of(graph_) +
                                                   ": " + describe(c)));
            else
                out.push_back(Measurement::success(static_cast<double>(it->second)));
        }
        return out;
    }
    std::string name() const override { return "recorded"; }

private:
    const TuneGraph& graph_;
    std::unordered_map<std::string, int64_t> runtime_;
};

class HwmodelMeasurer : public Measurer {
public:
    HwmodelMeasurer(const TuneGraph& g, std::string family, const MeasureOptions& opt)
        : graph_(g), family_(std::move(family)), opt_(opt) {
        const hw::HwParams hw = hw::tpu_v3_core();
        try {
            if (g.task == Task::kTile) {
                module_ = hw::module_from_graph(g.tile);
                kernel_ = std::make_unique<hw::KernelModel>(module_, hw);
            } else {
                layout_ = std::make_unique<hw::LayoutEstimator>(g.layout, hw);
            }
        } catch (const Error& e) {
            SEGRANK_CHECK(false, where_of(g),
                          ": --measure hwmodel cannot cost this graph: ", e.what());
        }
    }

    std::vector<Measurement> measure(std::span<const Config> configs) override {
        std::vector<Measurement> out;
        for (const Config& c : configs) {
            check_config_shape(graph_, c);
            double ns = 0;
            if (kernel_) {
                const hw::Breakdown b =
                    kernel_->evaluate(hw::tile_config_from_features(c.tile.data()));
                ns = b.invalid ? INFINITY : b.total_ns;
            } else {
                std::vector<double> est;
                layout_->estimate(c.layout, est);
                ns = est.at(0);
            }
            if (!std::isfinite(ns) || ns <= 0) {
                out.push_back(Measurement::failure(
                    std::isinf(ns)
                        ? "hwmodel: the working set does not fit VMEM (the compiler "
                          "rejects this config): " +
                              describe(c)
                        : "hwmodel: estimate " + std::to_string(ns) + " ns for " + describe(c)));
                continue;
            }
            const std::string key = config_key(c);
            const uint64_t k = count_[key]++;
            Rng rng = Rng::derive(opt_.seed, stream_id(key), k, "tune-measure");
            out.push_back(Measurement::success(
                opt_.noise_sigma > 0 ? ns * std::exp(opt_.noise_sigma * rng.normal()) : ns));
        }
        return out;
    }
    std::string name() const override { return family_.empty() ? "hwmodel" : "hwmodel:" + family_; }

private:
    const TuneGraph& graph_;
    std::string family_;
    MeasureOptions opt_;
    hlo::HloModule module_;
    std::unique_ptr<hw::KernelModel> kernel_;          // tile graphs (refers to module_)
    std::unique_ptr<hw::LayoutEstimator> layout_;      // layout graphs
    std::unordered_map<std::string, uint64_t> count_;  // measurements so far per config
};

}  // namespace

void check_config_shape(const TuneGraph& g, const Config& c) {
    if (g.task == Task::kTile) {
        SEGRANK_CHECK(c.task() == Task::kTile && c.tile.size() == size_t{kTileConfigDim},
                      where_of(g), ": a tile config has 24 config_feat values, got ",
                      c.task() == Task::kTile ? "a row of " + std::to_string(c.tile.size())
                                              : std::string("a layout config"));
        return;
    }
    const size_t want = static_cast<size_t>(g.layout.num_config_nodes()) * kLayoutConfigDim;
    SEGRANK_CHECK(c.task() == Task::kLayout && c.layout.size() == want, where_of(g),
                  ": a layout config of this graph has ", g.layout.num_config_nodes(),
                  " nodes x 18 = ", want, " values, got ",
                  c.task() == Task::kLayout ? std::to_string(c.layout.size()) + " values"
                                            : std::string("a tile config"));
}

MeasureSpec parse_measure_spec(std::string_view text) {
    const std::string t(text);
    const auto bad = [&]() {
        return "--measure '" + t + "': expected recorded, hwmodel, hwmodel:NAME or exec:CMD";
    };
    if (t == "recorded") return {MeasureKind::kRecorded, ""};
    if (t == "hwmodel") return {MeasureKind::kHwmodel, ""};
    if (t.rfind("hwmodel:", 0) == 0) {
        std::string name = t.substr(8);
        SEGRANK_CHECK(!name.empty(), bad(), " (the name after 'hwmodel:' is empty)");
        SEGRANK_CHECK(name == "default", "--measure '", t, "': unknown cost family '", name,
                      "'; known: default (the analytical model, same as 'hwmodel')");
        return {MeasureKind::kHwmodel, name};
    }
    if (t.rfind("exec:", 0) == 0) {
        std::string cmd = t.substr(5);
        SEGRANK_CHECK(cmd.find_first_not_of(" \t") != std::string::npos, bad(),
                      " (the command after 'exec:' is empty)");
        return {MeasureKind::kExec, cmd};
    }
    SEGRANK_CHECK(false, bad());
    return {};
}

std::unique_ptr<Measurer> make_measurer(const MeasureSpec& spec, const TuneGraph& graph,
                                        const MeasureOptions& options) {
    SEGRANK_CHECK(
        std::isfinite(options.noise_sigma) && options.noise_sigma >= 0 && options.noise_sigma <= 5,
        "--noise ", options.noise_sigma, ": expected a log-normal sigma in [0, 5]");
    SEGRANK_CHECK(std::isfinite(options.timeout_s) && options.timeout_s > 0, "--timeout ",
                  options.timeout_s, ": expected seconds > 0");
    SEGRANK_CHECK(std::isfinite(options.start_timeout_s) && options.start_timeout_s >= 0,
                  "--start-timeout ", options.start_timeout_s, ": expected seconds >= 0");
    SEGRANK_CHECK(options.max_restarts >= 0, "--max-restarts ", options.max_restarts,
                  ": expected >= 0");
    switch (spec.kind) {
        case MeasureKind::kRecorded:
            return std::make_unique<RecordedMeasurer>(graph);
        case MeasureKind::kHwmodel:
            return std::make_unique<HwmodelMeasurer>(graph, spec.arg, options);
        case MeasureKind::kExec:
            return std::make_unique<ExecMeasurer>(graph, spec.arg, options);
    }
    SEGRANK_CHECK(false, "tune: unknown measure kind");
    return nullptr;
}

std::unique_ptr<Measurer> make_measurer(std::string_view text, const TuneGraph& graph,
                                        const MeasureOptions& options) {
    return make_measurer(parse_measure_spec(text), graph, options);
}

}  // namespace segrank::tune
