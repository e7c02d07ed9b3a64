// Strict recursive-descent JSON parser with line:column errors (see json_value.h).
#include "util/json_value.h"

#include <charconv>
#include <cstdlib>

#include "gnn/core/check.h"

namespace segrank {

JsonValue JsonValue::boolean(bool b) {
    JsonValue v;
    v.kind_ = Kind::kBool;
    v.bool_ = b;
    return v;
}
JsonValue JsonValue::number(double d) {
    JsonValue v;
    v.kind_ = Kind::kNumber;
    v.number_ = d;
    return v;
}
JsonValue JsonValue::string(std::string s) {
    JsonValue v;
    v.kind_ = Kind::kString;
    v.string_ = std::move(s);
    return v;
}
JsonValue JsonValue::array(std::vector<JsonValue> items) {
    JsonValue v;
    v.kind_ = Kind::kArray;
    v.items_ = std::move(items);
    return v;
}
JsonValue JsonValue::object(std::map<std::string, JsonValue> members) {
    JsonValue v;
    v.kind_ = Kind::kObject;
    v.members_ = std::move(members);
    return v;
}

const JsonValue* JsonValue::find(const std::string& key) const {
    if (kind_ != Kind::kObject) return nullptr;
    const auto it = members_.find(key);
    return it == members_.end() ? nullptr : &it->second;
}

std::optional<double> JsonValue::number_at(const std::string& key) const {
    const JsonValue* v = find(key);
    if (v == nullptr || !v->is_number()) return std::nullopt;
    return v->number_;
}

std::optional<std::string> JsonValue::string_at(const std::string& key) const {
    const JsonValue* v = find(key);
    if (v == nullptr || !v->is_string()) return std::nullopt;
    return v->string_;
}

std::string JsonValue::location(const std::string& where) const {
    return str(where, ":", line_, ":", column_);
}

namespace {
constexpr int kMaxDepth = 256;
}  // namespace

// Recursive descent over the text; tracks the line as it skips whitespace (the only place a raw
// newline may occur) so every value records its line and column in O(1).
class JsonParser {
public:
    JsonParser(std::string_view text, const std::string& where, int64_t first_line)
        : s_(text), where_(where), first_line_(first_line), line_(first_line) {}

    JsonValue document() {
        skip_ws();
        JsonValue v = located_value(0);
        skip_ws();
        if (pos_ != s_.size()) fail("end of input after the JSON value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& expected) const {
        int64_t line = first_line_, col = 1;
        for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
            if (s_[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        const std::string found = pos_ < s_.size() ? str("'", s_[pos_], "'") : "end of input";
        throw Error(str(where_, ":", line, ":", col, ": expected ", expected, ", found ", found));
    }

    void skip_ws() {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
            if (s_[pos_] == '\n') {
                ++line_;
                line_start_ = pos_ + 1;
            }
            ++pos_;
        }
    }

    // value() with the position of its first character recorded.
    JsonValue located_value(int depth) {
        const int64_t line = line_;
        const auto column = static_cast<int64_t>(pos_ - line_start_) + 1;
        JsonValue v = value(depth);
        v.line_ = line;
        v.column_ = column;
        return v;
    }

    bool consume(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    JsonValue value(int depth) {
        if (depth > kMaxDepth) fail("nesting of at most 256 levels");
        if (pos_ >= s_.size()) fail("a JSON value");
        const char ch = s_[pos_];
        if (ch == '{') return object(depth);
        if (ch == '[') return array(depth);
        if (ch == '"') return JsonValue::string(string_literal());
        if (consume("true")) return JsonValue::boolean(true);
        if (consume("false")) return JsonValue::boolean(false);
        if (consume("null")) return JsonValue();
        if (ch == '-' || (ch >= '0' && ch <= '9')) return number();
        fail("a JSON value (object, array, string, number, true, false or null)");
    }

    JsonValue object(int depth) {
        ++pos_;  // '{'
        std::map<std::string, JsonValue> members;
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == '}') {
            ++pos_;
            return JsonValue::object(std::move(members));
        }
        while (true) {
            skip_ws();
            if (pos_ >= s_.size() || s_[pos_] != '"') fail("a string key");
            const size_t key_pos = pos_;
            std::string key = string_literal();
            skip_ws();
            if (pos_ >= s_.size() || s_[pos_] != ':') fail("':' after an object key");
            ++pos_;
            skip_ws();
            JsonValue v = located_value(depth + 1);
            if (members.count(key)) {
                pos_ = key_pos;
                fail(str("a key not already in this object (\"", key, "\" repeats)"));
            }
            members.emplace(std::move(key), std::move(v));
            skip_ws();
            if (pos_ < s_.size() && s_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (pos_ < s_.size() && s_[pos_] == '}') {
                ++pos_;
                return JsonValue::object(std::move(members));
            }
            fail("',' or '}' in an object");
        }
    }

    JsonValue array(int depth) {
        ++pos_;  // '['
        std::vector<JsonValue> items;
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == ']') {
            ++pos_;
            return JsonValue::array(std::move(items));
        }
        while (true) {
            skip_ws();
            items.push_back(located_value(depth + 1));
            skip_ws();
            if (pos_ < s_.size() && s_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (pos_ < s_.size() && s_[pos_] == ']') {
                ++pos_;
                return JsonValue::array(std::move(items));
            }
            fail("',' or ']' in an array");
        }
    }

    JsonValue number() {
        const size_t start = pos_;
        bool integer_literal = true;
        if (s_[pos_] == '-') ++pos_;
        auto digits = [&] {
            const size_t d0 = pos_;
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
            return pos_ - d0;
        };
        if (pos_ < s_.size() && s_[pos_] == '0') {
            ++pos_;
        } else if (digits() == 0) {
            fail("a digit");
        }
        if (pos_ < s_.size() && s_[pos_] == '.') {
            integer_literal = false;
            ++pos_;
            if (digits() == 0) fail("a digit after '.'");
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            integer_literal = false;
            ++pos_;
            if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
            if (digits() == 0) fail("a digit in the exponent");
        }
        double v = 0.0;
        const auto r = std::from_chars(s_.data() + start, s_.data() + pos_, v);
        if (r.ec == std::errc::result_out_of_range) {
            // Overflow to +-inf, underflow to 0 (from_chars leaves v unset on ERANGE).
            v = std::strtod(std::string(s_.substr(start, pos_ - start)).c_str(), nullptr);
        } else if (r.ec != std::errc()) {
            pos_ = start;
            fail("a number");
        }
        JsonValue out = JsonValue::number(v);
        int64_t i = 0;
        if (integer_literal &&
            std::from_chars(s_.data() + start, s_.data() + pos_, i).ec == std::errc())
            out.integer_ = i;
        return out;
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

    uint32_t hex4() {
        uint32_t cp = 0;
        for (int i = 0; i < 4; ++i, ++pos_) {
            if (pos_ >= s_.size()) fail("4 hex digits after \\u");
            const char h = s_[pos_];
            cp <<= 4;
            if (h >= '0' && h <= '9') {
                cp |= static_cast<uint32_t>(h - '0');
            } else if (h >= 'a' && h <= 'f') {
                cp |= static_cast<uint32_t>(h - 'a' + 10);
            } else if (h >= 'A' && h <= 'F') {
                cp |= static_cast<uint32_t>(h - 'A' + 10);
            } else {
                fail("4 hex digits after \\u");
            }
        }
        return cp;
    }

    std::string string_literal() {
        ++pos_;  // opening quote
        std::string out;
        while (true) {
            if (pos_ >= s_.size()) fail("a closing '\"'");
            const char ch = s_[pos_];
            if (ch == '"') {
                ++pos_;
                return out;
            }
            if (static_cast<unsigned char>(ch) < 0x20) fail("no raw control character in a string");
            if (ch != '\\') {
                out += ch;
                ++pos_;
                continue;
            }
            ++pos_;
            if (pos_ >= s_.size()) fail("an escape character");
            const char e = s_[pos_++];
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
                        pos_ += 2;
                        const uint32_t lo = hex4();
                        if (lo >= 0xDC00 && lo < 0xE000) {
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        } else {
                            fail("a low surrogate \\uDC00-\\uDFFF");
                        }
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    --pos_;
                    fail("one of the escapes \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
            }
        }
    }

    std::string_view s_;
    const std::string& where_;
    int64_t first_line_ = 1;
    int64_t line_ = 1;       // line of pos_ as far as skip_ws has seen
    size_t line_start_ = 0;  // offset of that line's first character
    size_t pos_ = 0;
};

JsonValue parse_json(std::string_view text, const std::string& where, int64_t first_line) {
    return JsonParser(text, where, first_line).document();
}

}  // namespace segrank
