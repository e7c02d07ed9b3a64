// The S/L/B rules and slot layout of the 140 node features (docs/files.md#node-features) on
// hand-built instructions.
#include <doctest/doctest.h>

#include "data/hlo/featurizer.h"

using namespace segrank;

TEST_CASE("an empty instruction has zeros except the 1.0 product slots (scalar shape included)") {
    const auto f = hlo::node_features(hlo::Instruction{}, false);
    for (int k = 0; k < kNodeFeatDim; ++k) {
        CAPTURE(k);
        const bool product = k == 28 || k == 44 || k == 52 || k == 60 || k == 68 || k == 76 ||
                             k == 84 || k == 112 || k == 116 || k == 120 || k == 124 || k == 128 ||
                             k == 132;
        const bool invalid_type = k == 2;  // element_type 0 = INVALID is the first one-hot slot
        CHECK(f[static_cast<size_t>(k)] == (product || invalid_type ? 1.0f : 0.0f));
    }
}

TEST_CASE("S(6) keeps 6 leading dims but sums and multiplies all of them") {
    hlo::Instruction i;
    i.shape.dims = {1, 2, 3, 4, 5, 6, 7};
    const auto f = hlo::node_features(i, true);
    CHECK(f[0] == 1.0f);
    for (int k = 0; k < 6; ++k) CHECK(f[static_cast<size_t>(21 + k)] == static_cast<float>(k + 1));
    CHECK(f[27] == 28.0f);
    CHECK(f[28] == 5040.0f);
}

TEST_CASE(
    "element type one-hot follows the upstream order (BF16 at 15, TUPLE at 18), unknown types are "
    "all zero") {
    auto slot_of = [](int32_t type) {
        hlo::Instruction i;
        i.shape.element_type = type;
        const auto f = hlo::node_features(i, false);
        int found = -1;
        for (int k = 2; k <= 20; ++k)
            if (f[static_cast<size_t>(k)] == 1.0f) found = k;
        return found;
    };
    CHECK(slot_of(hlo::element_type::kPred) == 3);
    CHECK(slot_of(hlo::element_type::kF32) == 13);
    CHECK(slot_of(hlo::element_type::kBF16) == 15);
    CHECK(slot_of(hlo::element_type::kC64) == 16);
    CHECK(slot_of(hlo::element_type::kC128) == 17);
    CHECK(slot_of(hlo::element_type::kTuple) == 18);
    CHECK(slot_of(hlo::element_type::kOpaque) == 19);
    CHECK(slot_of(hlo::element_type::kToken) == 20);
    CHECK(slot_of(20) == -1);  // F8E4M3FN
}

TEST_CASE("slices are featurized in the order start, stride, limit with S(2) aggregates") {
    hlo::Instruction i;
    i.slice_dimensions = {{1, 10, 2}, {3, 30, 4}, {5, 50, 6}};  // {start, limit, stride}
    const auto f = hlo::node_features(i, false);
    CHECK(f[109] == 1.0f);
    CHECK(f[110] == 3.0f);
    CHECK(f[111] == 9.0f);
    CHECK(f[112] == 15.0f);
    CHECK(f[113] == 2.0f);
    CHECK(f[114] == 4.0f);
    CHECK(f[115] == 12.0f);
    CHECK(f[116] == 48.0f);
    CHECK(f[117] == 10.0f);
    CHECK(f[118] == 30.0f);
    CHECK(f[119] == 90.0f);
    CHECK(f[120] == 15000.0f);
}

TEST_CASE("window reversal uses B(6): leading bools, then count of trues and of falses") {
    hlo::Instruction i;
    i.window.resize(7);
    i.window[1].window_reversal = true;
    i.window[6].window_reversal = true;
    const auto f = hlo::node_features(i, false);
    CHECK(f[85] == 0.0f);
    CHECK(f[86] == 1.0f);
    CHECK(f[91] == 2.0f);
    CHECK(f[92] == 5.0f);
    CHECK(f[44] == 0.0f);  // seven windows of size 0: product 0
}

TEST_CASE(
    "raw scalars: feature/batch group counts are not defaulted, padding and dynamic sizes use "
    "S(2)") {
    hlo::Instruction i;
    i.parameter_number = 3;
    i.dimensions = {0, 2, 1, 3, 4, 5, 6};
    i.dynamic_slice_sizes = {4, 5, 6};
    i.padding_config = {{1, -2, 0}, {3, 4, 1}};
    i.is_stable = true;
    i.shape.has_layout = true;
    i.shape.minor_to_major = {1, 0};
    i.shape.tuple_shapes.resize(2);
    const auto f = hlo::node_features(i, false);
    CHECK(f[29] == 2.0f);
    CHECK(f[30] == 3.0f);
    CHECK(f[31] == 0.0f);
    CHECK(f[32] == 2.0f);
    CHECK(f[36] == 5.0f);
    CHECK(f[107] == 0.0f);
    CHECK(f[108] == 0.0f);
    CHECK(f[121] == 4.0f);
    CHECK(f[122] == 5.0f);
    CHECK(f[123] == 15.0f);
    CHECK(f[124] == 120.0f);
    CHECK(f[125] == 1.0f);
    CHECK(f[126] == 3.0f);
    CHECK(f[127] == 4.0f);
    CHECK(f[128] == 3.0f);
    CHECK(f[129] == -2.0f);
    CHECK(f[130] == 4.0f);
    CHECK(f[131] == 2.0f);
    CHECK(f[132] == -8.0f);
    CHECK(f[133] == 1.0f);
    CHECK(f[134] == 1.0f);
    CHECK(f[135] == 0.0f);
    CHECK(f[136] == 0.0f);
}

TEST_CASE("int64 values convert to float32 by round-to-nearest, not truncation") {
    hlo::Instruction i;
    i.parameter_number = (int64_t{1} << 24) + 1;     // not representable in float32: ties to even
    i.feature_group_count = (int64_t{1} << 24) + 3;  // rounds up to 2^24 + 4
    const auto f = hlo::node_features(i, false);
    CHECK(f[30] == 16777216.0f);
    CHECK(f[107] == 16777220.0f);
}

TEST_CASE("layout config values: -1 default, slot t*6+d, at most 6 dims per tensor and 3 tensors") {
    hlo::NodeLayoutConfig n;
    n.tensors = {{4, 0}, {}, {0, 1, 2, 3, 4, 5, 6}};
    const auto v = hlo::layout_config_values(n);
    const std::array<int8_t, 18> expected{4,  0,  -1, -1, -1, -1, -1, -1, -1,
                                          -1, -1, -1, 0,  1,  2,  3,  4,  5};
    CHECK(v == expected);
    n.tensors.emplace_back();
    CHECK_THROWS_AS(hlo::layout_config_values(n), Error);
}
