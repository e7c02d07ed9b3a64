// `segrank synth --out DIR --collections tile,layout --graphs N --nodes MIN:MAX --configs C
// --seed S [--noise SIGMA] [--layout-choices N] [--stage-nodes N] [--splits 0.7,0.15,0.15]
// [--format npz|hdf5] [--hide-test-labels] [--force]`: synthetic collections labelled by hwmodel
// (docs/hwmodel.md#synthetic-collections; hwmodel/synth/).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/synth_manifest.h"
#include "gnn/core/check.h"
#include "hwmodel/costs/cost_family.h"
#include "hwmodel/hardware.h"
#include "hwmodel/synth/writer.h"

namespace segrank::cli {
namespace {

std::vector<std::string> split_list(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t pos = s.find(sep, start);
        out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
        if (pos == std::string::npos) break;
        start = pos + 1;
    }
    return out;
}

// Decimal only, the whole string: std::from_chars takes no leading space, no '+', no hex and (for
// doubles in chars_format::general) no "inf" or "nan", unlike std::stoll / std::stod.
int64_t parse_int(const std::string& flag, const std::string& v) {
    long long x = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
    if (r.ec == std::errc::result_out_of_range)
        throw Error(str("--", flag, ": '", v, "' is out of range (a 64-bit integer)"));
    SEGRANK_CHECK(r.ec == std::errc() && r.ptr == v.data() + v.size() && !v.empty(), "--", flag,
                  ": expected an integer, got '", v, "'");
    return x;
}

double parse_double(const std::string& flag, const std::string& v) {
    double x = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), x, std::chars_format::general);
    if (r.ec == std::errc::result_out_of_range)
        throw Error(str("--", flag, ": '", v, "' is out of range (a double)"));
    SEGRANK_CHECK(
        r.ec == std::errc() && r.ptr == v.data() + v.size() && !v.empty() && std::isfinite(x), "--",
        flag, ": expected a number, got '", v, "'");
    return x;
}

// The description of `segrank synth --help`: what is written where, and the cost families.
std::string synth_description() {
    const std::string families =
        "\nCost families (--cost NAME, docs/hwmodel.md#cost-families; the graphs, configs and "
        "noise\ndraws of a seed are the same under every family):\n" +
        hw::cost_family_help();
    return "Synthetic TpuGraphs collections labelled by the analytical TPU model (hwmodel).\n"
           "Modules come from model families (conv nets with batch norm, transformer blocks, "
           "while\n"
           "loops, all-reduces; conv/dot/loop/reduce fusions for tile kernels), are featurized by "
           "the\n"
           "featurizer of the real data, and get random valid layout / tile configurations whose\n"
           "runtimes (ns) are hwmodel estimates times log-normal noise. Config 0 of every graph is "
           "the\n"
           "compiler default (tile: its runtime is the normalizer). Output (npz):\n"
           "  DIR/npz/tile/xla/{train,valid,test}/synth_tile_NNNNNN.npz\n"
           "  DIR/npz/layout/xla/random/{train,valid,test}/synth_layout_NNNNNN.npz\n"
           "or (hdf5) DIR/h5/{tile_xla,layout_xla_random}_{train,valid,test}.h5.\n"
           "Unlike Kaggle's files, the test split KEEPS its runtimes (synthetic data has labels);\n"
           "--hide-test-labels zeroes them (tile normalizers 1) like the public test files.\n"
           "Deterministic: the same options and seed give byte-identical npz files. Graphs are\n"
           "generated and written one at a time; nothing appears in DIR unless all succeed (an\n"
           "error, SIGINT, SIGTERM or SIGHUP removes the partial output). Bounds: at most\n"
           "1000000 graphs, 100000000 nodes and 1000000 configs per graph.\n" +
           families;
}

// The options and help text of `segrank synth`.
cxxopts::Options synth_options() {
    cxxopts::Options options("segrank synth", synth_description());
    options.add_options()("out", "output root directory", cxxopts::value<std::string>())(
        "collections", "comma list of tile, layout",
        cxxopts::value<std::string>()->default_value("tile,layout"))(
        "graphs", "graphs per collection (all splits)",
        cxxopts::value<std::string>()->default_value("24"))(
        "nodes", "MIN:MAX instructions per module",
        cxxopts::value<std::string>()->default_value("200:2000"))(
        "configs",
        "configurations per graph (default config included): C, or MIN:MAX drawn log-uniformly "
        "per graph",
        cxxopts::value<std::string>()->default_value("64"))(
        "nodes-dist", "uniform | log-uniform draw of the node count over --nodes",
        cxxopts::value<std::string>()->default_value("uniform"))(
        "config-node-fraction",
        "layout: at most round(F x nodes) configurable nodes (and at most --max-config-nodes); 0 "
        "= off",
        cxxopts::value<std::string>()->default_value("0"))(
        "layout-choices",
        "layout: each configurable node picks among N layouts drawn once per graph (real layout "
        "files: at most 8); 0 = a fresh random layout per config",
        cxxopts::value<std::string>()->default_value("0"))(
        "stage-nodes",
        "layout: a graph of more nodes is built in stages of at most this many, run one after "
        "another (at least one configurable node each), written to an HDF5 store stage by stage "
        "(npz gathers the stages into one file); 0 = never",
        cxxopts::value<std::string>()->default_value("262144"))(
        "seed", "random seed", cxxopts::value<std::string>()->default_value("0"))(
        "noise", "log-normal sigma of the runtime labels",
        cxxopts::value<std::string>()->default_value("0.05"))(
        "splits", "train,valid,test fractions",
        cxxopts::value<std::string>()->default_value("0.7,0.15,0.15"))(
        "format", "npz | hdf5", cxxopts::value<std::string>()->default_value("npz"))(
        "max-config-nodes",
        "layout: at most this many configurable nodes per graph (a staged graph has at least one "
        "per stage)",
        cxxopts::value<std::string>()->default_value("1000"))(
        "hardware",
        "hwmodel hardware table (tpu_v3_core, tpu_v3_core_jax, tpu_v2_core, tpu_v4_megacore)",
        cxxopts::value<std::string>()->default_value("tpu_v3_core"))(
        "cost",
        "timing model of the labels: a cost family (listed below); layout families label only "
        "layout graphs, tile families only tile graphs, tpu_v3 both",
        cxxopts::value<std::string>()->default_value("tpu_v3"))(
        "cost-off",
        "layout: comma list of timing-model parts the labels leave out: padding, copies, "
        "trip_counts (hwmodel validate's ablations; the modules, configs and noise draws stay the "
        "same, so a --noise 0 collection with it is a reference for a predictor blind to those "
        "parts; given once)",
        cxxopts::value<std::string>())(
        "default-trip-count",
        "layout: iterations charged for a while loop whose trip count is not found, and for every "
        "while loop with --cost-off trip_counts, in [1, 1e6] (the hardware table's "
        "default_trip_count, 1)",
        cxxopts::value<std::string>())("hide-test-labels",
                                       "zero the test split's runtimes like the Kaggle files")(
        "stored", "npz: store members uncompressed (faster, larger files)")(
        "force",
        "replace an earlier synth output in --out: remove the files its .synth-manifest lists "
        "(other files stay; a split folder to rewrite that holds other files is refused)")(
        "q,quiet", "no per-graph lines")("h,help", "show help");
    return options;
}

// --collections into w.tasks (each once); the layout-only options are refused without layout.
// Throws segrank::Error naming the option.
void parse_collections(const cxxopts::ParseResult& args, synth::WriteOptions& w) {
    w.tasks.clear();
    for (const auto& c : split_list(args["collections"].as<std::string>(), ',')) {
        SEGRANK_CHECK(c == "tile" || c == "layout", "--collections: '", c,
                      "' is not one of: tile, layout");
        const Task t = parse_task(c);
        SEGRANK_CHECK(std::find(w.tasks.begin(), w.tasks.end(), t) == w.tasks.end(),
                      "--collections: '", c, "' is listed twice");
        w.tasks.push_back(t);
    }
    // The layout-only options would be silently ignored without a layout collection.
    if (std::find(w.tasks.begin(), w.tasks.end(), Task::kLayout) == w.tasks.end())
        for (const char* o : {"config-node-fraction", "layout-choices", "max-config-nodes",
                              "stage-nodes", "cost-off", "default-trip-count"})
            SEGRANK_CHECK(args.count(o) == 0, "--", o,
                          ": applies to layout graphs only, but --collections is '",
                          args["collections"].as<std::string>(), "'");
}

// --cost into w.synth.cost_family, given once, of a kind that labels every selected collection;
// --cost-off only with tpu_v3. Throws segrank::Error naming the option.
void parse_cost(const cxxopts::ParseResult& args, synth::WriteOptions& w) {
    w.synth.cost_family = hw::parse_cost_family(args["cost"].as<std::string>());
    SEGRANK_CHECK(args.count("cost") <= 1, "--cost: given ", args.count("cost"),
                  " times; give it once");
    const hw::CostKind kind = hw::cost_family_kind(w.synth.cost_family);
    for (const Task t : w.tasks) {
        const bool ok =
            kind == hw::CostKind::kBoth || (kind == hw::CostKind::kLayout) == (t == Task::kLayout);
        SEGRANK_CHECK(ok, "--cost: '", args["cost"].as<std::string>(), "' is a ",
                      hw::cost_kind_name(kind), " cost; it cannot label the ",
                      t == Task::kLayout ? "layout" : "tile", " collection (--collections '",
                      args["collections"].as<std::string>(),
                      "'); give one collection per run (see segrank synth --help)");
    }
    SEGRANK_CHECK(w.synth.cost_family == hw::CostFamily::kTpuV3 || !args.count("cost-off"),
                  "--cost-off: applies to --cost tpu_v3 only (the other families do not have "
                  "those switches), got --cost '",
                  args["cost"].as<std::string>(), "'");
}

// --graphs, --nodes MIN:MAX, --configs C or MIN:MAX and --nodes-dist. Throws segrank::Error naming
// the option and the expected form.
void parse_sizes(const cxxopts::ParseResult& args, synth::WriteOptions& w) {
    w.graphs = parse_int("graphs", args["graphs"].as<std::string>());
    SEGRANK_CHECK(w.graphs >= 1 && w.graphs <= synth::kMaxGraphs, "--graphs: expected 1 to ",
                  synth::kMaxGraphs, ", got ", w.graphs);
    const auto nodes = split_list(args["nodes"].as<std::string>(), ':');
    SEGRANK_CHECK(nodes.size() == 2, "--nodes: expected MIN:MAX, got '",
                  args["nodes"].as<std::string>(), "'");
    for (const auto& half : nodes)
        SEGRANK_CHECK(!half.empty(), "--nodes: expected MIN:MAX (two integers), got '",
                      args["nodes"].as<std::string>(), "'");
    w.synth.min_nodes = parse_int("nodes", nodes[0]);
    w.synth.max_nodes = parse_int("nodes", nodes[1]);
    const auto configs = split_list(args["configs"].as<std::string>(), ':');
    SEGRANK_CHECK(configs.size() <= 2, "--configs: expected C or MIN:MAX, got '",
                  args["configs"].as<std::string>(), "'");
    w.synth.configs = parse_int("configs", configs[0]);
    if (configs.size() == 2) {
        w.synth.max_configs = parse_int("configs", configs[1]);
        SEGRANK_CHECK(w.synth.max_configs >= w.synth.configs,
                      "--configs: MIN:MAX has max < min, "
                      "got '",
                      args["configs"].as<std::string>(), "'");
    }
    const std::string dist = args["nodes-dist"].as<std::string>();
    SEGRANK_CHECK(dist == "uniform" || dist == "log-uniform", "--nodes-dist: '", dist,
                  "' is not one of: uniform, log-uniform");
    w.synth.log_uniform_nodes = dist == "log-uniform";
}

// The layout knobs (--config-node-fraction, --layout-choices, --stage-nodes, --max-config-nodes),
// --seed, --noise, --hardware and --default-trip-count. Throws segrank::Error naming the option.
void parse_generator(const cxxopts::ParseResult& args, synth::WriteOptions& w) {
    w.synth.config_node_fraction =
        parse_double("config-node-fraction", args["config-node-fraction"].as<std::string>());
    w.synth.layout_choices = parse_int("layout-choices", args["layout-choices"].as<std::string>());
    w.synth.stage_nodes = parse_int("stage-nodes", args["stage-nodes"].as<std::string>());
    const int64_t seed = parse_int("seed", args["seed"].as<std::string>());
    SEGRANK_CHECK(seed >= 0, "--seed: expected >= 0, got ", seed);
    w.synth.seed = static_cast<uint64_t>(seed);
    w.synth.noise_sigma = parse_double("noise", args["noise"].as<std::string>());
    SEGRANK_CHECK(w.synth.noise_sigma >= 0 && w.synth.noise_sigma <= 5,
                  "--noise: expected a number in [0, 5], got ", args["noise"].as<std::string>());
    w.synth.max_config_nodes =
        parse_int("max-config-nodes", args["max-config-nodes"].as<std::string>());
    w.synth.hw = hw::hardware_by_name(args["hardware"].as<std::string>());
    if (args.count("default-trip-count")) {
        w.synth.hw.default_trip_count =
            parse_double("default-trip-count", args["default-trip-count"].as<std::string>());
        SEGRANK_CHECK(w.synth.hw.default_trip_count >= 1 && w.synth.hw.default_trip_count <= 1e6,
                      "--default-trip-count: expected a number in [1, 1e6], got ",
                      args["default-trip-count"].as<std::string>());
    }
}

// --cost-off (given once, a comma list of padding, copies, trip_counts, each once) switches off
// those parts of w.synth.cost. Throws segrank::Error naming the option and the part.
void parse_cost_off(const cxxopts::ParseResult& args, synth::WriteOptions& w) {
    for (const char* o : {"cost-off", "default-trip-count"})  // cxxopts keeps only the last one
        SEGRANK_CHECK(args.count(o) <= 1, "--", o, ": given ", args.count(o),
                      " times; give it once (--cost-off takes a comma list)");
    if (args.count("cost-off")) {
        // step_overhead is not offered: it is a cost of tile grid steps, which layout labels (the
        // module model) never charge.
        const std::string list = args["cost-off"].as<std::string>();
        const auto parts = split_list(list, ',');
        for (const auto& part : parts)
            SEGRANK_CHECK(!part.empty(),
                          "--cost-off: expected a comma list of padding, copies, trip_counts, "
                          "got '",
                          list, "'");
        for (const auto& part : parts) {
            bool* flag = part == "padding"       ? &w.synth.cost.padding
                         : part == "copies"      ? &w.synth.cost.copies
                         : part == "trip_counts" ? &w.synth.cost.trip_counts
                                                 : nullptr;
            SEGRANK_CHECK(flag, "--cost-off: '", part, "' in '", list,
                          "' is not one of: padding, copies, trip_counts");
            SEGRANK_CHECK(*flag, "--cost-off: '", part, "' is listed twice in '", list, "'");
            *flag = false;
        }
    }
}

// --splits (three fractions in [0, 1] summing to 1), --format and the output switches. Throws
// segrank::Error naming the option.
void parse_output(const cxxopts::ParseResult& args, synth::WriteOptions& w) {
    const auto fr = split_list(args["splits"].as<std::string>(), ',');
    SEGRANK_CHECK(fr.size() == 3, "--splits: expected three fractions train,valid,test, got '",
                  args["splits"].as<std::string>(), "'");
    for (size_t i = 0; i < 3; ++i) {
        w.splits[i] = parse_double("splits", fr[i]);
        SEGRANK_CHECK(w.splits[i] >= 0 && w.splits[i] <= 1, "--splits: fraction '", fr[i], "' in '",
                      args["splits"].as<std::string>(), "' is not in [0, 1]");
    }
    SEGRANK_CHECK(std::abs(w.splits[0] + w.splits[1] + w.splits[2] - 1.0) < 1e-6,
                  "--splits: fractions '", args["splits"].as<std::string>(), "' do not sum to 1");
    w.format = parse_store_format(args["format"].as<std::string>());
    w.force = args.count("force") > 0;
    w.hide_test_labels = args.count("hide-test-labels") > 0;
    if (args.count("stored")) w.npz_compression = NpzCompression::kStored;
}

// The table of written collection splits and the closing summary line (stdout); `secs` is the
// generation time.
void print_written(const cxxopts::ParseResult& args, const synth::WriteOptions& w,
                   const std::vector<synth::WrittenSplit>& written, double secs) {
    std::printf("%-28s %7s %10s %9s  %s\n", "collection", "graphs", "nodes", "configs", "path");
    for (const auto& s : written)
        std::printf("%-28s %7lld %10lld %9lld  %s\n", s.id.full_name().c_str(),
                    static_cast<long long>(s.graphs), static_cast<long long>(s.nodes),
                    static_cast<long long>(s.configs), s.path.string().c_str());
    const std::string cost_off =
        ", cost " + std::string(hw::cost_family_name(w.synth.cost_family)) +
        (args.count("cost-off") ? ", labels without " + args["cost-off"].as<std::string>() : "") +
        (args.count("default-trip-count")
             ? ", default trip count " + args["default-trip-count"].as<std::string>()
             : "");
    std::printf(
        "synth: wrote %zu collection splits in %.1f s (seed %llu, noise %.3g%s%s)\n",
        written.size(), secs, static_cast<unsigned long long>(w.synth.seed), w.synth.noise_sigma,
        w.hide_test_labels ? ", test labels hidden" : ", test labels kept", cost_off.c_str());
}

// The split targets (relative to --out) this run writes that exist already: those --force
// replaces.
std::vector<std::filesystem::path> replaced_targets(const synth::WriteOptions& w) {
    std::vector<std::filesystem::path> targets;
    for (const Task task : w.tasks) {
        const auto splits = synth::assign_splits(w.graphs, w.splits, w.synth.seed, task);
        for (const Split s : {Split::kTrain, Split::kValid, Split::kTest}) {
            if (std::find(splits.begin(), splits.end(), s) == splits.end()) continue;
            CollectionId id;
            id.task = task;
            id.source = Source::kXla;
            id.search = task == Task::kTile ? Search::kNone : Search::kRandom;
            id.split = s;
            const std::filesystem::path target = synth::target_path({}, id, w.format);
            std::error_code ec;
            if (std::filesystem::exists(std::filesystem::symlink_status(w.out / target, ec)))
                targets.push_back(target);
        }
    }
    return targets;
}

// One line per collection split whose earlier synth files --force removed (`removed`, relative
// to `out`), saying when files synth did not write stay in its folder.
void print_removed(const std::filesystem::path& out,
                   const std::vector<std::filesystem::path>& removed) {
    std::map<std::filesystem::path, int64_t> by_split;
    for (const auto& r : removed) ++by_split[r.extension() == ".npz" ? r.parent_path() : r];
    for (const auto& [split, n] : by_split) {
        std::error_code ec;
        const bool kept = std::filesystem::exists(out / split, ec);
        std::printf(
            "synth: --force removed the earlier collection split %s (%lld file(s) not written by "
            "this run)%s\n",
            (out / split).string().c_str(), static_cast<long long>(n),
            kept ? "; the files synth did not write stay there" : "");
    }
}

}  // namespace

int run_synth(int argc, char** argv) {
    cxxopts::Options options = synth_options();
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("out"), "missing --out DIR (see segrank synth --help)");

    synth::WriteOptions w;
    w.out = args["out"].as<std::string>();
    parse_collections(args, w);
    parse_cost(args, w);
    parse_sizes(args, w);
    parse_generator(args, w);
    parse_cost_off(args, w);
    parse_output(args, w);
    const bool quiet = args.count("quiet") > 0;

    // Read (and checked) before any work: what an earlier synth wrote into --out; --force
    // replaces a split only when every file in it is synth's.
    check_synth_out(w.out);
    const std::vector<std::filesystem::path> earlier = read_synth_manifest(w.out);
    if (w.force) check_only_synth_files(w.out, replaced_targets(w), earlier);
    const auto t0 = std::chrono::steady_clock::now();
    const auto written = synth::write_synthetic(w, [&](const std::string& line) {
        if (!quiet) std::printf("  %s\n", line.c_str());
    });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<std::filesystem::path> files;
    for (const auto& s : written)
        for (const auto& f : split_files(w.out, synth::target_path({}, s.id, w.format)))
            files.push_back(f);
    const auto removed = update_synth_manifest(w.out, earlier, files, w.force);
    print_written(args, w, written, secs);
    print_removed(w.out, removed);
    return 0;
}

}  // namespace segrank::cli
