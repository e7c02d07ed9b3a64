// Tuning protobuf -> HLO module model (docs/files.md#messages). libprotobuf does the decoding; this
// file adds file-kind detection, truncation and wire-type diagnostics, and reference checks.
#include "data/hlo/proto_reader.h"

#include <google/protobuf/stubs/logging.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "data/hlo/proto_convert.h"
#include "gnn/core/check.h"
#include "tuning_min.pb.h"  // generated into the build dir of data/ (protobuf_generate_cpp)
#include "util/user_input.h"

namespace segrank::hlo {
namespace {

namespace gp = google::protobuf;

const char* wire_type_name(int w) {
    switch (w) {
        case 0:
            return "varint (0)";
        case 1:
            return "fixed64 (1)";
        case 2:
            return "length-delimited (2)";
        case 3:
            return "start-group (3)";
        case 4:
            return "end-group (4)";
        case 5:
            return "fixed32 (5)";
        default:
            return "invalid";
    }
}

bool read_varint(std::string_view b, size_t& pos, uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (pos >= b.size()) return false;
        const auto byte = static_cast<uint8_t>(b[pos++]);
        out |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return true;
    }
    return false;
}

// Walks the top-level fields of a serialized message without decoding them. Returns the field
// numbers seen, or throws naming the byte offset of the first truncated/invalid field.
std::vector<uint32_t> scan_top_level(std::string_view b, const std::string& where) {
    std::vector<uint32_t> numbers;
    size_t pos = 0;
    while (pos < b.size()) {
        const size_t start = pos;
        uint64_t tag = 0;
        SEGRANK_CHECK(read_varint(b, pos, tag), where, ": truncated protobuf: field tag at byte ",
                      start, " runs past the end of the file (", b.size(), " bytes)");
        const auto number = static_cast<uint32_t>(tag >> 3);
        const int wire = static_cast<int>(tag & 7);
        SEGRANK_CHECK(number != 0, where, ": invalid protobuf: field number 0 at byte ", start);
        size_t need = 0;
        switch (wire) {
            case 0: {
                uint64_t v = 0;
                SEGRANK_CHECK(read_varint(b, pos, v), where, ": truncated protobuf: varint field ",
                              number, " at byte ", start, " runs past the end of the file");
                break;
            }
            case 1:
                need = 8;
                break;
            case 5:
                need = 4;
                break;
            case 2: {
                uint64_t len = 0;
                SEGRANK_CHECK(read_varint(b, pos, len), where,
                              ": truncated protobuf: length of field ", number, " at byte ", start,
                              " runs past the end of the file");
                SEGRANK_CHECK(len <= b.size() - pos, where, ": truncated protobuf: field ", number,
                              " at byte ", start, " declares ", len, " bytes but only ",
                              b.size() - pos, " remain");
                need = static_cast<size_t>(len);
                break;
            }
            default:
                throw Error(str(where, ": invalid protobuf: field ", number, " at byte ", start,
                                " has wire type ", wire_type_name(wire),
                                " (groups and types 6/7 are not used by tuning files)"));
        }
        SEGRANK_CHECK(need <= b.size() - pos, where, ": truncated protobuf: field ", number,
                      " at byte ", start, " needs ", need, " bytes but only ", b.size() - pos,
                      " remain");
        pos += need;
        numbers.push_back(number);
    }
    return numbers;
}

// Path of a sub-message for messages, built only when an error is reported.
struct MsgPath {
    const MsgPath* parent = nullptr;
    const gp::FieldDescriptor* field = nullptr;
    int index = -1;

    std::string format(const std::string& root) const {
        if (!parent) return root;
        if (index < 0) return str(parent->format(root), ".", field->name());
        return str(parent->format(root), ".", field->name(), "[", index, "]");
    }
};

int expected_wire_type(const gp::FieldDescriptor* fd) {
    using FD = gp::FieldDescriptor;
    switch (fd->type()) {
        case FD::TYPE_DOUBLE:
        case FD::TYPE_FIXED64:
        case FD::TYPE_SFIXED64:
            return 1;
        case FD::TYPE_FLOAT:
        case FD::TYPE_FIXED32:
        case FD::TYPE_SFIXED32:
            return 5;
        case FD::TYPE_STRING:
        case FD::TYPE_BYTES:
        case FD::TYPE_MESSAGE:
            return 2;
        case FD::TYPE_GROUP:
            return 3;
        default:
            return 0;
    }
}

int unknown_wire_type(const gp::UnknownField& f) {
    switch (f.type()) {
        case gp::UnknownField::TYPE_VARINT:
            return 0;
        case gp::UnknownField::TYPE_FIXED64:
            return 1;
        case gp::UnknownField::TYPE_LENGTH_DELIMITED:
            return 2;
        case gp::UnknownField::TYPE_GROUP:
            return 3;
        case gp::UnknownField::TYPE_FIXED32:
            return 5;
    }
    return -1;
}

// libprotobuf keeps a declared field that arrives with the wrong wire type as an *unknown* field
// instead of failing; we report it (and groups) as malformed input. Returns "" when clean.
std::string find_wire_type_mismatch(const gp::Message& m, const MsgPath& path,
                                    const std::string& root) {
    const gp::Reflection* refl = m.GetReflection();
    const gp::Descriptor* desc = m.GetDescriptor();
    const gp::UnknownFieldSet& unknown = refl->GetUnknownFields(m);
    for (int i = 0; i < unknown.field_count(); ++i) {
        const gp::UnknownField& f = unknown.field(i);
        const int wire = unknown_wire_type(f);
        if (const gp::FieldDescriptor* fd = desc->FindFieldByNumber(f.number())) {
            return str("field ", path.format(root), ".", fd->name(), " (#", f.number(),
                       ") has wire type ", wire_type_name(wire), ", expected ",
                       wire_type_name(expected_wire_type(fd)));
        }
        if (wire == 3)
            return str("field #", f.number(), " in ", path.format(root),
                       " is a group (wire types 3/4 are not used by tuning files)");
    }
    std::vector<const gp::FieldDescriptor*> fields;
    refl->ListFields(m, &fields);
    for (const gp::FieldDescriptor* fd : fields) {
        if (fd->cpp_type() != gp::FieldDescriptor::CPPTYPE_MESSAGE) continue;
        if (fd->is_repeated()) {
            const int n = refl->FieldSize(m, fd);
            for (int j = 0; j < n; ++j) {
                const MsgPath child{&path, fd, j};
                std::string e =
                    find_wire_type_mismatch(refl->GetRepeatedMessage(m, fd, j), child, root);
                if (!e.empty()) return e;
            }
        } else {
            const MsgPath child{&path, fd, -1};
            std::string e = find_wire_type_mismatch(refl->GetMessage(m, fd), child, root);
            if (!e.empty()) return e;
        }
    }
    return {};
}

// libprotobuf writes what it finds wrong in the wire data (a string field holding invalid UTF-8)
// to stderr itself, before segrank's own error. While try_parse runs on this thread, its messages
// are collected here instead and folded into that error.
thread_local std::string* t_protobuf_log = nullptr;

void protobuf_log_handler(gp::LogLevel level, const char* filename, int line,
                          const std::string& message) {
    if (t_protobuf_log != nullptr) {
        // The first sentence says what is wrong; the rest is advice to a .proto's author.
        std::string text = message.substr(0, message.find(". "));
        while (!text.empty() && (text.back() == ' ' || text.back() == '.')) text.pop_back();
        if (!t_protobuf_log->empty()) *t_protobuf_log += "; ";
        *t_protobuf_log += text;
        return;
    }
    static const char* const kLevel[] = {"INFO", "WARNING", "ERROR", "FATAL"};
    const int l = static_cast<int>(level);
    std::fprintf(stderr, "[libprotobuf %s %s:%d] %s\n", l >= 0 && l < 4 ? kLevel[l] : "?", filename,
                 line, message.c_str());
}

// Collects libprotobuf's log messages into `sink` for its lifetime (installs the handler once).
class ProtobufLogCapture {
public:
    explicit ProtobufLogCapture(std::string& sink) : previous_(t_protobuf_log) {
        static const bool installed = (gp::SetLogHandler(&protobuf_log_handler), true);
        (void)installed;
        t_protobuf_log = &sink;
    }
    ~ProtobufLogCapture() { t_protobuf_log = previous_; }
    ProtobufLogCapture(const ProtobufLogCapture&) = delete;
    ProtobufLogCapture& operator=(const ProtobufLogCapture&) = delete;

private:
    std::string* previous_;
};

// Parses `bytes` into `msg`; returns "" on success or a description of what is wrong.
std::string try_parse(std::string_view bytes, gp::Message& msg, const std::string& root) {
    if (bytes.size() > static_cast<size_t>(INT_MAX)) return "file larger than 2 GiB";
    std::string logged;
    bool parsed = false;
    {
        const ProtobufLogCapture capture(logged);
        parsed = msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    }
    if (!parsed)
        return str("libprotobuf could not parse it as ", root, " (",
                   logged.empty() ? "truncated nested message or corrupt wire data" : logged, ")");
    return find_wire_type_mismatch(msg, MsgPath{}, root);
}

}  // namespace

const char* to_string(TuningFileKind kind) {
    return kind == TuningFileKind::kTuningData ? "TuningData" : "ModuleTuningData";
}

ModuleTuning parse_module_tuning_bytes(std::string_view bytes, const std::string& where) {
    scan_top_level(bytes, where);
    pb::ModuleTuningData msg;
    const std::string err = try_parse(bytes, msg, "ModuleTuningData");
    SEGRANK_CHECK(err.empty(), where, ": malformed ModuleTuningData: ", err);
    ModuleTuning mt = from_proto(msg);
    check_module_tuning(mt, where);
    return mt;
}

TuningFile parse_tuning_bytes(std::string_view bytes, const std::string& where) {
    SEGRANK_CHECK(!bytes.empty(), where,
                  ": empty file (expected a TuningData or ModuleTuningData protobuf)");
    const std::vector<uint32_t> numbers = scan_top_level(bytes, where);
    bool module_fields = false;  // ModuleTuningData's fingerprint/runs/config_index_to_node
    for (uint32_t n : numbers) module_fields |= (n >= 2 && n <= 4);

    TuningFile out;
    if (!module_fields) {
        pb::TuningData td;
        const std::string err = try_parse(bytes, td, "TuningData");
        bool looks_right = err.empty() && td.modules_size() > 0;
        for (const auto& m : td.modules()) looks_right &= m.has_module() || m.runs_size() > 0;
        if (looks_right) {
            out.kind = TuningFileKind::kTuningData;
            for (int i = 0; i < td.modules_size(); ++i) {
                out.modules.push_back(from_proto(td.modules(i)));
                check_module_tuning(out.modules.back(), str(where, ": modules[", i, "]"));
            }
            return out;
        }
        // A ModuleTuningData holding only its module also has nothing but field 1: try that.
        pb::ModuleTuningData mtd;
        const std::string err2 = try_parse(bytes, mtd, "ModuleTuningData");
        SEGRANK_CHECK(err2.empty() && mtd.has_module(), where, ": neither a TuningData (",
                      err.empty() ? "no modules with content" : err, ") nor a ModuleTuningData (",
                      err2.empty() ? "no module" : err2, ")");
        out.kind = TuningFileKind::kModuleTuningData;
        out.modules.push_back(from_proto(mtd));
        check_module_tuning(out.modules.back(), where);
        return out;
    }
    out.kind = TuningFileKind::kModuleTuningData;
    out.modules.push_back(parse_module_tuning_bytes(bytes, where));
    return out;
}

TuningFile read_tuning_file(const std::filesystem::path& path) {
    // An ifstream opens a directory and then reads nothing ("empty file" would mislead).
    SEGRANK_CHECK(!std::filesystem::is_directory(path), path.string(),
                  ": is a directory (expected a TuningData or ModuleTuningData protobuf file)");
    const std::string bytes = read_input_file(
        path, "a TuningData or ModuleTuningData protobuf file", kMaxProtobufFileBytes);
    return parse_tuning_bytes(bytes, path.string());
}

void check_module_tuning(const ModuleTuning& mt, const std::string& where_in) {
    const std::string where = str(where_in, " (module '", mt.module.name, "')");
    const HloModule& m = mt.module;
    std::unordered_set<int64_t> comp_ids;
    std::unordered_map<int64_t, size_t> inst_comp;  // instruction id -> computation index
    for (size_t c = 0; c < m.computations.size(); ++c) {
        const Computation& comp = m.computations[c];
        SEGRANK_CHECK(comp_ids.insert(comp.id).second, where, ": computation '", comp.name,
                      "' repeats computation id ", comp.id);
        for (const Instruction& ins : comp.instructions)
            SEGRANK_CHECK(inst_comp.emplace(ins.id, c).second, where, ": instruction '", ins.name,
                          "' repeats instruction id ", ins.id);
    }
    for (size_t c = 0; c < m.computations.size(); ++c) {
        const Computation& comp = m.computations[c];
        if (!comp.instructions.empty()) {
            auto it = inst_comp.find(comp.root_id);
            SEGRANK_CHECK(it != inst_comp.end() && it->second == c, where, ": computation '",
                          comp.name, "' has root_id ", comp.root_id,
                          " which is not an instruction of that computation");
        }
        for (const Instruction& ins : comp.instructions) {
            for (int64_t op : ins.operand_ids)
                SEGRANK_CHECK(inst_comp.count(op), where, ": instruction '", ins.name, "' (id ",
                              ins.id, ") has operand id ", op, " missing from the module");
            for (int64_t cc : ins.called_computation_ids)
                SEGRANK_CHECK(comp_ids.count(cc), where, ": instruction '", ins.name, "' (id ",
                              ins.id, ") calls computation id ", cc, " missing from the module");
        }
    }
    const auto n = static_cast<uint64_t>(m.num_instructions());
    for (size_t k = 0; k < mt.config_index_to_node.size(); ++k)
        SEGRANK_CHECK(mt.config_index_to_node[k] < n, where, ": config_index_to_node[", k,
                      "] = ", mt.config_index_to_node[k], " is out of range (module has ", n,
                      " nodes)");
    const size_t nc = mt.config_index_to_node.size();
    for (size_t r = 0; r < mt.runs.size(); ++r) {
        const Run& run = mt.runs[r];
        if (run.kind != Task::kLayout) continue;
        SEGRANK_CHECK(run.layout.size() == nc, where, ": runs[", r, "].module_config has ",
                      run.layout.size(), " layout nodes, expected ", nc,
                      " (one per config_index_to_node entry)");
        for (size_t k = 0; k < nc; ++k)
            SEGRANK_CHECK(run.layout[k].tensors.size() <= 3, where, ": runs[", r,
                          "].module_config.layout_config.nodes[", k, "] has ",
                          run.layout[k].tensors.size(), " tensors, at most 3 allowed");
    }
}

}  // namespace segrank::hlo
