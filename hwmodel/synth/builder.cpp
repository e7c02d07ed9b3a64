// ModuleBuilder: valid HLO modules for the synthetic generator (XLA storage order and shapes).
#include "hwmodel/synth/builder.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "gnn/core/check.h"

namespace segrank::synth {

hlo::Shape array_shape(int32_t element_type, std::vector<int64_t> dims) {
    hlo::Shape s;
    s.element_type = element_type;
    s.has_layout = true;
    s.minor_to_major.resize(dims.size());
    for (size_t i = 0; i < dims.size(); ++i)
        s.minor_to_major[i] = static_cast<int64_t>(dims.size() - 1 - i);
    s.dims = std::move(dims);
    return s;
}

hlo::Shape tuple_shape(std::vector<hlo::Shape> elements) {
    hlo::Shape s;
    s.element_type = hlo::element_type::kTuple;
    s.tuple_shapes = std::move(elements);
    return s;
}

ModuleBuilder::ModuleBuilder(std::string module_name) {
    m_.name = std::move(module_name);
    ins_loc_.emplace_back();  // ids start at 1
    comp_loc_.emplace_back();
}

void ModuleBuilder::open(const std::string& name, bool fusion) {
    hlo::Computation c;
    c.id = next_comp_id_++;
    c.name = str(name, ".", c.id);
    c.is_fusion_computation = fusion;
    comp_loc_.push_back({true, open_.size()});
    open_.push_back(std::move(c));
}

int64_t ModuleBuilder::close(int64_t root_id) {
    SEGRANK_CHECK(!open_.empty(), "synth: close() without an open computation");
    hlo::Computation& c = open_.back();
    SEGRANK_CHECK(root_id > 0 && static_cast<size_t>(root_id) < ins_loc_.size() &&
                      ins_loc_[static_cast<size_t>(root_id)].comp == c.id,
                  "synth: root ", root_id, " is not an instruction of computation '", c.name, "'");
    c.root_id = root_id;
    const int64_t id = c.id;
    comp_loc_[static_cast<size_t>(id)] = {false, m_.computations.size()};
    m_.computations.push_back(std::move(c));
    open_.pop_back();
    return id;
}

hlo::HloModule ModuleBuilder::finish(int64_t root_id) {
    SEGRANK_CHECK(open_.size() == 1, "synth: finish() needs exactly the entry open, have ",
                  open_.size(), " open computations");
    const int64_t entry = close(root_id);
    m_.entry_computation_id = entry;
    m_.entry_computation_name = m_.computations.back().name;
    hlo::HloModule out = std::move(m_);
    m_ = hlo::HloModule{};
    open_.clear();
    ins_loc_.assign(1, InsLoc{});
    comp_loc_.assign(1, CompLoc{});
    next_id_ = next_comp_id_ = 1;
    count_ = 0;
    return out;
}

int64_t ModuleBuilder::add(hlo::Instruction ins) {
    SEGRANK_CHECK(!open_.empty(), "synth: add('", ins.opcode, "') without an open computation");
    hlo::Computation& c = open_.back();
    for (int64_t op : ins.operand_ids)
        SEGRANK_CHECK(op > 0 && op < next_id_ && ins_loc_[static_cast<size_t>(op)].comp == c.id,
                      "synth: operand ", op, " of '", ins.opcode, "' is not in computation '",
                      c.name, "'");
    for (int64_t cc : ins.called_computation_ids)
        SEGRANK_CHECK(cc > 0 && cc < next_comp_id_ && !comp_loc_[static_cast<size_t>(cc)].open,
                      "synth: callee ", cc, " of '", ins.opcode, "' is not a closed computation");
    ins.id = next_id_++;
    if (ins.name.empty()) ins.name = str(ins.opcode, ".", ins.id);
    ins_loc_.push_back({c.id, c.instructions.size()});
    c.instructions.push_back(std::move(ins));
    ++count_;
    return next_id_ - 1;
}

const hlo::Shape& ModuleBuilder::shape(int64_t id) const {
    SEGRANK_ASSERT(id > 0 && id < next_id_, "unknown instruction id ", id);
    const InsLoc& l = ins_loc_[static_cast<size_t>(id)];
    const CompLoc& cl = comp_loc_[static_cast<size_t>(l.comp)];
    const hlo::Computation& c = cl.open ? open_[cl.index] : m_.computations[cl.index];
    return c.instructions[l.index].shape;
}

namespace {
hlo::Instruction make(const std::string& opcode, hlo::Shape s, std::vector<int64_t> operands) {
    hlo::Instruction ins;
    ins.opcode = opcode;
    ins.shape = std::move(s);
    ins.operand_ids = std::move(operands);
    return ins;
}
}  // namespace

int64_t ModuleBuilder::parameter(const hlo::Shape& s, int64_t number) {
    auto ins = make("parameter", s, {});
    ins.parameter_number = number;
    return add(std::move(ins));
}

int64_t ModuleBuilder::constant(int32_t type, double v) {
    auto ins = make("constant", array_shape(type, {}), {});
    ins.scalar_constant = v;
    return add(std::move(ins));
}

int64_t ModuleBuilder::unary(const std::string& opcode, int64_t x) {
    return add(make(opcode, shape(x), {x}));
}

int64_t ModuleBuilder::binary(const std::string& opcode, int64_t a, int64_t b) {
    SEGRANK_CHECK(shape(a).dims == shape(b).dims, "synth: '", opcode, "' operands differ in dims");
    return add(make(opcode, shape(a), {a, b}));
}

int64_t ModuleBuilder::compare(int64_t a, int64_t b) {
    SEGRANK_CHECK(shape(a).dims == shape(b).dims, "synth: compare operands differ in dims");
    return add(make("compare", array_shape(hlo::element_type::kPred, shape(a).dims), {a, b}));
}

int64_t ModuleBuilder::select(int64_t pred, int64_t a, int64_t b) {
    SEGRANK_CHECK(shape(a).dims == shape(b).dims && shape(pred).dims == shape(a).dims,
                  "synth: select operands differ in dims");
    return add(make("select", shape(a), {pred, a, b}));
}

int64_t ModuleBuilder::convert(int64_t x, int32_t type) {
    hlo::Shape s = shape(x);
    s.element_type = type;
    return add(make("convert", std::move(s), {x}));
}

int64_t ModuleBuilder::broadcast(int64_t x, std::vector<int64_t> dims,
                                 std::vector<int64_t> mapping) {
    const hlo::Shape& in = shape(x);
    SEGRANK_CHECK(mapping.size() == in.dims.size(), "synth: broadcast mapping rank mismatch");
    for (size_t i = 0; i < mapping.size(); ++i)
        SEGRANK_CHECK(mapping[i] >= 0 && mapping[i] < static_cast<int64_t>(dims.size()) &&
                          dims[static_cast<size_t>(mapping[i])] == in.dims[i] &&
                          (i == 0 || mapping[i] > mapping[i - 1]),
                      "synth: bad broadcast mapping");
    auto ins = make("broadcast", array_shape(in.element_type, std::move(dims)), {x});
    ins.dimensions = std::move(mapping);
    return add(std::move(ins));
}

int64_t ModuleBuilder::reduce(int64_t x, int64_t init, std::vector<int64_t> dims, int64_t reducer) {
    const hlo::Shape& in = shape(x);
    std::sort(dims.begin(), dims.end());
    std::vector<int64_t> out;
    for (size_t d = 0; d < in.dims.size(); ++d)
        if (!std::binary_search(dims.begin(), dims.end(), static_cast<int64_t>(d)))
            out.push_back(in.dims[d]);
    auto ins = make("reduce", array_shape(in.element_type, std::move(out)), {x, init});
    ins.dimensions = std::move(dims);
    ins.called_computation_ids = {reducer};
    return add(std::move(ins));
}

int64_t ModuleBuilder::reducer(const std::string& kind, int32_t type) {
    open(kind + "_reducer");
    const auto s = array_shape(type, {});
    const int64_t a = parameter(s, 0);
    const int64_t b = parameter(s, 1);
    return close(binary(kind == "add" ? "add" : "maximum", a, b));
}

int64_t ModuleBuilder::reshape(int64_t x, std::vector<int64_t> dims) {
    const hlo::Shape& in = shape(x);
    const int64_t n = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
    SEGRANK_CHECK(n == in.num_elements(), "synth: reshape changes the element count");
    return add(make("reshape", array_shape(in.element_type, std::move(dims)), {x}));
}

int64_t ModuleBuilder::transpose(int64_t x, std::vector<int64_t> perm) {
    const hlo::Shape& in = shape(x);
    SEGRANK_CHECK(perm.size() == in.dims.size(), "synth: transpose rank mismatch");
    std::vector<int64_t> out;
    for (int64_t p : perm) out.push_back(in.dims[static_cast<size_t>(p)]);
    auto ins = make("transpose", array_shape(in.element_type, std::move(out)), {x});
    ins.dimensions = std::move(perm);
    return add(std::move(ins));
}

int64_t ModuleBuilder::dot(int64_t lhs, int64_t rhs) {
    const auto& l = shape(lhs).dims;
    const auto& r = shape(rhs).dims;
    SEGRANK_CHECK(l.size() >= 2 && l.size() == r.size() && l.back() == r[r.size() - 2] &&
                      std::equal(l.begin(), l.end() - 2, r.begin()),
                  "synth: dot operand shapes do not match [B..,M,K] x [B..,K,N]");
    std::vector<int64_t> out(l.begin(), l.end() - 1);
    out.push_back(r.back());
    return add(make("dot", array_shape(shape(lhs).element_type, std::move(out)), {lhs, rhs}));
}

int64_t ModuleBuilder::conv2d(int64_t input, int64_t kernel, int64_t stride) {
    const auto& x = shape(input).dims;   // N H W Cin
    const auto& k = shape(kernel).dims;  // KH KW Cin Cout
    SEGRANK_CHECK(x.size() == 4 && k.size() == 4 && x[3] == k[2] && stride >= 1,
                  "synth: conv2d needs NHWC input and HWIO kernel with matching Cin");
    hlo::Instruction ins;
    ins.opcode = "convolution";
    std::vector<int64_t> out = {x[0], 0, 0, k[3]};
    for (int s = 0; s < 2; ++s) {
        const int64_t in = x[static_cast<size_t>(1 + s)];
        const int64_t win = k[static_cast<size_t>(s)];
        const int64_t o = (in + stride - 1) / stride;  // SAME
        const int64_t pad = std::max<int64_t>(0, (o - 1) * stride + win - in);
        hlo::WindowDimension wd;
        wd.size = win;
        wd.stride = stride;
        wd.padding_low = pad / 2;
        wd.padding_high = pad - pad / 2;
        wd.window_dilation = 1;
        wd.base_dilation = 1;
        ins.window.push_back(wd);
        out[static_cast<size_t>(1 + s)] = o;
    }
    ins.has_convolution_dimension_numbers = true;
    auto& dn = ins.convolution_dimension_numbers;
    dn.input_batch_dimension = 0;
    dn.input_feature_dimension = 3;
    dn.input_spatial_dimensions = {1, 2};
    dn.kernel_input_feature_dimension = 2;
    dn.kernel_output_feature_dimension = 3;
    dn.kernel_spatial_dimensions = {0, 1};
    dn.output_batch_dimension = 0;
    dn.output_feature_dimension = 3;
    dn.output_spatial_dimensions = {1, 2};
    ins.feature_group_count = 1;
    ins.batch_group_count = 1;
    ins.shape = array_shape(shape(input).element_type, std::move(out));
    ins.operand_ids = {input, kernel};
    return add(std::move(ins));
}

int64_t ModuleBuilder::max_pool(int64_t x, int64_t window, int64_t stride, int64_t reducer) {
    const hlo::Shape in = shape(x);  // a copy: constant() below may reallocate the computation
    SEGRANK_CHECK(in.dims.size() == 4 && in.dims[1] >= window && in.dims[2] >= window,
                  "synth: max_pool needs an NHWC input at least as large as the window");
    hlo::Instruction ins;
    ins.opcode = "reduce-window";
    std::vector<int64_t> out = in.dims;
    for (int d = 0; d < 4; ++d) {
        hlo::WindowDimension wd;
        const bool spatial = d == 1 || d == 2;
        wd.size = spatial ? window : 1;
        wd.stride = spatial ? stride : 1;
        wd.window_dilation = 1;
        wd.base_dilation = 1;
        ins.window.push_back(wd);
        if (spatial)
            out[static_cast<size_t>(d)] = (in.dims[static_cast<size_t>(d)] - window) / stride + 1;
    }
    const int64_t init = constant(in.element_type, -1e30);
    ins.shape = array_shape(in.element_type, std::move(out));
    ins.operand_ids = {x, init};
    ins.called_computation_ids = {reducer};
    return add(std::move(ins));
}

int64_t ModuleBuilder::tuple(std::vector<int64_t> elements) {
    std::vector<hlo::Shape> shapes;
    for (int64_t e : elements) shapes.push_back(shape(e));
    return add(make("tuple", tuple_shape(std::move(shapes)), std::move(elements)));
}

int64_t ModuleBuilder::get_tuple_element(int64_t t, int64_t index) {
    const hlo::Shape& s = shape(t);
    SEGRANK_CHECK(s.is_tuple() && index >= 0 && index < static_cast<int64_t>(s.tuple_shapes.size()),
                  "synth: get-tuple-element index out of range");
    auto ins = make("get-tuple-element", s.tuple_shapes[static_cast<size_t>(index)], {t});
    ins.tuple_index = index;
    return add(std::move(ins));
}

int64_t ModuleBuilder::all_reduce(int64_t x, int64_t reducer) {
    auto ins = make("all-reduce", shape(x), {x});
    ins.called_computation_ids = {reducer};
    return add(std::move(ins));
}

int64_t ModuleBuilder::while_loop(int64_t init, int64_t body, int64_t condition) {
    auto ins = make("while", shape(init), {init});
    ins.called_computation_ids = {body, condition};
    return add(std::move(ins));
}

int64_t ModuleBuilder::fusion(std::vector<int64_t> operands, int64_t fused,
                              const std::string& kind) {
    SEGRANK_CHECK(fused > 0 && fused < next_comp_id_ && !comp_loc_[static_cast<size_t>(fused)].open,
                  "synth: fusion of an unknown or open computation");
    const hlo::Computation& fc = m_.computations[comp_loc_[static_cast<size_t>(fused)].index];
    const hlo::Instruction& root = fc.instructions[ins_loc_[static_cast<size_t>(fc.root_id)].index];
    auto ins = make("fusion", root.shape, std::move(operands));
    ins.called_computation_ids = {fused};
    ins.fusion_kind = kind;
    return add(std::move(ins));
}

}  // namespace segrank::synth
