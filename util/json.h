// JSON of the files segrank writes (metrics.jsonl, report.json, `evaluate --json`, `leaderboard
// --json`, `stats --json`, `bench --json`) and reads back, through nlohmann-json. One number format
// for all of them: dump_json's. User-written JSON that needs file:line:col errors on its content
// (eval.indices) goes through util/json_value.h instead.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace segrank {

/// A JSON document whose objects keep their keys in insertion order, so files list keys in the
/// order the code adds them.
using Json = nlohmann::ordered_json;

/// `doc` as compact JSON text (no spaces, no trailing newline). Integers print as integers;
/// doubles in nlohmann's shortest round-trip form ("0.1", "2.0", "1e-05", "1.5e+20"); NaN and
/// infinities as null. Bytes of strings that are not valid UTF-8 become U+FFFD (never throws).
std::string dump_json(const Json& doc);

/// `v` spelled exactly as dump_json spells a double ("null" when not finite): for text outputs
/// (CSV cells) that carry the same numbers as the JSON.
std::string format_number(double v);

/// Parses JSON text that segrank wrote. Throws segrank::Error
/// "<where>:<line>:<column>: <what the parser found and expected>" on malformed text, where
/// `first_line` numbers the text's first line (one line of a JSONL file).
Json read_json(std::string_view text, const std::string& where, int64_t first_line = 1);

/// Reads and parses a JSON file (read_json). Throws segrank::Error naming the path: what
/// read_input_file (util/user_input.h) says of a path that is no readable regular file ("<path>:
/// no such file (expected a JSON file)", a symbolic link loop, a directory ...), or a parse error.
Json read_json_file(const std::filesystem::path& path);

/// Member `key` of object `obj` as a double; NaN when `obj` is not an object or the member is
/// absent, null or not a number (non-finite values are written as null).
double json_number_or_nan(const Json& obj, const std::string& key);

/// Member `key` of object `obj` as a string; nullopt when absent or not a string.
std::optional<std::string> json_string(const Json& obj, const std::string& key);

}  // namespace segrank
