// `segrank hwmodel explain` (per-node/per-kernel breakdown of one configuration) and
// `segrank hwmodel validate` (docs/hwmodel.md#validation).
#include "cli/hwmodel_explain.h"

#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "cli/options.h"
#include "data/collection.h"
#include "data/graph.h"
#include "data/graph_store.h"
#include "data/hlo/proto_reader.h"
#include "gnn/core/check.h"
#include "hwmodel/from_graph.h"
#include "hwmodel/hardware.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/module_cost.h"
#include "hwmodel/validation.h"
#include "util/exit_status.h"

namespace segrank::cli {
namespace {

std::string bounds(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(
            v[i]);  // appended separately: GCC 12 -Wrestrict false positive on "," + str
    }
    return s + "]";
}

void print_breakdown(const hw::Breakdown& b) {
    std::printf(
        "total %.3f us  (mxu %.3f, vpu %.3f, hbm %.3f, overhead %.3f, copy %.3f, ici %.3f us; "
        "%.0f HBM bytes; %lld steps/kernels)  bottleneck: %s\n",
        b.total_ns / 1e3, b.mxu_ns / 1e3, b.vpu_ns / 1e3, b.hbm_ns / 1e3, b.overhead_ns / 1e3,
        b.copy_ns / 1e3, b.ici_ns / 1e3, b.hbm_bytes, static_cast<long long>(b.steps),
        std::string(hw::bottleneck_name(hw::bottleneck(b))).c_str());
}

void explain_kernel(const hlo::HloModule& m, const hlo::TileSizeConfig& tile,
                    const hw::HwParams& hw, const std::string& what) {
    const hw::KernelModel model(m, hw);
    std::printf("kernel %s  %s\n", m.name.c_str(), what.c_str());
    std::printf("  tile: kernel %s output %s; iteration units %s, kernel units %s\n",
                bounds(tile.kernel_bounds).c_str(), bounds(tile.output_bounds).c_str(),
                bounds(model.iteration_units()).c_str(), bounds(model.kernel_units()).c_str());
    std::printf("  ");
    print_breakdown(model.evaluate(tile));
    std::printf("  %-36s %-20s %-40s %10s %10s\n", "instruction", "opcode", "shape", "mxu us",
                "vpu us");
    for (const auto& n : model.node_costs())
        std::printf("  %-36s %-20s %-40s %10.3f %10.3f\n", n.name.c_str(), n.opcode.c_str(),
                    n.shape.c_str(), n.work.mxu_ns / 1e3, n.work.vpu_ns / 1e3);
}

void explain_layout(const hlo::HloModule& m, const std::vector<int64_t>& nodes,
                    const std::vector<hw::LayoutValues>* config, const hw::HwParams& hw,
                    int64_t top, const std::string& what) {
    hw::LayoutModel model(m, nodes, hw);
    const hw::Breakdown total = config ? model.evaluate(*config) : model.default_cost();
    std::printf("module %s  %s  (%lld configurable nodes)\n  ", m.name.c_str(), what.c_str(),
                static_cast<long long>(nodes.size()));
    print_breakdown(total);
    for (const auto& [name, trips] : model.trip_counts())
        std::printf("  while %s: trip count %.0f\n", name.c_str(), trips);
    auto rows = model.kernels(config);
    std::sort(rows.begin(), rows.end(), [](const hw::KernelRow& a, const hw::KernelRow& b) {
        return a.cost.total_ns * a.multiplicity > b.cost.total_ns * b.multiplicity;
    });
    std::printf("  %-32s %-14s %-36s %5s %10s %9s %9s %9s %9s %9s %-9s\n", "kernel root", "opcode",
                "shape", "x", "total us", "mxu", "vpu", "hbm", "overhead", "copy", "bottleneck");
    for (size_t i = 0; i < rows.size() && static_cast<int64_t>(i) < top; ++i) {
        const auto& r = rows[i];
        std::printf("  %-32s %-14s %-36s %5.0f %10.3f %9.3f %9.3f %9.3f %9.3f %9.3f %-9s\n",
                    r.name.c_str(), r.opcode.c_str(), r.shape.c_str(), r.multiplicity,
                    r.cost.total_ns / 1e3, r.cost.mxu_ns / 1e3, r.cost.vpu_ns / 1e3,
                    r.cost.hbm_ns / 1e3, r.cost.overhead_ns / 1e3, r.cost.copy_ns / 1e3,
                    std::string(hw::bottleneck_name(hw::bottleneck(r.cost))).c_str());
    }
    if (static_cast<int64_t>(rows.size()) > top)
        std::printf("  ... %zu more kernels (--top to show more)\n",
                    rows.size() - static_cast<size_t>(top));
}

// "<file>: out of memory while <doing> (an allocation failed; the address-space limit ...)": the
// generic text's parenthesis (util/exit_status.h) after the file and the step.
Error explain_oom_error(const std::filesystem::path& file, const std::string& doing) {
    const std::string generic = out_of_memory_message();
    return Error(str(file.string(), ": out of memory while ", doing, " ",
                     generic.substr(std::min(generic.find('('), generic.size()))));
}

// `explain` of an npz graph: config `config`'s breakdown (a tile kernel, or a layout module's
// kernels, the `top` most expensive). Out of memory names the file and the step.
void explain_npz(const std::filesystem::path& file, int64_t config, const hw::HwParams& hw,
                 int64_t top) {
    int64_t nodes = -1;  // set once the file has loaded
    try {
        if (infer_task(file) == Task::kTile) {
            const TileGraph g = load_tile_npz(file, LabelPolicy::kAllowTestZeros);
            nodes = g.num_nodes();
            SEGRANK_CHECK(config >= 0 && config < g.num_configs(), file.string(), ": --config ",
                          config, " out of range [0, ", g.num_configs(), ")");
            const hlo::HloModule m = hw::module_from_graph(g);
            explain_kernel(
                m, hw::tile_config_from_features(g.config_feat.data() + config * kTileConfigDim),
                hw,
                str("config ", config, " (measured ", g.config_runtime[static_cast<size_t>(config)],
                    " ns)"));
        } else {
            const LayoutGraph g = load_layout_npz(file, LabelPolicy::kAllowTestZeros);
            nodes = g.num_nodes();
            SEGRANK_CHECK(config >= 0 && config < g.num_configs(), file.string(), ": --config ",
                          config, " out of range [0, ", g.num_configs(), ")");
            const hlo::HloModule m = hw::module_from_graph(g);
            std::vector<hw::LayoutValues> values(static_cast<size_t>(g.num_config_nodes()));
            const size_t base =
                static_cast<size_t>(config * g.num_config_nodes()) * kLayoutConfigDim;
            for (size_t k = 0; k < values.size(); ++k)
                std::copy_n(g.node_config_feat.begin() +
                                static_cast<std::ptrdiff_t>(base + k * kLayoutConfigDim),
                            kLayoutConfigDim, values[k].begin());
            explain_layout(m, g.node_config_ids, &values, hw, top,
                           str("config ", config, " (measured ",
                               g.config_runtime[static_cast<size_t>(config)], " ns)"));
        }
    } catch (const std::bad_alloc&) {
        throw explain_oom_error(file, nodes < 0 ? std::string("reading this graph file")
                                                : str("building the cost model of config ", config,
                                                      " (", nodes, " nodes) and its breakdown"));
    }
}

}  // namespace

int run_hwmodel_explain(int argc, char** argv) {
    cxxopts::Options options(
        "segrank hwmodel explain",
        "Cost breakdown (MXU/VPU/HBM/overhead/copy, bottleneck) of one configuration "
        "of a tuning .pb module or an npz graph (docs/hwmodel.md).");
    options.add_options()("file", "tuning .pb or TpuGraphs .npz", cxxopts::value<std::string>())(
        "config", "configuration (run / config row) index; default: the default run or row 0",
        cxxopts::value<int64_t>())("module",
                                   "only the module with this name (.pb with many modules)",
                                   cxxopts::value<std::string>())(
        "top", "kernels to list for a module", cxxopts::value<int64_t>()->default_value("25"))(
        "hardware", "hardware table name",
        cxxopts::value<std::string>()->default_value("tpu_v3_core"))("h,help", "show help");
    options.parse_positional({"file"});
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("file"),
                  "segrank hwmodel explain: give a .pb or .npz file (see --help)");
    const std::filesystem::path file = args["file"].as<std::string>();
    const hw::HwParams hw = hw::hardware_by_name(args["hardware"].as<std::string>());
    const int64_t top = args["top"].as<int64_t>();
    const bool has_config = args.count("config") > 0;
    const int64_t config = has_config ? args["config"].as<int64_t>() : 0;
    std::error_code ec;
    SEGRANK_CHECK(!std::filesystem::is_regular_file(file, ec) || !is_hdf5_file(file), file.string(),
                  ": is an HDF5 file (a graph store or checkpoint); hwmodel explain takes a tuning "
                  ".pb or an .npz graph: give the npz file the store was packed from");
    if (file.extension() == ".npz") {
        explain_npz(file, config, hw, top);
        return 0;
    }
    hlo::TuningFile tf;
    try {
        tf = hlo::read_tuning_file(file);
    } catch (const std::bad_alloc&) {
        throw explain_oom_error(file, "reading this tuning file");
    }
    // The modules to explain and the run of each, all checked before the first is printed.
    std::vector<std::pair<const hlo::ModuleTuning*, int64_t>> chosen;
    for (const auto& mt : tf.modules) {
        if (!mt.has_module) continue;
        if (args.count("module") && mt.module.name != args["module"].as<std::string>()) continue;
        int64_t run = config;
        if (!has_config)
            for (size_t r = 0; r < mt.runs.size(); ++r)
                if (mt.runs[r].is_default) {
                    run = static_cast<int64_t>(r);
                    break;
                }
        SEGRANK_CHECK(run >= 0 && run < static_cast<int64_t>(mt.runs.size()), file.string(),
                      ": module ", mt.module.name, ": --config ", run, " out of range [0, ",
                      mt.runs.size(), ")",
                      args.count("module") ? "" : " (choose it with --module)");
        chosen.emplace_back(&mt, run);
    }
    int64_t shown = 0;
    for (const auto& [mtp, run] : chosen) {
        const auto& mt = *mtp;
        const hlo::Run& r = mt.runs[static_cast<size_t>(run)];
        const std::string what =
            str("run ", run, r.is_default ? " (default)" : "", r.error ? " (error)" : "",
                " measured ", r.compute_time_ns, " ns");
        if (r.kind == Task::kLayout) {
            std::vector<int64_t> nodes(mt.config_index_to_node.begin(),
                                       mt.config_index_to_node.end());
            std::vector<hw::LayoutValues> values;
            for (const auto& n : r.layout) values.push_back(hw::layout_values(n));
            explain_layout(mt.module, nodes, &values, hw, top, what);
        } else {
            explain_kernel(mt.module, r.tile, hw, what);
        }
        std::printf("\n");
        ++shown;
    }
    SEGRANK_CHECK(
        shown > 0, file.string(), ": no module",
        args.count("module") ? " named " + args["module"].as<std::string>() : std::string());
    return 0;
}

int run_hwmodel_validate(int argc, char** argv) {
    cxxopts::Options options(
        "segrank hwmodel validate",
        "Fixture validation of the timing model (docs/hwmodel.md#validation): tile ranking, "
        "absolute copy/reshape times, layout ranking, ablations (markdown).");
    options.add_options()("data", "folder holding xla_tuning/*.pb",
                          cxxopts::value<std::string>()->default_value("../shared/data"))(
        "hardware", "hardware table name",
        cxxopts::value<std::string>()->default_value("tpu_v3_core"))("h,help", "show help");
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    const std::filesystem::path dir = args["data"].as<std::string>();
    const auto tile = hlo::read_tuning_file(dir / "xla_tuning/op_tuning_data.pb");
    const auto layout = hlo::read_tuning_file(dir / "xla_tuning/module_tuning_data_layout.pb");
    const hw::HwParams hw = hw::hardware_by_name(args["hardware"].as<std::string>());
    std::printf("%s", hw::validation_report(tile.modules, layout.modules, hw).c_str());
    return 0;
}

}  // namespace segrank::cli
