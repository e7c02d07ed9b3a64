// HTML building blocks shared by the pages of `segrank report` (a training run's, report_html.cpp,
// and a tuning run's, report_tune.cpp): the style sheet, number cells, tables and sections.
#pragma once
#include <string>
#include <vector>

namespace segrank::report_page {

/// The page's CSS (inside <style>).
extern const char* const kReportStyle;

/// printf-formats a finite v with `f`; "" for NaN and infinities.
std::string fmt(double v, const char* f = "%.4f");

/// True when the whole cell parses as a number (such cells are right-aligned).
bool numeric_cell(const std::string& s);

/// A <table> of escaped cells; rows whose `highlight` entry is true get class "best".
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::vector<bool>& highlight = {});

/// <section id=ID><h2>TITLE</h2>BODY</section>; `body` is HTML, `title` is not escaped.
std::string section(const char* id, const char* title, const std::string& body);

/// An escaped <p>, with class `cls` when given.
std::string para(const std::string& text, const char* cls = nullptr);

}  // namespace segrank::report_page
