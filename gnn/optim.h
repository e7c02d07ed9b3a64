// AdamW over the ParamStore arenas, global-norm gradient clipping and learning-rate schedules
// (docs/model.md#optimizer: weight decay on weight matrices only).
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "gnn/core/enum_names.h"
#include "gnn/core/tensor.h"
#include "gnn/param_store.h"

namespace segrank {

/// AdamW hyper-parameters (torch defaults; weight_decay = optim.weight_decay).
struct AdamWConfig {
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
    float weight_decay = 0.01f;
};

/// Decoupled-weight-decay Adam (Loshchilov & Hutter; torch.optim.AdamW semantics):
/// p -= lr * wd * p (decay params only); m, v moments; p -= lr * m_hat / (sqrt(v_hat) + eps).
class AdamW {
public:
    /// Moments sized to the store's arena (zero). The store must be finalized.
    AdamW(const ParamStore& store, AdamWConfig cfg);
    /// One update with learning rate lr using store.grads(); increments step().
    void step(ParamStore& store, float lr);
    int64_t step_count() const { return step_; }
    /// Moment arenas (same layout as the parameter arena) for checkpoints.
    std::span<float> m() { return m_.span(); }
    std::span<float> v() { return v_.span(); }
    std::span<const float> m() const { return m_.span(); }
    std::span<const float> v() const { return v_.span(); }
    /// Restores the step counter (checkpoint load).
    void set_step_count(int64_t step) { step_ = step; }
    const AdamWConfig& config() const { return cfg_; }

private:
    AdamWConfig cfg_;
    Tensor m_;
    Tensor v_;
    int64_t step_ = 0;
};

/// L2 norm of the whole gradient arena (double accumulation).
double grad_norm(const ParamStore& store);
/// Scales the gradients so their global L2 norm is at most max_norm (no-op when max_norm <= 0).
/// Returns the norm before clipping.
double clip_grad_norm(ParamStore& store, double max_norm);

/// `optim.schedule`.
enum class LrScheduleKind { kConstant, kCosine };
/// Names: "constant", "cosine".
std::span<const EnumName<LrScheduleKind>> enum_names(LrScheduleKind);
/// Parses "constant" | "cosine"; throws segrank::Error listing both.
LrScheduleKind parse_lr_schedule(std::string_view s);
std::string_view to_string(LrScheduleKind k);

/// lr(step): constant, or linear warmup from 0 over warmup_steps then cosine decay to min_lr at
/// total_steps (held at min_lr afterwards). Steps count from 0.
struct LrSchedule {
    LrScheduleKind kind = LrScheduleKind::kConstant;
    double base_lr = 1e-3;
    int64_t warmup_steps = 0;
    int64_t total_steps = 1;
    double min_lr = 0.0;
    double at(int64_t step) const;
};

}  // namespace segrank
