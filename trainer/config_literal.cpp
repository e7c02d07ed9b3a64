// Number literals toml++ cannot hold and the integer range of a key (trainer/config_literal.h).
#include "trainer/config_literal.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "gnn/core/check.h"

namespace segrank::cfg::detail {

bool toml_integer_literal(std::string_view s) {
    auto all = [](std::string_view t, auto pred) {
        return !t.empty() && std::all_of(t.begin(), t.end(), [&](char c) {
            return pred(static_cast<unsigned char>(c)) || c == '_';
        });
    };
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b'))
        return all(s.substr(2), [](unsigned char c) { return std::isxdigit(c) != 0; });
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
    return !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])) &&
           all(s, [](unsigned char c) { return std::isdigit(c) != 0; });
}

bool looks_like_toml_value(std::string_view value) {
    if (value.empty()) return false;
    if (std::isdigit(static_cast<unsigned char>(value[0])) ||
        std::string_view("+-.[{\"'").find(value[0]) != std::string_view::npos)
        return true;
    const auto starts = [&](std::string_view word) {
        return value.size() >= word.size() &&
               std::equal(word.begin(), word.end(), value.begin(), [](char w, char c) {
                   return w == std::tolower(static_cast<unsigned char>(c));
               });
    };
    return starts("true") || starts("false");
}

bool toml_number_out_of_range(std::string_view description) {
    return description.find("not representable in 64 bits") != std::string_view::npos ||
           description.find("could not be interpreted as a value") != std::string_view::npos;
}

bool toml_float_overflows(std::string_view s) {
    std::string t;
    for (char c : s)
        if (c != '_') t += c;
    if (t.empty() || t.find_first_not_of("0123456789+-.eE") != std::string::npos ||
        t.find_first_of(".eE") == std::string::npos)
        return false;
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    return end == t.c_str() + t.size() && std::isinf(v);
}

std::string double_out_of_range(std::string_view literal, const Check& check) {
    if (toml_float_overflows(literal))
        return str(literal, " is out of range of a double (expected ", check.describe(), ")");
    return str("out of range: ", literal,
               " is beyond a 64-bit TOML integer; write a number of that size as a float (e.g. "
               "1e20)");
}

std::optional<BigInteger> quote_big_integer(std::string& text, int64_t line, int64_t column) {
    size_t start = 0;  // of the line
    for (int64_t l = 1; l < line; ++l) {
        start = text.find('\n', start);
        if (start == std::string::npos) return std::nullopt;
        ++start;
    }
    const size_t stop = std::min(text.find('\n', start), text.size());
    auto in_literal = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '+' || c == '-' ||
               c == '.';
    };
    size_t end = std::min(start + static_cast<size_t>(std::max<int64_t>(column - 1, 0)), stop);
    while (end < stop && in_literal(text[end])) ++end;
    size_t begin = end;
    while (begin > start && in_literal(text[begin - 1])) --begin;
    std::string literal = text.substr(begin, end - begin);
    if (!toml_integer_literal(literal) && !toml_float_overflows(literal)) return std::nullopt;
    text.replace(begin, end - begin, "\"" + literal + "\"");
    return BigInteger{line, static_cast<int64_t>(begin - start + 1), std::move(literal)};
}

std::string integer_range(const Check& check, int64_t type_min, int64_t type_max) {
    int64_t lo = type_min, hi = type_max;
    if (std::isfinite(check.lo) && check.lo > static_cast<double>(type_min))
        lo = static_cast<int64_t>(check.lo_open ? std::floor(check.lo) + 1 : std::ceil(check.lo));
    if (std::isfinite(check.hi) && check.hi < static_cast<double>(type_max))
        hi = static_cast<int64_t>(check.hi_open ? std::ceil(check.hi) - 1 : std::floor(check.hi));
    return str("[", lo, ", ", hi, "]");
}

}  // namespace segrank::cfg::detail
