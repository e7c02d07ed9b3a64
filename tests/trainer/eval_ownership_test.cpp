// Owners of the evaluation graphs (docs/sampling.md#ownership): modulo is id % world; balanced
// splits nodes x configs scored, where the configs scored are the held-out ones, else the
// eval.indices list, else all of the graph's.
#include <doctest/doctest.h>

#include <vector>

#include "gnn/core/check.h"
#include "trainer/trainer.h"

namespace segrank::test {

namespace {
GraphEntry entry(int64_t id, const std::string& name, int64_t nodes, int64_t configs) {
    GraphEntry e;
    e.id = id;
    e.name = name;
    e.info.num_nodes = nodes;
    e.info.num_configs = configs;
    return e;
}
}  // namespace

TEST_CASE("evaluation graphs are owned by id % world, or balanced by nodes x configs scored") {
    std::vector<GraphEntry> entries = {entry(0, "a", 100, 1000), entry(1, "b", 100, 10),
                                       entry(2, "c", 100, 10), entry(3, "d", 100, 10)};
    RunConfig cfg;
    const Ownership modulo = eval_ownership(cfg, entries, {}, 2);
    for (int64_t g = 0; g < 4; ++g) CHECK(modulo.owner(g) == g % 2);

    cfg.dist.ownership = OwnershipMode::kBalanced;
    // All configs: a (100000) alone on rank 0, b, c, d (1000 each) on rank 1.
    const Ownership all = eval_ownership(cfg, entries, {}, 2);
    CHECK(all.rank_totals(std::vector<int64_t>{100000, 1000, 1000, 1000}) ==
          std::vector<int64_t>{100000, 3000});
    CHECK(all.owner(0) == 0);
    CHECK(all.owner(1) == 1);
    CHECK(all.owner(2) == 1);
    CHECK(all.owner(3) == 1);
    // eval.indices scores 2 configs of "a" (cost 200): now b (1000) goes first, to rank 0, c to
    // rank 1, then d (equal costs: by id) to rank 0 ... and a to the lighter rank 1.
    const EvalIndices indices = {{"a", {0, 5}}};
    const Ownership listed = eval_ownership(cfg, entries, indices, 2);
    CHECK(listed.owner(1) == 0);
    CHECK(listed.owner(2) == 1);
    CHECK(listed.owner(3) == 0);
    CHECK(listed.owner(0) == 1);
    // Held-out configs take precedence over eval.indices.
    entries[0].configs = std::vector<int64_t>(50, 0);
    CHECK(eval_ownership(cfg, entries, indices, 2)
              .rank_totals(std::vector<int64_t>{5000, 1000, 1000, 1000}) ==
          std::vector<int64_t>{5000, 3000});
    // per_step splits training steps; its evaluation is one balanced pass.
    cfg.dist.ownership = OwnershipMode::kPerStep;
    const Ownership per_step = eval_ownership(cfg, entries, {}, 2);
    CHECK(per_step.mode() == OwnershipMode::kBalanced);
    CHECK(per_step.rank_totals(std::vector<int64_t>{5000, 1000, 1000, 1000}) ==
          std::vector<int64_t>{5000, 3000});
    entries[3].id = 7;
    CHECK_THROWS_WITH_AS(eval_ownership(cfg, entries, {}, 2), doctest::Contains("has id 7"), Error);
}

}  // namespace segrank::test
