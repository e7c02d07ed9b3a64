// HistoryTable rows between ranks (trainer/history_share.h, docs/architecture.md#distribution):
// the flat form round-trips exactly and refuses a truncated buffer; with one rank the per-step
// exchange leaves the table as it is.
#include "trainer/history_share.h"

#include <doctest/doctest.h>

#include <vector>

#include "gnn/core/check.h"

using namespace segrank;

namespace {

HistoryArrays sample_arrays() {
    HistoryTable t(2, 0);
    t.set_num_segments(3, 2);
    t.set_num_segments(9, 1);
    t.write(3, 7, 1, std::vector<float>{0.25f, -1.5f}, 4);
    t.write(9, 0, 0, std::vector<float>{1e-7f, 3.0f}, 5);
    return t.export_arrays();
}

}  // namespace

TEST_CASE("history arrays survive pack_history and unpack_history exactly") {
    const HistoryArrays a = sample_arrays();
    const HistoryArrays b = unpack_history(pack_history(a));
    CHECK(b.width == a.width);
    CHECK(b.graphs == a.graphs);
    CHECK(b.graph_segments == a.graph_segments);
    CHECK(b.keys == a.keys);
    CHECK(b.steps == a.steps);
    CHECK(b.values == a.values);
}

TEST_CASE("unpack_history refuses a buffer shorter or longer than its header says") {
    std::vector<double> v = pack_history(sample_arrays());
    v.pop_back();
    CHECK_THROWS_WITH_AS(unpack_history(v), doctest::Contains("history shard"), Error);
    CHECK_THROWS_AS(unpack_history(std::vector<double>{2.0}), Error);
    v.push_back(0.0);
    v.push_back(0.0);
    CHECK_THROWS_AS(unpack_history(v), Error);
}

TEST_CASE("with one rank the per-step history exchange changes nothing") {
    LocalCommunicator comm;
    HistoryTable t(1, 0);
    t.set_num_segments(0, 2);
    t.write(0, 1, 0, std::vector<float>{2.0f}, 3);
    const std::vector<int64_t> trained = {0};
    share_step_history(t, comm, trained, 3);
    CHECK(t.stats().entries == 1);
    CHECK(t.lookup(0, 1, 0)->value[0] == 2.0f);
}
