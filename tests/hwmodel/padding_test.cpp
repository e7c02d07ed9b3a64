// Tiled layouts and padded sizes (docs/hwmodel.md#tiled-layouts-and-padding) against the tiles
// printed in the fixtures.
#include "hwmodel/padding.h"

#include <doctest/doctest.h>

#include "gnn/core/check.h"

using namespace segrank;
namespace et = segrank::hlo::element_type;

namespace {

hlo::Shape array(int32_t type, std::vector<int64_t> dims, std::vector<int64_t> m2m = {}) {
    hlo::Shape s;
    s.element_type = type;
    s.dims = std::move(dims);
    s.has_layout = !m2m.empty();
    s.minor_to_major = std::move(m2m);
    return s;
}

/// XLA's printed form of tile_for(shape), e.g. "T(8,128)(2,1)", "T(4,128)", "T(256)".
std::string printed_tile(const hlo::Shape& shape) {
    const hw::Tile t = hw::tile_for(shape);
    if (shape.dims.size() <= 1) return str("T(", t.lanes, ")");
    std::string s = str("T(", t.rows, ",", t.lanes, ")");
    if (t.packing > 1) s += str("(", t.packing, ",1)");
    return s;
}

}  // namespace

TEST_CASE("tile_for reproduces the tiles printed in the tpu_graphs fixture protos") {
    struct Case {
        hlo::Shape shape;
        const char* printed;
    };
    // Each shape and tile is copied from op_tuning_data.pb / module_tuning_data_layout.pb.
    const Case cases[] = {
        {array(et::kF32, {32, 26, 26, 192}, {3, 0, 2, 1}), "T(8,128)"},
        {array(et::kPred, {32, 26, 26, 192}, {3, 0, 2, 1}), "T(8,128)(4,1)"},
        {array(et::kBF16, {32, 12, 12, 192}, {3, 0, 2, 1}), "T(8,128)(2,1)"},
        {array(et::kU16, {32, 12, 384}, {2, 0, 1}), "T(8,128)(2,1)"},
        {array(et::kU32, {32, 26, 192}, {2, 0, 1}), "T(8,128)"},
        {array(et::kF32, {4096, 1000}, {0, 1}), "T(8,128)"},
        {array(et::kPred, {32, 4096}, {1, 0}), "T(8,128)(4,1)"},
        {array(et::kBF16, {224, 224, 3, 32}, {3, 2, 1, 0}), "T(4,128)(2,1)"},
        {array(et::kF32, {2, 96, 96, 96, 4}, {3, 4, 2, 1, 0}), "T(4,128)"},
        {array(et::kF32, {192}, {0}), "T(256)"},
        {array(et::kF32, {256}, {0}), "T(256)"},
        {array(et::kF32, {384}, {0}), "T(512)"},
        {array(et::kF32, {1000}, {0}), "T(1024)"},
        {array(et::kF32, {4096}, {0}), "T(1024)"},
        {array(et::kS32, {32}, {0}), "T(256)"},
        {array(et::kF32, {}), "T(256)"},
        {array(et::kU16, {}), "T(512)"},
    };
    for (const auto& c : cases) {
        CAPTURE(hw::shape_string(c.shape));
        CHECK(printed_tile(c.shape) == c.printed);
    }
}

TEST_CASE("padded bytes follow the printed tiles on hand-computed fixture shapes") {
    // copy.24: bf16[32,5,5,256] {3,0,2,1} -> {3,2,1,0}
    CHECK(hw::padded_bytes(array(et::kBF16, {32, 5, 5, 256}, {3, 0, 2, 1})) ==
          5 * 5 * 32 * 256 * 2);
    CHECK(hw::padded_bytes(array(et::kBF16, {32, 5, 5, 256}, {3, 2, 1, 0})) ==
          32 * 5 * 8 * 256 * 2);
    // reshape.37: f32[4816896] -> bf16[224,224,3,32]{3,2,1,0:T(4,128)(2,1)}: minor 32 pads to 128.
    CHECK(hw::padded_bytes(array(et::kF32, {4816896}, {0})) == 4816896LL * 4);
    CHECK(hw::padded_bytes(array(et::kBF16, {224, 224, 3, 32}, {3, 2, 1, 0})) ==
          224LL * 224 * 4 * 128 * 2);
    // PRED packed 1 byte under (8,128)(4,1); scalars take a 1 KiB tile.
    CHECK(hw::padded_bytes(array(et::kPred, {32, 4096}, {1, 0})) == 32 * 4096);
    CHECK(hw::padded_bytes(array(et::kF32, {})) == 1024);
    CHECK(hw::padded_bytes(array(et::kF32, {1000}, {0})) == 1024 * 4);
    // Without padding: dense bytes.
    CHECK(hw::padded_bytes(array(et::kBF16, {224, 224, 3, 32}, {3, 2, 1, 0}), false) ==
          224LL * 224 * 3 * 32 * 2);
    // Tuples sum their elements.
    hlo::Shape t;
    t.element_type = et::kTuple;
    t.tuple_shapes = {array(et::kF32, {}), array(et::kF32, {8, 128}, {1, 0})};
    CHECK(hw::padded_bytes(t) == 1024 + 8 * 128 * 4);
}

TEST_CASE("padded bytes never shrink when a dimension grows, and never undercut dense bytes") {
    for (int64_t minor = 1; minor <= 300; ++minor) {
        for (int64_t rows : {1, 3, 7, 9, 17}) {
            const auto a = array(et::kF32, {rows, minor}, {1, 0});
            const auto b = array(et::kF32, {rows, minor + 1}, {1, 0});
            const auto c = array(et::kF32, {rows + 1, minor}, {1, 0});
            CHECK(hw::padded_bytes(b) >= hw::padded_bytes(a));
            CHECK(hw::padded_bytes(c) >= hw::padded_bytes(a));
            CHECK(hw::padded_bytes(a) >= hw::padded_bytes(a, false));
        }
    }
}

TEST_CASE("a minor dim of 3 costs 128/3 of the dense bytes, moving it major removes the waste") {
    const auto rgb_minor = array(et::kF32, {64, 256, 3}, {2, 1, 0});
    const auto rgb_major = array(et::kF32, {64, 256, 3}, {1, 0, 2});
    CHECK(hw::padded_bytes(rgb_minor) == 64 * 256 * 128 * 4);
    CHECK(hw::padded_bytes(rgb_major) == 3 * 64 * 256 * 4);
}

TEST_CASE("partial layouts complete with the remaining dims in descending order") {
    CHECK(hw::complete_minor_to_major({4, 0}, 5) == std::vector<int64_t>{4, 0, 3, 2, 1});
    CHECK(hw::complete_minor_to_major({}, 3) == std::vector<int64_t>{2, 1, 0});
    CHECK_THROWS_AS(hw::complete_minor_to_major({4, 4}, 5), Error);
    CHECK_THROWS_AS(hw::complete_minor_to_major({5}, 5), Error);
    CHECK(hw::physical_dims(array(et::kF32, {32, 26, 26, 192}, {3, 0, 2, 1})) ==
          std::vector<int64_t>{26, 26, 32, 192});
}

TEST_CASE("tile units are 8-row and 128-lane units of the physical dims") {
    // fusion.232 iterates f32[32,26,26,192]{3,0,2,1}: max bounds seen [26,26,4,2].
    CHECK(hw::tile_units(array(et::kF32, {32, 26, 26, 192}, {3, 0, 2, 1})) ==
          std::vector<int64_t>{26, 26, 4, 2});
    CHECK(hw::tile_units(array(et::kF32, {4096, 1000}, {0, 1})) == std::vector<int64_t>{125, 32});
    CHECK(hw::tile_units(array(et::kF32, {4096}, {0})) == std::vector<int64_t>{4});
}
