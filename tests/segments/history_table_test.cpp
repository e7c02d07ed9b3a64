// HistoryTable: exact keys, LRU eviction of whole rows under the cap, staleness, export/import.
#include "segments/history_table.h"

#include <doctest/doctest.h>

#include <vector>

using namespace segrank;

namespace {
// A value that encodes its full key, so any mix-up of graph, config or segment shows.
std::vector<float> encode(int64_t g, int64_t c, int32_t s, int32_t width) {
    std::vector<float> v(static_cast<size_t>(width));
    for (int32_t i = 0; i < width; ++i)
        v[i] = static_cast<float>(g * 100000 + c * 100 + s * 10 + i);
    return v;
}
}  // namespace

TEST_CASE("history keys are exact: two graphs x three segments x distinct configs never mix") {
    HistoryTable t(2, 0);
    t.set_num_segments(0, 3);
    t.set_num_segments(1, 3);
    // Both graphs use overlapping config indices (the public GST code keyed by config index alone).
    const std::vector<int64_t> configs_g0{0, 5, 9}, configs_g1{5, 7, 0};
    for (int32_t s = 0; s < 3; ++s) {
        for (int64_t c : configs_g0) t.write(0, c, s, encode(0, c, s, 2), 10 + s);
        for (int64_t c : configs_g1) t.write(1, c, s, encode(1, c, s, 2), 20 + s);
    }
    CHECK(t.stats().entries == 18);
    CHECK(t.stats().rows == 6);
    for (int64_t g : {0, 1}) {
        for (int64_t c = 0; c < 10; ++c) {
            for (int32_t s = 0; s < 3; ++s) {
                const auto& cs = g == 0 ? configs_g0 : configs_g1;
                const bool written = std::find(cs.begin(), cs.end(), c) != cs.end();
                const auto e = t.lookup(g, c, s);
                CAPTURE(g);
                CAPTURE(c);
                CAPTURE(s);
                REQUIRE(e.has_value() == written);
                CHECK(t.contains(g, c, s) == written);
                if (!written) continue;
                CHECK(std::vector<float>(e->value.begin(), e->value.end()) == encode(g, c, s, 2));
                CHECK(e->step == (g == 0 ? 10 : 20) + s);
            }
        }
    }
    CHECK_FALSE(t.lookup(2, 0, 0).has_value());   // unknown graph
    CHECK_FALSE(t.lookup(0, 0, 3).has_value());   // segment out of range
    CHECK_FALSE(t.lookup(0, -1, 0).has_value());  // invalid config
    CHECK(t.stats().hits == 18);
}

TEST_CASE("history write overwrites in place and batched gather/scatter agree with single calls") {
    HistoryTable t(3, 0);
    t.set_num_segments(4, 2);
    const std::vector<int64_t> configs{11, 3, 7};
    Tensor vals(3, 3);
    for (int64_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<float>(i);
    t.scatter(4, configs, 1, vals.view(), 5);
    t.write(4, 3, 1, std::vector<float>{-1, -2, -3}, 6);  // overwrite one
    CHECK(t.stats().entries == 3);
    Tensor out(4, 3);
    std::vector<uint8_t> found(4);
    const std::vector<int64_t> query{7, 3, 99, 11};
    CHECK(t.gather(4, query, 1, 0, 0, out.view(), found) == 3);
    CHECK(found == std::vector<uint8_t>{1, 1, 0, 1});
    CHECK(out.at(0, 0) == 6.0f);
    CHECK(out.at(1, 2) == -3.0f);
    CHECK(out.at(2, 0) == 0.0f);
    CHECK(out.at(3, 1) == 1.0f);
    CHECK_FALSE(t.contains(4, 11, 0));  // other segment of the same row not written
}

TEST_CASE("history staleness: entries older than max_staleness steps are misses") {
    HistoryTable t(1, 0);
    t.set_num_segments(0, 2);
    t.write(0, 1, 0, std::vector<float>{2.5f}, 10);
    CHECK(t.lookup(0, 1, 0, 15, 5).has_value());
    CHECK_FALSE(t.lookup(0, 1, 0, 16, 5).has_value());
    CHECK(t.lookup(0, 1, 0, 1000, 0).has_value());  // 0 = unlimited
    const HistoryStats st = t.stats();
    CHECK(st.hits == 2);
    CHECK(st.misses == 1);
    CHECK(st.stale == 1);
    t.write(0, 1, 0, std::vector<float>{3.0f}, 16);  // refreshed
    CHECK(t.lookup(0, 1, 0, 16, 5)->value[0] == 3.0f);
}

TEST_CASE("history eviction keeps the cap and drops least recently used whole rows") {
    // Each row: S = 4 segments of width 8 -> 4 * (32 + 4) + overhead bytes.
    HistoryTable probe(8, 0);
    probe.set_num_segments(0, 4);
    probe.write(0, 0, 0, std::vector<float>(8, 1.0f), 0);
    const int64_t row = probe.stats().bytes;
    HistoryTable t(8, 3 * row + row / 2);  // room for 3 rows
    t.set_num_segments(0, 4);
    t.set_num_segments(1, 4);
    auto fill_row = [&](int64_t g, int64_t c, int64_t step) {
        for (int32_t s = 0; s < 4; ++s) t.write(g, c, s, encode(g, c, s, 8), step);
    };
    fill_row(0, 0, 1);
    fill_row(1, 0, 2);
    fill_row(0, 1, 3);
    CHECK(t.stats().rows == 3);
    CHECK(t.lookup(0, 0, 2).has_value());  // (0,0) becomes most recent; (1,0) is now LRU
    fill_row(1, 5, 4);                     // evicts (1,0) entirely
    CHECK(t.stats().rows == 3);
    CHECK(t.stats().evicted_rows == 1);
    CHECK(t.stats().bytes <= t.max_bytes());
    for (int32_t s = 0; s < 4; ++s) CHECK_FALSE(t.contains(1, 0, s));
    CHECK(t.contains(0, 0, 3));
    CHECK(t.contains(0, 1, 0));
    fill_row(1, 6, 5);  // evicts (0,1), the LRU now
    CHECK_FALSE(t.contains(0, 1, 0));
    CHECK(t.contains(0, 0, 0));
    for (int i = 0; i < 50; ++i) {
        fill_row(i % 2, 100 + i, 6 + i);
        CHECK(t.stats().bytes <= t.max_bytes());
        CHECK(t.stats().entries == 4 * t.stats().rows);
    }
    CHECK(t.stats().rows == 3);
    // A row that cannot fit alone is rejected when declared.
    HistoryTable tiny(8, 100);
    CHECK_THROWS_WITH_AS(tiny.set_num_segments(0, 4), doctest::Contains("segments.history_max_mb"),
                         Error);
}

TEST_CASE("history export/import round-trips values, steps and LRU order") {
    HistoryTable a(2, 0);
    for (int64_t g = 0; g < 3; ++g) a.set_num_segments(g, 3);
    for (int64_t g = 0; g < 3; ++g)
        for (int64_t c = 0; c < 4; ++c)
            for (int32_t s = 0; s < 3; s += (c % 2 ? 2 : 1))
                a.write(g, c, s, encode(g, c, s, 2), g * 10 + c);
    a.lookup(1, 2, 0);  // reorder LRU
    const HistoryArrays arr = a.export_arrays();
    CHECK(arr.num_entries() == a.stats().entries);
    HistoryTable b(2, 0);
    b.import_arrays(arr);
    CHECK(b.stats().entries == a.stats().entries);
    CHECK(b.stats().bytes == a.stats().bytes);
    const HistoryArrays again = b.export_arrays();
    CHECK(again.keys == arr.keys);  // same content in the same (LRU) order
    CHECK(again.steps == arr.steps);
    CHECK(again.values == arr.values);
    CHECK(again.graphs == arr.graphs);
    CHECK(again.graph_segments == arr.graph_segments);
    CHECK(b.lookup(2, 3, 2)->step == 23);
    // Importing into a capped table evicts in the exported LRU order: the last rows survive.
    const int64_t row = b.stats().bytes / b.stats().rows;
    HistoryTable c(2, 2 * row);
    c.import_arrays(arr);
    CHECK(c.stats().rows == 2);
    const size_t e = static_cast<size_t>(arr.num_entries()) - 1;
    CHECK(c.contains(arr.keys[3 * e], arr.keys[3 * e + 1],
                     static_cast<int32_t>(arr.keys[3 * e + 2])));
}

TEST_CASE("history shards move between ranks by graph id modulo world size") {
    HistoryTable full(1, 0);
    for (int64_t g = 0; g < 5; ++g) {
        full.set_num_segments(g, 2);
        for (int64_t c = 0; c < 3; ++c)
            full.write(g, c, 1, std::vector<float>{static_cast<float>(g * 10 + c)}, 1);
    }
    const int world = 2;
    for (int rank = 0; rank < world; ++rank) {
        HistoryTable shard(1, 0);
        shard.import_arrays(full.export_arrays([&](int64_t g) { return g % world == rank; }));
        for (int64_t g = 0; g < 5; ++g) {
            const bool mine = g % world == rank;
            CHECK(shard.num_segments(g).has_value() == mine);
            CHECK(shard.contains(g, 2, 1) == mine);
            if (mine) CHECK(shard.lookup(g, 2, 1)->value[0] == static_cast<float>(g * 10 + 2));
        }
    }
}

TEST_CASE(
    "history export of one step's writes carries only them, and importing it replicates them") {
    // Two replicas of one table (dist.ownership = "per_step"): each trains other graphs in a step
    // and imports what the other wrote at that step; afterwards both hold the same entries.
    HistoryTable a(1, 0), b(1, 0);
    for (HistoryTable* t : {&a, &b})
        for (int64_t g = 0; g < 3; ++g) t->set_num_segments(g, 2);
    for (HistoryTable* t : {&a, &b}) t->write(0, 0, 0, std::vector<float>{1.0f}, 4);  // step 4
    a.write(0, 0, 1, std::vector<float>{2.0f}, 5);  // step 5 on a: graph 0
    a.write(0, 1, 0, std::vector<float>{3.0f}, 5);
    b.write(2, 7, 1, std::vector<float>{4.0f}, 5);  // step 5 on b: graph 2
    const auto trained_a = [](int64_t g) { return g == 0; };
    const HistoryArrays from_a = a.export_arrays(trained_a, 5);
    CHECK(from_a.num_entries() == 2);  // not the step-4 entry of the same row
    CHECK(from_a.steps == std::vector<int64_t>{5, 5});
    CHECK(from_a.graphs == std::vector<int64_t>{0});
    const HistoryArrays from_b = b.export_arrays([](int64_t g) { return g == 2; }, 5);
    CHECK(from_b.num_entries() == 1);
    b.import_arrays(from_a);
    a.import_arrays(from_b);
    for (HistoryTable* t : {&a, &b}) {
        CHECK(t->stats().entries == 4);
        CHECK(t->lookup(0, 0, 0)->value[0] == 1.0f);
        CHECK(t->lookup(0, 0, 1)->value[0] == 2.0f);
        CHECK(t->lookup(0, 1, 0)->step == 5);
        CHECK(t->lookup(2, 7, 1)->value[0] == 4.0f);
    }
    CHECK(a.export_arrays({}, 9).num_entries() == 0);  // nothing written at step 9
}

TEST_CASE("history rejects bad writes and inconsistent imports with named fields") {
    HistoryTable t(2, 0);
    CHECK_THROWS_WITH_AS(t.write(0, 0, 0, std::vector<float>{1, 2}, 0),
                         doctest::Contains("set_num_segments"), Error);
    t.set_num_segments(0, 2);
    CHECK_THROWS_WITH_AS(t.set_num_segments(0, 3), doctest::Contains("partition changed"), Error);
    CHECK_THROWS_WITH_AS(t.write(0, 0, 0, std::vector<float>{1}, 0), doctest::Contains("width 2"),
                         Error);
    CHECK_THROWS_WITH_AS(t.write(0, 0, 2, std::vector<float>{1, 2}, 0),
                         doctest::Contains("segment 2"), Error);
    CHECK_THROWS_WITH_AS(t.write(0, 0, 0, std::vector<float>{1, 2}, -1), doctest::Contains("step"),
                         Error);
    HistoryArrays arr;
    arr.width = 3;
    CHECK_THROWS_WITH_AS(t.import_arrays(arr), doctest::Contains("width 3"), Error);
    arr.width = 2;
    arr.keys = {5, 0, 0};
    arr.steps = {1};
    arr.values = {1, 2};
    CHECK_THROWS_WITH_AS(t.import_arrays(arr), doctest::Contains("keys[0] graph 5"), Error);
    CHECK_THROWS_AS(HistoryTable(0, 0), Error);
    CHECK(HistoryTable::bytes_from_mb(1.5) == 1572864);
}
