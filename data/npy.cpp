// NPY header parsing and writing (docs/files.md#zip-and-npy-layers).
#include "data/npy.h"

#include <cctype>
#include <limits>

#include "gnn/core/check.h"

namespace segrank {
namespace {

struct DTypeInfo {
    DType type;
    char kind;  // numpy kind letter
    size_t size;
    const char* descr;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kF4, 'f', 4, "<f4"}, {DType::kF8, 'f', 8, "<f8"}, {DType::kI4, 'i', 4, "<i4"},
    {DType::kI8, 'i', 8, "<i8"}, {DType::kU1, 'u', 1, "|u1"}, {DType::kI1, 'i', 1, "|i1"},
    {DType::kU8, 'u', 8, "<u8"}, {DType::kB1, 'b', 1, "|b1"},
};

const DTypeInfo& info(DType t) {
    for (const auto& d : kDTypes)
        if (d.type == t) return d;
    SEGRANK_ASSERT(false, "unknown DType");
    return kDTypes[0];
}

// Minimal cursor over the Python dict literal of an npy header.
class HeaderText {
public:
    HeaderText(std::string_view text, const std::string& where) : s_(text), where_(where) {}

    void skip_ws() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    bool eat(char c) {
        skip_ws();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    void expect(char c) {
        SEGRANK_CHECK(eat(c), where_, ": malformed npy header: expected '", c, "' at offset ", i_,
                      " in ", std::string(s_));
    }
    bool at(char c) {
        skip_ws();
        return i_ < s_.size() && s_[i_] == c;
    }
    std::string quoted() {
        skip_ws();
        SEGRANK_CHECK(i_ < s_.size() && (s_[i_] == '\'' || s_[i_] == '"'), where_,
                      ": malformed npy header: expected a quoted string in ", std::string(s_));
        const char q = s_[i_++];
        const size_t b = i_;
        while (i_ < s_.size() && s_[i_] != q) ++i_;
        SEGRANK_CHECK(i_ < s_.size(), where_, ": malformed npy header: unterminated string");
        return std::string(s_.substr(b, i_++ - b));
    }
    std::string word() {
        skip_ws();
        const size_t b = i_;
        while (i_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[i_]))) ++i_;
        return std::string(s_.substr(b, i_ - b));
    }
    int64_t integer() {
        std::string w = word();
        if (!w.empty() && (w.back() == 'L')) w.pop_back();  // Python 2 longs
        SEGRANK_CHECK(!w.empty() && w.find_first_not_of("0123456789") == std::string::npos, where_,
                      ": malformed npy header: bad shape entry '", w, "'");
        SEGRANK_CHECK(w.size() <= 18, where_, ": npy shape entry ", w, " is too large");
        return std::stoll(w);
    }

private:
    std::string_view s_;
    const std::string& where_;
    size_t i_ = 0;
};

DType parse_descr(const std::string& d, const std::string& where) {
    SEGRANK_CHECK(d.size() >= 2, where, ": unsupported npy dtype '", d, "'");
    const char order = d[0];
    SEGRANK_CHECK(order != '>', where, ": big-endian npy dtype '", d,
                  "' is not supported (re-save the array little-endian)");
    SEGRANK_CHECK(order == '<' || order == '|' || order == '=', where, ": unsupported npy dtype '",
                  d, "' (expected one of <f4 <f8 <i4 <i8 |u1 |i1 <u8 |b1)");
    const std::string body = d.substr(1);
    for (const auto& t : kDTypes) {
        if (body == std::string(t.descr + 1)) return t.type;
    }
    SEGRANK_CHECK(
        false, where, ": unsupported npy dtype '", d,
        "' (expected one of <f4 <f8 <i4 <i8 |u1 |i1 <u8 |b1; object and structured dtypes "
        "are rejected)");
    return DType::kF4;
}

}  // namespace

std::string shape_text(const std::vector<int64_t>& s) {
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + (s.size() == 1 ? ",)" : ")");
}

size_t dtype_size(DType t) { return info(t).size; }
const char* dtype_descr(DType t) { return info(t).descr; }
bool dtype_is_float(DType t) { return info(t).kind == 'f'; }

int64_t NpyHeader::num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) {
        SEGRANK_CHECK(d >= 0, "npy shape has negative dimension ", d);
        SEGRANK_CHECK(d == 0 || n <= std::numeric_limits<int64_t>::max() / d,
                      "npy shape overflows 64 bits");
        n *= d;
    }
    return n;
}

uint64_t NpyHeader::payload_bytes() const {
    return static_cast<uint64_t>(num_elements()) * dtype_size(dtype);
}

size_t npy_preamble_length(std::span<const uint8_t> p, const std::string& where) {
    static constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    SEGRANK_CHECK(p.size() >= 10, where, ": bad npy magic: entry has only ", p.size(), " bytes");
    for (int i = 0; i < 6; ++i)
        SEGRANK_CHECK(p[i] == kMagic[i], where,
                      ": bad npy magic (expected \\x93NUMPY at the start of the entry)");
    const int major = p[6];
    SEGRANK_CHECK(major >= 1 && major <= 3, where, ": unsupported npy version ", major, ".",
                  static_cast<int>(p[7]), " (expected 1.0, 2.0 or 3.0)");
    if (major == 1) return 10 + (static_cast<size_t>(p[8]) | static_cast<size_t>(p[9]) << 8);
    SEGRANK_CHECK(p.size() >= 12, where, ": truncated npy v", major, " preamble");
    const size_t len = static_cast<size_t>(p[8]) | static_cast<size_t>(p[9]) << 8 |
                       static_cast<size_t>(p[10]) << 16 | static_cast<size_t>(p[11]) << 24;
    SEGRANK_CHECK(len < (1u << 24), where, ": npy header length ", len, " is implausible");
    return 12 + len;
}

NpyHeader parse_npy_header(std::span<const uint8_t> bytes, const std::string& where) {
    const size_t total = npy_preamble_length(bytes, where);
    SEGRANK_CHECK(bytes.size() >= total, where, ": truncated npy header (", bytes.size(), " of ",
                  total, " bytes)");
    const size_t text_begin = bytes[6] == 1 ? 10 : 12;
    std::string_view text(reinterpret_cast<const char*>(bytes.data()) + text_begin,
                          total - text_begin);
    HeaderText h(text, where);
    NpyHeader out;
    out.header_bytes = total;
    bool have_descr = false, have_order = false, have_shape = false;
    h.expect('{');
    while (!h.eat('}')) {
        const std::string key = h.quoted();
        h.expect(':');
        if (key == "descr") {
            SEGRANK_CHECK(
                !h.at('['), where,
                ": structured npy dtype is not supported (expected a plain numeric dtype)");
            out.dtype = parse_descr(h.quoted(), where);
            have_descr = true;
        } else if (key == "fortran_order") {
            const std::string w = h.word();
            SEGRANK_CHECK(w == "True" || w == "False", where, ": bad fortran_order '", w, "'");
            out.fortran_order = (w == "True");
            have_order = true;
        } else if (key == "shape") {
            h.expect('(');
            while (!h.eat(')')) {
                out.shape.push_back(h.integer());
                if (!h.eat(',')) {
                    h.expect(')');
                    break;
                }
            }
            have_shape = true;
        } else {
            SEGRANK_CHECK(false, where, ": unexpected npy header key '", key, "'");
        }
        if (!h.eat(',')) {
            h.expect('}');
            break;
        }
    }
    SEGRANK_CHECK(have_descr && have_order && have_shape, where,
                  ": npy header lacks one of 'descr', 'fortran_order', 'shape'");
    // num_elements() and payload_bytes() cannot overflow for a parsed header.
    int64_t payload = static_cast<int64_t>(dtype_size(out.dtype));
    for (int64_t d : out.shape)
        SEGRANK_CHECK(!__builtin_mul_overflow(payload, d, &payload), where, ": npy shape ",
                      shape_text(out.shape), " of ", dtype_descr(out.dtype), " overflows 64 bits");
    return out;
}

std::string make_npy_header(DType t, const std::vector<int64_t>& shape) {
    std::string s = "{'descr': '";
    s += dtype_descr(t);
    s += "', 'fortran_order': False, 'shape': (";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ",";
    s += "), }";
    // Preamble = 10 + text; numpy pads with spaces so that it is a multiple of 64, ending in '\n'.
    const size_t unpadded = 10 + s.size() + 1;
    const size_t padded = (unpadded + 63) / 64 * 64;
    s.append(padded - unpadded, ' ');
    s += '\n';
    SEGRANK_CHECK(s.size() <= 65535, "npy header too long for v1.0");
    std::string pre = "\x93NUMPY";
    pre += '\x01';
    pre += '\x00';
    pre += static_cast<char>(s.size() & 0xff);
    pre += static_cast<char>(s.size() >> 8);
    return pre + s;
}

}  // namespace segrank
