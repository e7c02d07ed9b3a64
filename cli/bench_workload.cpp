// Bench workload: graph loading/normalization, segment cutting, timed training steps, kernel rates.
#include "cli/bench_workload.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "data/graph.h"
#include "data/npz.h"
#include "gnn/loss.h"
#include "gnn/ops/matmul.h"
#include "gnn/ops/spmm.h"
#include "util/median.h"

namespace segrank::bench {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// Induced subgraph on [lo, hi) with local ids.
BenchPart make_part(const Tensor& feat, const std::vector<int32_t>& opcode,
                    const std::vector<int64_t>& edges, const std::vector<int64_t>& config_ids,
                    int64_t lo, int64_t hi) {
    BenchPart p;
    const int64_t n = hi - lo, f = feat.cols();
    p.feat = Tensor(n, f);
    std::copy(feat.data() + lo * f, feat.data() + hi * f, p.feat.data());
    p.opcode.assign(opcode.begin() + lo, opcode.begin() + hi);
    std::vector<int32_t> u, v;
    for (size_t e = 0; e + 1 < edges.size(); e += 2)
        if (edges[e] >= lo && edges[e] < hi && edges[e + 1] >= lo && edges[e + 1] < hi) {
            u.push_back(static_cast<int32_t>(edges[e] - lo));
            v.push_back(static_cast<int32_t>(edges[e + 1] - lo));
        }
    p.graph = build_graph_csr(n, u, v);
    for (size_t j = 0; j < config_ids.size(); ++j)
        if (config_ids[j] >= lo && config_ids[j] < hi) {
            p.config_local.push_back(static_cast<int32_t>(config_ids[j] - lo));
            p.config_col.push_back(static_cast<int32_t>(j));
        }
    return p;
}

std::vector<int64_t> sample_configs(int64_t c, int64_t k, Rng& rng) {
    std::vector<int64_t> idx(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) idx[i] = i;
    for (int64_t i = 0; i < k; ++i)
        std::swap(idx[i],
                  idx[i + static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(c - i)))]);
    idx.resize(static_cast<size_t>(k));
    return idx;
}

// [K, nc_s, 18] values of the part's configurable nodes for the sampled configs.
std::vector<int8_t> part_values(const BenchGraph& g, const BenchPart& p,
                                const std::vector<int64_t>& configs) {
    const int64_t nc = g.num_config_nodes, ncs = static_cast<int64_t>(p.config_col.size());
    std::vector<int8_t> out(static_cast<size_t>(static_cast<int64_t>(configs.size()) * ncs * 18));
    for (size_t kk = 0; kk < configs.size(); ++kk)
        for (int64_t j = 0; j < ncs; ++j)
            std::copy_n(g.config_feat.data() + (configs[kk] * nc + p.config_col[j]) * 18, 18,
                        out.data() + (static_cast<int64_t>(kk) * ncs + j) * 18);
    return out;
}

SegmentInput input_of(const BenchPart& p, const std::vector<int8_t>& values, int64_t k) {
    SegmentInput in;
    in.node_feat = p.feat.cview();
    in.opcode = p.opcode;
    in.operands = &p.graph.operands;
    in.users = &p.graph.users;
    in.num_pooled = p.feat.rows();
    in.config_node_local = p.config_local;
    in.config_values = values;
    in.k = k;
    return in;
}

double hinge(const Tensor& scores, const BenchGraph& g, const std::vector<int64_t>& configs,
             std::vector<float>& dscores) {
    std::vector<double> s(configs.size()), t(configs.size()), ds(configs.size(), 0.0);
    for (size_t i = 0; i < configs.size(); ++i) {
        s[i] = scores[static_cast<int64_t>(i)];
        t[i] = static_cast<double>(g.runtime[configs[i]]);
    }
    const double loss = pairwise_hinge_loss(s, t, 0.1, ds);
    dscores.assign(ds.begin(), ds.end());
    return loss;
}

}  // namespace

BenchGraph load_bench_graph(const std::filesystem::path& npz, int64_t max_nodes) {
    SEGRANK_CHECK(max_nodes >= 1, "bench: --max-nodes = ", max_nodes, ", expected >= 1");
    {
        // A tile npz (config_feat, no node_config_feat) is said as such before the layout reader
        // would name its first missing key.
        const NpzReader z(npz);
        SEGRANK_CHECK(!z.contains("config_feat") || z.contains("node_config_feat"), npz.string(),
                      ": bench needs a layout graph (this is a tile npz: it holds 'config_feat', "
                      "not 'node_config_feat' and 'node_config_ids'); give a layout npz, e.g. one "
                      "of layout/xla/random/train/");
    }
    LayoutGraph raw = load_layout_npz(npz, LabelPolicy::kRequirePositive);
    const int64_t n = raw.num_nodes(), f = raw.node_feat.cols();
    // Normalization (not timed): drop constant columns, signed log, population z-score in double.
    std::vector<int64_t> keep;
    for (int64_t c = 0; c < f; ++c) {
        float lo = raw.node_feat.at(0, c), hi = lo;
        for (int64_t v = 1; v < n; ++v)
            lo = std::min(lo, raw.node_feat.at(v, c)), hi = std::max(hi, raw.node_feat.at(v, c));
        if (hi != lo) keep.push_back(c);
    }
    Tensor feat(n, static_cast<int64_t>(keep.size()));
    for (size_t j = 0; j < keep.size(); ++j) {
        double sum = 0, sq = 0;
        std::vector<double> col(static_cast<size_t>(n));
        for (int64_t v = 0; v < n; ++v) {
            const double x = raw.node_feat.at(v, keep[j]);
            col[v] = std::copysign(std::log1p(std::abs(x)), x);
            sum += col[v];
        }
        const double mean = sum / static_cast<double>(n);
        for (int64_t v = 0; v < n; ++v) sq += (col[v] - mean) * (col[v] - mean);
        const double sd = std::sqrt(sq / static_cast<double>(n));
        for (int64_t v = 0; v < n; ++v)
            feat.at(v, static_cast<int64_t>(j)) =
                static_cast<float>(sd > 0 ? (col[v] - mean) / sd : 0.0);
    }
    BenchGraph g;
    g.num_configs = raw.num_configs();
    g.num_config_nodes = raw.num_config_nodes();
    g.num_edges = raw.num_edges();
    g.config_feat = std::move(raw.node_config_feat);
    g.runtime = std::move(raw.config_runtime);
    g.full = make_part(feat, raw.node_opcode, raw.edge_index, raw.node_config_ids, 0, n);
    const int64_t s = (n + max_nodes - 1) / max_nodes;
    for (int64_t i = 0; i < s; ++i)
        g.segments.push_back(make_part(feat, raw.node_opcode, raw.edge_index, raw.node_config_ids,
                                       i * n / s, (i + 1) * n / s));
    return g;
}

StepTimes full_graph_step(Model& model, AdamW& opt, const BenchGraph& g, int64_t k, Rng& rng) {
    StepTimes t;
    const auto t0 = Clock::now();
    const auto configs = sample_configs(g.num_configs, k, rng);
    const auto values = part_values(g, g.full, configs);
    model.params().zero_grads();
    const SegmentInput in = input_of(g.full, values, k);
    EncodeSaved es;
    HeadSaved hs;
    Tensor r = model.encode(in, &es, true, &rng);
    Tensor s = model.head(r.cview(), {}, &hs);
    std::vector<float> ds;
    t.loss = hinge(s, g, configs, ds);
    Tensor dr(r.rows(), r.cols());
    model.head_backward(ds, hs, dr.view());
    model.encode_backward(dr.cview(), es);
    t.fresh_s = seconds_since(t0);
    const auto t1 = Clock::now();
    clip_grad_norm(model.params(), 1.0);
    opt.step(model.params(), 1e-3f);
    t.optimizer_s = seconds_since(t1);
    t.total_s = seconds_since(t0);
    return t;
}

StepTimes segment_step(Model& model, AdamW& opt, const BenchGraph& g, int64_t k, Rng& rng) {
    StepTimes t;
    const auto t0 = Clock::now();
    const auto configs = sample_configs(g.num_configs, k, rng);
    const int64_t nseg = static_cast<int64_t>(g.segments.size());
    const int64_t fresh = static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(nseg)));
    Tensor total(k);
    for (int64_t s = 0; s < nseg; ++s) {
        if (s == fresh) continue;
        const BenchPart& p = g.segments[s];
        const auto values = part_values(g, p, configs);
        const SegmentInput in = input_of(p, values, k);
        // Under a ranking loss a config-independent segment adds the same constant to every config.
        if (model.config().exploit_independence && !model.segment_depends_on_config(in)) {
            ++t.skipped_segments;
            continue;
        }
        Tensor r = model.encode(in, nullptr);
        Tensor sc = model.head(r.cview(), {}, nullptr);
        for (int64_t i = 0; i < k; ++i) total[i] += sc[i];
        ++t.stale_forwards;
    }
    t.stale_s = seconds_since(t0);
    const auto t1 = Clock::now();
    model.params().zero_grads();
    const BenchPart& p = g.segments[fresh];
    const auto values = part_values(g, p, configs);
    const SegmentInput in = input_of(p, values, k);
    EncodeSaved es;
    HeadSaved hs;
    Tensor r = model.encode(in, &es, true, &rng);
    Tensor sc = model.head(r.cview(), {}, &hs);
    for (int64_t i = 0; i < k; ++i) total[i] += sc[i];
    std::vector<float> ds;
    t.loss = hinge(total, g, configs, ds);
    Tensor dr(r.rows(), r.cols());
    model.head_backward(ds, hs, dr.view());
    model.encode_backward(dr.cview(), es);
    t.fresh_s = seconds_since(t1);
    const auto t2 = Clock::now();
    clip_grad_norm(model.params(), 1.0);
    opt.step(model.params(), 1e-3f);
    t.optimizer_s = seconds_since(t2);
    t.total_s = seconds_since(t0);
    return t;
}

GemmRate measure_gemm(int64_t m, int64_t kd, int64_t n, int reps) {
    Rng rng(1);
    Tensor x(m, kd), w(n, kd), y(m, n), dw(n, kd);
    for (int64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rng.normal());
    for (int64_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(rng.normal());
    std::vector<double> fwd, wgrad;
    linear_forward(y.view(), x.cview(), w.cview(), nullptr);  // warm the primitive cache
    for (int r = 0; r < reps; ++r) {
        auto t0 = Clock::now();
        linear_forward(y.view(), x.cview(), w.cview(), nullptr);
        fwd.push_back(seconds_since(t0));
        t0 = Clock::now();
        linear_backward(MatrixView{}, dw.view(), nullptr, y.cview(), x.cview(), w.cview());
        wgrad.push_back(seconds_since(t0));
    }
    const double flops =
        2.0 * static_cast<double>(m) * static_cast<double>(kd) * static_cast<double>(n);
    return {flops / median(fwd) * 1e-9, flops / median(wgrad) * 1e-9};
}

double measure_spmm_gbps(const Csr& adj, int64_t width, int reps) {
    Tensor x(adj.num_cols(), width), out(adj.num_rows(), width);
    x.fill(1.0f);
    std::vector<double> times;
    spmm_forward(out.view(), adj, x.cview(), Reduce::kMean);
    for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        spmm_forward(out.view(), adj, x.cview(), Reduce::kMean);
        times.push_back(seconds_since(t0));
    }
    const double bytes =
        4.0 * static_cast<double>(width) * static_cast<double>(adj.nnz() + adj.num_rows());
    return bytes / median(times) * 1e-9;
}

}  // namespace segrank::bench
