// A small JSON document model and strict parser (RFC 8259) whose values remember their line and
// column, for user-written files whose content errors must name file:line:col (eval.indices,
// eval/eval_indices.cpp). Everything segrank writes and reads back goes through util/json.h.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace segrank {

/// One JSON value. Objects keep their keys sorted (std::map); numbers are doubles.
class JsonValue {
public:
    enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

    JsonValue() = default;
    static JsonValue boolean(bool b);
    static JsonValue number(double d);
    static JsonValue string(std::string s);
    static JsonValue array(std::vector<JsonValue> items);
    static JsonValue object(std::map<std::string, JsonValue> members);

    Kind kind() const { return kind_; }
    bool is_null() const { return kind_ == Kind::kNull; }
    bool is_number() const { return kind_ == Kind::kNumber; }
    bool is_string() const { return kind_ == Kind::kString; }
    bool is_array() const { return kind_ == Kind::kArray; }
    bool is_object() const { return kind_ == Kind::kObject; }

    /// Member `key` of an object, or nullptr when this is not an object or has no such key.
    const JsonValue* find(const std::string& key) const;
    /// The number of member `key`; nullopt when absent, null or not a number.
    std::optional<double> number_at(const std::string& key) const;
    /// The string of member `key`; nullopt when absent or not a string.
    std::optional<std::string> string_at(const std::string& key) const;

    bool as_bool() const { return bool_; }
    double as_number() const { return number_; }
    /// The exact value of a number written as an integer literal (no fraction, no exponent) that
    /// fits int64; nullopt for other numbers ("1.0", "1e3", out of range) and other kinds.
    std::optional<int64_t> as_integer() const { return integer_; }
    const std::string& as_string() const { return string_; }
    /// Items of an array (empty for other kinds).
    const std::vector<JsonValue>& items() const { return items_; }
    /// Members of an object (empty for other kinds).
    const std::map<std::string, JsonValue>& members() const { return members_; }

    /// 1-based line and column (in bytes) of the value's first character in the text parse_json
    /// read; 0 for values built in code. For messages about well-formed JSON with wrong content.
    int64_t line() const { return line_; }
    int64_t column() const { return column_; }
    /// "<where>:<line>:<column>" of this value, the prefix of parse_json's own errors.
    std::string location(const std::string& where) const;

private:
    friend class JsonParser;
    Kind kind_ = Kind::kNull;
    bool bool_ = false;
    double number_ = 0.0;
    std::string string_;
    std::vector<JsonValue> items_;
    std::map<std::string, JsonValue> members_;
    std::optional<int64_t> integer_;
    int64_t line_ = 0;
    int64_t column_ = 0;
};

/// Parses one JSON document (surrounding whitespace allowed). Throws segrank::Error
/// "<where>:<line>:<column>: expected <what>, found <what>" on malformed input, duplicate object
/// keys or nesting deeper than 256 levels. `first_line` numbers the text's first line (for one line
/// of a JSONL file). Every value records its line and column (JsonValue::line/column) so callers
/// that check the content (eval.indices, leaderboard JSON) report errors in the same form.
JsonValue parse_json(std::string_view text, const std::string& where, int64_t first_line = 1);

}  // namespace segrank
