// Layer gradient checks (Linear, SageConv, cross-config attention, config encoders, MLP head,
// opcode embedding) and the mixed-row kernels against their dense expansion.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "gnn/layers/config_attention.h"
#include "gnn/layers/config_encoder.h"
#include "gnn/layers/linear.h"
#include "gnn/layers/mlp.h"
#include "gnn/layers/op_embedding.h"
#include "gnn/layers/sage_conv.h"
#include "gnn/ops/class_readout.h"
#include "gnn/ops/mixed_rows.h"
#include "gnn/ops/spmm.h"
#include "tests/support/grad_check.h"

using namespace segrank;
using namespace segrank::test;

namespace {
// Checks every parameter of the store (a few entries each) for the given loss (which recomputes the
// forward), after grads were filled by one backward.
void check_store(ParamStore& ps, const std::function<double()>& loss, double eps = 1e-3) {
    Tensor g(ps.total_size());
    std::copy(ps.grads().begin(), ps.grads().end(), g.data());
    for (const ParamRef& r : ps.refs()) {
        INFO("parameter ", r.name);
        SEGRANK_CHECK_GRAD(grad_check(
            ps.values().subspan(static_cast<size_t>(r.offset), static_cast<size_t>(r.size())),
            g.span().subspan(static_cast<size_t>(r.offset), static_cast<size_t>(r.size())), loss,
            eps));
    }
}
}  // namespace

TEST_CASE("linear layer gradients match finite differences for input, weight and bias") {
    ParamStore ps;
    Linear l = Linear::create(ps, "lin", 5, 3);
    ps.initialize(1);
    CHECK(ps.ref(l.weight).decay);
    CHECK_FALSE(ps.ref(l.bias).decay);
    Rng rng(2);
    Tensor x = random_tensor(7, 5, rng), w = random_tensor(7, 3, rng), y(7, 3), dx(7, 5);
    auto loss = [&] {
        l.forward(ps, y.view(), x.cview());
        return weighted_sum(y.cview(), w);
    };
    l.backward(ps, dx.view(), w.cview(), x.cview());
    SEGRANK_CHECK_GRAD(grad_check(x.span(), dx.span(), loss));
    check_store(ps, loss);
}

TEST_CASE("sage conv dense part gradients match finite differences for all inputs and parameters") {
    ParamStore ps;
    SageConv conv = SageConv::create(ps, "sage0", 6, Activation::kGelu);
    ps.initialize(3);
    Rng rng(4);
    Tensor self = random_tensor(9, 6, rng), af = random_tensor(9, 6, rng),
           ab = random_tensor(9, 6, rng);
    Tensor w = random_tensor(9, 6, rng), out(9, 6);
    SageConv::Saved saved;
    auto loss = [&] {
        conv.forward(ps, out.view(), self.cview(), af.cview(), ab.cview(), nullptr, nullptr);
        return weighted_sum(out.cview(), w);
    };
    conv.forward(ps, out.view(), self.cview(), af.cview(), ab.cview(), &saved, nullptr);
    Tensor ds(9, 6), daf(9, 6), dab(9, 6);
    conv.backward(ps, ds.view(), daf.view(), dab.view(), w.cview(), self.cview(), af.cview(),
                  ab.cview(), saved, nullptr);
    SEGRANK_CHECK_GRAD(grad_check(self.span(), ds.span(), loss));
    SEGRANK_CHECK_GRAD(grad_check(af.span(), daf.span(), loss));
    SEGRANK_CHECK_GRAD(grad_check(ab.span(), dab.span(), loss));
    check_store(ps, loss);
}

namespace {
// Random w_q / w_k / w_v / w_o (w_o starts at zero, which hides the other gradients).
void randomize(ParamStore& ps, Rng& rng, double scale) {
    for (const ParamRef& r : ps.refs())
        for (int64_t i = r.offset; i < r.offset + r.size(); ++i)
            ps.values()[static_cast<size_t>(i)] = static_cast<float>(scale * rng.normal());
}
}  // namespace

TEST_CASE(
    "cross-config attention starts as the identity and its gradients match finite differences") {
    constexpr int64_t kM = 3, kK = 4, kH = 6, kD = 3;
    ParamStore ps;
    ConfigAttention xa = ConfigAttention::create(ps, "xattn0", kH, kD);
    ps.initialize(3);
    Rng rng(5);
    Tensor x = random_tensor(kM * kK, kH, rng), w = random_tensor(kM * kK, kH, rng);
    Tensor y = x.clone();
    xa.forward(ps, y.view(), kK, nullptr);  // w_o = 0: h' = h
    CHECK(std::equal(y.span().begin(), y.span().end(), x.span().begin()));
    randomize(ps, rng, 0.5);
    auto loss = [&] {
        Tensor out = x.clone();
        xa.forward(ps, out.view(), kK, nullptr);
        return weighted_sum(out.cview(), w);
    };
    ConfigAttention::Saved saved;
    y = x.clone();
    xa.forward(ps, y.view(), kK, &saved);
    CHECK(saved.probs.rows() == kM * kK);
    CHECK(saved.probs.cols() == kK);
    for (int64_t r = 0; r < kM * kK; ++r) {  // softmax rows sum to 1
        double s = 0;
        for (int64_t c = 0; c < kK; ++c) s += saved.probs.cview().at(r, c);
        CHECK(s == doctest::Approx(1.0).epsilon(1e-6));
    }
    // Node 1's rows do not move when node 0's rows change: attention stays within a node.
    Tensor x2 = x.clone();
    for (int64_t c = 0; c < kH; ++c) x2.view().at(0, c) += 1.0f;
    Tensor y2 = x2.clone();
    xa.forward(ps, y2.view(), kK, nullptr);
    for (int64_t r = kK; r < kM * kK; ++r)
        for (int64_t c = 0; c < kH; ++c) CHECK(y2.cview().at(r, c) == y.cview().at(r, c));
    bool moved = false;  // ... while node 0's other configs do
    for (int64_t c = 0; c < kH; ++c) moved = moved || y2.cview().at(1, c) != y.cview().at(1, c);
    CHECK(moved);
    Tensor dx = w.clone();
    xa.backward(ps, dx.view(), saved);
    SEGRANK_CHECK_GRAD(grad_check(x.span(), dx.span(), loss));
    check_store(ps, loss);
}

TEST_CASE(
    "cross-config attention on a base row equals attention over K equal rows, and its gradients "
    "match finite differences") {
    constexpr int64_t kN = 5, kK = 3, kH = 6, kD = 4;
    ParamStore ps;
    ConfigAttention xa = ConfigAttention::create(ps, "xattn1", kH, kD);
    ps.initialize(4);
    Rng rng(6);
    randomize(ps, rng, 0.5);
    Tensor x = random_tensor(kN, kH, rng), w = random_tensor(kN, kH, rng);
    Tensor rep(kN * kK, kH);  // every base row repeated K times
    for (int64_t v = 0; v < kN; ++v)
        for (int64_t k = 0; k < kK; ++k)
            std::copy(x.cview().row(v), x.cview().row(v) + kH, rep.view().row(v * kK + k));
    xa.forward(ps, rep.view(), kK, nullptr);
    Tensor y = x.clone();
    ConfigAttention::Saved saved;
    xa.forward_base(ps, y.view(), &saved);
    for (int64_t v = 0; v < kN; ++v)
        for (int64_t k = 0; k < kK; ++k)
            for (int64_t c = 0; c < kH; ++c)
                CHECK(rep.cview().at(v * kK + k, c) ==
                      doctest::Approx(y.cview().at(v, c)).epsilon(1e-6));
    auto loss = [&] {
        Tensor out = x.clone();
        xa.forward_base(ps, out.view(), nullptr);
        return weighted_sum(out.cview(), w);
    };
    Tensor dx = w.clone();
    ps.zero_grads();
    xa.backward_base(ps, dx.view(), saved);
    SEGRANK_CHECK_GRAD(grad_check(x.span(), dx.span(), loss));
    check_store(ps, loss);
    for (ParamId id : {xa.w_q, xa.w_k}) {  // no gradient: equal rows give uniform weights
        const ConstMatrixView g = std::as_const(ps).grad(id);
        CHECK(std::all_of(g.data, g.data + g.rows * g.cols, [](float v) { return v == 0.0f; }));
    }
    Tensor bad(kN, kH);
    CHECK_THROWS_WITH_AS(xa.forward(ps, bad.view(), 2, nullptr), doctest::Contains("K = 2"), Error);
}

TEST_CASE("layout config encoder equals the one-hot linear map and its gradient matches") {
    ParamStore ps;
    LayoutConfigEncoder enc = LayoutConfigEncoder::create(ps, "config", 4);
    ps.initialize(5);
    std::vector<int8_t> values;
    for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 18; ++s) values.push_back(static_cast<int8_t>((r * 5 + s) % 7 - 1));
    Tensor out(3, 4);
    enc.forward(ps, out.view(), values);
    // Explicit one-hot product for row 1.
    Tensor onehot(1, 126);
    for (int s = 0; s < 18; ++s) onehot[s * 7 + values[18 + s] + 1] = 1.0f;
    for (int j = 0; j < 4; ++j) {
        double e = ps.value(enc.linear.bias).data[j];
        for (int c = 0; c < 126; ++c) e += double(ps.value(enc.linear.weight).at(j, c)) * onehot[c];
        CHECK(out.at(1, j) == doctest::Approx(e).epsilon(1e-5));
    }
    Rng rng(6);
    Tensor w = random_tensor(3, 4, rng);
    auto loss = [&] {
        enc.forward(ps, out.view(), values);
        return weighted_sum(out.cview(), w);
    };
    enc.backward(ps, values, w.cview());
    check_store(ps, loss);
    std::vector<int8_t> bad(18, 6);
    Tensor o1(1, 4);
    CHECK_THROWS_WITH_AS(enc.forward(ps, o1.view(), bad), doctest::Contains("outside -1..5"),
                         Error);
}

TEST_CASE("tile config encoder applies the signed log and its gradient matches") {
    ParamStore ps;
    TileConfigEncoder enc = TileConfigEncoder::create(ps, "config", 3);
    ps.initialize(7);
    Rng rng(8);
    Tensor cfg = random_tensor(4, 24, rng, 5.0), w = random_tensor(4, 3, rng), out(4, 3);
    Tensor sl(1, 1), one(1, 1);
    one[0] = -std::exp(2.0f) + 1.0f;
    signed_log(sl.view(), one.cview());
    CHECK(sl[0] == doctest::Approx(-2.0).epsilon(1e-5));
    auto loss = [&] {
        enc.forward(ps, out.view(), cfg.cview());
        return weighted_sum(out.cview(), w);
    };
    enc.backward(ps, cfg.cview(), w.cview());
    check_store(ps, loss);
}

TEST_CASE("mlp head and opcode embedding gradients match finite differences") {
    ParamStore ps;
    MlpHead head = MlpHead::create(ps, "head", 6, 5, Activation::kGelu);
    OpEmbedding emb = OpEmbedding::create(ps, "opcode", 6);
    ps.initialize(9);
    std::vector<int32_t> ids = {3, 120, 3, 0};
    std::vector<float> w = {0.3f, -1.1f, 0.7f, 0.2f};
    Tensor x(4, 6), scores(4), dx(4, 6);
    auto loss = [&] {
        emb.forward(ps, x.view(), ids);
        head.forward(ps, scores.span(), x.cview(), nullptr);
        double s = 0;
        for (int i = 0; i < 4; ++i) s += double(w[i]) * scores[i];
        return s;
    };
    MlpHead::Saved saved;
    emb.forward(ps, x.view(), ids);
    head.forward(ps, scores.span(), x.cview(), &saved);
    head.backward(ps, dx.view(), w, saved);
    emb.backward(ps, ids, dx.cview());
    check_store(ps, loss);
}

namespace {

// A deduplicated layer state for class_readout_forward tests: n nodes, the first n - 1 pooled
// (the last one a dep halo node), every third node independent when with_base; dep node p has
// count[p] classes, its rows at uniq[off[p] ..] with one spare row after them.
struct ClassCase {
    std::vector<int32_t> pos, count, cls;
    std::vector<int64_t> off;
    Tensor uniq, base, dep;  // dep: the expanded rows [m, K*H]
    int64_t n = 0, pooled = 0, k = 0, h = 0;

    ClassRows rows() const {
        return ClassRows{base.rows() ? base.cview() : ConstMatrixView{},
                         uniq.cview(),
                         off,
                         count,
                         cls,
                         pos,
                         k,
                         h};
    }
};

// Config k's class at dep node p is given by class_of(p, k) < count_of(p).
template <class CountOf, class ClassOf>
ClassCase make_class_case(int64_t n, int64_t k, int64_t h, bool with_base, Rng& rng,
                          const CountOf& count_of, const ClassOf& class_of) {
    ClassCase c;
    c.n = n;
    c.pooled = n - 1;
    c.k = k;
    c.h = h;
    int32_t m = 0;
    for (int64_t v = 0; v < n; ++v) c.pos.push_back(with_base && v % 3 == 1 ? -1 : m++);
    c.count.resize(static_cast<size_t>(m));
    c.cls.resize(static_cast<size_t>(m * k));
    c.off.assign(static_cast<size_t>(m + 1), 0);
    for (int32_t p = 0; p < m; ++p) {
        c.count[static_cast<size_t>(p)] = count_of(p);
        c.off[static_cast<size_t>(p + 1)] =
            c.off[static_cast<size_t>(p)] + c.count[static_cast<size_t>(p)] + 1;
        for (int64_t i = 0; i < k; ++i) c.cls[static_cast<size_t>(p * k + i)] = class_of(p, i);
    }
    c.uniq = random_tensor(c.off.back(), h, rng);
    if (with_base) c.base = random_tensor(n, h, rng);
    c.dep = Tensor(m, k * h);
    const ClassRows cr = c.rows();
    for (int32_t p = 0; p < m; ++p)
        for (int64_t i = 0; i < k; ++i)
            for (int64_t j = 0; j < h; ++j) c.dep.at(p, i * h + j) = cr.row(p, i)[j];
    return c;
}

struct ReadoutDiff {
    int64_t mean_out_of_tol = 0;  // mean entries off by more than 1e-6 relative
    int64_t mean_bits = 0;        // mean entries not equal bit for bit
    int64_t max_bits = 0;         // max entries not equal bit for bit
    ClassReadoutStats stats;
};

// class_readout_forward against mixed_readout_forward on the expanded rows, out width w.
ReadoutDiff compare_class_readout(const ClassCase& c, int64_t w) {
    const ClassRows cr = c.rows();
    Tensor want(c.k, w), got(c.k, w);
    std::vector<int32_t> arg(static_cast<size_t>(w == 2 * c.h ? c.k * c.h : 0));
    mixed_readout_forward(want.view(), arg, c.pooled,
                          MixedRows{cr.base, c.dep.cview(), c.pos, c.k, c.h});
    ReadoutDiff d;
    class_readout_forward(got.view(), c.pooled, cr, &d.stats);
    for (int64_t i = 0; i < c.k; ++i)
        for (int64_t j = 0; j < w; ++j) {
            const float a = got.at(i, j), b = want.at(i, j);
            if (j < c.h) {
                d.mean_bits += a != b;
                d.mean_out_of_tol += !(std::abs(a - b) <= 1e-6 * std::abs(b) + 1e-12);
            } else {
                d.max_bits += std::memcmp(&a, &b, sizeof(float)) != 0;
            }
        }
    return d;
}

}  // namespace

TEST_CASE(
    "class readout: the mean to 1e-6 relative and the max bit for bit against the mixed readout of "
    "the expanded rows, with pooled dep nodes grouped by shared class tuples, K across and inside "
    "the 32-config blocks, with and without independent pooled nodes") {
    Rng rng(17);
    const int64_t h = 5;
    int64_t grouped_cases = 0, multi_window_cases = 0;
    for (const int64_t k : {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{70},
                            int64_t{200}, int64_t{1000}}) {
        // Configs draw 6 bits; dep node p's class is bit p % 6 of them (one class at every 7th
        // node): a run of j nodes has at most 2^j tuples, so runs group until K/16 would pass.
        // Every 5th node declares 9 classes and uses 2 (tuple keys past the direct table).
        std::vector<int32_t> bits(static_cast<size_t>(k));
        for (auto& b : bits) b = static_cast<int32_t>(rng.uniform_int(64));
        const auto count_of = [](int32_t p) { return p % 7 == 6 ? 1 : p % 5 == 0 ? 9 : 2; };
        const auto class_of = [&](int32_t p, int64_t i) {
            return p % 7 == 6 ? 0 : (bits[static_cast<size_t>(i)] >> (p % 6)) & 1;
        };
        for (const bool with_base : {true, false}) {
            const ClassCase c = make_class_case(181, k, h, with_base, rng, count_of, class_of);
            for (const int64_t w : {2 * h, h}) {  // readout mean_max, mean
                const ReadoutDiff d = compare_class_readout(c, w);
                INFO("K = " << k << ", base rows " << with_base << ", width " << w << ": "
                            << d.stats.groups << " groups, " << d.stats.grouped_nodes
                            << " nodes grouped, " << d.stats.windows << " windows, " << d.stats.adds
                            << " of " << d.stats.dense_adds << " row additions, " << d.mean_bits
                            << " mean entries not bit-identical");
                CHECK(d.mean_out_of_tol == 0);
                CHECK(d.max_bits == 0);
                CHECK(d.stats.dense_adds == (c.pooled - (with_base ? 60 : 0)) * k);
                if (k >= 64) {  // K/16 >= 4 tuples: runs of two nodes or more group
                    CHECK(d.stats.grouped_nodes > d.stats.dense_adds / k / 2);
                    CHECK(d.stats.adds < d.stats.dense_adds * 3 / 4);
                }
                grouped_cases += d.stats.grouped_nodes > 0;
                multi_window_cases += d.stats.windows > 1;
            }
            // The groups do not depend on the width: readout "mean" is the mean half of "mean_max"
            // bit for bit.
            Tensor both(k, 2 * h), mean(k, h);
            class_readout_forward(both.view(), c.pooled, c.rows());
            class_readout_forward(mean.view(), c.pooled, c.rows());
            int64_t differ = 0;
            for (int64_t i = 0; i < k; ++i)
                for (int64_t j = 0; j < h; ++j) differ += mean.at(i, j) != both.at(i, j);
            CHECK(differ == 0);
        }
    }
    CHECK(grouped_cases >= 12);
    CHECK(multi_window_cases >= 2);  // K = 200: groups of 3 nodes x 8 tuples pass K partial rows
}

TEST_CASE(
    "class readout with every config distinct: no grouping, and the same sums in the same order as "
    "the mixed readout (bit for bit)") {
    Rng rng(23);
    const int64_t h = 4;
    for (const int64_t k : {int64_t{33}, int64_t{100}}) {
        // Each dep node numbers the K configs by its own permutation: K classes, no shared tuple.
        const int64_t m_max = 100;
        std::vector<int32_t> perm(static_cast<size_t>(m_max * k));
        for (int64_t p = 0; p < m_max; ++p) {
            for (int64_t i = 0; i < k; ++i)
                perm[static_cast<size_t>(p * k + i)] = static_cast<int32_t>(i);
            for (int64_t i = k - 1; i > 0; --i)
                std::swap(perm[static_cast<size_t>(p * k + i)],
                          perm[static_cast<size_t>(p * k) +
                               rng.uniform_int(static_cast<uint64_t>(i + 1))]);
        }
        for (const bool with_base : {true, false}) {
            const ClassCase c = make_class_case(
                70, k, h, with_base, rng, [&](int32_t) { return static_cast<int32_t>(k); },
                [&](int32_t p, int64_t i) { return perm[static_cast<size_t>(p * k + i)]; });
            for (const int64_t w : {2 * h, h}) {
                const ReadoutDiff d = compare_class_readout(c, w);
                INFO("K = " << k << ", base rows " << with_base << ", width " << w);
                CHECK(d.stats.grouped_nodes == 0);
                CHECK(d.stats.adds == d.stats.dense_adds);
                CHECK(d.mean_bits == 0);
                CHECK(d.max_bits == 0);
            }
        }
    }
}

TEST_CASE(
    "class readout groups are numbered right: configs that share every class but one get that one "
    "node's row, and the grouped sums follow each config's own classes") {
    // 40 dep nodes, no base; K = 256 configs. Config i takes class 1 at node i % 40 and class 0
    // everywhere else, except that configs of one half also take class 1 at node 39 - i % 40. The
    // rows are small integers, so every sum is exact and the readout equals the expected mean and
    // max exactly: a config given another's tuple gets another's mean.
    const int64_t k = 256, h = 3, n = 41;
    Rng rng(5);
    const auto class_of = [](int32_t p, int64_t i) {
        return static_cast<int32_t>(p == i % 40 || (i >= 128 && p == 39 - i % 40));
    };
    ClassCase c = make_class_case(
        n, k, h, false, rng, [](int32_t) { return 2; }, class_of);
    for (int64_t r = 0; r < c.uniq.rows(); ++r)
        for (int64_t j = 0; j < h; ++j)
            c.uniq.at(r, j) = static_cast<float>((r * 7 + j * 3) % 11) - 5.0f;
    for (int32_t p = 0; p < 41; ++p)
        for (int64_t i = 0; i < k; ++i)
            for (int64_t j = 0; j < h; ++j) c.dep.at(p, i * h + j) = c.rows().row(p, i)[j];
    Tensor got(k, 2 * h);
    ClassReadoutStats st;
    class_readout_forward(got.view(), c.pooled, c.rows(), &st);
    CHECK(st.grouped_nodes > 20);
    int64_t wrong = 0;
    for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < h; ++j) {
            double sum = 0;
            float mx = -1e30f;
            for (int32_t p = 0; p < 40; ++p) {
                const float x = c.uniq.at(c.off[static_cast<size_t>(p)] + class_of(p, i), j);
                sum += x;
                mx = std::max(mx, x);
            }
            wrong +=
                got.at(i, j) != static_cast<float>(sum * (1.0 / 40.0)) || got.at(i, h + j) != mx;
        }
    CHECK(wrong == 0);
    const ReadoutDiff d = compare_class_readout(c, 2 * h);
    CHECK(d.mean_out_of_tol == 0);
    CHECK(d.max_bits == 0);

    Tensor out(2, 4);
    ClassRows bad;
    bad.k = 3;
    bad.h = 2;
    CHECK_THROWS_AS(class_readout_forward(out.view(), 1, bad), Error);
}

TEST_CASE(
    "mean readout: the mean half of the mean_max readout bit for bit, finite-difference gradients, "
    "and shapes refused") {
    const int64_t k = 4, h = 3, n = 7, pooled = 6;
    Rng rng(31);
    std::vector<int32_t> pos = {-1, 0, -1, 1, 2, -1, 3};  // node 6 is a dep halo node
    Tensor base = random_tensor(n, h, rng), dep = random_tensor(4, k * h, rng);
    const MixedRows in{base.cview(), dep.cview(), pos, k, h};
    Tensor both(k, 2 * h), mean(k, h);
    std::vector<int32_t> arg(static_cast<size_t>(k * h));
    mixed_readout_forward(both.view(), arg, pooled, in);
    mixed_readout_forward(mean.view(), {}, pooled, in);
    int64_t differ = 0;
    for (int64_t i = 0; i < k; ++i)
        for (int64_t c = 0; c < h; ++c) differ += mean.at(i, c) != both.at(i, c);
    CHECK(differ == 0);
    Tensor w = random_tensor(k, h, rng), r(k, h);
    auto loss = [&] {
        mixed_readout_forward(r.view(), {}, pooled,
                              MixedRows{base.cview(), dep.cview(), pos, k, h});
        return weighted_sum(r.cview(), w);
    };
    loss();
    Tensor gb(n, h), gd(4, k * h);
    mixed_readout_backward(MixedGrads{gb.view(), gd.view(), pos, k, h}, {}, pooled, w.cview());
    SEGRANK_CHECK_GRAD(grad_check(base.span(), gb.span(), loss, 1e-3));
    SEGRANK_CHECK_GRAD(grad_check(dep.span(), gd.span(), loss, 1e-3));
    for (int64_t c = 0; c < h; ++c) CHECK(gb.at(n - 1, c) == 0.0f);  // node 6 is not pooled
    // [K, H] with argmax ids, [K, 2H] without, and other widths are refused.
    CHECK_THROWS_AS(mixed_readout_forward(mean.view(), arg, pooled, in), Error);
    CHECK_THROWS_AS(mixed_readout_forward(both.view(), {}, pooled, in), Error);
    Tensor odd(k, 3 * h);
    CHECK_THROWS_AS(mixed_readout_forward(odd.view(), {}, pooled, in), Error);
    CHECK_THROWS_AS(
        mixed_readout_backward(MixedGrads{gb.view(), gd.view(), pos, k, h}, arg, pooled, w.cview()),
        Error);
    Tensor w2 = random_tensor(k, 2 * h, rng);
    CHECK_THROWS_AS(
        mixed_readout_backward(MixedGrads{gb.view(), gd.view(), pos, k, h}, {}, pooled, w2.cview()),
        Error);
}

TEST_CASE(
    "mixed kernels equal the plain kernels on the dense K-row expansion, forward and backward") {
    // 6 nodes, chain with a skip; nodes 1 and 4 carry K rows, the rest one broadcast row.
    std::vector<int32_t> u = {1, 2, 3, 3, 4, 5, 5};
    std::vector<int32_t> v = {0, 1, 2, 0, 3, 4, 2};
    GraphCsr g = build_graph_csr(6, u, v);
    const int64_t k = 3, h = 2, n = 6;
    Rng rng(10);
    Tensor base = random_tensor(n, h, rng), dep = random_tensor(2, k * h, rng);
    std::vector<int32_t> pos = {-1, 0, -1, -1, 1, -1};
    MixedRows in{base.cview(), dep.cview(), pos, k, h};
    Tensor dense(n, k * h);  // the naive state
    for (int64_t x = 0; x < n; ++x)
        for (int64_t c = 0; c < k * h; ++c)
            dense.at(x, c) = pos[x] >= 0 ? dep.at(pos[x], c) : base.at(x, c % h);
    std::vector<int32_t> out_nodes = {0, 2, 4, 5};
    Tensor agg(4, k * h), ref(n, k * h), gat(4, k * h);
    mixed_spmm_forward(agg.view(), out_nodes, g.operands, in);
    spmm_forward(ref.view(), g.operands, dense.cview(), Reduce::kMean);
    mixed_gather_forward(gat.view(), out_nodes, in);
    for (size_t i = 0; i < out_nodes.size(); ++i)
        for (int64_t c = 0; c < k * h; ++c) {
            CHECK(agg.at(int64_t(i), c) == doctest::Approx(ref.at(out_nodes[i], c)).epsilon(1e-6));
            CHECK(gat.at(int64_t(i), c) == dense.at(out_nodes[i], c));
        }
    // Backward: gradient w.r.t. base/dep equals the dense gradient folded back (summed over k for
    // base).
    Tensor dout = random_tensor(4, k * h, rng), dbase(n, h), ddep(2, k * h);
    std::vector<int32_t> out_pos(n, -1);
    for (size_t i = 0; i < out_nodes.size(); ++i) out_pos[out_nodes[i]] = static_cast<int32_t>(i);
    MixedGrads gr{dbase.view(), ddep.view(), pos, k, h};
    mixed_spmm_backward(gr, g.users, out_pos, g.operands.inverse_degrees(), dout.cview());
    Tensor dfull(n, k * h), dense_dout(n, k * h);
    for (size_t i = 0; i < out_nodes.size(); ++i)
        for (int64_t c = 0; c < k * h; ++c) dense_dout.at(out_nodes[i], c) = dout.at(int64_t(i), c);
    spmm_backward(dfull.view(), g.users, dense_dout.cview(), g.operands.inverse_degrees(),
                  Reduce::kMean);
    for (int64_t x = 0; x < n; ++x)
        for (int64_t c = 0; c < h; ++c) {
            double want = 0;
            for (int64_t kk = 0; kk < k; ++kk) want += dfull.at(x, kk * h + c);
            if (pos[x] >= 0)
                for (int64_t kk = 0; kk < k; ++kk)
                    CHECK(ddep.at(pos[x], kk * h + c) ==
                          doctest::Approx(dfull.at(x, kk * h + c)).epsilon(1e-6));
            else
                CHECK(dbase.at(x, c) == doctest::Approx(want).epsilon(1e-6));
        }
    // Readout gradient check through the mixed state.
    Tensor w = random_tensor(k, 2 * h, rng), r(k, 2 * h);
    std::vector<int32_t> arg(static_cast<size_t>(k * h));
    auto loss = [&] {
        mixed_readout_forward(r.view(), arg, 5, MixedRows{base.cview(), dep.cview(), pos, k, h});
        return weighted_sum(r.cview(), w);
    };
    loss();
    Tensor gb(n, h), gd(2, k * h);
    mixed_readout_backward(MixedGrads{gb.view(), gd.view(), pos, k, h}, arg, 5, w.cview());
    SEGRANK_CHECK_GRAD(grad_check(base.span(), gb.span(), loss, 1e-3));
    SEGRANK_CHECK_GRAD(grad_check(dep.span(), gd.span(), loss, 1e-3));
}

TEST_CASE(
    "projection-first kernels: dep_spmm_accumulate adds the dep neighbours' rows as the mixed mean "
    "does with zero base rows, dep_spmm_adjoint is its exact adjoint, and shapes are refused") {
    // 7 nodes; layer l-1 has dep nodes {1, 4, 5}, layer l has {0, 1, 2, 4, 5} (a superset).
    std::vector<int32_t> u = {1, 2, 3, 3, 4, 5, 5, 6};
    std::vector<int32_t> v = {0, 1, 2, 0, 3, 4, 2, 5};
    GraphCsr g = build_graph_csr(7, u, v);
    const int64_t k = 3, h = 2, n = 7;
    const std::vector<int32_t> prev_nodes = {1, 4, 5}, out_nodes = {0, 1, 2, 4, 5};
    std::vector<int32_t> in_pos(n, -1), out_pos(n, -1);
    for (size_t i = 0; i < prev_nodes.size(); ++i) in_pos[prev_nodes[i]] = static_cast<int32_t>(i);
    for (size_t i = 0; i < out_nodes.size(); ++i) out_pos[out_nodes[i]] = static_cast<int32_t>(i);
    Rng rng(12);
    const Tensor y = random_tensor(3, k * h, rng), zero_base(n, h);
    const MixedRows zin{zero_base.cview(), y.cview(), in_pos, k, h};
    const std::pair<const Csr*, const Csr*> terms[] = {
        {nullptr, nullptr}, {&g.operands, &g.users}, {&g.users, &g.operands}};
    for (const auto& [adj, adj_t] : terms) {
        const char* term = adj == nullptr ? "self" : adj == &g.operands ? "operands" : "users";
        INFO(term);
        Tensor start = random_tensor(5, k * h, rng), got = start.clone(), want(5, k * h);
        dep_spmm_accumulate(got.view(), out_nodes, adj, y.cview(), in_pos);
        if (adj)
            mixed_spmm_forward(want.view(), out_nodes, *adj, zin);
        else
            mixed_gather_forward(want.view(), out_nodes, zin);
        for (int64_t i = 0; i < 5; ++i)
            for (int64_t c = 0; c < k * h; ++c)
                CHECK(got.at(i, c) ==
                      doctest::Approx(start.at(i, c) + want.at(i, c)).epsilon(1e-6));
        // <A y, d> == <y, A^T d> for a random d.
        const Tensor d = random_tensor(5, k * h, rng);
        Tensor ay(5, k * h), aty(3, k * h);
        dep_spmm_accumulate(ay.view(), out_nodes, adj, y.cview(), in_pos);
        aty.view().at(0, 0) = 99.0f;  // written, not accumulated
        dep_spmm_adjoint(aty.view(), prev_nodes, adj_t,
                         adj ? adj->inverse_degrees() : std::span<const float>{}, d.cview(),
                         out_pos);
        double lhs = 0, rhs = 0;
        for (int64_t i = 0; i < 5; ++i)
            for (int64_t c = 0; c < k * h; ++c) lhs += double(ay.at(i, c)) * d.at(i, c);
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t c = 0; c < k * h; ++c) rhs += double(y.at(i, c)) * aty.at(i, c);
        CHECK(lhs == doctest::Approx(rhs).epsilon(1e-6));
    }
    Tensor bad(4, k * h), dy(3, k * h), narrow(5, h);
    CHECK_THROWS_AS(dep_spmm_accumulate(bad.view(), out_nodes, nullptr, y.cview(), in_pos), Error);
    CHECK_THROWS_AS(dep_spmm_accumulate(narrow.view(), out_nodes, nullptr, y.cview(), in_pos),
                    Error);
    std::vector<int32_t> short_pos(n, -1);  // a dep node of layer l-1 missing from layer l
    short_pos[1] = 0;
    short_pos[5] = 1;
    CHECK_THROWS_WITH_AS(
        dep_spmm_adjoint(dy.view(), prev_nodes, nullptr, {}, bad.cview(), short_pos),
        doctest::Contains("dep node 4"), Error);
}
