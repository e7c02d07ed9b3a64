// Reader behaviour on hand-built protobufs: kind detection, field copying, malformed input errors.
#include "data/hlo/proto_reader.h"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "gnn/core/check.h"
#include "tests/hlo/hlo_test_util.h"
#include "tuning_min.pb.h"

using namespace segrank;

namespace {

// entry "main" (id 7): p0 = parameter(0) id 1; c = constant(2.5) id 2; add(p0, c) id 3 = root.
pb::ModuleTuningData tiny_module_tuning() {
    pb::ModuleTuningData mt;
    auto* m = mt.mutable_module();
    m->set_name("tiny.1");
    auto* comp = m->add_computations();
    comp->set_name("main");
    comp->set_id(7);
    comp->set_root_id(3);
    auto* p0 = comp->add_instructions();
    p0->set_name("p0");
    p0->set_opcode("parameter");
    p0->set_id(1);
    p0->mutable_shape()->set_element_type(11);
    p0->mutable_shape()->add_dimensions(4);
    p0->mutable_shape()->mutable_layout()->add_minor_to_major(0);
    auto* c = comp->add_instructions();
    c->set_name("c");
    c->set_opcode("constant");
    c->set_id(2);
    c->mutable_shape()->set_element_type(11);
    c->mutable_literal()->mutable_shape()->set_element_type(11);
    c->mutable_literal()->add_f32s(2.5f);
    auto* add = comp->add_instructions();
    add->set_name("add");
    add->set_opcode("add");
    add->set_id(3);
    add->add_operand_ids(1);
    add->add_operand_ids(2);
    mt.set_fingerprint(42);
    for (int r = 0; r < 3; ++r) {
        auto* run = mt.add_runs();
        auto* t = run->mutable_op_config()->mutable_tile_size_config();
        t->add_output_bounds(r + 1);
        run->mutable_profile()->set_compute_time_ns(1000 + r);
        run->set_is_default(r == 0);
    }
    return mt;
}

std::string bytes_of(const google::protobuf::Message& m) { return m.SerializeAsString(); }

std::string error_of(const std::string& bytes) {
    try {
        hlo::parse_tuning_bytes(bytes, "in.pb");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("a ModuleTuningData is detected and every field is copied into the module model") {
    const auto f = hlo::parse_tuning_bytes(bytes_of(tiny_module_tuning()), "tiny.pb");
    CHECK(f.kind == hlo::TuningFileKind::kModuleTuningData);
    REQUIRE(f.modules.size() == 1);
    const auto& mt = f.modules[0];
    CHECK(mt.has_module);
    CHECK(mt.fingerprint == 42);
    CHECK(mt.module.name == "tiny.1");
    REQUIRE(mt.module.computations.size() == 1);
    const auto& comp = mt.module.computations[0];
    CHECK(comp.id == 7);
    CHECK(comp.root_id == 3);
    REQUIRE(comp.instructions.size() == 3);
    CHECK(comp.instructions[0].shape.dims == std::vector<int64_t>{4});
    CHECK(comp.instructions[0].shape.has_layout);
    CHECK(comp.instructions[0].shape.minor_to_major == std::vector<int64_t>{0});
    CHECK(comp.instructions[0].shape.byte_size() == 16);
    CHECK(comp.instructions[1].scalar_constant == 2.5);
    CHECK_FALSE(comp.instructions[0].scalar_constant.has_value());
    CHECK(comp.instructions[2].operand_ids == std::vector<int64_t>{1, 2});
    REQUIRE(mt.runs.size() == 3);
    CHECK(mt.runs[1].kind == Task::kTile);
    CHECK(mt.runs[1].has_tile_size_config);
    CHECK(mt.runs[1].tile.output_bounds == std::vector<int64_t>{2});
    CHECK(mt.runs[1].has_profile);
    CHECK(mt.runs[1].compute_time_ns == 1001);
    CHECK(mt.runs[0].is_default);
}

TEST_CASE("a TuningData with two modules is detected as TuningData") {
    pb::TuningData td;
    *td.add_modules() = tiny_module_tuning();
    *td.add_modules() = tiny_module_tuning();
    const auto f = hlo::parse_tuning_bytes(bytes_of(td), "td.pb");
    CHECK(f.kind == hlo::TuningFileKind::kTuningData);
    CHECK(f.modules.size() == 2);
}

TEST_CASE(
    "a ModuleTuningData holding only its module (only field 1 on the wire) is still detected") {
    pb::ModuleTuningData mt;
    *mt.mutable_module() = tiny_module_tuning().module();
    const auto f = hlo::parse_tuning_bytes(bytes_of(mt), "only_module.pb");
    CHECK(f.kind == hlo::TuningFileKind::kModuleTuningData);
    REQUIRE(f.modules.size() == 1);
    CHECK(f.modules[0].module.name == "tiny.1");
}

TEST_CASE("scalar constants decode bf16, s32 and pred literals, non-scalar literals give none") {
    auto mt = tiny_module_tuning();
    auto* c = mt.mutable_module()->mutable_computations(0)->mutable_instructions(1);
    c->mutable_literal()->clear_f32s();
    c->mutable_literal()->set_bf16s(std::string("\xc0\x3f", 2));  // bf16 0x3fc0 = 1.5
    CHECK(hlo::parse_tuning_bytes(bytes_of(mt), "x")
              .modules[0]
              .module.computations[0]
              .instructions[1]
              .scalar_constant == 1.5);
    c->mutable_literal()->clear_bf16s();
    c->mutable_literal()->add_s32s(-7);
    CHECK(hlo::parse_tuning_bytes(bytes_of(mt), "x")
              .modules[0]
              .module.computations[0]
              .instructions[1]
              .scalar_constant == -7.0);
    c->mutable_literal()->mutable_shape()->add_dimensions(1);
    CHECK_FALSE(hlo::parse_tuning_bytes(bytes_of(mt), "x")
                    .modules[0]
                    .module.computations[0]
                    .instructions[1]
                    .scalar_constant.has_value());
}

TEST_CASE("a while's backend config gives XLA's known_trip_count, other configs give none") {
    auto mt = tiny_module_tuning();
    auto* ins = mt.mutable_module()->mutable_computations(0)->mutable_instructions(2);
    const auto count = [&](const std::string& opcode, const std::string& config) {
        ins->set_opcode(opcode);
        ins->set_backend_config(config);
        return hlo::parse_tuning_bytes(bytes_of(mt), "x")
            .modules[0]
            .module.computations[0]
            .instructions[2]
            .known_trip_count;
    };
    // XLA writes WhileLoopBackendConfig as proto3 JSON: int64 as a string.
    CHECK(count("while", R"({"known_trip_count":{"n":"12"}})") == 12);
    CHECK(count("while", R"({"known_trip_count":{"n":7},"known_init_step":{}})") == 7);
    CHECK(count("while", "") == std::nullopt);
    CHECK(count("while", "{}") == std::nullopt);
    CHECK(count("while", R"({"known_trip_count":{"n":"0"}})") == std::nullopt);
    CHECK(count("while", R"({"known_trip_count":{"n":"-3"}})") == std::nullopt);
    CHECK(count("while", "{not json") == std::nullopt);  // free-form: no count, no error
    CHECK(count("add", R"({"known_trip_count":{"n":"12"}})") == std::nullopt);
}

TEST_CASE("a truncated protobuf gives an error naming the file and the truncation") {
    const std::string full = bytes_of(tiny_module_tuning());
    const std::string msg = error_of(full.substr(0, full.size() - 5));
    CHECK(msg.find("in.pb") != std::string::npos);
    CHECK(msg.find("truncated") != std::string::npos);
    CHECK(error_of("").find("empty file") != std::string::npos);
}

TEST_CASE("the real op_tuning_data.pb cut in half is reported as truncated") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    std::ifstream in(data / "xla_tuning" / "op_tuning_data.pb", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(bytes.size() == 61766);
    const std::string msg = error_of(bytes.substr(0, bytes.size() / 2));
    CHECK(msg.find("truncated") != std::string::npos);
}

TEST_CASE("a declared field with the wrong wire type is an error naming the field path") {
    // Top level: fingerprint (#2, uint64) sent length-delimited.
    std::string top = bytes_of(tiny_module_tuning()) + std::string("\x12\x01\x00", 3);
    const std::string m1 = error_of(top);
    CHECK(m1.find("ModuleTuningData.fingerprint") != std::string::npos);
    CHECK(m1.find("wire type") != std::string::npos);

    // Nested: instruction id (#35, int64) sent length-delimited.
    auto mt = tiny_module_tuning();
    auto* ins = mt.mutable_module()->mutable_computations(0)->mutable_instructions(2);
    ins->GetReflection()->MutableUnknownFields(ins)->AddLengthDelimited(35, "xy");
    const std::string m2 = error_of(bytes_of(mt));
    CHECK(m2.find("module.computations[0].instructions[2].id") != std::string::npos);
    CHECK(m2.find("expected varint") != std::string::npos);
}

TEST_CASE("groups (wire types 3/4) are rejected") {
    CHECK(error_of(std::string("\x0b\x0c", 2)).find("group") != std::string::npos);
}

TEST_CASE("unknown fields are skipped silently") {
    auto mt = tiny_module_tuning();
    auto* ins = mt.mutable_module()->mutable_computations(0)->mutable_instructions(0);
    ins->GetReflection()->MutableUnknownFields(ins)->AddLengthDelimited(68, "frontend attrs");
    ins->GetReflection()->MutableUnknownFields(ins)->AddVarint(999, 5);
    CHECK(hlo::parse_tuning_bytes(bytes_of(mt), "x")
              .modules[0]
              .module.computations[0]
              .instructions.size() == 3);
}

TEST_CASE("a config index out of range is an error naming the index and the node count") {
    auto mt = tiny_module_tuning();
    mt.add_config_index_to_node(3);  // 3 nodes: valid indices are 0..2
    const std::string msg = error_of(bytes_of(mt));
    CHECK(msg.find("config_index_to_node[0] = 3") != std::string::npos);
    CHECK(msg.find("3 nodes") != std::string::npos);
}

TEST_CASE("a layout run whose node count differs from config_index_to_node is an error") {
    auto mt = tiny_module_tuning();
    mt.clear_runs();
    mt.add_config_index_to_node(2);
    auto* run = mt.add_runs();
    run->mutable_module_config()->mutable_layout_config();  // zero nodes, one expected
    run->mutable_profile()->set_compute_time_ns(5);
    CHECK(error_of(bytes_of(mt)).find("has 0 layout nodes, expected 1") != std::string::npos);
}

TEST_CASE("an operand id or callee id missing from the module is an error naming the instruction") {
    auto mt = tiny_module_tuning();
    mt.mutable_module()->mutable_computations(0)->mutable_instructions(2)->add_operand_ids(99);
    const std::string msg = error_of(bytes_of(mt));
    CHECK(msg.find("'add'") != std::string::npos);
    CHECK(msg.find("operand id 99 missing") != std::string::npos);
    CHECK(msg.find("tiny.1") != std::string::npos);

    auto mt2 = tiny_module_tuning();
    mt2.mutable_module()
        ->mutable_computations(0)
        ->mutable_instructions(2)
        ->add_called_computation_ids(55);
    CHECK(error_of(bytes_of(mt2)).find("calls computation id 55 missing") != std::string::npos);

    auto mt3 = tiny_module_tuning();
    mt3.mutable_module()->mutable_computations(0)->set_root_id(77);
    CHECK(error_of(bytes_of(mt3)).find("root_id 77") != std::string::npos);
}

TEST_CASE("read_tuning_file names a missing file") {
    try {
        hlo::read_tuning_file("/nonexistent/x.pb");
        FAIL("expected an error");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("/nonexistent/x.pb") != std::string::npos);
    }
}

TEST_CASE("read_tuning_file on a directory says it is a directory, not an empty file") {
    const auto dir = test::scratch_dir("pb_dir");
    CHECK_THROWS_WITH_AS(
        hlo::read_tuning_file(dir),
        (dir.string() +
         ": is a directory (expected a TuningData or ModuleTuningData protobuf file)")
            .c_str(),
        Error);
}
