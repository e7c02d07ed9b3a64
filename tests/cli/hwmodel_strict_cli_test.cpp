// `segrank hwmodel` on a graph it cannot cost: a warning naming the file and the default order for
// that graph, the other graphs scored as usual; `--strict` makes it an error with nothing written.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/graph.h"
#include "tests/support/dot_order_graph.h"
#include "tests/support/test_paths.h"

using namespace segrank;
using namespace segrank::test;
namespace fs = std::filesystem;

TEST_CASE(
    "segrank hwmodel warns about a graph it cannot cost, lists its configs in the default order, "
    "--strict fails") {
    const fs::path dir = scratch_dir("hwmodel_strict");
    const fs::path valid = dir / "npz/layout/xla/default/valid";
    fs::create_directories(valid);
    // a: costable (operands matched by rank); b: config 1 gives the input a 4-dim layout, but the
    // dot's operands have ranks 2 and 3.
    const hlo::NodeLayoutConfig four{{{}, {3, 2, 1, 0}, {}}};
    save_layout_npz(npz_form(dot_module(), {{}, dot_config()}), valid / "a.npz");
    save_layout_npz(npz_form(dot_module(), {{}, four, dot_config()}), valid / "b.npz");
    const std::string base =
        segrank_binary().string() + " hwmodel --data " + sq(dir.string()) + " --split valid";
    const auto r = run_command(base + " --out " + sq((dir / "sub.csv").string()) + " --scores " +
                               sq((dir / "scores.csv").string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("hwmodel: warning: " + (valid / "b.npz").string() +
                        ": cannot be costed (layout config of 'dot.2' tensor 1: layout lists 4 "
                        "dims but the array "
                        "has rank 2); its 3 configurations are listed in the default order") !=
          std::string::npos);
    CHECK(r.output.find("a.npz") == std::string::npos);  // a is costed
    const std::string sub = read_file_text(dir / "sub.csv");
    CHECK(sub.find("layout:xla:default:b,0;1;2\n") != std::string::npos);
    CHECK(sub.find("layout:xla:default:a,") != std::string::npos);
    const std::string scores = read_file_text(dir / "scores.csv");
    CHECK(scores.find("layout:xla:default:a,1,") != std::string::npos);
    CHECK(scores.find(":b,") == std::string::npos);

    const auto s = run_command(base + " --strict --out " + sq((dir / "strict.csv").string()));
    INFO(s.output);
    CHECK(s.exit_code == 1);
    CHECK(s.output.find("error: layout config of 'dot.2' tensor 1: layout lists 4 dims") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(dir / "strict.csv"));
}
