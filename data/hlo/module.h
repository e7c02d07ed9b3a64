// In-memory HLO module model (docs/files.md#hlo-module-model): what the protobuf reader and the
// synthetic generator produce and what the featurizer (docs/files.md#node-features) and hwmodel
// consume. Plain aggregates; the field meanings and defaults follow XLA's protos
// (docs/files.md#messages): an absent scalar is 0.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gnn/core/task.h"

namespace segrank::hlo {

/// xla::PrimitiveType enum values (docs/files.md#messages). Stored as int32 so unknown/newer values
/// (F8E5M2 19, ...) survive reading; the featurizer maps them to an all-zero one-hot.
namespace element_type {
inline constexpr int32_t kInvalid = 0;
inline constexpr int32_t kPred = 1;
inline constexpr int32_t kS8 = 2;
inline constexpr int32_t kS16 = 3;
inline constexpr int32_t kS32 = 4;
inline constexpr int32_t kS64 = 5;
inline constexpr int32_t kU8 = 6;
inline constexpr int32_t kU16 = 7;
inline constexpr int32_t kU32 = 8;
inline constexpr int32_t kU64 = 9;
inline constexpr int32_t kF16 = 10;
inline constexpr int32_t kF32 = 11;
inline constexpr int32_t kF64 = 12;
inline constexpr int32_t kTuple = 13;
inline constexpr int32_t kOpaque = 14;
inline constexpr int32_t kC64 = 15;
inline constexpr int32_t kBF16 = 16;
inline constexpr int32_t kToken = 17;
inline constexpr int32_t kC128 = 18;
}  // namespace element_type

/// Bytes of one element of `type` (PRED = 1, BF16 = 2, C128 = 16, ...); 0 for TUPLE, OPAQUE,
/// TOKEN, INVALID and unknown values (they have no dense storage).
int64_t element_byte_size(int32_t type);

/// Lower-case XLA name of an element type ("bf16", "f32", "pred", "tuple", ...); "type<N>" if
/// unknown.
std::string element_type_name(int32_t type);

/// xla::ShapeProto subset. An array shape has `dims` (possibly empty: a scalar); a tuple shape has
/// element_type kTuple and `tuple_shapes`.
struct Shape {
    int32_t element_type = element_type::kInvalid;  ///< xla::PrimitiveType value
    std::vector<int64_t> dims;                      ///< logical dimension sizes (elements)
    std::vector<Shape> tuple_shapes;                ///< top-level elements of a tuple shape
    bool has_layout = false;                        ///< a LayoutProto was present
    std::vector<int64_t> minor_to_major;            ///< layout, most-minor dimension first

    bool is_tuple() const { return element_type == element_type::kTuple; }
    /// Product of dims (1 for a scalar); 0 for tuples/tokens. Overflow wraps like int64 arithmetic.
    int64_t num_elements() const;
    /// Dense array bytes: num_elements() * element_byte_size(); tuples sum their elements (bytes).
    int64_t byte_size() const;
};

/// xla::WindowDimension (window of reduce-window, convolution, select-and-scatter). Sizes in
/// elements.
struct WindowDimension {
    int64_t size = 0;
    int64_t stride = 0;
    int64_t padding_low = 0;
    int64_t padding_high = 0;
    int64_t window_dilation = 0;
    int64_t base_dilation = 0;
    bool window_reversal = false;
};

/// xla::ConvolutionDimensionNumbers: dimension *indices* into the operand/output shapes.
struct ConvolutionDimensionNumbers {
    int64_t input_batch_dimension = 0;
    int64_t input_feature_dimension = 0;
    std::vector<int64_t> input_spatial_dimensions;
    int64_t kernel_input_feature_dimension = 0;
    int64_t kernel_output_feature_dimension = 0;
    std::vector<int64_t> kernel_spatial_dimensions;
    int64_t output_batch_dimension = 0;
    int64_t output_feature_dimension = 0;
    std::vector<int64_t> output_spatial_dimensions;
};

/// xla::HloInstructionProto::SliceDimensions (elements).
struct SliceDimension {
    int64_t start = 0;
    int64_t limit = 0;
    int64_t stride = 0;
};

/// xla::PaddingConfig::PaddingConfigDimension (elements; may be negative).
struct PaddingDimension {
    int64_t edge_padding_low = 0;
    int64_t edge_padding_high = 0;
    int64_t interior_padding = 0;
};

/// One HLO instruction (xla::HloInstructionProto subset). Ids are unique across the module.
struct Instruction {
    int64_t id = 0;
    std::string name;
    std::string opcode;  ///< XLA opcode string, e.g. "convolution", "get-tuple-element"
    Shape shape;
    std::vector<int64_t> operand_ids;             ///< in operand order; duplicates are allowed
    std::vector<int64_t> called_computation_ids;  ///< fusion/while(cond, body)/reduce/... callees
    std::vector<int64_t> dimensions;              ///< broadcast/reduce/transpose/concat dimensions
    std::vector<WindowDimension> window;          ///< empty when the instruction has no window
    bool has_convolution_dimension_numbers = false;
    ConvolutionDimensionNumbers convolution_dimension_numbers;
    std::vector<SliceDimension> slice_dimensions;
    std::vector<int64_t> dynamic_slice_sizes;
    std::vector<PaddingDimension> padding_config;  ///< one entry per operand dimension (pad)
    int64_t parameter_number = 0;
    int64_t feature_group_count = 0;  ///< raw proto value: absent = 0 (not defaulted to 1)
    int64_t batch_group_count = 0;    ///< raw proto value: absent = 0
    bool is_stable = false;           ///< sort stability
    std::string fusion_kind;          ///< "kLoop", "kOutput", ... (informational)
    int64_t tuple_index = 0;          ///< get-tuple-element index
    /// Value of a constant whose literal is a scalar (numeric types and PRED), converted to double.
    std::optional<double> scalar_constant;
    /// A while's trip count as XLA recorded it when it could prove one: known_trip_count.n of the
    /// WhileLoopBackendConfig JSON in backend_config (docs/files.md#loop-trip-counts); nullopt
    /// for other opcodes, without a backend config, or when it holds no count >= 1.
    std::optional<int64_t> known_trip_count;
};

/// One HLO computation (xla::HloComputationProto subset). Instructions are stored operands-first.
struct Computation {
    int64_t id = 0;
    std::string name;
    int64_t root_id = 0;  ///< id of the root instruction (absent in proto = 0)
    bool is_fusion_computation = false;
    std::vector<Instruction> instructions;

    /// Index into `instructions` of the instruction with `id`, or nullopt.
    std::optional<size_t> find_instruction(int64_t id) const;
};

/// Position of an instruction inside a module: computation index and instruction index.
struct InstructionRef {
    size_t computation = 0;
    size_t instruction = 0;
};

/// A whole HLO module (xla::HloModuleProto subset). Computations are stored callees-first with the
/// entry last (XLA's order); the featurizer's node order is this storage order
/// (docs/files.md#node-order-and-edges).
struct HloModule {
    std::string name;
    std::string entry_computation_name;
    int64_t id = 0;
    int64_t entry_computation_id = 0;
    std::vector<Computation> computations;

    /// Total instructions over all computations (= node count of the featurized graph).
    int64_t num_instructions() const;
    /// Location of the instruction with `id` (any computation), or nullopt. Linear scan; for many
    /// lookups build a map once (the featurizer does).
    std::optional<InstructionRef> find_instruction(int64_t id) const;
    /// The instruction at `ref` (unchecked beyond SEGRANK_ASSERT).
    const Instruction& at(InstructionRef ref) const;
};

/// tpu_graphs TileSizeConfig: tile bounds of a kernel configuration (elements per dimension).
struct TileSizeConfig {
    std::vector<int64_t> kernel_bounds;
    std::vector<int64_t> output_bounds;
    std::vector<int64_t> input_bounds;
    std::vector<int64_t> iteration_bounds;  ///< not featurized
};

/// Layout of one configurable node: per tensor (t0 output, t1 input, t2 kernel) the chosen
/// minor_to_major dims; an empty list means "compiler default".
struct NodeLayoutConfig {
    std::vector<std::vector<int32_t>> tensors;
};

/// One measured configuration (tpu_graphs ConfigProfile).
struct Run {
    /// Which oneof of ConfigProfile.config the run carries: op_config (kTile), module_config
    /// (kLayout), or none.
    std::optional<Task> kind;
    TileSizeConfig tile;                ///< valid when kind == kTile (op_config.tile_size_config)
    bool has_tile_size_config = false;  ///< op_config carried a tile_size_config message
    std::vector<NodeLayoutConfig>
        layout;                   ///< valid when kind == kLayout; one per configurable node
    bool error = false;           ///< the compile/run failed; profile is then empty
    bool has_profile = false;     ///< an ExecutionProfile message was present
    int64_t compute_time_ns = 0;  ///< profile.compute_time_ns (nanoseconds)
    bool is_default = false;      ///< the compiler's default configuration
};

/// One tpu_graphs ModuleTuningData: a module, its measured runs and its configurable nodes.
struct ModuleTuning {
    bool has_module = false;
    HloModule module;
    uint64_t fingerprint = 0;
    std::vector<Run> runs;
    /// Node *indices* in the flattened node order (docs/files.md#messages), not instruction ids.
    std::vector<uint64_t> config_index_to_node;
};

}  // namespace segrank::hlo
