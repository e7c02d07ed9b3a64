// The one table printer of the CLI: rows of string cells rendered as aligned plain text, Markdown
// or CSV. Used by `segrank leaderboard` (eval/leaderboard.cpp), `segrank evaluate`, the
// training summary tables' callers, `segrank stats` and the report's external leaderboard input.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace segrank {

/// Column alignment in text and Markdown output.
enum class Align { kLeft, kRight };

/// A table of string cells. Rows may be shorter than the header (missing cells are blank).
struct TextTable {
    std::vector<std::string> header;             ///< column names (may be empty: no header line)
    std::vector<std::vector<std::string>> rows;  ///< cells per row
    /// Alignment per column; columns without an entry: column 0 left, the others right (names
    /// first, numbers after).
    std::vector<Align> align;

    /// Alignment of column `i` (see `align`).
    Align column_align(size_t i) const;
};

/// Aligned plain text: every column padded to its widest cell (header included), columns joined
/// by `gap` spaces, each line prefixed with `indent`, trailing blanks trimmed, '\n' after each
/// line. Control characters in cells are shown escaped (echo_value, util/user_input.h: a file name
/// "new\nline.csv" is the cell `new\nline.csv`), so a row stays one line.
std::string format_text(const TextTable& t, size_t gap = 2, const std::string& indent = "");

/// Markdown pipe table: header, alignment row (`---` left, `---:` right), rows; '|' in cells is
/// escaped, control characters as in format_text. An empty header gives an empty string (Markdown
/// tables need one).
std::string format_markdown(const TextTable& t);

/// CSV: header then rows, fields with ',', '"', CR or LF quoted (RFC 4180), '\n' line ends; cells
/// are written as they are (a reader gets the name back exactly).
std::string format_csv(const TextTable& t);

/// One CSV record and the line it starts on (1-based).
struct CsvRecord {
    size_t line = 0;
    std::vector<std::string> fields;
};

/// The records of CSV text, the format format_csv writes (RFC 4180: quotes double as escapes, and
/// a quoted field may hold commas and line breaks, as in a name taken from a file name); CRLF or
/// LF line ends; blank lines outside quotes are skipped. Throws segrank::Error naming `file:line`
/// of the record with an unterminated quoted field.
std::vector<CsvRecord> parse_csv_records(const std::string& text, const std::string& file);

/// `v` with `decimals` digits after the point ("%.*f"); `nonfinite` for NaN and infinities.
std::string format_fixed(double v, int decimals, const std::string& nonfinite = "");

}  // namespace segrank
