// eval.indices JSON (DESIGN.md 8): a strict parser for exactly {"graph name": [int, ...], ...}.
// No JSON library is packaged as a header here; the format is small enough to parse by hand.
#include <cstdint>
#include <fstream>
#include <sstream>

#include "gnn/core/check.h"
#include "trainer/metrics.h"

namespace segrank {
namespace {

class Parser {
public:
    Parser(std::string_view text, const std::string& where) : s_(text), where_(where) {}

    EvalIndices parse() {
        EvalIndices out;
        skip_ws();
        expect('{', "'{' opening the object");
        skip_ws();
        if (peek() == '}') {
            ++pos_;
        } else {
            while (true) {
                skip_ws();
                const size_t key_pos = pos_;
                std::string key = parse_string();
                skip_ws();
                expect(':', "':' after the graph name");
                skip_ws();
                std::vector<int64_t> list = parse_int_list(key);
                if (out.count(key)) fail_at(key_pos, "graph name \"" + key + "\" appears twice");
                out.emplace(std::move(key), std::move(list));
                skip_ws();
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect('}', "',' or '}' after a list");
                break;
            }
        }
        skip_ws();
        if (pos_ != s_.size()) fail("trailing characters after the top-level object");
        return out;
    }

private:
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

    void skip_ws() {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }

    [[noreturn]] void fail_at(size_t pos, const std::string& what) const {
        int line = 1, col = 1;
        for (size_t i = 0; i < pos && i < s_.size(); ++i) {
            if (s_[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        throw Error(str(where_, ":", line, ":", col, ": eval.indices: ", what,
                        " (expected {\"graph name\": [config indices], ...})"));
    }
    [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

    void expect(char c, const char* what) {
        if (peek() != c) {
            fail(pos_ < s_.size() ? str("expected ", what, ", found '", s_[pos_], "'")
                                  : str("expected ", what, ", found end of input"));
        }
        ++pos_;
    }

    static void append_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    uint32_t parse_hex4() {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = peek();
            uint32_t d;
            if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
            else fail("expected 4 hex digits after \\u");
            v = v * 16 + d;
            ++pos_;
        }
        return v;
    }

    std::string parse_string() {
        expect('"', "'\"' starting a graph name");
        std::string out;
        while (true) {
            if (pos_ >= s_.size()) fail("unterminated string");
            const char c = s_[pos_++];
            if (c == '"') break;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            const char e = peek();
            ++pos_;
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t cp = parse_hex4();
                    if (cp >= 0xD800 && cp < 0xDC00) {  // surrogate pair
                        if (peek() != '\\' || pos_ + 1 >= s_.size() || s_[pos_ + 1] != 'u')
                            fail("unpaired surrogate in \\u escape");
                        pos_ += 2;
                        const uint32_t lo = parse_hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF) fail("invalid low surrogate in \\u escape");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        fail("unpaired low surrogate in \\u escape");
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: --pos_; fail("invalid escape in string");
            }
        }
        return out;
    }

    std::vector<int64_t> parse_int_list(const std::string& key) {
        std::vector<int64_t> out;
        expect('[', str("'[' starting the index list of \"", key, "\"").c_str());
        skip_ws();
        if (peek() == ']') {
            ++pos_;
            return out;
        }
        while (true) {
            skip_ws();
            out.push_back(parse_index(key));
            skip_ws();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            expect(']', "',' or ']' in an index list");
            return out;
        }
    }

    int64_t parse_index(const std::string& key) {
        const size_t start = pos_;
        if (peek() == '-') fail(str("negative config index in the list of \"", key, "\""));
        if (peek() < '0' || peek() > '9')
            fail(str("expected a non-negative integer in the list of \"", key, "\""));
        if (peek() == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9')
            fail("leading zeros are not allowed in JSON numbers");
        int64_t v = 0;
        while (peek() >= '0' && peek() <= '9') {
            if (v > (INT64_MAX - 9) / 10) fail_at(start, "config index too large");
            v = v * 10 + (peek() - '0');
            ++pos_;
        }
        const char c = peek();
        if (c == '.' || c == 'e' || c == 'E')
            fail(str("config indices must be integers (list of \"", key, "\")"));
        return v;
    }

    std::string_view s_;
    const std::string& where_;
    size_t pos_ = 0;
};

}  // namespace

EvalIndices parse_eval_indices(std::string_view text, const std::string& where) {
    return Parser(text, where).parse();
}

EvalIndices load_eval_indices(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    SEGRANK_CHECK(in.good(), path.string(), ": cannot open eval.indices file");
    std::ostringstream ss;
    ss << in.rdbuf();
    SEGRANK_CHECK(!in.bad(), path.string(), ": read error");
    return parse_eval_indices(ss.str(), path.string());
}

GraphMetrics evaluate_graph(const std::string& name, std::span<const float> scores,
                            std::span<const double> targets, const EvalIndices& indices) {
    const auto it = indices.find(name);
    SEGRANK_CHECK(it != indices.end(), "eval.indices has no entry for graph \"", name, "\"");
    SEGRANK_CHECK(!it->second.empty(), "eval.indices lists no configs for graph \"", name, "\"");
    SEGRANK_CHECK(scores.size() == targets.size(), name, ": ", scores.size(), " scores but ",
                  targets.size(), " targets");
    const std::string where = str("eval.indices[\"", name, "\"]");
    const std::vector<double> s(scores.begin(), scores.end());
    const std::vector<double> sel_s = select_indices(s, it->second, where);
    const std::vector<float> sel_f(sel_s.begin(), sel_s.end());
    const std::vector<double> sel_t = select_indices(targets, it->second, where);
    return evaluate_graph(name, sel_f, sel_t);
}

}  // namespace segrank
