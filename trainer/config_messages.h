// Where the config loader's messages point (a file position, the file, a `--set` override) and
// the order they are reported in (docs/config.md#errors). No toml++ here: plain text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gnn/core/check.h"
#include "gnn/core/enum_names.h"

namespace segrank::cfg::detail {

/// Where a message points: a position in the file, the file as a whole, or one `--set` override.
/// Messages are printed sorted by (kind, line/override index, column).
struct Loc {
    enum Kind { kPosition = 0, kFile = 1, kOverride = 2 };
    std::string text;  ///< "configs/x.toml:12:1", "configs/x.toml" or "--set optim.lr=-1"
    Kind kind = kFile;
    int64_t a = 0;  ///< line, or override index
    int64_t b = 0;  ///< column
};

/// The location of override `ov`, the `index`-th `--set` (0-based). Its text shows control
/// characters escaped (a line break as \n), so each message stays one line.
Loc override_loc(const std::string& ov, size_t index);

/// Where a range or cross-key problem about `key` (at `at`) points: `at`, except for a key set
/// nowhere (`at` is the file alone) whose `message` quotes a key an override set (`--set
/// data.train_split="valid"` meeting data.valid_split's default): that override, what the user
/// changed. `origins` maps dotted keys to where they were set.
Loc problem_location(const Loc& at, const std::string& key, const std::string& message,
                     const std::map<std::string, Loc>& origins);

/// What is wrong with the shape of override `ov` (a line break anywhere in it, or not
/// section.key=value), or nullopt. A line break is refused because the value is parsed as a TOML
/// document of its own: the lines after the first would be silently dropped.
std::optional<std::string> override_shape_problem(std::string_view ov);

/// The first control character of `s` (a NUL, a line break, an escape, ...; TOML strings may hold
/// them as \u0000 etc.) described for a message, e.g. "contains a NUL character (\u0000 at
/// offset 1)", or nullopt when `s` holds none.
std::optional<std::string> control_character_problem(std::string_view s);

/// One problem found while loading: where, and the full text ("where: key: message").
struct LocatedMessage {
    Loc where;
    std::string text;
};

/// The texts of `messages` sorted by where they point (file positions, the file, then overrides
/// in order); messages at the same place keep their order.
std::vector<std::string> sorted_texts(std::vector<LocatedMessage> messages);

/// Throws segrank::Error with `errors` joined by newlines.
[[noreturn]] void throw_errors(const std::vector<std::string>& errors);

/// What a key of C++ type T takes, for messages (the non-number types of the schema: bool, enums,
/// strings, string lists, loss-term lists).
template <typename T>
std::string expected_of() {
    if constexpr (std::is_same_v<T, bool>)
        return "a boolean (true or false)";
    else if constexpr (std::is_enum_v<T>)
        return str("one of ", enum_name_list<T>());
    else if constexpr (std::is_same_v<T, std::string>)
        return "a string";
    else if constexpr (std::is_same_v<T, std::vector<std::string>>)
        return "an array of strings";
    else
        return "an array of {name, weight} tables";
}

/// `s` without leading and trailing spaces and tabs.
std::string trim(std::string_view s);

}  // namespace segrank::cfg::detail
