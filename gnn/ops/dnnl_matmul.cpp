// The only oneDNN includer (docs/architecture.md#third-party-libraries, docs/model.md#kernels): one
// CPU engine + stream, and a primitive cache keyed by {transposes, accumulate, bias, fixed dims,
// leading dims}. The row dimension is a runtime dim (DNNL_RUNTIME_DIM_VAL) so one primitive serves
// every segment size: M for forward/dX products, K (the reduction over rows) for weight-gradient
// products A^T B. dnnl::error -> segrank::Error (dnnl_out_of_memory -> std::bad_alloc).
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <new>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "gnn/core/address_space.h"
#include "gnn/core/parallel.h"
#include "gnn/ops/matmul.h"

namespace segrank::detail {

namespace {

using dnnl::memory;
constexpr int64_t kRt = DNNL_RUNTIME_DIM_VAL;

struct Key {
    bool trans_a, trans_b, accumulate, bias;
    int64_t m, k, n;  // kRt where the dim is a runtime dim
    int64_t lda, ldb, ldc;
    bool bf16 = false;  // bf16 A and B (packed, so lda / ldb are the stored row lengths)
    auto tie() const {
        return std::tie(trans_a, trans_b, accumulate, bias, m, k, n, lda, ldb, ldc, bf16);
    }
    bool operator<(const Key& o) const { return tie() < o.tie(); }
};

memory::desc md(int64_t rows, int64_t cols, bool trans, int64_t ld,
                memory::data_type type = memory::data_type::f32) {
    // A logical [rows, cols] operand stored row-major, or stored transposed ([cols, rows]
    // row-major).
    const memory::dims strides = trans ? memory::dims{1, ld} : memory::dims{ld, 1};
    return memory::desc({rows, cols}, type, strides);
}

class DnnlContext {
public:
    DnnlContext() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}
    const dnnl::engine& engine() const { return engine_; }
    dnnl::stream& stream() { return stream_; }

    dnnl::matmul& get(const Key& key) {
        auto it = cache_.find(key);
        if (it != cache_.end()) return it->second;
        // A new primitive: oneDNN maps its JIT code buffers (unchecked) at creation and first run.
        check_matmul_headroom(0);
        if (cache_.size() >= kCapacity) cache_.clear();  // bounded; shapes of one model are few
        dnnl::primitive_attr attr;
        if (key.accumulate) {
            dnnl::post_ops ops;
            ops.append_sum(1.0f);
            attr.set_post_ops(ops);
        }
        const auto in_type = key.bf16 ? memory::data_type::bf16 : memory::data_type::f32;
        const memory::desc a = md(key.m, key.k, key.trans_a, key.lda, in_type);
        const memory::desc b = md(key.k, key.n, key.trans_b, key.ldb, in_type);
        const memory::desc c = md(key.m, key.n, false, key.ldc);
        std::unique_ptr<dnnl::matmul::desc> desc;
        if (key.bias) {
            const memory::desc bias({1, key.n}, memory::data_type::f32, memory::dims{key.n, 1});
            desc = std::make_unique<dnnl::matmul::desc>(a, b, bias, c);
        } else {
            desc = std::make_unique<dnnl::matmul::desc>(a, b, c);
        }
        dnnl::matmul::primitive_desc pd(*desc, attr, engine_);
        return cache_.emplace(key, dnnl::matmul(pd)).first->second;
    }
    int64_t size() const { return static_cast<int64_t>(cache_.size()); }

private:
    static constexpr size_t kCapacity = 256;
    dnnl::engine engine_;
    dnnl::stream stream_;
    std::map<Key, dnnl::matmul> cache_;
};

DnnlContext& context() {
    // Created on first use by the compute thread; all calls come from that thread (scratchpad
    // rule).
    static DnnlContext ctx;
    return ctx;
}

// Runs `prim` on A, B, C and the optional fp32 bias [n], and waits for it.
void execute(DnnlContext& ctx, dnnl::matmul& prim, const memory& am, const memory& bm,
             const memory& cm, const float* bias, int64_t n) {
    std::unordered_map<int, memory> exec_args{
        {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
    if (bias) {
        memory biasm(memory::desc({1, n}, memory::data_type::f32, memory::dims{n, 1}), ctx.engine(),
                     const_cast<float*>(bias));
        exec_args.emplace(DNNL_ARG_BIAS, biasm);
    }
    prim.execute(ctx.stream(), exec_args);
    ctx.stream().wait();
}

// oneDNN's dnnl_out_of_memory (a buffer, scratchpad or JIT code buffer it could not get) is a
// failed allocation like any other: std::bad_alloc, which the callers turn into "out of memory
// while training on graph ..." naming the graph and the settings (data/graph_memory.h).
void throw_if_out_of_memory(const dnnl::error& e) {
    if (e.status == dnnl_out_of_memory) throw std::bad_alloc();
}

}  // namespace

void dnnl_matmul(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args,
                 int64_t m, int64_t k, int64_t n) {
    try {
        DnnlContext& ctx = context();
        Key key{args.trans_a, args.trans_b, args.accumulate, args.bias != nullptr,
                // The row count of the activations is the runtime dim: M normally, K for A^T B.
                args.trans_a ? m : kRt, args.trans_a ? kRt : k, n, a.stride, b.stride, c.stride};
        dnnl::matmul& prim = ctx.get(key);
        const auto& eng = ctx.engine();
        memory am(md(m, k, args.trans_a, a.stride), eng, const_cast<float*>(a.data));
        memory bm(md(k, n, args.trans_b, b.stride), eng, const_cast<float*>(b.data));
        memory cm(md(m, n, false, c.stride), eng, c.data);
        execute(ctx, prim, am, bm, cm, args.bias, n);
    } catch (const dnnl::error& e) {
        throw_if_out_of_memory(e);
        throw Error(str("oneDNN matmul failed (status ", static_cast<int>(e.status), ": ", e.what(),
                        ") for C[", c.rows, ",", c.cols, "] ld ", c.stride, " = A",
                        args.trans_a ? "^T" : "", "[", a.rows, ",", a.cols, "] ld ", a.stride,
                        " x B", args.trans_b ? "^T" : "", "[", b.rows, ",", b.cols, "] ld ",
                        b.stride, args.accumulate ? " (accumulate)" : "",
                        args.bias ? " + bias" : ""));
    }
}

int64_t dnnl_cache_size() { return context().size(); }

bool dnnl_bf16_native() {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto need = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & need) == need;
}

void dnnl_matmul_bf16(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args,
                      int64_t m, int64_t k, int64_t n, const uint16_t* a_bits,
                      const uint16_t* b_bits) {
    // Reused between calls (all calls come from the compute thread).
    static std::vector<uint16_t> abuf, bbuf;
    try {
        if (!a_bits) {
            abuf.resize(static_cast<size_t>(a.rows * a.cols));
            pack_bf16(a, abuf.data());
            a_bits = abuf.data();
        }
        if (!b_bits) {
            bbuf.resize(static_cast<size_t>(b.rows * b.cols));
            pack_bf16(b, bbuf.data());
            b_bits = bbuf.data();
        }
        DnnlContext& ctx = context();
        Key key{args.trans_a,
                args.trans_b,
                args.accumulate,
                args.bias != nullptr,
                args.trans_a ? m : kRt,
                args.trans_a ? kRt : k,
                n,
                a.cols,
                b.cols,
                c.stride,
                true};
        dnnl::matmul& prim = ctx.get(key);
        const auto& eng = ctx.engine();
        const auto bf16 = memory::data_type::bf16;
        memory am(md(m, k, args.trans_a, a.cols, bf16), eng, const_cast<uint16_t*>(a_bits));
        memory bm(md(k, n, args.trans_b, b.cols, bf16), eng, const_cast<uint16_t*>(b_bits));
        memory cm(md(m, n, false, c.stride), eng, c.data);
        execute(ctx, prim, am, bm, cm, args.bias, n);
    } catch (const dnnl::error& e) {
        throw_if_out_of_memory(e);
        throw Error(str("oneDNN bf16 matmul failed (status ", static_cast<int>(e.status), ": ",
                        e.what(), ") for C[", c.rows, ",", c.cols, "] = A",
                        args.trans_a ? "^T" : "", "[", a.rows, ",", a.cols, "] x B",
                        args.trans_b ? "^T" : "", "[", b.rows, ",", b.cols, "]"));
    }
}

}  // namespace segrank::detail
