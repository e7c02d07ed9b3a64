// Layout-collection modules: conv nets with batch norm and transformer blocks, while loops and
// all-reduces, in the pre-fusion form of the real layout graphs (docs/files.md#real-data).
#include <algorithm>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "gnn/core/check.h"
#include "hwmodel/synth/builder.h"
#include "hwmodel/synth/families.h"

namespace segrank::synth {
namespace {

namespace et = hlo::element_type;

template <typename T>
T pick(Rng& rng, std::initializer_list<T> values) {
    const auto i = rng.uniform_int(values.size());
    return *(values.begin() + static_cast<std::ptrdiff_t>(i));
}

// Builds blocks into the innermost open computation of `b`. Weights are ids supplied by the
// caller: parameters in the entry, get-tuple-elements of the loop state in a while body.
struct Ctx {
    ModuleBuilder& b;
    Rng& rng;
    int32_t type;
    std::map<std::string, int64_t> reducers;  // "add"/"maximum" -> computation id (shared)

    int64_t reducer(const std::string& kind) {
        auto it = reducers.find(kind);
        if (it == reducers.end()) it = reducers.emplace(kind, b.reducer(kind, type)).first;
        return it->second;
    }
    int64_t scalar(double v) { return b.constant(type, v); }
    // Broadcast of a scalar constant to `dims`.
    int64_t splat(double v, const std::vector<int64_t>& dims) {
        return b.broadcast(scalar(v), dims, {});
    }
    // x op broadcast(y) where y has x's dims without `reduced` (kept dims in order).
    int64_t with_stat(const std::string& op, int64_t x, int64_t stat,
                      const std::vector<int64_t>& reduced) {
        const auto dims = b.shape(x).dims;
        std::vector<int64_t> keep;
        for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d)
            if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) keep.push_back(d);
        return b.binary(op, x, b.broadcast(stat, dims, keep));
    }
    // mean of x over `dims`; optionally all-reduced across replicas (sync batch norm).
    int64_t mean(int64_t x, const std::vector<int64_t>& dims, bool all_reduce) {
        int64_t n = 1;
        for (int64_t d : dims) n *= b.shape(x).dims[static_cast<size_t>(d)];
        int64_t s = b.reduce(x, scalar(0), dims, reducer("add"));
        if (all_reduce) s = b.all_reduce(s, reducer("add"));
        return b.binary("divide", s, splat(static_cast<double>(n), b.shape(s).dims));
    }
    // Normalizes x over `dims` and applies per-feature scale/offset (1-D weights on `feature`).
    int64_t normalize(int64_t x, const std::vector<int64_t>& dims, int64_t feature, int64_t scale,
                      int64_t offset, bool all_reduce) {
        const int64_t m = mean(x, dims, all_reduce);
        const int64_t cen = with_stat("subtract", x, m, dims);
        const int64_t var = mean(b.binary("multiply", cen, cen), dims, all_reduce);
        const int64_t inv = b.unary("rsqrt", b.binary("add", var, splat(1e-5, b.shape(var).dims)));
        const int64_t y = with_stat("multiply", cen, inv, dims);
        const auto yd = b.shape(y).dims;
        const int64_t ys = b.binary("multiply", y, b.broadcast(scale, yd, {feature}));
        return b.binary("add", ys, b.broadcast(offset, yd, {feature}));
    }
};

// ---- conv net ------------------------------------------------------------------------------
struct ConvPlan {
    int64_t kernel = 3, stride = 1, cout = 0;
    bool residual = false, sync_bn = false;
};

std::vector<hlo::Shape> conv_weights(const ConvPlan& p, int64_t cin, int32_t type) {
    return {array_shape(type, {p.kernel, p.kernel, cin, p.cout}), array_shape(type, {p.cout}),
            array_shape(type, {p.cout})};
}

// conv -> batch norm (batch statistics over N, H, W) -> relu [-> + x].
int64_t conv_block(Ctx& c, int64_t x, const ConvPlan& p, const std::vector<int64_t>& w) {
    const int64_t conv = c.b.conv2d(x, w[0], p.stride);
    const int64_t bn = c.normalize(conv, {0, 1, 2}, 3, w[1], w[2], p.sync_bn);
    int64_t y = c.b.binary("maximum", bn, c.splat(0, c.b.shape(bn).dims));
    if (p.residual) y = c.b.binary("add", y, x);
    return y;
}

ConvPlan plan_conv(Ctx& c, const hlo::Shape& x, bool keep_shape) {
    ConvPlan p;
    const int64_t cin = x.dims[3], h = x.dims[1];
    p.kernel = c.rng.uniform() < 0.7 ? 3 : 1;
    p.stride = (!keep_shape && h >= 8 && c.rng.uniform() < 0.25) ? 2 : 1;
    p.cout = keep_shape ? cin : std::min<int64_t>(512, c.rng.uniform() < 0.3 ? cin * 2 : cin);
    if (p.cout < 16) p.cout = keep_shape ? cin : pick<int64_t>(c.rng, {16, 32, 64});
    p.residual = p.stride == 1 && p.cout == cin && c.rng.uniform() < 0.5;
    p.sync_bn = c.rng.uniform() < 0.3;
    return p;
}

// ---- transformer -----------------------------------------------------------------------------
struct TfPlan {
    int64_t heads = 8;
    bool tensor_parallel = false;  // all-reduce after the projections (Megatron style)
};

std::vector<hlo::Shape> tf_weights(int64_t d, int32_t type) {
    const auto vec = array_shape(type, {d}), sq = array_shape(type, {d, d});
    return {vec,
            vec,
            sq,
            sq,
            sq,
            sq,
            vec,
            vec,
            array_shape(type, {d, 4 * d}),
            array_shape(type, {4 * d, d})};
}

// [b*s, d] x w -> reshape [b, s, heads, dh] -> transpose [b, heads, s, dh].
int64_t heads_of(Ctx& c, int64_t x2, int64_t w, int64_t bsz, int64_t s, int64_t heads) {
    const int64_t d = c.b.shape(x2).dims[1];
    const int64_t r = c.b.reshape(c.b.dot(x2, w), {bsz, s, heads, d / heads});
    return c.b.transpose(r, {0, 2, 1, 3});
}

// Pre-LN transformer block on x [b, s, d]: attention with softmax, then a GELU MLP.
int64_t tf_block(Ctx& c, int64_t x, const TfPlan& p, const std::vector<int64_t>& w) {
    const auto dims = c.b.shape(x).dims;
    const int64_t bsz = dims[0], s = dims[1], d = dims[2], dh = d / p.heads;
    const int64_t ln1 = c.normalize(x, {2}, 2, w[0], w[1], false);
    const int64_t x2 = c.b.reshape(ln1, {bsz * s, d});
    const int64_t q = heads_of(c, x2, w[2], bsz, s, p.heads);
    const int64_t k = heads_of(c, x2, w[3], bsz, s, p.heads);
    const int64_t v = heads_of(c, x2, w[4], bsz, s, p.heads);
    const int64_t kt = c.b.transpose(k, {0, 1, 3, 2});
    int64_t sc = c.b.dot(q, kt);  // [b, h, s, s]
    sc = c.b.binary("multiply", sc, c.splat(1.0 / static_cast<double>(dh), c.b.shape(sc).dims));
    // softmax over the last dim: max-subtract, exp, sum, divide.
    const int64_t mx = c.b.reduce(sc, c.scalar(-1e30), {3}, c.reducer("maximum"));
    const int64_t e = c.b.unary("exponential", c.with_stat("subtract", sc, mx, {3}));
    const int64_t sum = c.b.reduce(e, c.scalar(0), {3}, c.reducer("add"));
    const int64_t prob = c.with_stat("divide", e, sum, {3});
    const int64_t ctx = c.b.transpose(c.b.dot(prob, v), {0, 2, 1, 3});  // [b, s, h, dh]
    int64_t o = c.b.dot(c.b.reshape(ctx, {bsz * s, d}), w[5]);
    if (p.tensor_parallel) o = c.b.all_reduce(o, c.reducer("add"));
    const int64_t h1 = c.b.binary("add", x, c.b.reshape(o, {bsz, s, d}));
    const int64_t ln2 = c.normalize(h1, {2}, 2, w[6], w[7], false);
    const int64_t up = c.b.dot(c.b.reshape(ln2, {bsz * s, d}), w[8]);
    // GELU (sigmoid approximation): u * logistic(1.702 u).
    const int64_t g = c.b.binary(
        "multiply", up,
        c.b.unary("logistic", c.b.binary("multiply", up, c.splat(1.702, c.b.shape(up).dims))));
    int64_t down = c.b.dot(g, w[9]);
    if (p.tensor_parallel) down = c.b.all_reduce(down, c.reducer("add"));
    return c.b.binary("add", h1, c.b.reshape(down, {bsz, s, d}));
}

// ---- shared driver ---------------------------------------------------------------------------
// One block of the family on x; `keep_shape` for while bodies. Returns the new activation.
using WeightShapes = std::vector<hlo::Shape>;
struct Block {
    WeightShapes weights;
    std::function<int64_t(Ctx&, int64_t, const std::vector<int64_t>&)> build;
};

Block plan_block(Ctx& c, Family f, const hlo::Shape& x, bool keep_shape) {
    if (f == Family::kConvNet) {
        const ConvPlan p = plan_conv(c, x, keep_shape);
        return {conv_weights(p, x.dims[3], c.type),
                [p](Ctx& cc, int64_t in, const std::vector<int64_t>& w) {
                    return conv_block(cc, in, p, w);
                }};
    }
    TfPlan p;
    p.heads = x.dims[2] % 16 == 0 ? pick<int64_t>(c.rng, {4, 8, 16}) : 4;
    p.tensor_parallel = c.rng.uniform() < 0.3;
    return {tf_weights(x.dims[2], c.type), [p](Ctx& cc, int64_t in, const std::vector<int64_t>& w) {
                return tf_block(cc, in, p, w);
            }};
}

// while (i < trips) { state.x = block(state.x) } with weights carried in the loop tuple.
int64_t while_block(Ctx& c, Family f, int64_t x, int64_t& next_param) {
    const hlo::Shape xs = c.b.shape(x);
    const Block blk = plan_block(c, f, xs, /*keep_shape=*/true);
    const auto s32 = array_shape(et::kS32, {});
    std::vector<hlo::Shape> elems = {s32, xs};
    elems.insert(elems.end(), blk.weights.begin(), blk.weights.end());
    const hlo::Shape state = tuple_shape(elems);
    const int64_t trips = pick<int64_t>(c.rng, {2, 3, 4, 6, 8, 12});

    c.b.open("while_body");
    const int64_t p = c.b.parameter(state, 0);
    const int64_t i = c.b.get_tuple_element(p, 0);
    const int64_t v = c.b.get_tuple_element(p, 1);
    std::vector<int64_t> w;
    for (size_t k = 0; k < blk.weights.size(); ++k)
        w.push_back(c.b.get_tuple_element(p, static_cast<int64_t>(k + 2)));
    const int64_t i1 = c.b.binary("add", i, c.b.constant(et::kS32, 1));
    // A reducer first needed inside the body is opened and closed on top of it, so it is stored
    // before the body (callees first) and can be shared by later callers.
    const int64_t out = blk.build(c, v, w);
    std::vector<int64_t> next = {i1, out};
    next.insert(next.end(), w.begin(), w.end());
    const int64_t body = c.b.close(c.b.tuple(next));

    c.b.open("while_cond");
    const int64_t cp = c.b.parameter(state, 0);
    const int64_t ci = c.b.get_tuple_element(cp, 0);
    const int64_t cond =
        c.b.close(c.b.compare(ci, c.b.constant(et::kS32, static_cast<double>(trips))));

    std::vector<int64_t> init = {c.b.constant(et::kS32, 0), x};
    for (const auto& ws : blk.weights) init.push_back(c.b.parameter(ws, next_param++));
    const int64_t loop = c.b.while_loop(c.b.tuple(init), body, cond);
    return c.b.get_tuple_element(loop, 1);
}

int64_t classifier_tail(Ctx& c, Family f, int64_t x, int64_t& next_param) {
    const auto dims = c.b.shape(x).dims;
    int64_t feat;
    if (f == Family::kConvNet) {                          // global average pool, flatten
        const int64_t pooled = c.mean(x, {1, 2}, false);  // [n, c]
        feat = c.b.reshape(pooled, {dims[0], dims[3]});
    } else {  // mean over the sequence
        feat = c.b.reshape(c.mean(x, {1}, false), {dims[0], dims[2]});
    }
    const int64_t classes = pick<int64_t>(c.rng, {10, 100, 1000});
    const int64_t w =
        c.b.parameter(array_shape(c.type, {c.b.shape(feat).dims[1], classes}), next_param++);
    const int64_t logits = c.b.dot(feat, w);
    const int64_t mx = c.b.reduce(logits, c.scalar(-1e30), {1}, c.reducer("maximum"));
    const int64_t e = c.b.unary("exponential", c.with_stat("subtract", logits, mx, {1}));
    const int64_t sum = c.b.reduce(e, c.scalar(0), {1}, c.reducer("add"));
    return c.with_stat("divide", e, sum, {1});
}

}  // namespace

hlo::HloModule make_layout_module(Rng& rng, Family family, int64_t target_nodes,
                                  const std::string& name) {
    ModuleBuilder b(name);
    Ctx c{b, rng, rng.uniform() < 0.7 ? et::kBF16 : et::kF32, {}};
    b.open(family == Family::kConvNet ? "cluster_convnet" : "cluster_transformer");
    int64_t next_param = 0;
    int64_t x;
    if (family == Family::kConvNet) {
        const int64_t n = pick<int64_t>(rng, {8, 16, 32, 64});
        const int64_t hw = pick<int64_t>(rng, {32, 56, 64, 112, 224});
        const int64_t ch = pick<int64_t>(rng, {3, 16, 32, 64});
        x = b.parameter(array_shape(c.type, {n, hw, hw, ch}), next_param++);
    } else {
        const int64_t bsz = pick<int64_t>(rng, {1, 2, 4, 8});
        const int64_t s = pick<int64_t>(rng, {64, 128, 256, 512});
        const int64_t d = pick<int64_t>(rng, {128, 256, 512, 768, 1024});
        x = b.parameter(array_shape(c.type, {bsz, s, d}), next_param++);
    }
    // Per-block node counts are measured as we go; stop when the next block could overshoot.
    constexpr int64_t kTailReserve = 40;
    int64_t largest_block = 0;
    int64_t blocks = 0;
    while (blocks == 0 || b.num_instructions() + largest_block + kTailReserve <= target_nodes) {
        const int64_t before = b.num_instructions();
        const double u = rng.uniform();
        const hlo::Shape xs = b.shape(x);
        if (u < 0.15) {
            x = while_block(c, family, x, next_param);
        } else if (family == Family::kConvNet && u < 0.25 && xs.dims[1] >= 8) {
            x = b.max_pool(x, 2, 2, c.reducer("maximum"));
        } else {
            const Block blk = plan_block(c, family, xs, false);
            std::vector<int64_t> w;
            for (const auto& ws : blk.weights) w.push_back(b.parameter(ws, next_param++));
            x = blk.build(c, x, w);
        }
        largest_block = std::max(largest_block, b.num_instructions() - before);
        ++blocks;
    }
    int64_t root = classifier_tail(c, family, x, next_param);
    // Pad with cheap elementwise ops so the module has exactly target_nodes instructions.
    const char* kPad[] = {"negate", "abs", "tanh", "exponential"};
    for (int64_t k = 0; b.num_instructions() < target_nodes; ++k) root = b.unary(kPad[k % 4], root);
    return b.finish(root);
}

}  // namespace segrank::synth
