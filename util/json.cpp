// JSON writing and reading through nlohmann-json (see json.h).
#include "util/json.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {

std::string dump_json(const Json& doc) {
    return doc.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

std::string format_number(double v) { return dump_json(Json(v)); }

Json read_json(std::string_view text, const std::string& where, int64_t first_line) {
    try {
        return Json::parse(text.begin(), text.end());
    } catch (const Json::parse_error& e) {
        // e.byte counts the characters read up to and including the offending one.
        const size_t before =
            std::min(text.size(), e.byte > 0 ? static_cast<size_t>(e.byte - 1) : size_t{0});
        const std::string_view head = text.substr(0, before);
        const auto line =
            first_line + static_cast<int64_t>(std::count(head.begin(), head.end(), '\n'));
        const size_t line_start =
            head.rfind('\n') == std::string_view::npos ? 0 : head.rfind('\n') + 1;
        const auto column = static_cast<int64_t>(before - line_start) + 1;
        // nlohmann's message: "[json.exception.parse_error.101] parse error at line L, column C:
        // <what>".
        std::string what = e.what();
        const size_t at = what.find("column ");
        const size_t colon = at == std::string::npos ? std::string::npos : what.find(": ", at);
        if (colon != std::string::npos) what = what.substr(colon + 2);
        throw Error(str(where, ":", line, ":", column, ": ", what));
    }
}

Json read_json_file(const std::filesystem::path& path) {
    std::error_code ec;  // a missing file keeps the "cannot open" message below
    if (std::filesystem::exists(path, ec)) require_regular_input(path, "a JSON file");
    std::ifstream in(path, std::ios::binary);
    SEGRANK_CHECK(in.good(), path.string(), ": cannot open for reading");
    std::ostringstream os;
    os << in.rdbuf();
    SEGRANK_CHECK(!in.bad(), path.string(), ": read error");
    return read_json(os.str(), path.string());
}

double json_number_or_nan(const Json& obj, const std::string& key) {
    if (!obj.is_object()) return std::numeric_limits<double>::quiet_NaN();
    const auto it = obj.find(key);
    if (it == obj.end() || !it->is_number()) return std::numeric_limits<double>::quiet_NaN();
    return it->get<double>();
}

std::optional<std::string> json_string(const Json& obj, const std::string& key) {
    if (!obj.is_object()) return std::nullopt;
    const auto it = obj.find(key);
    if (it == obj.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

}  // namespace segrank
