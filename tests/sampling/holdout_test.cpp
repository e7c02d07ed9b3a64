// Holdout splits: k-fold / leave-one-out / fraction over graphs, and config holdouts that keep
// groups of identical config rows together.
#include "sampling/holdout.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "gnn/core/check.h"
#include "sampling/dedupe.h"
#include "sampling/dedupe_stream.h"

using namespace segrank;

TEST_CASE("k-fold over graphs partitions the ids, every graph is held out in exactly one fold") {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < 15; ++i) ids.push_back(i * 3);
    std::multiset<int64_t> held;
    for (int64_t fold = 0; fold < 4; ++fold) {
        const GraphSplit s = holdout_graphs_kfold(ids, 4, fold, 7);
        CHECK(s.train.size() + s.heldout.size() == 15);
        CHECK((s.heldout.size() == 3 || s.heldout.size() == 4));
        std::vector<int64_t> all = s.train;
        all.insert(all.end(), s.heldout.begin(), s.heldout.end());
        std::sort(all.begin(), all.end());
        CHECK(all == ids);
        held.insert(s.heldout.begin(), s.heldout.end());
        CHECK(s.heldout == holdout_graphs_kfold(ids, 4, fold, 7).heldout);  // deterministic
    }
    CHECK(held == std::multiset<int64_t>(ids.begin(), ids.end()));
    // Leave-one-out: one graph per fold.
    for (int64_t fold = 0; fold < 15; ++fold)
        CHECK(holdout_graphs_kfold(ids, 15, fold, 7).heldout.size() == 1);
    CHECK_THROWS_AS(holdout_graphs_kfold(ids, 16, 0, 7), Error);
    CHECK_THROWS_AS(holdout_graphs_kfold(ids, 4, 4, 7), Error);
    CHECK_THROWS_AS(holdout_graphs_kfold({1, 1, 2}, 2, 0, 7), Error);
}

TEST_CASE("config holdout moves groups of identical rows together and is deterministic") {
    // 10 configs in 5 groups of two identical rows: rows i and i + 5 are equal.
    std::vector<int8_t> rows;
    for (int i = 0; i < 10; ++i) rows.insert(rows.end(), {static_cast<int8_t>(i % 5), 1});
    const std::vector<int64_t> group = config_groups(rows, 2, 10);
    CHECK(group == std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
    const ConfigSplit s = holdout_configs(10, group, 0.4, 3, 17);
    CHECK(s.heldout.size() == 4);  // 2 of 5 groups
    CHECK(s.train.size() == 6);
    for (int64_t i : s.heldout)
        CHECK(std::count(s.heldout.begin(), s.heldout.end(), (i + 5) % 10) == 1);
    CHECK(s.heldout == holdout_configs(10, group, 0.4, 3, 17).heldout);
    bool differs = false;
    for (int64_t g = 18; g < 30; ++g)
        differs |= holdout_configs(10, group, 0.4, 3, g).heldout != s.heldout;
    CHECK(differs);  // a different graph id gives a different split

    // Training candidates: the groups on the training side, deduplicated.
    const std::vector<double> rt = {5, 6, 7, 8, 9, 1, 2, 3, 4, 5};
    const ConfigSet train = dedupe_by_groups(group, s.train, rt, DedupeMode::kMin);
    CHECK(train.size() == 3);
    for (int64_t i : train.indices) CHECK(std::count(s.train.begin(), s.train.end(), i) == 1);

    const ConfigSplit single = holdout_configs(8, {}, 0.25, 3, 1);  // no groups: each config alone
    CHECK(single.heldout.size() == 2);
    const std::vector<int64_t> one_group(4, 0);
    CHECK_THROWS_WITH_AS(holdout_configs(4, one_group, 0.5, 3, 9), doctest::Contains("graph 9"),
                         Error);
    CHECK_THROWS_AS(holdout_configs(10, group, 0.0, 3, 1), Error);
    CHECK_THROWS_AS(holdout_configs(9, group, 0.5, 3, 1), Error);
}
