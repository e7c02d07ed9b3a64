// Plain-text, Markdown and CSV rendering of TextTable (util/text_table.h).
#include "util/text_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {
namespace {

size_t num_columns(const TextTable& t) {
    size_t n = t.header.size();
    for (const auto& r : t.rows) n = std::max(n, r.size());
    return n;
}

const std::string& cell(const std::vector<std::string>& row, size_t i) {
    static const std::string kEmpty;
    return i < row.size() ? row[i] : kEmpty;
}

// The cells of `t` with control characters escaped (echo_value, not cut): a file name holding a
// line break or an escape sequence stays in its cell of a text or Markdown table.
TextTable printable(const TextTable& t) {
    TextTable out = t;
    for (std::string& h : out.header) h = echo_value(h, std::string_view::npos);
    for (auto& r : out.rows)
        for (std::string& c : r) c = echo_value(c, std::string_view::npos);
    return out;
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"') out += '"';
        out += ch;
    }
    return out + "\"";
}

}  // namespace

Align TextTable::column_align(size_t i) const {
    if (i < align.size()) return align[i];
    return i == 0 ? Align::kLeft : Align::kRight;
}

std::string format_text(const TextTable& table, size_t gap, const std::string& indent) {
    const TextTable t = printable(table);
    const size_t nc = num_columns(t);
    std::vector<size_t> width(nc, 0);
    for (size_t i = 0; i < nc; ++i) width[i] = cell(t.header, i).size();
    for (const auto& r : t.rows)
        for (size_t i = 0; i < nc; ++i) width[i] = std::max(width[i], cell(r, i).size());
    std::string out;
    auto line = [&](const std::vector<std::string>& r) {
        std::string s = indent;
        for (size_t i = 0; i < nc; ++i) {
            const std::string& c = cell(r, i);
            const std::string pad(width[i] - c.size(), ' ');
            if (i) s += std::string(gap, ' ');
            s += t.column_align(i) == Align::kLeft ? c + pad : pad + c;
        }
        while (!s.empty() && s.back() == ' ') s.pop_back();
        out += s + "\n";
    };
    if (!t.header.empty()) line(t.header);
    for (const auto& r : t.rows) line(r);
    return out;
}

std::string format_markdown(const TextTable& table) {
    if (table.header.empty()) return "";
    const TextTable t = printable(table);
    const size_t nc = num_columns(t);
    auto line = [&](const std::vector<std::string>& r) {
        std::string out = "|";
        for (size_t i = 0; i < nc; ++i) {
            std::string esc;
            for (char ch : cell(r, i)) esc += ch == '|' ? std::string("\\|") : std::string(1, ch);
            out += " " + esc + " |";
        }
        return out + "\n";
    };
    std::string out = line(t.header) + "|";
    for (size_t i = 0; i < nc; ++i) out += t.column_align(i) == Align::kLeft ? " --- |" : " ---: |";
    out += "\n";
    for (const auto& r : t.rows) out += line(r);
    return out;
}

std::string format_csv(const TextTable& t) {
    const size_t nc = num_columns(t);
    std::string out;
    auto line = [&](const std::vector<std::string>& r) {
        for (size_t i = 0; i < nc; ++i) {
            if (i) out += ',';
            out += csv_field(cell(r, i));
        }
        out += "\n";
    };
    if (!t.header.empty()) line(t.header);
    for (const auto& r : t.rows) line(r);
    return out;
}

std::string format_fixed(double v, int decimals, const std::string& nonfinite) {
    if (!std::isfinite(v)) return nonfinite;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
    return buf;
}

std::vector<CsvRecord> parse_csv_records(const std::string& text, const std::string& file) {
    std::vector<CsvRecord> out;
    CsvRecord rec{1, {std::string()}};
    size_t line = 1;
    bool quoted = false, any = false;
    auto finish = [&] {
        if (any) out.push_back(std::move(rec));
        rec = CsvRecord{line, {std::string()}};
        any = false;
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (quoted) {
            if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                rec.fields.back() += '"';
                ++i;
            } else if (ch == '"') {
                quoted = false;
            } else {
                if (ch == '\n') ++line;
                rec.fields.back() += ch;
            }
        } else if (ch == '"') {
            quoted = any = true;
        } else if (ch == ',') {
            rec.fields.emplace_back();
            any = true;
        } else if (ch == '\n' || (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
            if (ch == '\r') ++i;
            ++line;
            finish();
        } else {
            rec.fields.back() += ch;
            any = true;
        }
    }
    SEGRANK_CHECK(!quoted, file, ":", rec.line, ": unterminated quoted field");
    finish();
    return out;
}

}  // namespace segrank
