// ParamStore: every parameter of a model carved from one value arena and one gradient arena
// (docs/model.md#parameters-and-initialization, llm.c), so allreduce, the optimizer and checkpoints
// are one call over a flat buffer. Gradient contract: grads are zeroed once per optimizer step
// (zero_grads); every backward does +=.
#pragma once
#include <cstdint>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gnn/core/op_timer.h"
#include "gnn/core/tensor.h"

namespace segrank {

/// How a parameter is initialized (torch defaults, docs/model.md#parameters-and-initialization).
enum class ParamInit {
    kZeros,
    kOnes,
    kUniformFanIn,  ///< U(-1/sqrt(fan_in), 1/sqrt(fan_in)): torch Linear weight (Kaiming-uniform
                    ///< a=sqrt 5) and bias
    kNormal,        ///< N(0, 1): torch Embedding
};

/// One named parameter: a [rows, cols] block at `offset` floats in both arenas.
struct ParamRef {
    std::string name;  ///< e.g. "sage0.w_self"
    int64_t offset = 0;
    int64_t rows = 0;
    int64_t cols = 0;
    bool decay = false;  ///< AdamW weight decay applies (weight matrices only,
                         ///< docs/model.md#parameters-and-initialization)
    ParamInit init = ParamInit::kZeros;
    int64_t fan_in = 1;
    int64_t size() const { return rows * cols; }
};

/// Index of a parameter in its ParamStore.
using ParamId = int32_t;

/// The std::bad_alloc of ParamStore::finalize: carries the arena size (floats, padded; one arena
/// each for values and gradients) that could not be allocated, so a caller can name the model's
/// size and the settings it grows with.
class ParamArenaOutOfMemory : public std::bad_alloc {
public:
    explicit ParamArenaOutOfMemory(int64_t floats) : floats_(floats) {}
    /// Floats per arena.
    int64_t floats() const { return floats_; }
    const char* what() const noexcept override {
        return "out of memory while allocating the model's parameters";
    }

private:
    int64_t floats_;
};

/// Owns the value and gradient arenas. Parameters are declared with add(), then finalize()
/// allocates.
class ParamStore {
public:
    ParamStore() = default;
    ParamStore(const ParamStore&) = delete;
    ParamStore& operator=(const ParamStore&) = delete;
    ParamStore(ParamStore&&) noexcept = default;
    ParamStore& operator=(ParamStore&&) noexcept = default;

    /// Declares a [rows, cols] parameter. Throws segrank::Error on a duplicate name, a bad shape,
    /// or after finalize(). Offsets are padded to 16 floats (64 bytes).
    ParamId add(std::string name, int64_t rows, int64_t cols, bool decay, ParamInit init,
                int64_t fan_in = 1);
    /// Allocates both arenas (zero-filled). Idempotent. Throws ParamArenaOutOfMemory when an
    /// allocation fails.
    void finalize();
    /// Seeded initialization of every value (Rng stream per parameter name); zeroes grads.
    void initialize(uint64_t seed);

    bool finalized() const { return finalized_; }
    MatrixView value(ParamId id);
    ConstMatrixView value(ParamId id) const;
    MatrixView grad(ParamId id);
    ConstMatrixView grad(ParamId id) const;
    const ParamRef& ref(ParamId id) const { return refs_.at(static_cast<size_t>(id)); }
    const std::vector<ParamRef>& refs() const { return refs_; }
    std::optional<ParamId> find(std::string_view name) const;

    /// The whole arenas (including padding, which stays 0): [total_size()].
    std::span<float> values() { return values_.span(); }
    std::span<const float> values() const { return values_.span(); }
    std::span<float> grads() { return grads_.span(); }
    std::span<const float> grads() const { return grads_.span(); }
    int64_t total_size() const { return total_; }
    /// Sum of parameter sizes (without padding).
    int64_t num_parameters() const;
    void zero_grads() {
        const OpScope op_scope(OpCategory::kOptimizer);
        grads_.zero();
    }

private:
    std::vector<ParamRef> refs_;
    Tensor values_;
    Tensor grads_;
    int64_t total_ = 0;
    bool finalized_ = false;
};

}  // namespace segrank
