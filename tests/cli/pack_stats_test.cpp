// `segrank stats` and `segrank pack` end to end on the public tile samples.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "tests/support/test_paths.h"

using segrank::test::run_command;
using segrank::test::scratch_dir;
using segrank::test::segrank_binary;

namespace {

// The per-graph rows (and TOTAL) of the human table, without the header line naming the source.
std::string table_rows(const std::string& out) {
    const auto p = out.find("\ngraph");
    return p == std::string::npos ? out : out.substr(p);
}

}  // namespace

TEST_CASE("segrank stats prints the published counts of the tile samples") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto r = run_command(segrank_binary().string() + " stats " +
                               (data / "npz_samples/tile_xla_test").string());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("collection tile:xla:test") != std::string::npos);
    // name, nodes, edges, configs, configurable nodes, duplicates, runtime min/median/max (all 0).
    const char* rows[] = {"0a1c5dcfa9f1f4ebcc1282a1d1ca8ecb", "0a3585c3e686065389227fa374175e48",
                          "0a8a2b247d7a20b9dcab1daf50066a4d", "0abaea94d7b0a1c1f1b0bd23b73ce38c",
                          "0ac539372cc77cc6791794b369b984e1"};
    const long long nmc[5][3] = {
        {2, 1, 32}, {52, 55, 1282}, {15, 15, 807}, {21, 21, 52}, {65, 70, 2951}};
    for (int i = 0; i < 5; ++i) {
        const auto p = r.output.find(rows[i]);
        REQUIRE(p != std::string::npos);
        std::istringstream line(r.output.substr(p, r.output.find('\n', p) - p));
        std::string name;
        long long n, m, c, nc;
        line >> name >> n >> m >> c >> nc;
        CHECK(n == nmc[i][0]);
        CHECK(m == nmc[i][1]);
        CHECK(c == nmc[i][2]);
        CHECK(nc == 0);
    }
}

TEST_CASE("segrank pack then stats on the store prints the same table, --json agrees") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto dir = scratch_dir("cli_pack");
    const std::string bin = segrank_binary().string();
    const std::string src = (data / "npz_samples/tile_xla_test").string();
    const auto pack = run_command(bin + " pack " + src + " --out " + (dir / "t.h5").string());
    INFO(pack.output);
    REQUIRE(pack.exit_code == 0);
    CHECK(pack.output.find("packed tile:xla:test: 5 graphs") != std::string::npos);
    // Packing over an existing store needs --force (runs trained on it would see other data).
    const auto again = run_command(bin + " pack " + src + " --out " + (dir / "t.h5").string());
    CHECK(again.exit_code == 1);
    CHECK(again.output.find("store(s) already exist: " + (dir / "t.h5").string()) !=
          std::string::npos);
    CHECK(again.output.find("--force") != std::string::npos);
    CHECK(run_command(bin + " pack " + src + " --out " + (dir / "t.h5").string() + " --force")
              .exit_code == 0);
    const auto a = run_command(bin + " stats " + src);
    const auto b = run_command(bin + " stats " + (dir / "t.h5").string());
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    CHECK(table_rows(a.output) == table_rows(b.output));
    // Pack into a directory: one store per split, named by the collection.
    REQUIRE(run_command(bin + " pack " + src + " --out " + (dir / "stores").string()).exit_code ==
            0);
    CHECK(std::filesystem::exists(dir / "stores/tile_xla_test.h5"));
    const auto c = run_command(bin + " stats " + (dir / "stores").string());
    CHECK(table_rows(c.output) == table_rows(a.output));

    const auto j = run_command(bin + " stats --json " + (dir / "t.h5").string() + " --out " +
                               (dir / "s.json").string());
    REQUIRE(j.exit_code == 0);
    std::ifstream f(dir / "s.json");
    const std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto py = run_command(
        "/usr/bin/python3 -c \"import json; d=json.load(open('" + (dir / "s.json").string() +
        "'))['collections'][0]; print(d['collection'], d['graphs'], d['nodes'], d['edges'],"
        " d['configs'], [g['configs'] for g in d['per_graph']])\"");
    CHECK(py.output == "tile:xla:test 5 155 162 5124 [32, 1282, 807, 52, 2951]\n");
}

TEST_CASE("stats and pack errors exit 1 with a message and leave no partial output") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto dir = scratch_dir("cli_err");
    const std::string bin = segrank_binary().string();
    const auto bad = dir / "bad";
    std::filesystem::create_directories(bad);
    {
        std::ofstream f(bad / "x.npz");
        f << "not a zip";
    }
    // A valid first file, so the failure happens half-way through packing / statistics.
    std::filesystem::copy_file(
        data / "npz_samples/tile_xla_test/0a1c5dcfa9f1f4ebcc1282a1d1ca8ecb.npz", bad / "a.npz");
    const auto s =
        run_command(bin + " stats " + bad.string() + " --out " + (dir / "s.txt").string());
    CHECK(s.exit_code == 1);
    CHECK(s.output.find("x.npz") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "s.txt"));
    const auto p = run_command(bin + " pack " + bad.string() + " --out " + (dir / "p.h5").string());
    CHECK(p.exit_code == 1);
    CHECK(p.output.find("x.npz") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "p.h5"));
    for (const auto& e : std::filesystem::directory_iterator(dir))  // no temporaries either
        CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
    CHECK(run_command(bin + " pack --help").output.find("--out") != std::string::npos);
    CHECK(run_command(bin + " stats --help").output.find("--json") != std::string::npos);
}
