// Enum name tables (docs/style.md#enums). Every enum with a text spelling (config values, CLI
// options, file attributes) has ONE table of {value, name} pairs, defined beside its parse function
// and returned by an `enum_names(E)` overload declared next to the enum:
//   enum class Activation { kGelu, kRelu, kLeakyRelu };            // gnn/ops/pointwise.h
//   std::span<const EnumName<Activation>> enum_names(Activation);  // found by ADL
//   Activation parse_activation(std::string_view s);  // parse_enum<Activation>("activation", s)
//   std::string_view to_string(Activation a);         // enum_name(a)
// Generic code (the config reader and writer) reaches every table through enum_names(E{}).
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gnn/core/check.h"

namespace segrank {

/// One entry of an enum's name table: a value and its spelling.
template <typename E>
struct EnumName {
    E value;
    std::string_view name;
};

/// The value spelled `s`, or nullopt when the table of E has no such name.
template <typename E>
std::optional<E> find_enum(std::string_view s) {
    for (const auto& e : enum_names(E{}))
        if (e.name == s) return e.value;
    return std::nullopt;
}

/// The valid names of E, quoted, comma-separated, in table order: `"a", "b", "c"` (for messages).
template <typename E>
std::string enum_name_list() {
    std::string out;
    for (const auto& e : enum_names(E{})) {
        if (!out.empty()) out += ", ";
        out += '"';
        out += e.name;
        out += '"';
    }
    return out;
}

/// The spelling of `v`; "?" for a value missing from the table (a bug: tables are complete).
template <typename E>
std::string_view enum_name(E v) {
    for (const auto& e : enum_names(E{}))
        if (e.value == v) return e.name;
    return "?";
}

/// The value spelled `s`. Throws segrank::Error `unknown <what> "<s>" (valid: "a", "b")`.
template <typename E>
E parse_enum(std::string_view what, std::string_view s) {
    const std::optional<E> v = find_enum<E>(s);
    SEGRANK_CHECK(v.has_value(), "unknown ", what, " \"", s, "\" (valid: ", enum_name_list<E>(),
                  ")");
    return *v;
}

}  // namespace segrank
