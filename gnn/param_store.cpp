// ParamStore arenas and seeded initialization.
#include "gnn/param_store.h"

#include <cmath>

#include "gnn/core/rng.h"

namespace segrank {

ParamId ParamStore::add(std::string name, int64_t rows, int64_t cols, bool decay, ParamInit init,
                        int64_t fan_in) {
    SEGRANK_CHECK(!finalized_, "ParamStore::add('", name, "') after finalize()");
    SEGRANK_CHECK(rows > 0 && cols > 0, "ParamStore::add('", name, "'): shape [", rows, ", ", cols,
                  "] must be positive");
    SEGRANK_CHECK(!find(name), "ParamStore::add: duplicate parameter name '", name, "'");
    SEGRANK_CHECK(fan_in > 0, "ParamStore::add('", name, "'): fan_in ", fan_in,
                  " must be positive");
    ParamRef r{std::move(name), total_, rows, cols, decay, init, fan_in};
    total_ += (r.size() + 15) / 16 * 16;
    refs_.push_back(std::move(r));
    return static_cast<ParamId>(refs_.size() - 1);
}

void ParamStore::finalize() {
    if (finalized_) return;
    try {
        values_ = Tensor(total_);
        grads_ = Tensor(total_);
    } catch (const std::bad_alloc&) {
        throw ParamArenaOutOfMemory(total_);
    }
    finalized_ = true;
}

void ParamStore::initialize(uint64_t seed) {
    finalize();
    for (const ParamRef& r : refs_) {
        Rng rng = Rng::derive(seed, 0, stream_id(r.name), "param_init");
        float* p = values_.data() + r.offset;
        const double bound = 1.0 / std::sqrt(static_cast<double>(r.fan_in));
        for (int64_t i = 0; i < r.size(); ++i) {
            switch (r.init) {
                case ParamInit::kZeros:
                    p[i] = 0.0f;
                    break;
                case ParamInit::kOnes:
                    p[i] = 1.0f;
                    break;
                case ParamInit::kUniformFanIn:
                    p[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * bound);
                    break;
                case ParamInit::kNormal:
                    p[i] = static_cast<float>(rng.normal());
                    break;
            }
        }
    }
    grads_.zero();
}

MatrixView ParamStore::value(ParamId id) {
    SEGRANK_ASSERT(finalized_);
    const ParamRef& r = ref(id);
    return {values_.data() + r.offset, r.rows, r.cols, r.cols};
}
ConstMatrixView ParamStore::value(ParamId id) const {
    SEGRANK_ASSERT(finalized_);
    const ParamRef& r = ref(id);
    return {values_.data() + r.offset, r.rows, r.cols, r.cols};
}
MatrixView ParamStore::grad(ParamId id) {
    SEGRANK_ASSERT(finalized_);
    const ParamRef& r = ref(id);
    return {grads_.data() + r.offset, r.rows, r.cols, r.cols};
}
ConstMatrixView ParamStore::grad(ParamId id) const {
    SEGRANK_ASSERT(finalized_);
    const ParamRef& r = ref(id);
    return {grads_.data() + r.offset, r.rows, r.cols, r.cols};
}

std::optional<ParamId> ParamStore::find(std::string_view name) const {
    for (size_t i = 0; i < refs_.size(); ++i)
        if (refs_[i].name == name) return static_cast<ParamId>(i);
    return std::nullopt;
}

int64_t ParamStore::num_parameters() const {
    int64_t n = 0;
    for (const ParamRef& r : refs_) n += r.size();
    return n;
}

}  // namespace segrank
