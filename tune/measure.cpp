// The --measure factory and the two in-process backends: `recorded` (the file's runtimes) and
// `hwmodel[:NAME]` (the analytical model, or cost family NAME, with log-normal noise). `exec:CMD`
// is in tune/exec_measurer.cpp.
#include "tune/measure.h"

#include <cmath>
#include <unordered_map>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"
#include "hwmodel/costs/cost_family.h"
#include "hwmodel/from_graph.h"
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

// The cost family a --measure hwmodel[:NAME] argument names: "" and "default" are tpu_v3.
hw::CostFamily measure_cost_family(const std::string& arg) {
    return arg.empty() || arg == "default" ? hw::CostFamily::kTpuV3 : hw::parse_cost_family(arg);
}

bool family_fits(hw::CostFamily f, Task task) {
    const hw::CostKind k = hw::cost_family_kind(f);
    return k == hw::CostKind::kBoth || (k == hw::CostKind::kTile) == (task == Task::kTile);
}

// "tpu_v3, propagate, ..." : the families that can measure a graph of `task`.
std::string family_names_for(Task task) {
    std::string out;
    for (const std::string& n : hw::cost_family_names())
        if (family_fits(hw::parse_cost_family(n), task)) out += (out.empty() ? "" : ", ") + n;
    return out;
}

// The analytical model (or another cost family) on the module rebuilt from the npz record, with
// log-normal noise. The family's cost is the one `segrank synth --cost NAME` labels with
// (hw::make_tile_cost / hw::make_layout_cost), on hw::module_from_graph of the graph.
class HwmodelMeasurer : public Measurer {
public:
    HwmodelMeasurer(const TuneGraph& g, std::string family, const MeasureOptions& opt)
        : graph_(g), family_(std::move(family)), cost_(measure_cost_family(family_)), opt_(opt) {
        const bool tile = g.task == Task::kTile;
        SEGRANK_CHECK(
            family_fits(cost_, g.task), "--measure 'hwmodel:", family_, "': cost family '", family_,
            "' is a ", hw::cost_kind_name(hw::cost_family_kind(cost_)),
            " cost; it cannot measure the ", tile ? "tile" : "layout", " graph ", where_of(g),
            "; valid names for ", tile ? "tile" : "layout", " graphs: ", family_names_for(g.task));
        const hw::HwParams hw = hw::tpu_v3_core();
        try {
            if (tile) {
                module_ = hw::module_from_graph(g.tile);
                kernel_ = std::make_unique<hw::KernelModel>(module_, hw);
                tile_cost_ = hw::make_tile_cost(cost_, *kernel_, hw);
            } else {
                module_ = hw::module_from_graph(g.layout);
                layout_cost_ = hw::make_layout_cost(cost_, module_, g.layout.node_config_ids, hw);
            }
        } catch (const Error& e) {
            SEGRANK_CHECK(false, where_of(g), ": --measure ", name(),
                          " cannot cost this graph: ", e.what());
        }
    }

    std::vector<Measurement> measure(std::span<const Config> configs) override {
        std::vector<Measurement> out;
        for (const Config& c : configs) {
            check_config_shape(graph_, c);
            // tpu_v3 tile: +inf when the working set does not fit VMEM (KernelModel::evaluate);
            // the other tile families are finite everywhere.
            const double ns =
                tile_cost_ ? tile_cost_->evaluate_ns(hw::tile_config_from_features(c.tile.data()))
                           : layout_cost_->evaluate_ns(c.layout.data());
            if (!std::isfinite(ns) || ns <= 0) {
                out.push_back(Measurement::failure(
                    std::isinf(ns)
                        ? name() +
                              ": the working set does not fit VMEM (the compiler "
                              "rejects this config): " +
                              describe(c)
                        : name() + ": estimate " + std::to_string(ns) + " ns for " + describe(c)));
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
    std::string family_;  // as given after "hwmodel:" ("" for plain "hwmodel")
    hw::CostFamily cost_;
    MeasureOptions opt_;
    hlo::HloModule module_;
    std::unique_ptr<hw::KernelModel> kernel_;            // tile graphs (refers to module_)
    std::unique_ptr<hw::TileCostFamily> tile_cost_;      // tile graphs (refers to kernel_)
    std::unique_ptr<hw::LayoutCostFamily> layout_cost_;  // layout graphs (refers to module_)
    std::unordered_map<std::string, uint64_t> count_;    // measurements so far per config
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
        if (name != "default") {
            try {
                hw::parse_cost_family(name);
            } catch (const Error&) {
                SEGRANK_CHECK(false, "--measure '", t, "': unknown cost family '", name,
                              "'; valid names for layout graphs: ", family_names_for(Task::kLayout),
                              "; for tile graphs: ", family_names_for(Task::kTile),
                              " ('hwmodel' and 'hwmodel:default' are tpu_v3)");
            }
        }
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
