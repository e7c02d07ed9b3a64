// Number literals of a config that toml++ cannot hold (integers beyond 64 bits, floats beyond a
// double), and the integer range a
// key allows, for the loader's "out of range" messages (trainer/config.cpp,
// docs/config.md#errors). No toml++ here: plain text.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainer/config_schema.h"

namespace segrank::cfg::detail {

/// True for a TOML integer literal: decimal with an optional sign and underscores ("-1_000"), or
/// 0x / 0o / 0b digits.
bool toml_integer_literal(std::string_view s);

/// A number literal toml++ cannot hold in a config file (an integer beyond 64 bits or a float
/// beyond a double), replaced by a quoted string.
struct BigInteger {
    int64_t line = 0;    ///< 1-based line
    int64_t column = 0;  ///< 1-based column where the quoted stand-in (its opening quote) starts
    std::string literal;
};

/// Replaces in `text` the integer literal, or the float literal beyond a double
/// (toml_float_overflows), that ends at (or runs through) 1-based (line, column), where toml++
/// reports "not representable in 64 bits" or "could not be interpreted as a value", by the same
/// characters in double quotes, so that the document parses and the loader finds a string node at
/// that spot. Returns nullopt and leaves `text` unchanged when no such literal is there.
std::optional<BigInteger> quote_big_integer(std::string& text, int64_t line, int64_t column);

/// True when `description`, a toml++ parse error, is about a number literal toml++ cannot hold
/// ("not representable in 64 bits", "could not be interpreted as a value"): the literal is then
/// quoted by quote_big_integer and named by key.
bool toml_number_out_of_range(std::string_view description);

/// True for a TOML float literal ("1e400", "-1.5e999", "1_0e400") whose value is beyond a double,
/// which toml++ refuses to parse: the loader reports it as out of range, not as a bare string.
bool toml_float_overflows(std::string_view s);

/// True when `value`, a `--set` value toml++ refused to parse, was meant as a TOML value rather
/// than a bare word (which the loader reads as a string): it starts with a digit, a sign, '.', '[',
/// '{' or a quote, or with "true" / "false" in any case ("True", "falsey"). The loader then reports
/// the parse error for a key that holds no string ("--set optim.lr=1e400x: optim.lr: not a valid
/// TOML value: ...").
bool looks_like_toml_value(std::string_view value);

/// The message for `literal`, a number beyond what a double key holds (a float literal that
/// overflows, or an integer literal beyond 64 bits), with the key's valid range `check`.
std::string double_out_of_range(std::string_view literal, const Check& check);

/// "[1, 2147483647]": the integers `check` allows within [type_min, type_max].
std::string integer_range(const Check& check, int64_t type_min, int64_t type_max);

}  // namespace segrank::cfg::detail
