// Tile-collection kernels: an entry computation of parameters and one fusion whose fused
// computation holds a convolution, a dot, an elementwise DAG or a reduction
// (docs/files.md#real-data).
#include <algorithm>
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

// With probability `p` a random minor_to_major permutation (a post-layout-assignment kernel
// input such as {3,0,2,1}); otherwise the default layout.
hlo::Shape maybe_permuted(Rng& rng, hlo::Shape s, double p) {
    if (s.dims.size() < 2 || rng.uniform() >= p) return s;
    auto& m = s.minor_to_major;
    for (size_t i = m.size(); i > 1; --i) std::swap(m[i - 1], m[rng.uniform_int(i)]);
    return s;
}

// Fused-computation contents of one kernel kind: returns the root; `inputs` get the fused
// parameters in order (their shapes are the kernel's input shapes).
struct Fused {
    ModuleBuilder& b;
    Rng& rng;
    int32_t type;
    std::vector<hlo::Shape> inputs;

    int64_t param(hlo::Shape s) {
        inputs.push_back(s);
        return b.parameter(s, static_cast<int64_t>(inputs.size() - 1));
    }
    int64_t splat(double v, const std::vector<int64_t>& dims) {
        return b.broadcast(b.constant(type, v), dims, {});
    }
    // y = x + bias (broadcast along `feature`), then relu or identity.
    int64_t bias_act(int64_t x, int64_t feature) {
        const auto dims = b.shape(x).dims;
        const int64_t bias = param(array_shape(type, {dims[static_cast<size_t>(feature)]}));
        const int64_t y = b.binary("add", x, b.broadcast(bias, dims, {feature}));
        return rng.uniform() < 0.7 ? b.binary("maximum", y, splat(0, dims)) : y;
    }
};

int64_t conv_kernel(Fused& f) {
    const int64_t n = pick<int64_t>(f.rng, {1, 8, 16, 32});
    const int64_t hw = pick<int64_t>(f.rng, {7, 14, 28, 56});
    const int64_t cin = pick<int64_t>(f.rng, {32, 64, 128, 256});
    const int64_t cout = pick<int64_t>(f.rng, {64, 128, 256});
    const int64_t k = f.rng.uniform() < 0.6 ? 3 : 1;
    const int64_t x = f.param(maybe_permuted(f.rng, array_shape(f.type, {n, hw, hw, cin}), 0.3));
    const int64_t w = f.param(maybe_permuted(f.rng, array_shape(f.type, {k, k, cin, cout}), 0.3));
    const int64_t conv = f.b.conv2d(x, w, f.rng.uniform() < 0.25 ? 2 : 1);
    return f.bias_act(conv, 3);
}

int64_t dot_kernel(Fused& f) {
    const bool batched = f.rng.uniform() < 0.3;
    const int64_t m = pick<int64_t>(f.rng, {128, 256, 512, 1024, 2048});
    const int64_t kk = pick<int64_t>(f.rng, {128, 256, 768, 1024, 4096});
    const int64_t nn = pick<int64_t>(f.rng, {128, 256, 512, 1024, 3072});
    std::vector<int64_t> ld = {m, kk}, rd = {kk, nn};
    if (batched) {
        const int64_t bsz = pick<int64_t>(f.rng, {4, 8, 16});
        ld.insert(ld.begin(), bsz);
        rd.insert(rd.begin(), bsz);
    }
    const int64_t l = f.param(array_shape(f.type, ld));
    const int64_t r = f.param(array_shape(f.type, rd));
    const int64_t d = f.b.dot(l, r);
    return f.bias_act(d, static_cast<int64_t>(ld.size()) - 1);
}

std::vector<int64_t> random_dims(Rng& rng) {
    const int64_t rank = 2 + static_cast<int64_t>(rng.uniform_int(3));
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < rank; ++i)
        dims.push_back(i + 1 == rank ? pick<int64_t>(rng, {128, 256, 512, 1024, 3})
                                     : pick<int64_t>(rng, {2, 8, 16, 26, 32, 64, 128}));
    return dims;
}

int64_t loop_kernel(Fused& f) {
    const auto dims = random_dims(f.rng);
    const hlo::Shape full = maybe_permuted(f.rng, array_shape(f.type, dims), 0.3);
    int64_t x = f.param(full);
    const int64_t inputs = 1 + static_cast<int64_t>(f.rng.uniform_int(3));
    for (int64_t i = 0; i < inputs; ++i) {
        int64_t y;
        if (f.rng.uniform() < 0.5) {
            y = f.param(full);
        } else {  // a per-feature vector broadcast along the last dim
            y = f.param(array_shape(f.type, {dims.back()}));
            y = f.b.broadcast(y, dims, {static_cast<int64_t>(dims.size()) - 1});
        }
        x = f.b.binary(pick<const char*>(f.rng, {"add", "multiply", "subtract", "maximum"}), x, y);
    }
    if (f.rng.uniform() < 0.5) {  // x > 0 ? x : 0.1 x
        const int64_t pos = f.b.compare(x, f.splat(0, dims));
        x = f.b.select(pos, x, f.b.binary("multiply", x, f.splat(0.1, dims)));
    }
    return x;
}

int64_t reduce_kernel(Fused& f) {
    auto dims = random_dims(f.rng);
    const int64_t x = f.param(maybe_permuted(f.rng, array_shape(et::kF32, dims), 0.3));
    const int64_t sq = f.b.binary("multiply", x, x);
    const auto rank = static_cast<int64_t>(dims.size());
    std::vector<int64_t> red;
    if (f.rng.uniform() < 0.6) {
        red = {rank - 1};  // over the minor (lane) dim: softmax/layer-norm statistics
    } else {
        for (int64_t d = 0; d + 1 < rank; ++d) red.push_back(d);  // batch-norm style
    }
    const bool use_max = f.rng.uniform() < 0.3;
    const int64_t reducer = f.b.reducer(use_max ? "maximum" : "add", et::kF32);
    return f.b.reduce(use_max ? x : sq, f.b.constant(et::kF32, use_max ? -1e30 : 0.0), red,
                      reducer);
}

}  // namespace

hlo::HloModule make_tile_module(Rng& rng, KernelKind kind, int64_t target_nodes,
                                const std::string& name) {
    ModuleBuilder b(name);
    Fused f{b, rng, rng.uniform() < 0.6 ? et::kBF16 : et::kF32, {}};
    b.open("fused_computation", /*fusion=*/true);
    int64_t root = 0;
    const char* fusion_kind = "kLoop";
    switch (kind) {
        case KernelKind::kConvolution:
            root = conv_kernel(f);
            fusion_kind = "kOutput";
            break;
        case KernelKind::kDot:
            root = dot_kernel(f);
            fusion_kind = "kOutput";
            break;
        case KernelKind::kLoop:
            root = loop_kernel(f);
            break;
        case KernelKind::kReduce:
            root = reduce_kernel(f);
            break;
    }
    // Pad the fused body with elementwise ops (mixing in earlier values, a DAG rather than a chain)
    // until the module (entry parameters + fusion included) reaches target_nodes.
    const int64_t entry_nodes = static_cast<int64_t>(f.inputs.size()) + 1;
    std::vector<int64_t> values = {root};
    const char* kUnary[] = {"negate", "tanh", "exponential", "abs", "rsqrt", "logistic"};
    const char* kBinary[] = {"add", "multiply", "maximum", "subtract"};
    while (b.num_instructions() + entry_nodes < target_nodes) {
        const int64_t prev = values[rng.uniform_int(values.size())];
        if (b.num_instructions() + entry_nodes + 1 < target_nodes && rng.uniform() < 0.4)
            root = b.binary(kBinary[rng.uniform_int(4)], root, prev);
        else
            root = b.unary(kUnary[rng.uniform_int(6)], root);
        values.push_back(root);
    }
    const int64_t fused = b.close(root);
    b.open(name);
    std::vector<int64_t> params;
    for (size_t i = 0; i < f.inputs.size(); ++i)
        params.push_back(b.parameter(f.inputs[i], static_cast<int64_t>(i)));
    return b.finish(b.fusion(params, fused, fusion_kind));
}

}  // namespace segrank::synth
