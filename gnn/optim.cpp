// AdamW, clipping and schedules over the flat arenas.
#include "gnn/optim.h"

#include <cmath>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"

namespace segrank {

AdamW::AdamW(const ParamStore& store, AdamWConfig cfg)
    : cfg_(cfg), m_(store.total_size()), v_(store.total_size()) {
    SEGRANK_CHECK(store.finalized(), "AdamW: the ParamStore must be finalized first");
}

void AdamW::step(ParamStore& store, float lr) {
    const OpScope op_scope(OpCategory::kOptimizer);
    SEGRANK_CHECK(static_cast<int64_t>(m_.size()) == store.total_size(),
                  "AdamW: arena size changed");
    ++step_;
    const double bc1 = 1.0 - std::pow(static_cast<double>(cfg_.beta1), static_cast<double>(step_));
    const double bc2 = 1.0 - std::pow(static_cast<double>(cfg_.beta2), static_cast<double>(step_));
    float* p = store.values().data();
    const float* g = store.grads().data();
    float* m = m_.data();
    float* v = v_.data();
    const float b1 = cfg_.beta1, b2 = cfg_.beta2, eps = cfg_.eps;
    const float step_size = static_cast<float>(lr / bc1);
    const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    for (const ParamRef& r : store.refs()) {
        const float decay = r.decay ? 1.0f - lr * cfg_.weight_decay : 1.0f;
        for (int64_t i = r.offset; i < r.offset + r.size(); ++i) {
            p[i] *= decay;
            m[i] = b1 * m[i] + (1.0f - b1) * g[i];
            v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
            p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
        }
    }
}

double grad_norm(const ParamStore& store) {
    double s = 0.0;
    for (float x : store.grads()) s += static_cast<double>(x) * x;
    return std::sqrt(s);
}

double clip_grad_norm(ParamStore& store, double max_norm) {
    const OpScope op_scope(OpCategory::kOptimizer);
    const double norm = grad_norm(store);
    if (max_norm > 0.0 && norm > max_norm) {
        const float scale = static_cast<float>(max_norm / (norm + 1e-6));
        for (float& x : store.grads()) x *= scale;
    }
    return norm;
}

namespace {
constexpr EnumName<LrScheduleKind> kLrScheduleNames[] = {{LrScheduleKind::kConstant, "constant"},
                                                         {LrScheduleKind::kCosine, "cosine"}};
}  // namespace

std::span<const EnumName<LrScheduleKind>> enum_names(LrScheduleKind) { return kLrScheduleNames; }
LrScheduleKind parse_lr_schedule(std::string_view s) {
    return parse_enum<LrScheduleKind>("lr schedule", s);
}
std::string_view to_string(LrScheduleKind k) { return enum_name(k); }

double LrSchedule::at(int64_t step) const {
    if (kind == LrScheduleKind::kConstant) return base_lr;
    if (warmup_steps > 0 && step < warmup_steps)
        return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    const int64_t span = std::max<int64_t>(1, total_steps - warmup_steps);
    const double t =
        std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(span));
    return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + std::cos(3.14159265358979323846 * t));
}

}  // namespace segrank
