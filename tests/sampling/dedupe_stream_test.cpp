// Streamed config groups: rows hashed chunk by chunk from a GraphSource give the same
// groups as config_groups() on the rows in memory, each read asks for at most chunk_rows rows, and
// dedupe_by_groups equals dedupe_configs on the subset's rows.
#include "sampling/dedupe_stream.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

using namespace segrank;

namespace {

// An in-memory GraphSource with partial reads that records the largest row request.
class RowsSource : public GraphSource {
public:
    RowsSource(Task task, int64_t c, int64_t row_values) : row_(row_values) {
        id_ = CollectionId::parse(task == Task::kTile ? "tile:xla" : "layout:xla:random");
        id_.split = Split::kTrain;
        if (task == Task::kTile) {
            tile = Tensor(c, kTileConfigDim);
        } else {
            layout.resize(static_cast<size_t>(c * row_values));
        }
        runtime.assign(static_cast<size_t>(c), 1);
    }
    const CollectionId& collection() const override { return id_; }
    int64_t size() const override { return 1; }
    GraphInfo info(int64_t) const override {
        GraphInfo g;
        g.num_config_nodes = task() == Task::kLayout ? row_ / kLayoutConfigDim : 0;
        return g;
    }
    TileGraph load_tile(int64_t, const ConfigRows&) const override { throw Error("not used"); }
    LayoutGraph load_layout(int64_t, const ConfigRows&) const override { throw Error("not used"); }
    bool partial_reads() const override { return true; }
    ConfigTensors load_configs(int64_t, const ConfigRows& rows) const override {
        const auto& r = *rows.rows;
        max_request = std::max<int64_t>(max_request, static_cast<int64_t>(r.size()));
        ConfigTensors t;
        t.runtime.assign(r.size(), 1);
        if (task() == Task::kTile) {
            t.tile_feat = Tensor(static_cast<int64_t>(r.size()), kTileConfigDim);
            for (size_t i = 0; i < r.size(); ++i)
                std::copy_n(tile.data() + r[i] * kTileConfigDim, kTileConfigDim,
                            t.tile_feat.data() + static_cast<int64_t>(i) * kTileConfigDim);
        } else {
            for (int64_t x : r)
                t.layout_feat.insert(t.layout_feat.end(), layout.begin() + x * row_,
                                     layout.begin() + (x + 1) * row_);
        }
        return t;
    }

    Tensor tile;
    std::vector<int8_t> layout;
    std::vector<int64_t> runtime;
    mutable int64_t max_request = 0;

private:
    CollectionId id_;
    int64_t row_;
};

}  // namespace

TEST_CASE(
    "streamed layout config groups equal config_groups and read at most chunk_bytes of rows per "
    "call") {
    const int64_t c = 50, row = 3 * kLayoutConfigDim;
    RowsSource src(Task::kLayout, c, row);
    Rng rng(5);
    for (auto& v : src.layout) v = static_cast<int8_t>(static_cast<int>(rng.uniform_int(7)) - 1);
    // Duplicates across chunk boundaries (4 rows per chunk): row 9 = row 2, row 33 = row 2, row 47
    // = row 20.
    for (auto [dst, from] :
         {std::pair{9, 2}, std::pair{33, 2}, std::pair{47, 20}, std::pair{21, 20}})
        std::copy_n(src.layout.begin() + from * row, row, src.layout.begin() + dst * row);
    const std::vector<int64_t> expected = config_groups(src.layout, row, c);
    const std::vector<int64_t> got = config_groups_streamed(src, 0, c, /*chunk_bytes=*/4 * row + 5);
    CHECK(got == expected);
    CHECK(got[9] == 2);
    CHECK(got[33] == 2);
    CHECK(got[47] == 20);
    CHECK(src.max_request == 4);
    CHECK_THROWS_AS(config_groups_streamed(src, 0, c, 0), Error);
}

TEST_CASE("streamed tile config groups treat -0 as +0 and refuse NaN") {
    const int64_t c = 6;
    RowsSource src(Task::kTile, c, kTileConfigDim);
    for (int64_t i = 0; i < c; ++i)
        for (int64_t j = 0; j < kTileConfigDim; ++j)
            src.tile.at(i, j) = static_cast<float>(i % 3 + j);
    src.tile.at(0, 0) = 0.0f;
    src.tile.at(3, 0) = -0.0f;  // row 3 equals row 0 numerically
    const std::vector<int64_t> expected = config_groups(src.tile.cview());
    CHECK(config_groups_streamed(src, 0, c, 2 * 96) == expected);
    CHECK(src.max_request == 2);
    CHECK(expected[3] == 0);
    src.tile.at(4, 5) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_AS(config_groups_streamed(src, 0, c, 2 * 96), Error);
}

TEST_CASE("dedupe_by_groups equals dedupe_configs on the subset's rows for min, mean and keep") {
    const int64_t c = 40, row = 2;
    Rng rng(11);
    std::vector<int8_t> rows(static_cast<size_t>(c * row));
    for (auto& v : rows)
        v = static_cast<int8_t>(rng.uniform_int(3));  // 9 distinct rows: many duplicates
    std::vector<double> targets(static_cast<size_t>(c));
    for (auto& t : targets) t = 100.0 + static_cast<double>(rng.uniform_int(50));
    const std::vector<int64_t> groups = config_groups(rows, row, c);
    std::vector<int64_t> subset;
    for (int64_t i = 0; i < c; i += 1 + static_cast<int64_t>(i % 3 == 0)) subset.push_back(i);
    std::vector<int8_t> sub_rows;
    std::vector<double> sub_t;
    for (int64_t i : subset) {
        sub_rows.insert(sub_rows.end(), rows.begin() + i * row, rows.begin() + (i + 1) * row);
        sub_t.push_back(targets[static_cast<size_t>(i)]);
    }
    for (DedupeMode mode : {DedupeMode::kMin, DedupeMode::kMean, DedupeMode::kKeep}) {
        ConfigSet ref = dedupe_configs(sub_rows, row, sub_t, mode);
        for (auto& i : ref.indices) i = subset[static_cast<size_t>(i)];
        const ConfigSet got = dedupe_by_groups(groups, subset, targets, mode);
        CHECK(got.indices == ref.indices);
        REQUIRE(got.targets.size() == ref.targets.size());
        for (size_t i = 0; i < got.targets.size(); ++i)
            CHECK(got.targets[i] == doctest::Approx(ref.targets[i]));
    }
    const std::vector<int64_t> bad = {0, c};
    CHECK_THROWS_AS(dedupe_by_groups(groups, bad, targets, DedupeMode::kMin), Error);
}
