// The config loader's message locations, their order and the error they are thrown as.
#include "trainer/config_messages.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank::cfg::detail {

Loc problem_location(const Loc& at, const std::string& key, const std::string& message,
                     const std::map<std::string, Loc>& origins) {
    if (at.kind != Loc::kFile) return at;
    for (const auto& [other, loc] : origins)
        if (loc.kind == Loc::kOverride && other != key && message.find(other) != std::string::npos)
            return loc;
    return at;
}

Loc override_loc(const std::string& ov, size_t index) {
    constexpr size_t kShownOverrideBytes = 200;  // a 100 kB value is shown cut, its key whole
    const size_t key_end = std::min(ov.find('='), ov.size());
    return Loc{"--set " + echo_value(ov, std::max(kShownOverrideBytes, key_end + 40)),
               Loc::kOverride, static_cast<int64_t>(index), 0};
}

std::optional<std::string> override_shape_problem(std::string_view ov) {
    if (const auto nl = ov.find_first_of("\r\n"); nl != std::string_view::npos)
        return str("holds a line break (", ov[nl] == '\n' ? "\\n" : "\\r", " at offset ", nl,
                   "); expected one section.key=value on one line, e.g. --set optim.lr=0.001 "
                   "(give each key its own --set)");
    const auto eq = ov.find('=');
    const std::string key = trim(ov.substr(0, eq));
    const auto dot = key.find('.');
    if (eq == std::string_view::npos || dot == std::string::npos || dot == 0 ||
        dot + 1 == key.size() || key.find('.', dot + 1) != std::string::npos)
        return "expected section.key=value (e.g. --set optim.lr=0.001)";
    return std::nullopt;
}

std::optional<std::string> control_character_problem(std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != 0x7f) continue;
        char code[8];
        std::snprintf(code, sizeof code, "\\u%04x", c);
        const char* what = c == 0      ? "a NUL character"
                           : c == '\n' ? "a line break"
                           : c == '\r' ? "a carriage return"
                           : c == '\t' ? "a tab"
                           : c == 0x1b ? "an escape character"
                                       : "a control character";
        return str("contains ", what, " (", code, " at offset ", i, ")");
    }
    return std::nullopt;
}

std::vector<std::string> sorted_texts(std::vector<LocatedMessage> messages) {
    std::stable_sort(messages.begin(), messages.end(),
                     [](const LocatedMessage& x, const LocatedMessage& y) {
                         return std::tie(x.where.kind, x.where.a, x.where.b) <
                                std::tie(y.where.kind, y.where.a, y.where.b);
                     });
    std::vector<std::string> out;
    for (auto& e : messages) out.push_back(std::move(e.text));
    return out;
}

[[noreturn]] void throw_errors(const std::vector<std::string>& errors) {
    std::string msg;
    for (const auto& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    throw Error(msg);
}

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string_view::npos) return "";
    const auto e = s.find_last_not_of(" \t");
    return std::string(s.substr(b, e - b + 1));
}

}  // namespace segrank::cfg::detail
