// Copies decoded tuning_min.proto messages into the HLO module model (docs/files.md#messages).
#include "data/hlo/proto_convert.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "gnn/core/check.h"
#include "util/json.h"

namespace segrank::hlo {
namespace {

// known_trip_count.n of XLA's WhileLoopBackendConfig, serialized as proto3 JSON (int64 as a string,
// `{"known_trip_count":{"n":"8"}}`; a number is accepted too). A backend config that is not JSON or
// has no count is no count: backend configs are free-form, the trip count then comes from the
// pattern match (docs/hwmodel.md#trip-counts).
std::optional<int64_t> known_trip_count(const std::string& backend_config) {
    if (backend_config.empty() || backend_config.front() != '{') return std::nullopt;
    Json doc;
    try {
        doc = read_json(backend_config, "backend_config");
    } catch (const Error&) {
        return std::nullopt;
    }
    if (!doc.is_object() || !doc.contains("known_trip_count")) return std::nullopt;
    const Json& k = doc["known_trip_count"];
    if (!k.is_object() || !k.contains("n")) return std::nullopt;
    const Json& n = k["n"];
    int64_t v = 0;
    if (n.is_number_integer()) {
        v = n.get<int64_t>();
    } else if (n.is_string()) {
        const std::string t = n.get<std::string>();
        if (t.empty() || t.size() > 18 || t.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        v = std::stoll(t);
    } else {
        return std::nullopt;
    }
    if (v < 1) return std::nullopt;
    return v;
}

template <typename R>
std::vector<int64_t> to_vec(const R& r) {
    return std::vector<int64_t>(r.begin(), r.end());
}

float bf16_to_float(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float f16_to_float(uint16_t h) {
    const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    float mag;
    if (exp == 0)
        mag = std::ldexp(static_cast<float>(mant), -24);
    else if (exp == 31)
        mag =
            mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    else
        mag = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
    return sign ? -mag : mag;
}

uint16_t le16(const std::string& b) {
    return static_cast<uint16_t>(static_cast<uint8_t>(b[0]) | (static_cast<uint8_t>(b[1]) << 8));
}

Shape to_shape(const pb::ShapeProto& s) {
    Shape out;
    out.element_type = s.element_type();
    out.dims = to_vec(s.dimensions());
    out.tuple_shapes.reserve(static_cast<size_t>(s.tuple_shapes_size()));
    for (const auto& t : s.tuple_shapes()) out.tuple_shapes.push_back(to_shape(t));
    out.has_layout = s.has_layout();
    out.minor_to_major = to_vec(s.layout().minor_to_major());
    return out;
}

// The single value of a scalar literal, if the literal is a scalar of a numeric or PRED type.
std::optional<double> scalar_value(const pb::LiteralProto& lit) {
    const pb::ShapeProto& s = lit.shape();
    if (s.dimensions_size() != 0 || s.element_type() == element_type::kTuple) return std::nullopt;
    if (lit.preds_size() == 1) return lit.preds(0) ? 1.0 : 0.0;
    if (lit.s32s_size() == 1) return lit.s32s(0);
    if (lit.s64s_size() == 1) return static_cast<double>(lit.s64s(0));
    if (lit.u32s_size() == 1) return lit.u32s(0);
    if (lit.u64s_size() == 1) return static_cast<double>(lit.u64s(0));
    if (lit.f32s_size() == 1) return lit.f32s(0);
    if (lit.f64s_size() == 1) return lit.f64s(0);
    if (lit.u8s().size() == 1) return static_cast<uint8_t>(lit.u8s()[0]);
    if (lit.s8s().size() == 1) return static_cast<int8_t>(lit.s8s()[0]);
    if (lit.u16s().size() == 2) return le16(lit.u16s());
    if (lit.s16s().size() == 2) return static_cast<int16_t>(le16(lit.s16s()));
    if (lit.bf16s().size() == 2) return bf16_to_float(le16(lit.bf16s()));
    if (lit.f16s().size() == 2) return f16_to_float(le16(lit.f16s()));
    return std::nullopt;
}

Instruction to_instruction(const pb::HloInstructionProto& p) {
    Instruction ins;
    ins.id = p.id();
    ins.name = p.name();
    ins.opcode = p.opcode();
    ins.shape = to_shape(p.shape());
    ins.operand_ids = to_vec(p.operand_ids());
    ins.called_computation_ids = to_vec(p.called_computation_ids());
    ins.dimensions = to_vec(p.dimensions());
    for (const auto& w : p.window().dimensions())
        ins.window.push_back({w.size(), w.stride(), w.padding_low(), w.padding_high(),
                              w.window_dilation(), w.base_dilation(), w.window_reversal()});
    ins.has_convolution_dimension_numbers = p.has_convolution_dimension_numbers();
    const auto& c = p.convolution_dimension_numbers();
    auto& d = ins.convolution_dimension_numbers;
    d.input_batch_dimension = c.input_batch_dimension();
    d.input_feature_dimension = c.input_feature_dimension();
    d.input_spatial_dimensions = to_vec(c.input_spatial_dimensions());
    d.kernel_input_feature_dimension = c.kernel_input_feature_dimension();
    d.kernel_output_feature_dimension = c.kernel_output_feature_dimension();
    d.kernel_spatial_dimensions = to_vec(c.kernel_spatial_dimensions());
    d.output_batch_dimension = c.output_batch_dimension();
    d.output_feature_dimension = c.output_feature_dimension();
    d.output_spatial_dimensions = to_vec(c.output_spatial_dimensions());
    for (const auto& s : p.slice_dimensions())
        ins.slice_dimensions.push_back({s.start(), s.limit(), s.stride()});
    ins.dynamic_slice_sizes = to_vec(p.dynamic_slice_sizes());
    for (const auto& pd : p.padding_config().dimensions())
        ins.padding_config.push_back(
            {pd.edge_padding_low(), pd.edge_padding_high(), pd.interior_padding()});
    ins.parameter_number = p.parameter_number();
    ins.feature_group_count = p.feature_group_count();
    ins.batch_group_count = p.batch_group_count();
    ins.is_stable = p.is_stable();
    ins.fusion_kind = p.fusion_kind();
    ins.tuple_index = p.tuple_index();
    if (p.opcode() == "constant" && p.has_literal())
        ins.scalar_constant = scalar_value(p.literal());
    if (p.opcode() == "while") ins.known_trip_count = known_trip_count(p.backend_config());
    return ins;
}

Run to_run(const pb::ConfigProfile& p) {
    Run r;
    switch (p.config_case()) {
        case pb::ConfigProfile::kOpConfig: {
            r.kind = Task::kTile;
            r.has_tile_size_config = p.op_config().has_tile_size_config();
            const auto& t = p.op_config().tile_size_config();
            r.tile = {to_vec(t.kernel_bounds()), to_vec(t.output_bounds()),
                      to_vec(t.input_bounds()), to_vec(t.iteration_bounds())};
            break;
        }
        case pb::ConfigProfile::kModuleConfig: {
            r.kind = Task::kLayout;
            for (const auto& node : p.module_config().layout_config().nodes()) {
                NodeLayoutConfig nl;
                for (const auto& t : node.tensors())
                    nl.tensors.emplace_back(t.dims().begin(), t.dims().end());
                r.layout.push_back(std::move(nl));
            }
            break;
        }
        default:
            r.kind = std::nullopt;
    }
    r.error = p.error();
    r.has_profile = p.has_profile();
    r.compute_time_ns = p.profile().compute_time_ns();
    r.is_default = p.is_default();
    return r;
}

}  // namespace

HloModule from_proto(const pb::HloModuleProto& msg) {
    HloModule m;
    m.name = msg.name();
    m.entry_computation_name = msg.entry_computation_name();
    m.id = msg.id();
    m.entry_computation_id = msg.entry_computation_id();
    m.computations.reserve(static_cast<size_t>(msg.computations_size()));
    for (const auto& c : msg.computations()) {
        Computation comp;
        comp.id = c.id();
        comp.name = c.name();
        comp.root_id = c.root_id();
        comp.is_fusion_computation = c.is_fusion_computation();
        comp.instructions.reserve(static_cast<size_t>(c.instructions_size()));
        for (const auto& i : c.instructions()) comp.instructions.push_back(to_instruction(i));
        m.computations.push_back(std::move(comp));
    }
    return m;
}

ModuleTuning from_proto(const pb::ModuleTuningData& msg) {
    ModuleTuning mt;
    mt.has_module = msg.has_module();
    mt.module = from_proto(msg.module());
    mt.fingerprint = msg.fingerprint();
    for (const auto& r : msg.runs()) mt.runs.push_back(to_run(r));
    mt.config_index_to_node.assign(msg.config_index_to_node().begin(),
                                   msg.config_index_to_node().end());
    return mt;
}

}  // namespace segrank::hlo
