// The config loader's helpers on toml++ documents (trainer/config.cpp, docs/config.md#errors):
// how a node is named in messages, where it is, and parsing with number literals toml++ cannot
// hold quoted so that the loader can name their key. Included by trainer/config.cpp only (and
// trainer/config_toml.cpp).
#pragma once
#include <toml++/toml.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/config_literal.h"
#include "trainer/config_messages.h"

namespace segrank::cfg::detail {

/// "table", "array", "string", "integer", "float", "boolean", "date", "time", "date-time".
std::string_view type_name(const toml::node& n);

/// "float 2.5", "string \"abc\"", "array" for messages.
std::string describe(const toml::node& n);

/// "source:line:col" of `r` (the file `source` alone when the node has no position).
Loc position(std::string_view source, const toml::source_region& r);

/// A TOML scalar as TOML writes it (strings quoted), for comparison with RetiredKey::off.
std::string toml_literal(const toml::node& n);

/// toml::parse of `text`, each number literal toml++ cannot hold (an integer beyond 64 bits, a
/// float beyond a double) quoted in place (quote_big_integer, at most 1000) and added to `big`.
/// Rethrows toml::parse_error for any other problem.
toml::table parse_quoting_numbers(std::string text, std::string_view source_name,
                                  std::vector<BigInteger>& big);

/// The dotted names ("loss.terms[0].weight") of the string nodes under `n`, itself named
/// `dotted`, that stand for literals parse_quoting_numbers quoted (`big`), with the literal, into
/// `out`.
void name_quoted_numbers(const toml::node& n, const std::string& dotted,
                         const std::vector<BigInteger>& big,
                         std::map<std::string, std::string>& out);

}  // namespace segrank::cfg::detail
