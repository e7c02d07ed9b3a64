// load_config: TOML (toml++ 3.3; its other includer is trainer/config_toml.cpp) -> RunConfig, with
// `--set` overrides, unknown-key detection with suggestions, type checks and range checks reported
// as file:line:col (docs/config.md#errors).
#include "trainer/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "gnn/core/check.h"
#include "trainer/config_keys.h"
#include "trainer/config_literal.h"
#include "trainer/config_messages.h"
#include "trainer/config_schema.h"
#include "trainer/config_toml.h"
#include "util/user_input.h"

namespace segrank {
namespace {

using cfg::detail::Check;
using cfg::detail::describe;
using cfg::detail::expected_of;
using cfg::detail::find_retired;
using cfg::detail::key_suggestion;
using cfg::detail::KeyCollector;
using cfg::detail::Loc;
using cfg::detail::LocatedMessage;
using cfg::detail::name_quoted_numbers;
using cfg::detail::override_loc;
using cfg::detail::parse_quoting_numbers;
using cfg::detail::position;
using cfg::detail::retired_key_message;
using cfg::detail::RetiredKey;
using cfg::detail::sorted_texts;
using cfg::detail::throw_errors;
using cfg::detail::toml_literal;
using cfg::detail::trim;

/// Reads one TOML document (already merged with overrides) into a RunConfig. Every problem found
/// (unknown keys, wrong types, range and cross-key checks) is collected; none stops the walk.
class Loader {
public:
    Loader(std::string source, const toml::table& root, bool stored)
        : source_(std::move(source)), root_(root), stored_(stored) {
        cfg::detail::visit_schema(schema_, std::as_const(defaults_));
    }

    /// Records where `dotted` came from when it was set by an override (or moved by the loss
    /// alias).
    void set_origin(const std::string& dotted, Loc origin) { origin_[dotted] = std::move(origin); }
    void error(const Loc& where, const std::string& dotted, const std::string& msg) {
        errors_.push_back({where, dotted.empty() ? str(where.text, ": ", msg)
                                                 : str(where.text, ": ", dotted, ": ", msg)});
    }
    bool has_errors() const { return !errors_.empty(); }
    /// The messages, sorted by where they point (file positions, the file, then overrides in
    /// order).
    std::vector<std::string> sorted_errors() const { return sorted_texts(errors_); }

    Loc at(const toml::source_region& r) const { return position(source_, r); }
    /// Location of a key: its override, else its position in the file, else the file.
    Loc where(const std::string& dotted_item) const {
        const std::string dotted =
            dotted_item.substr(0, dotted_item.find('['));  // list items: their key
        if (auto it = origin_.find(dotted); it != origin_.end()) return it->second;
        if (auto it = key_pos_.find(dotted); it != key_pos_.end()) return it->second;
        return Loc{source_};
    }

    /// Range and cross-key problems of the built config. A problem about a key whose value was
    /// already rejected (wrong type, bad enum name), or that quotes such a key, is dropped: that
    /// key still holds its default, so the problem would describe a value the user never wrote.
    void check_values(const RunConfig& cfg) {
        for (const auto& p : cfg::detail::check_config(cfg)) {
            bool stale = rejected_.count(p.key) != 0;
            for (const auto& k : rejected_) stale = stale || p.message.find(k) != std::string::npos;
            if (!stale)
                error(problem_location(where(p.key), p.key, p.message, origin_), p.key, p.message);
        }
    }

    /// The location of every key set in the file or by an override, for RunConfig::sources.
    cfg::KeySources sources() const {
        cfg::KeySources s;
        s.file = source_;
        for (const auto& k : schema_.keys) {
            const Loc l = where(k);
            if (l.kind != Loc::kFile) s.at[k] = l.text;
        }
        return s;
    }

    /// Walks the document: unknown sections/keys are errors with a suggestion.
    void check_keys() {
        const std::set<std::string> sections(schema_.sections.begin(), schema_.sections.end());
        const std::set<std::string> keys(schema_.keys.begin(), schema_.keys.end());
        for (auto&& [k, v] : root_) {
            const std::string name(k.str());
            const Loc loc = origin_.count(name) ? origin_.at(name) : at(k.source());
            if (!sections.count(name)) {
                error(loc, name,
                      str(v.is_table() ? "unknown section" : "unknown top-level key",
                          suggestion(name, true)));
                continue;
            }
            const toml::table* t = v.as_table();
            if (!t) {
                error(loc, name, str("expected a table [", name, "], got ", describe(v)));
                continue;
            }
            for (auto&& [k2, v2] : *t) {
                const std::string dotted = name + "." + std::string(k2.str());
                if (!key_pos_.count(dotted)) key_pos_[dotted] = at(k2.source());
                if (keys.count(dotted)) continue;
                if (const RetiredKey* r = find_retired(dotted)) {
                    if (auto msg = retired_key_message(*r, dotted, toml_literal(v2), stored_))
                        error(where(dotted), dotted, *msg);
                    continue;
                }
                error(where(dotted), dotted, str("unknown key", suggestion(dotted, false)));
            }
        }
    }

    // ---- visitor interface for visit_schema
    void section(std::string_view name, std::string_view) {
        section_ = name;
        const toml::node* n = root_.get(name);
        table_ = n ? n->as_table() : nullptr;
    }
    template <typename T>
    void field(std::string_view key, T& value, std::string_view, Check check = {}) {
        if (!table_) return;
        const toml::node* n = table_->get(key);
        if (!n) return;
        const std::string dotted = str(section_, ".", key);
        read(*n, value, dotted, check);
    }

    /// A number literal beyond 64 bits / a double given to `--set dotted=...` (a string node).
    void set_big_integer(const std::string& dotted, std::string literal) {
        big_by_key_[dotted] = std::move(literal);
    }
    /// An integer literal beyond 64 bits in the file, quoted at (line, column) so that the
    /// document parses (BigIntegers below).
    void set_big_integer(int64_t line, int64_t column, std::string literal) {
        big_by_pos_[{line, column}] = std::move(literal);
    }

    /// A `--set dotted=value` toml++ refused with `error` (a string node holding `value`).
    void set_unparsed(const std::string& dotted, std::string value, std::string error) {
        unparsed_[dotted] = {std::move(value), std::move(error)};
    }

private:
    std::string suggestion(const std::string& given, bool top_level) const {
        return key_suggestion(given, top_level, schema_.sections, schema_.keys);
    }

    void type_error(const std::string& dotted, std::string_view expected, const toml::node& n) {
        rejected_.insert(dotted.substr(0, dotted.find('[')));
        error(where(dotted), dotted, str("expected ", expected, ", got ", describe(n)));
    }

    /// The literal of an integer too large for 64 bits that `n` stands for (set_big_integer), or
    /// nullopt.
    std::optional<std::string> big_literal(const toml::node& n, const std::string& dotted) const {
        if (!n.is_string()) return std::nullopt;
        const auto it = big_by_key_.find(dotted);  // --set (an item inside its array: line 1)
        if (it != big_by_key_.end() && n.as_string()->get() == it->second) return it->second;
        const auto& b = n.source().begin;
        if (b.line == 0) return std::nullopt;
        const auto at =
            big_by_pos_.find({static_cast<int64_t>(b.line), static_cast<int64_t>(b.column)});
        return at != big_by_pos_.end() ? std::optional(at->second) : std::nullopt;
    }

    /// The parse error of `--set dotted=value` when toml++ refused the value, `n` is the bare
    /// string standing for it, and it was meant as a value of type T: looks_like_toml_value (for
    /// a list of strings an array or table; never for a string key, which takes any word).
    template <typename T>
    std::optional<std::string> unparsed(const toml::node& n, const std::string& dotted) const {
        const auto it = unparsed_.find(dotted);
        if (std::is_same_v<T, std::string> || it == unparsed_.end() || !n.is_string() ||
            n.source().begin.line != 0 || n.as_string()->get() != it->second.first)
            return std::nullopt;
        const std::string& v = it->second.first;
        const bool meant = std::is_same_v<T, std::vector<std::string>>
                               ? v.starts_with('[') || v.starts_with('{')
                               : cfg::detail::looks_like_toml_value(v);
        return meant ? std::optional(it->second.second) : std::nullopt;
    }

    /// "out of range: expected an integer in [1, 2147483647], got 99999999999": the range is the
    /// field's Check within what type T holds.
    template <typename T>
    void range_error(const std::string& dotted, const Check& check, const std::string& given) {
        static_assert(sizeof(T) < sizeof(int64_t) || std::is_signed_v<T>);
        rejected_.insert(dotted.substr(0, dotted.find('[')));
        const std::string range = cfg::detail::integer_range(check, std::numeric_limits<T>::min(),
                                                             std::numeric_limits<T>::max());
        error(where(dotted), dotted,
              str("out of range: expected an integer in ", range, ", got ", given));
    }

    template <typename T>
    void read(const toml::node& n, T& value, const std::string& dotted, const Check& check = {}) {
        if (const auto big = big_literal(n, dotted)) {
            const char* kind = cfg::detail::toml_integer_literal(*big) ? "integer " : "float ";
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                return range_error<T>(dotted, check, *big);
            } else if constexpr (std::is_floating_point_v<T>) {
                rejected_.insert(dotted);
                return error(where(dotted), dotted, cfg::detail::double_out_of_range(*big, check));
            } else if constexpr (std::is_same_v<T, std::string>) {
                // A bare --set value is a string; in a file a string is quoted.
                if (n.source().begin.line == 0 && cfg::detail::toml_float_overflows(*big))
                    return void(value = *big);
                rejected_.insert(dotted);
                return error(where(dotted), dotted, str("expected a string, got ", kind, *big));
            } else {
                rejected_.insert(dotted);
                return error(where(dotted), dotted,
                             str("expected ", expected_of<T>(), ", got ", kind, *big));
            }
        }
        if (const auto why = unparsed<T>(n, dotted)) {
            rejected_.insert(dotted);
            return error(where(dotted), dotted, str("not a valid TOML value: ", *why));
        }
        if constexpr (std::is_same_v<T, bool>) {
            if (!n.is_boolean()) return type_error(dotted, "a boolean (true or false)", n);
            value = n.as_boolean()->get();
        } else if constexpr (std::is_enum_v<T>) {
            if (!n.is_string()) return type_error(dotted, str("one of ", enum_name_list<T>()), n);
            if (const std::optional<T> v = find_enum<T>(n.as_string()->get()))
                value = *v;
            else
                type_error(dotted, str("one of ", enum_name_list<T>()), n);
        } else if constexpr (std::is_integral_v<T>) {
            if (!n.is_integer()) return type_error(dotted, "an integer", n);
            const int64_t x = n.as_integer()->get();
            if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max())
                return range_error<T>(dotted, check, std::to_string(x));
            value = static_cast<T>(x);
        } else if constexpr (std::is_floating_point_v<T>) {
            if (n.is_integer())
                value = static_cast<T>(n.as_integer()->get());
            else if (n.is_floating_point())
                value = static_cast<T>(n.as_floating_point()->get());
            else
                type_error(dotted, "a number", n);
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (!n.is_string()) return type_error(dotted, "a string", n);
            value = n.as_string()->get();
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            read_string_list(n, value, dotted);
        } else {
            static_assert(std::is_same_v<T, std::vector<LossTerm>>);
            read_loss_terms(n, value, dotted);
        }
    }

    /// An array of strings; a single string is read as a one-element list.
    void read_string_list(const toml::node& n, std::vector<std::string>& value,
                          const std::string& dotted) {
        if (n.is_string()) {
            value = {n.as_string()->get()};
            return;
        }
        const toml::array* a = n.as_array();
        if (!a) return type_error(dotted, "an array of strings", n);
        std::vector<std::string> out;
        for (size_t i = 0; i < a->size(); ++i) {
            const toml::node& el = *a->get(i);
            if (!el.is_string())
                return type_error(dotted, str("strings in the array (element ", i, ")"), el);
            out.push_back(el.as_string()->get());
        }
        value = std::move(out);
    }

    /// `[{name = "listmle", weight = 1.0}, ...]`; weight defaults to 1.
    void read_loss_terms(const toml::node& n, std::vector<LossTerm>& value,
                         const std::string& dotted) {
        const toml::array* a = n.as_array();
        if (!a) return type_error(dotted, "an array of {name, weight} tables", n);
        std::vector<LossTerm> out;
        for (size_t i = 0; i < a->size(); ++i) {
            const toml::node& el = *a->get(i);
            const toml::table* t = el.as_table();
            const std::string item = str(dotted, "[", i, "]");
            if (!t) return type_error(item, "a table {name = \"...\", weight = ...}", el);
            LossTerm term;
            for (auto&& [k, v] : *t) {
                if (k.str() != "name" && k.str() != "weight") {
                    const std::string near =
                        edit_distance(k.str(), "weight") <= 2 ? " (did you mean 'weight'?)"
                        : edit_distance(k.str(), "name") <= 2 ? " (did you mean 'name'?)"
                                                              : "";
                    rejected_.insert(dotted);
                    error(where(dotted), item,
                          str("unknown key '", k.str(), "' (valid: name, weight)", near));
                }
            }
            const toml::node* name = t->get("name");
            if (!name) {
                rejected_.insert(dotted);
                error(where(dotted), item, "missing key 'name'");
            } else
                read(*name, term.kind, item + ".name");
            if (const toml::node* w = t->get("weight")) read(*w, term.weight, item + ".weight");
            out.push_back(term);
        }
        value = std::move(out);
    }

    std::string source_;
    const toml::table& root_;
    bool stored_ = false;  ///< a config a segrank run wrote (checkpoint): retired keys are dropped
    const RunConfig defaults_{};
    KeyCollector schema_;
    std::map<std::string, Loc> origin_;
    std::map<std::string, std::string> big_by_key_;                  // --set key -> literal
    std::map<std::pair<int64_t, int64_t>, std::string> big_by_pos_;  // (line, column) -> literal
    std::map<std::string, std::pair<std::string, std::string>> unparsed_;  // key -> value, error
    std::map<std::string, Loc> key_pos_;
    std::vector<LocatedMessage> errors_;
    std::set<std::string> rejected_;  // keys (without [i]) whose value was refused while reading
    std::string section_;
    const toml::table* table_ = nullptr;
};

/// Replaces the older top-level `loss = [...]` by `[loss] terms = [...]`.
void apply_loss_alias(toml::table& root, std::map<std::string, Loc>* origin,
                      std::string_view source) {
    toml::node* n = root.get("loss");
    if (!n || !n->is_array()) return;
    for (auto&& [k, v] : root) {
        if (k.str() != "loss") continue;
        (*origin)["loss.terms"] = position(source, k.source());
    }
    toml::array terms = std::move(*n->as_array());
    root.erase("loss");
    toml::table t;
    t.insert("terms", std::move(terms));
    root.insert("loss", std::move(t));
}

/// Parses a config file. toml++ rejects an integer literal that 64 bits cannot hold, and a float
/// literal beyond a double ("1e400"), with a parse error naming no key; such a literal is quoted in
/// place and the text parsed again, so that the loader names the key and its valid range
/// (Loader::range_error, double_out_of_range). Other parse errors throw
/// "file:line:col: TOML parse error: ...".
toml::table parse_config_text(std::string_view toml_text, std::string_view source_name,
                              std::vector<cfg::detail::BigInteger>& big) {
    try {
        return parse_quoting_numbers(std::string(toml_text), source_name, big);
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        throw Error(
            str(source_name, ":", b.line, ":", b.column, ": TOML parse error: ", e.description()));
    }
}

RunConfig load_config_text(std::string_view toml_text, std::string_view source_name,
                           const std::vector<std::string>& overrides, bool stored) {
    std::vector<cfg::detail::BigInteger> big_in_file;
    toml::table root = parse_config_text(toml_text, source_name, big_in_file);
    std::map<std::string, std::string> big_in_overrides;                  // dotted key -> literal
    std::map<std::string, std::pair<std::string, std::string>> unparsed;  // key -> value, error
    std::map<std::string, Loc> origin;
    apply_loss_alias(root, &origin, source_name);

    struct Pending {
        Loc where;
        std::string key, message;
    };
    std::vector<Pending> bad_overrides;  // reported with the file's problems, not instead of them
    for (size_t i = 0; i < overrides.size(); ++i) {
        const std::string& ov = overrides[i];
        const Loc where = override_loc(ov, i);
        if (auto bad = cfg::detail::override_shape_problem(ov)) {
            bad_overrides.push_back({where, "", std::move(*bad)});
            continue;
        }
        const auto eq = ov.find('=');
        const std::string key = trim(std::string_view(ov).substr(0, eq));
        const auto dot = key.find('.');
        const std::string value = trim(std::string_view(ov).substr(eq + 1));
        const std::string section = key.substr(0, dot), name = key.substr(dot + 1);
        toml::table snippet;
        try {
            snippet = toml::parse(std::string_view("v = " + value), std::string_view(where.text));
        } catch (const toml::parse_error& e) {
            snippet = toml::table{};
            snippet.insert("v", value);  // not TOML: a bare string, typed like any other value
            // An integer beyond 64 bits or a float beyond a double: a number field reports it as
            // out of range.
            if ((cfg::detail::toml_integer_literal(value) &&
                 e.description().find("not representable in 64 bits") != std::string_view::npos) ||
                cfg::detail::toml_float_overflows(value)) {
                big_in_overrides[key] = value;
            } else {
                try {  // such a number inside an array or table: named by its item
                    std::vector<cfg::detail::BigInteger> big;
                    toml::table t = parse_quoting_numbers("v = " + value, where.text, big);
                    name_quoted_numbers(*t.get("v"), key, big, big_in_overrides);
                    snippet = std::move(t);
                } catch (const toml::parse_error& e2) {  // reported if the key holds no string
                    unparsed[key] = {value, std::string(e2.description())};
                }
            }
        }
        toml::node* sec = root.get(section);
        if (!sec) {
            sec = root.insert(section, toml::table{}).first->second.as_table();
            origin[section] = where;
        }
        if (!sec->is_table()) {
            bad_overrides.push_back({where, section, "is not a table in the config"});
            continue;
        }
        snippet.get("v")->visit(
            [&](auto& x) { sec->as_table()->insert_or_assign(name, std::move(x)); });
        origin[key] = where;
    }

    Loader loader{std::string(source_name), root, stored};
    for (auto& [k, v] : origin) loader.set_origin(k, v);
    for (const auto& b : big_in_file) loader.set_big_integer(b.line, b.column, b.literal);
    for (const auto& [k, v] : big_in_overrides) loader.set_big_integer(k, v);
    for (const auto& [k, v] : unparsed) loader.set_unparsed(k, v.first, v.second);
    for (const auto& b : bad_overrides) loader.error(b.where, b.key, b.message);
    loader.check_keys();
    RunConfig cfg;
    cfg::detail::visit_schema(loader, cfg);
    loader.check_values(cfg);
    if (loader.has_errors()) throw_errors(loader.sorted_errors());
    cfg.sources = loader.sources();
    return cfg;
}

}  // namespace

RunConfig load_config_string(std::string_view toml_text, std::string_view source_name,
                             const std::vector<std::string>& overrides) {
    return load_config_text(toml_text, source_name, overrides, false);
}

RunConfig load_stored_config(std::string_view toml_text, std::string_view source_name) {
    return load_config_text(toml_text, source_name, {}, true);
}

}  // namespace segrank
