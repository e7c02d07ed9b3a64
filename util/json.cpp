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

namespace {

// nlohmann's DOM builder that keeps the byte position of the first error instead of throwing:
// Json::parse reports a position for syntax errors only, not for a number out of the double
// range ("1e999", out_of_range.406), which it throws without one.
class PositionedDomParser : public nlohmann::detail::json_sax_dom_parser<Json> {
public:
    explicit PositionedDomParser(Json& root)
        : nlohmann::detail::json_sax_dom_parser<Json>(root, /*allow_exceptions=*/false) {}
    template <class Exception>
    bool parse_error(std::size_t position, const std::string& /*last_token*/, const Exception& ex) {
        failed_ = true;
        position_ = position;
        what_ = ex.what();
        return false;
    }
    bool failed() const { return failed_; }
    size_t position() const { return position_; }
    const std::string& what() const { return what_; }

private:
    bool failed_ = false;
    size_t position_ = 0;
    std::string what_;
};

// nlohmann's message without its "[json.exception.<kind>.<id>] " tag and, for a parse_error,
// without its own "parse error at line L, column C: " (ours counts lines of the whole file).
std::string parser_message(std::string what) {
    if (what.rfind("[json.exception.", 0) == 0) {
        const size_t close = what.find("] ");
        if (close != std::string::npos) what = what.substr(close + 2);
    }
    const size_t at = what.find("column ");
    const size_t colon = at == std::string::npos ? std::string::npos : what.find(": ", at);
    if (colon != std::string::npos) what = what.substr(colon + 2);
    return what;
}

}  // namespace

Json read_json(std::string_view text, const std::string& where, int64_t first_line) {
    Json doc;
    PositionedDomParser sax(doc);
    bool ok = false;
    try {
        ok = Json::sax_parse(text.begin(), text.end(), &sax);
    } catch (const Json::exception& e) {
        // Not expected (the parser reports its errors through parse_error), but a library error
        // must still name the file rather than surface as an internal error.
        throw Error(str(where, ": ", parser_message(e.what())));
    }
    if (ok && !sax.failed()) return doc;
    SEGRANK_CHECK(sax.failed(), where, ": the JSON parser stopped without naming an error");
    // The position counts the characters read up to and including the offending one.
    const size_t pos = sax.position();
    const size_t before = std::min(text.size(), pos > 0 ? pos - 1 : size_t{0});
    const std::string_view head = text.substr(0, before);
    const auto line = first_line + static_cast<int64_t>(std::count(head.begin(), head.end(), '\n'));
    const size_t line_start = head.rfind('\n') == std::string_view::npos ? 0 : head.rfind('\n') + 1;
    const auto column = static_cast<int64_t>(before - line_start) + 1;
    throw Error(str(where, ":", line, ":", column, ": ", parser_message(sax.what())));
}

Json read_json_file(const std::filesystem::path& path) {
    // read_input_file names what is wrong with the path: "no such file", a symbolic link loop or
    // a broken link, a directory, a FIFO ...
    return read_json(read_input_file(path, "a JSON file", kMaxJsonFileBytes), path.string());
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
