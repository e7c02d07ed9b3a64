// Hand-written inline SVG charts for `segrank report`: line charts with axes,
// ticks and a legend, and horizontal bar charts. Pure string building; no network, no scripts.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace segrank {

/// Escapes & < > " ' for HTML text and attribute values.
std::string html_escape(std::string_view s);

/// About `target` "nice" tick values (1, 2, 5 x 10^k steps) covering [lo, hi]; lo <= hi, finite.
std::vector<double> nice_ticks(double lo, double hi, int target);

/// One polyline: points (x[i], y[i]); non-finite y values break the line (gaps).
struct SvgSeries {
    std::string name;
    std::vector<double> x;
    std::vector<double> y;
    bool dashed = false;  ///< draw dashed (e.g. an aggregate over the other series)
};

/// A horizontal reference level (a baseline's value), drawn across the whole x range.
struct SvgReference {
    std::string name;  ///< legend text, e.g. "random (10 seeds)"
    double value = 0.0;
    std::string color = "#555";  ///< stroke colour
    std::string dash = "2 3";    ///< SVG stroke-dasharray
};

struct LineChartOptions {
    std::string title;
    std::string x_label;
    std::string y_label;
    bool log_y = false;                      ///< log10 y axis (non-positive values are dropped)
    int width = 560;                         ///< px
    int height = 300;                        ///< px
    std::vector<SvgReference> references{};  ///< non-finite values are left out
};

/// An `<svg>` element with axes, nice ticks, grid lines, one coloured polyline (with point markers
/// when a series has <= 60 points) per series, one thin horizontal line per reference level (its
/// value printed at the right end; the y range covers it) and a legend of both. With no finite
/// series point it draws the frame and the text "no data" (references alone draw no chart).
std::string svg_line_chart(const std::vector<SvgSeries>& series, const LineChartOptions& opt);

struct SvgBar {
    std::string label;
    double value = 0.0;  ///< NaN draws no bar and the text "n/a"
};

struct BarChartOptions {
    std::string title;
    std::string value_label;
    std::optional<double> min_value;  ///< axis range; defaults to min(0, smallest value)
    std::optional<double> max_value;  ///< defaults to max(0, largest value)
    int width = 760;                  ///< px; the height follows from the bar count
};

/// A horizontal bar chart: one row per bar (label left, bar from the zero line, value right),
/// positive bars blue and negative red, a value axis with ticks at the bottom.
std::string svg_bar_chart(const std::vector<SvgBar>& bars, const BarChartOptions& opt);

}  // namespace segrank
