// `segrank synth` end to end: the standard folder layout, loadable files, summary output,
// overwrite refusal, option errors and --help.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "data/collection.h"
#include "data/graph.h"
#include "tests/support/test_paths.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

std::string synth_cmd(const fs::path& out, const std::string& extra) {
    std::string cmd = "'";  // built with += : GCC 12 -Wrestrict false positive on "'" + std::string
    // --nodes only when `extra` sets none: an option given twice is refused.
    const std::string nodes = extra.find("--nodes ") == std::string::npos ? "--nodes 100:300 " : "";
    cmd += segrank_binary().string() + "' synth --out '" + out.string() + "' --graphs 4 " + nodes +
           "--configs 8 --seed 3 -q " + extra + " 2>&1";
    return cmd;
}

}  // namespace

TEST_CASE("segrank synth writes the TpuGraphs layout with loadable, labelled files") {
    const fs::path dir = scratch_dir("synth_cli");
    const auto r = run_command(synth_cmd(dir / "d", "--collections tile,layout"));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("tile:xla:train") != std::string::npos);
    CHECK(r.output.find("layout:xla:random:test") != std::string::npos);
    CHECK(r.output.find("test labels kept") != std::string::npos);
    int files = 0;
    for (const auto& c : discover_collections(dir / "d")) {
        for (const auto& f : c.files) {
            ++files;
            if (c.id.task == Task::kTile)
                CHECK(load_tile_npz(f, LabelPolicy::kRequirePositive).num_configs() == 8);
            else
                CHECK(load_layout_npz(f, LabelPolicy::kRequirePositive).num_configs() == 8);
        }
    }
    CHECK(files == 8);

    const auto again = run_command(synth_cmd(dir / "d", ""));
    CHECK(again.exit_code == 1);
    CHECK(again.output.find("--force") != std::string::npos);
    CHECK(run_command(synth_cmd(dir / "d", "--force --collections layout")).exit_code == 0);
}

TEST_CASE("segrank synth rejects bad options with a message naming the option") {
    const fs::path dir = scratch_dir("synth_cli_bad");
    const auto bad_nodes = run_command(synth_cmd(dir / "a", "--nodes 300"));
    CHECK(bad_nodes.exit_code == 1);
    CHECK(bad_nodes.output.find("--nodes") != std::string::npos);
    const auto bad_coll = run_command(synth_cmd(dir / "b", "--collections tile,graph"));
    CHECK(bad_coll.exit_code == 1);
    CHECK(bad_coll.output.find("tile, layout") != std::string::npos);
    const auto bad_splits = run_command(synth_cmd(dir / "c", "--splits 0.5,0.5,0.5"));
    CHECK(bad_splits.exit_code == 1);
    CHECK(bad_splits.output.find("sum to 1") != std::string::npos);
    const auto bad_format = run_command(synth_cmd(dir / "d", "--format parquet"));
    CHECK(bad_format.exit_code == 1);
    CHECK(bad_format.output.find("unknown store format \"parquet\" (valid: \"npz\", \"hdf5\")") !=
          std::string::npos);
    const auto bad_choices = run_command(synth_cmd(dir / "e", "--layout-choices -1"));
    CHECK(bad_choices.exit_code == 1);
    CHECK(bad_choices.output.find("--layout-choices") != std::string::npos);
    CHECK(bad_choices.output.find("got -1") != std::string::npos);
    const auto huge = run_command(synth_cmd(dir / "g", "--stage-nodes 99999999999999999999"));
    CHECK(huge.exit_code == 1);
    CHECK(huge.output.find("--stage-nodes: '99999999999999999999' is out of range") !=
          std::string::npos);
    const auto huge_noise = run_command(synth_cmd(dir / "g", "--noise 1e999"));
    CHECK(huge_noise.exit_code == 1);
    CHECK(huge_noise.output.find("--noise: '1e999' is out of range") != std::string::npos);
    const auto range = run_command(synth_cmd(dir / "g", "--nodes 300:200"));
    CHECK(range.output.find("error: synth options: nodes range (--nodes) 300:200 has max < min") !=
          std::string::npos);
    for (const std::string v : {"999", "-5", "abc", "2.5", ""}) {
        const auto bad_stage = run_command(synth_cmd(dir / "g", "--stage-nodes '" + v + "'"));
        INFO("--stage-nodes '", v, "': ", bad_stage.output);
        CHECK(bad_stage.exit_code == 1);
        CHECK(bad_stage.output.find("--stage-nodes") != std::string::npos);
    }
    // Decimal numbers only: no leading space, hex, '+' sign or non-finite values.
    for (const std::string o :
         {"--stage-nodes ' 5000'", "--stage-nodes 0x1000", "--stage-nodes +5000", "--noise ' 0.1'",
          "--noise 0x1p-3", "--noise inf", "--noise nan", "--config-node-fraction ' 0.1'"}) {
        const auto bad_number = run_command(synth_cmd(dir / "g", o));
        INFO(o, ": ", bad_number.output);
        CHECK(bad_number.exit_code == 1);
        CHECK(bad_number.output.find(o.substr(0, o.find(' ')) + ": expected a") !=
              std::string::npos);
    }
    CHECK_FALSE(fs::exists(dir / "g"));
    for (const std::string o : {"--layout-choices 8", "--config-node-fraction 0.1",
                                "--max-config-nodes 5", "--stage-nodes 5000"}) {
        const auto tile_only = run_command(synth_cmd(dir / "f", "--collections tile " + o));
        INFO(o, ": ", tile_only.output);
        CHECK(tile_only.exit_code == 1);
        CHECK(tile_only.output.find(o.substr(0, o.find(' ')) +
                                    ": applies to layout graphs only, but --collections is "
                                    "'tile'") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(dir / "a"));
    CHECK_FALSE(fs::exists(dir / "c"));
    CHECK_FALSE(fs::exists(dir / "e"));
    CHECK_FALSE(fs::exists(dir / "f"));
    const auto help = run_command(sq(segrank_binary().string()) + " synth --help");
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("--hide-test-labels") != std::string::npos);
    CHECK(help.output.find("--layout-choices") != std::string::npos);
    CHECK(help.output.find("--stage-nodes") != std::string::npos);
}

TEST_CASE("segrank synth refuses sizes above its bounds and names the option and the bound") {
    const fs::path dir = scratch_dir("synth_cli_bounds");
    struct Bad {
        std::string args, message;
    };
    const Bad cases[] = {
        {"--graphs 4294967296 --nodes 100:300 --configs 8", "--graphs: expected 1 to 1000000"},
        {"--graphs 2 --nodes 50:9223372036854775807 --configs 8",
         "nodes maximum (--nodes MIN:MAX) must be <= 100000000"},
        {"--graphs 2 --nodes 100:300 --configs 4294967296",
         "configs (--configs) must be <= 1000000, got 4294967296"},
        {"--graphs 2 --nodes 100:300 --configs 8:9223372036854775807",
         "configs (--configs) must be <= 1000000"},
        {"--graphs 2 --nodes 100:300 --configs 8 --noise 5.0000001",
         "--noise: expected a number in [0, 5], got 5.0000001"},
        {"--graphs 2 --nodes 100:300 --configs 8 --splits -1,1,1",
         "--splits: fraction '-1' in '-1,1,1' is not in [0, 1]"},
        {"--graphs 2 --nodes 1: --configs 8", "--nodes: expected MIN:MAX (two integers), got '1:'"},
        {"--graphs 2 --nodes 100:300 --configs 8 --splits 0,0,0",
         "--splits: fractions '0,0,0' do not sum to 1"},
    };
    for (const Bad& b : cases) {
        std::string cmd = "'";  // appended: GCC 12's -Wrestrict misfires on "'" + std::string
        cmd += segrank_binary().string() + "' synth --out '" + (dir / "out").string() +
               "' --collections layout --seed 1 -q " + b.args + " 2>&1";
        const auto r = run_command(cmd);
        INFO(b.args, ": ", r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find(b.message) != std::string::npos);
        CHECK_FALSE(fs::exists(dir / "out"));
    }
}

TEST_CASE(
    "segrank synth killed by SIGINT or SIGTERM leaves no output folder and no staging folder") {
    const fs::path dir = scratch_dir("synth_cli_signal");
    for (const std::string sig : {"INT", "TERM"}) {
        for (const bool existed : {false, true}) {
            INFO("SIG", sig, existed ? ", --out existed" : ", new --out");
            const fs::path out = dir / ("out_" + sig + (existed ? "_old" : "_new"));
            fs::remove_all(out);
            // An earlier output's folder (synth refuses a --out holding other files).
            if (existed) fs::create_directories(out / "npz" / "keep");
            // The signal comes once the staging folder holds a file (the run takes far longer).
            std::string cmd = "('";  // appended: GCC 12's -Wrestrict misfires on "('" + std::string
            cmd += segrank_binary().string() + "' synth --out '" + out.string() +
                   "' --collections layout --graphs 400 --nodes 2000:4000 --configs 64 --seed 1 -q "
                   ">/dev/null 2>&1 & pid=$!; for i in $(seq 3000); do "
                   "[ -n \"$(find '" +
                   out.string() +
                   "' -path '*.synth-staging-*' -type f 2>/dev/null | head -1)\" ] && break; "
                   "kill -0 $pid 2>/dev/null || break; sleep 0.01; done; kill -" +
                   sig + " $pid; wait $pid; echo \"status $?\")";
            const auto r = run_command(cmd);
            INFO(r.output);
            // Killed by the signal (128 + signo), not finished: the default action was taken.
            CHECK(r.output.find(sig == "INT" ? "status 130" : "status 143") != std::string::npos);
            if (existed) {
                CHECK(fs::exists(out / "npz" / "keep"));
                size_t entries = 0;
                for (const auto& e : fs::recursive_directory_iterator(out))
                    entries += e.path() != out / "npz" && e.path() != out / "npz" / "keep";
                CHECK(entries == 0);
            } else {
                CHECK_FALSE(fs::exists(out));
            }
        }
    }
}

TEST_CASE("segrank synth --cost-off changes only the runtimes of the layout graphs") {
    const fs::path dir = scratch_dir("synth_cli_cost_off");
    const auto cmd = [&](const std::string& out, const std::string& extra) {
        return sq(segrank_binary().string()) + " synth --out " + sq((dir / out).string()) +
               " --collections layout --graphs 6 --nodes 300:600 --configs 8 --noise 0 --seed 5 " +
               extra + " 2>&1";
    };
    const auto full = run_command(cmd("full", ""));
    const auto no_copies = run_command(cmd("no_copies", "--cost-off copies"));
    // Every while loop charged 1000 iterations instead of its own 2..12.
    const auto many_trips =
        run_command(cmd("trips", "--cost-off trip_counts --default-trip-count 1000"));
    INFO(full.output, no_copies.output, many_trips.output);
    REQUIRE(full.exit_code == 0);
    REQUIRE(no_copies.exit_code == 0);
    REQUIRE(many_trips.exit_code == 0);
    CHECK(many_trips.output.find("labels without trip_counts, default trip count 1000") !=
          std::string::npos);
    int graphs = 0, copies_differ = 0, trips_differ = 0;
    for (const auto& c : discover_collections(dir / "full"))
        for (const auto& f : c.files) {
            const fs::path rel = fs::relative(f, dir / "full");
            const LayoutGraph a = load_layout_npz(f, LabelPolicy::kRequirePositive);
            for (const fs::path& other : {dir / "no_copies" / rel, dir / "trips" / rel}) {
                const LayoutGraph b = load_layout_npz(other, LabelPolicy::kRequirePositive);
                CHECK(b.node_opcode == a.node_opcode);
                CHECK(b.edge_index == a.edge_index);
                CHECK(b.node_config_ids == a.node_config_ids);
                CHECK(b.node_config_feat == a.node_config_feat);
                CHECK(b.node_splits == a.node_splits);
                CHECK(b.node_feat.rows() == a.node_feat.rows());
                CHECK(std::equal(a.node_feat.span().begin(), a.node_feat.span().end(),
                                 b.node_feat.span().begin()));
                // Config 0 is the default layout: no copies, so the same runtime without them.
                if (other == dir / "no_copies" / rel)
                    CHECK(b.config_runtime[0] == a.config_runtime[0]);
            }
            ++graphs;
            copies_differ += load_layout_npz(dir / "no_copies" / rel, LabelPolicy::kRequirePositive)
                                 .config_runtime != a.config_runtime;
            trips_differ += load_layout_npz(dir / "trips" / rel, LabelPolicy::kRequirePositive)
                                .config_runtime != a.config_runtime;
        }
    CHECK(graphs == 6);
    CHECK(copies_differ == graphs);  // random layouts imply copies in every graph
    CHECK(trips_differ >= 1);        // the graphs with while loops

    for (const std::string o :
         {"--cost-off bogus", "--cost-off copies,copies", "--cost-off ''", "--cost-off copies,",
          "--cost-off step_overhead", "--cost-off copies --cost-off padding",
          "--default-trip-count 2 --default-trip-count 3", "--default-trip-count 0",
          "--default-trip-count abc", "--default-trip-count nan"}) {
        const auto bad = run_command(cmd("bad", o));
        INFO(o, ": ", bad.output);
        CHECK(bad.exit_code == 1);
        CHECK(bad.output.find(o.substr(0, o.find(' '))) != std::string::npos);
    }
    for (const std::string o : {"--cost-off copies", "--default-trip-count 4"}) {
        const auto tile_only = run_command(synth_cmd(dir / "bad", "--collections tile " + o));
        INFO(o, ": ", tile_only.output);
        CHECK(tile_only.exit_code == 1);
        CHECK(tile_only.output.find("applies to layout graphs only") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(dir / "bad"));
}

TEST_CASE("segrank synth --cost labels the same graphs and configs with another cost family") {
    const fs::path dir = scratch_dir("synth_cli_cost");
    const auto cmd = [&](const std::string& out, const std::string& extra) {
        return sq(segrank_binary().string()) + " synth --out " + sq((dir / out).string()) +
               " --graphs 3 --nodes 60:150 --configs 6 --noise 0.05 --seed 7 -q " + extra + " 2>&1";
    };
    struct Run {
        std::string out, collection, cost;
    };
    const Run runs[] = {{"l_v3", "layout", "tpu_v3"},       {"l_prop", "layout", "propagate"},
                        {"l_copy", "layout", "copy_bound"}, {"l_mxu", "layout", "mxu_padded"},
                        {"l_mem", "layout", "memory_v5"},   {"l_fus", "layout", "fusion_aware"},
                        {"t_v3", "tile", "tpu_v3"},         {"t_spill", "tile", "vmem_spill"},
                        {"t_pipe", "tile", "pipeline"},     {"t_step", "tile", "step_overhead"}};
    for (const Run& r : runs) {
        const auto res =
            run_command(cmd(r.out, "--collections " + r.collection + " --cost " + r.cost));
        INFO(r.cost, ": ", res.output);
        REQUIRE(res.exit_code == 0);
        CHECK(res.output.find("cost " + r.cost) != std::string::npos);
    }
    // Same graphs and configs under every family; the runtimes are the family's.
    for (const Run& r : runs) {
        if (r.cost == "tpu_v3") continue;
        const std::string ref = r.collection == "layout" ? "l_v3" : "t_v3";
        int graphs = 0, differ = 0;
        for (const auto& c : discover_collections(dir / ref))
            for (const auto& f : c.files) {
                const fs::path other = dir / r.out / fs::relative(f, dir / ref);
                if (r.collection == "layout") {
                    const LayoutGraph a = load_layout_npz(f, LabelPolicy::kRequirePositive);
                    const LayoutGraph b = load_layout_npz(other, LabelPolicy::kRequirePositive);
                    CHECK(b.node_config_feat == a.node_config_feat);
                    CHECK(b.edge_index == a.edge_index);
                    differ += b.config_runtime != a.config_runtime;
                } else {
                    const TileGraph a = load_tile_npz(f, LabelPolicy::kRequirePositive);
                    const TileGraph b = load_tile_npz(other, LabelPolicy::kRequirePositive);
                    CHECK(std::equal(a.config_feat.span().begin(), a.config_feat.span().end(),
                                     b.config_feat.span().begin()));
                    differ += b.config_runtime != a.config_runtime;
                }
                ++graphs;
            }
        INFO(r.cost);
        CHECK(graphs == 3);
        CHECK(differ == graphs);
    }
    const auto unknown = run_command(cmd("bad", "--collections layout --cost tpu_v9"));
    CHECK(unknown.exit_code == 1);
    CHECK(unknown.output.find("unknown cost family 'tpu_v9'; valid names: tpu_v3 (layout, tile), "
                              "propagate (layout)") != std::string::npos);
    const auto wrong = run_command(cmd("bad", "--collections tile,layout --cost pipeline"));
    CHECK(wrong.exit_code == 1);
    CHECK(wrong.output.find("--cost: 'pipeline' is a tile cost; it cannot label the layout") !=
          std::string::npos);
    const auto off =
        run_command(cmd("bad", "--collections layout --cost propagate --cost-off copies"));
    CHECK(off.exit_code == 1);
    CHECK(off.output.find("applies to --cost tpu_v3 only") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "bad"));
    const auto help = run_command(sq(segrank_binary().string()) + " synth --help 2>&1");
    CHECK(help.output.find("fusion_aware") != std::string::npos);
    CHECK(help.output.find("step_overhead (tile)") != std::string::npos);
}

}  // namespace segrank::test
