// The config loader's helpers on toml++ documents (trainer/config_toml.h).
#include "trainer/config_toml.h"

#include <optional>
#include <sstream>

#include "gnn/core/check.h"
#include "trainer/config_schema.h"
#include "util/user_input.h"

namespace segrank::cfg::detail {

std::string_view type_name(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::table:
            return "table";
        case toml::node_type::array:
            return "array";
        case toml::node_type::string:
            return "string";
        case toml::node_type::integer:
            return "integer";
        case toml::node_type::floating_point:
            return "float";
        case toml::node_type::boolean:
            return "boolean";
        case toml::node_type::date:
            return "date";
        case toml::node_type::time:
            return "time";
        case toml::node_type::date_time:
            return "date-time";
        default:
            return "nothing";
    }
}

// A string value longer than this is echoed cut (a 100 kB --set value is no 100 kB message).
constexpr size_t kEchoedStringBytes = 160;

std::string describe(const toml::node& n) {
    std::ostringstream os;
    os << type_name(n);
    if (n.is_string())
        os << " " << echo_value(quote_toml(n.as_string()->get()), kEchoedStringBytes);
    else if (n.is_integer())
        os << " " << n.as_integer()->get();
    else if (n.is_floating_point())
        os << " " << format_double(n.as_floating_point()->get());
    else if (n.is_boolean())
        os << (n.as_boolean()->get() ? " true" : " false");
    return os.str();
}

Loc position(std::string_view source, const toml::source_region& r) {
    if (r.begin.line == 0) return Loc{std::string(source)};
    return Loc{str(source, ":", r.begin.line, ":", r.begin.column), Loc::kPosition,
               static_cast<int64_t>(r.begin.line), static_cast<int64_t>(r.begin.column)};
}

std::string toml_literal(const toml::node& n) {
    if (const auto* b = n.as_boolean()) return b->get() ? "true" : "false";
    if (const auto* i = n.as_integer()) return std::to_string(i->get());
    if (const auto* s = n.as_string()) return str("\"", s->get(), "\"");
    return describe(n);
}

toml::table parse_quoting_numbers(std::string text, std::string_view source_name,
                                  std::vector<BigInteger>& big) {
    for (;;) {
        try {
            return toml::parse(std::string_view(text), source_name);
        } catch (const toml::parse_error& e) {
            const auto& b = e.source().begin;
            std::optional<BigInteger> q;
            if (toml_number_out_of_range(e.description()) && big.size() < 1000)
                q = quote_big_integer(text, b.line, b.column);
            if (!q) throw;
            big.push_back(std::move(*q));
        }
    }
}

void name_quoted_numbers(const toml::node& n, const std::string& dotted,
                         const std::vector<BigInteger>& big,
                         std::map<std::string, std::string>& out) {
    if (const toml::array* a = n.as_array()) {
        for (size_t i = 0; i < a->size(); ++i)
            name_quoted_numbers(*a->get(i), str(dotted, "[", i, "]"), big, out);
    } else if (const toml::table* t = n.as_table()) {
        for (auto&& [k, v] : *t) name_quoted_numbers(v, str(dotted, ".", k.str()), big, out);
    } else if (n.is_string()) {
        const auto& at = n.source().begin;
        for (const auto& b : big)
            if (b.line == static_cast<int64_t>(at.line) &&
                b.column == static_cast<int64_t>(at.column))
                out[dotted] = b.literal;
    }
}

}  // namespace segrank::cfg::detail
