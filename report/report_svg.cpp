// Inline SVG line and bar charts (see report_svg.h).
#include "report/report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "gnn/core/check.h"

namespace segrank {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kPaletteSize = 10;

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", v);
    return buf;
}

std::string tick_label(double v) {
    if (std::fabs(v) < 1e-12) return "0";
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.4g", v);
    return buf;
}

struct Axis {
    double lo = 0, hi = 1;
    std::vector<double> ticks;
};

Axis make_axis(double lo, double hi, int target) {
    if (!(lo < hi)) {
        const double pad = std::fabs(lo) > 0 ? std::fabs(lo) * 0.1 : 0.5;
        lo -= pad;
        hi += pad;
    }
    Axis a;
    a.ticks = nice_ticks(lo, hi, target);
    a.lo = std::min(lo, a.ticks.front());
    a.hi = std::max(hi, a.ticks.back());
    return a;
}

// Log10 axis over [lo, hi] (already log10 values): ticks at 1, 2, 5 x 10^k inside the range, or
// at whole decades when the range spans more than two of them.
Axis log_axis(double lo, double hi) {
    if (!(lo < hi)) {
        lo -= 0.5;
        hi += 0.5;
    }
    Axis a;
    a.lo = lo - (hi - lo) * 0.03;
    a.hi = hi + (hi - lo) * 0.03;
    const bool decades_only = hi - lo > 2.0;
    for (double k = std::floor(a.lo); k <= std::ceil(a.hi); k += 1.0) {
        for (double m : {1.0, 2.0, 5.0}) {
            if (decades_only && m != 1.0) continue;
            const double t = k + std::log10(m);
            if (t >= a.lo && t <= a.hi) a.ticks.push_back(t);
        }
    }
    if (a.ticks.size() < 2) a.ticks = nice_ticks(a.lo, a.hi, 4);
    return a;
}

std::string text_el(double x, double y, const std::string& s, const char* anchor, int size,
                    const std::string& extra = "") {
    return str("<text x=\"", num(x), "\" y=\"", num(y), "\" text-anchor=\"", anchor,
               "\" font-size=\"", size, "\"", extra, ">", html_escape(s), "</text>");
}

// A reference level: a horizontal line from x0 to x1 at y with its value at the right end, and its
// legend entry (a short line of the same dash and the name) at (lx, ly).
std::string reference_line(const SvgReference& r, double x0, double x1, double y, double lx,
                           double ly) {
    std::string out = str("<line class=\"reference\" x1=\"", num(x0), "\" y1=\"", num(y),
                          "\" x2=\"", num(x1), "\" y2=\"", num(y), "\" stroke=\"", r.color,
                          "\" stroke-width=\"1.4\" stroke-dasharray=\"", r.dash, "\"><title>",
                          html_escape(r.name), ": ", tick_label(r.value), "</title></line>");
    out += text_el(x1 - 3, y - 3, tick_label(r.value), "end", 10, str(" fill=\"", r.color, "\""));
    out += str("<line x1=\"", num(lx), "\" y1=\"", num(ly + 8), "\" x2=\"", num(lx + 14),
               "\" y2=\"", num(ly + 8), "\" stroke=\"", r.color,
               "\" stroke-width=\"1.4\" stroke-dasharray=\"", r.dash, "\"/>");
    return out + text_el(lx + 18, ly + 12, r.name, "start", 11);
}

// The references a chart draws: finite values, and positive ones on a log axis.
std::vector<SvgReference> drawable_references(const LineChartOptions& opt) {
    std::vector<SvgReference> refs;
    for (const auto& r : opt.references) {
        if (std::isfinite(r.value) && (!opt.log_y || r.value > 0)) refs.push_back(r);
    }
    return refs;
}

}  // namespace

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        switch (ch) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += ch;
        }
    }
    return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
    SEGRANK_ASSERT(std::isfinite(lo) && std::isfinite(hi) && lo <= hi && target >= 1);
    if (lo == hi) return {lo};
    const double raw = (hi - lo) / target;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
        step = m * mag;
        if (step >= raw) break;
    }
    std::vector<double> ticks;
    const double first = std::floor(lo / step) * step;
    for (int i = 0; i < 1000; ++i) {
        const double t = first + i * step;
        ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
        if (t >= hi - step * 1e-9) break;
    }
    return ticks;
}

std::string svg_line_chart(const std::vector<SvgSeries>& series, const LineChartOptions& opt) {
    const double ml = 64, mr = 16, mt = 30, mb = 46;
    const std::vector<SvgReference> refs = drawable_references(opt);
    size_t longest = 0;
    for (const auto& s : series) longest = std::max(longest, s.name.size());
    for (const auto& r : refs) longest = std::max(longest, r.name.size());
    const int legend_cols = longest > 24 ? 2 : 3;
    const size_t legend_items = series.size() + refs.size();
    const int legend_rows = static_cast<int>((legend_items + legend_cols - 1) / legend_cols);
    const double height = opt.height + legend_rows * 18.0 + 4;
    const double pw = opt.width - ml - mr, ph = opt.height - mt - mb;
    auto yv = [&](double y) { return opt.log_y ? (y > 0 ? std::log10(y) : std::nan("")) : y; };

    double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
    for (const auto& s : series) {
        for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            const double y = yv(s.y[i]);
            if (!std::isfinite(s.x[i]) || !std::isfinite(y)) continue;
            xmin = std::min(xmin, s.x[i]);
            xmax = std::max(xmax, s.x[i]);
            ymin = std::min(ymin, y);
            ymax = std::max(ymax, y);
        }
    }
    for (size_t i = 0; i < refs.size() && std::isfinite(xmin); ++i) {  // levels inside the y range
        ymin = std::min(ymin, yv(refs[i].value));
        ymax = std::max(ymax, yv(refs[i].value));
    }
    std::string out = str("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"",
                          opt.width, "\" height=\"", num(height), "\" viewBox=\"0 0 ", opt.width,
                          " ", num(height), "\" font-family=\"sans-serif\">");
    out += str("<title>", html_escape(opt.title), "</title>");
    out += text_el(opt.width / 2.0, 18, opt.title, "middle", 14, " font-weight=\"bold\"");
    out += str("<rect x=\"", num(ml), "\" y=\"", num(mt), "\" width=\"", num(pw), "\" height=\"",
               num(ph), "\" fill=\"#fff\" stroke=\"#888\"/>");
    if (!std::isfinite(xmin)) {
        out += text_el(ml + pw / 2, mt + ph / 2, "no data", "middle", 13, " fill=\"#888\"");
        return out + "</svg>";
    }
    const Axis xa = make_axis(xmin, xmax, 6);
    Axis ya = make_axis(ymin, ymax, 5);
    if (opt.log_y) ya = log_axis(ymin, ymax);
    auto px = [&](double x) { return ml + (x - xa.lo) / (xa.hi - xa.lo) * pw; };
    auto py = [&](double y) { return mt + ph - (y - ya.lo) / (ya.hi - ya.lo) * ph; };
    for (double t : xa.ticks) {
        out += str("<line x1=\"", num(px(t)), "\" y1=\"", num(mt), "\" x2=\"", num(px(t)),
                   "\" y2=\"", num(mt + ph), "\" stroke=\"#eee\"/>");
        out += text_el(px(t), mt + ph + 15, tick_label(t), "middle", 11);
    }
    for (double t : ya.ticks) {
        out += str("<line x1=\"", num(ml), "\" y1=\"", num(py(t)), "\" x2=\"", num(ml + pw),
                   "\" y2=\"", num(py(t)), "\" stroke=\"#eee\"/>");
        out += text_el(ml - 5, py(t) + 4, opt.log_y ? tick_label(std::pow(10.0, t)) : tick_label(t),
                       "end", 11);
    }
    out += text_el(ml + pw / 2, mt + ph + 34, opt.x_label, "middle", 12);
    out += str("<text x=\"14\" y=\"", num(mt + ph / 2),
               "\" text-anchor=\"middle\" font-size=\"12\" transform=\"rotate(-90 14 ",
               num(mt + ph / 2), ")\">", html_escape(opt.y_label + (opt.log_y ? " (log)" : "")),
               "</text>");
    for (size_t si = 0; si < series.size(); ++si) {
        const SvgSeries& s = series[si];
        const char* color = kPalette[si % kPaletteSize];
        std::string path;
        bool pen_down = false;
        size_t npts = 0;
        std::string markers;
        for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            const double y = yv(s.y[i]);
            if (!std::isfinite(s.x[i]) || !std::isfinite(y)) {
                pen_down = false;
                continue;
            }
            path += str(pen_down ? " L" : " M", num(px(s.x[i])), " ", num(py(y)));
            pen_down = true;
            ++npts;
            markers += str("<circle cx=\"", num(px(s.x[i])), "\" cy=\"", num(py(y)),
                           "\" r=\"2.5\" fill=\"", color, "\"/>");
        }
        if (!path.empty()) {
            out += str("<path d=\"", path.substr(1), "\" fill=\"none\" stroke=\"", color,
                       "\" stroke-width=\"1.8\"", s.dashed ? " stroke-dasharray=\"6 4\"" : "",
                       "><title>", html_escape(s.name), "</title></path>");
        }
        if (npts <= 60) out += markers;
        const double lx = ml + static_cast<double>(si % legend_cols) * (pw / legend_cols);
        const double ly = opt.height - 4 + static_cast<double>(si / legend_cols) * 18.0;
        out += str("<rect x=\"", num(lx), "\" y=\"", num(ly + 6),
                   "\" width=\"14\" height=\"4\" fill=\"", color, "\"/>");
        out += text_el(lx + 18, ly + 12, s.name, "start", 11);
    }
    for (size_t ri = 0; ri < refs.size(); ++ri) {
        const size_t li = series.size() + ri;
        out += reference_line(refs[ri], ml, ml + pw, py(yv(refs[ri].value)),
                              ml + static_cast<double>(li % legend_cols) * (pw / legend_cols),
                              opt.height - 4 + static_cast<double>(li / legend_cols) * 18.0);
    }
    return out + "</svg>";
}

std::string svg_bar_chart(const std::vector<SvgBar>& bars, const BarChartOptions& opt) {
    const double label_w = std::min(300.0, opt.width * 0.38), value_w = 60, mt = 30, mb = 40;
    const double row_h = bars.size() > 150 ? 4.0 : bars.size() > 60 ? 9.0 : 18.0;
    const bool show_labels = row_h >= 9.0;
    const double ph = std::max(1.0, static_cast<double>(bars.size())) * row_h;
    const double height = mt + ph + mb;
    const double pl = label_w + 8, pw = opt.width - pl - value_w - 8;
    double lo = 0, hi = 0;
    for (const auto& b : bars) {
        if (!std::isfinite(b.value)) continue;
        lo = std::min(lo, b.value);
        hi = std::max(hi, b.value);
    }
    if (opt.min_value) lo = *opt.min_value;
    if (opt.max_value) hi = *opt.max_value;
    const Axis xa = make_axis(lo, hi, 6);
    auto px = [&](double v) {
        return pl + (std::clamp(v, xa.lo, xa.hi) - xa.lo) / (xa.hi - xa.lo) * pw;
    };
    std::string out = str("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"",
                          opt.width, "\" height=\"", num(height), "\" viewBox=\"0 0 ", opt.width,
                          " ", num(height), "\" font-family=\"sans-serif\">");
    out += str("<title>", html_escape(opt.title), "</title>");
    out += text_el(opt.width / 2.0, 18, opt.title, "middle", 14, " font-weight=\"bold\"");
    for (double t : xa.ticks) {
        out += str("<line x1=\"", num(px(t)), "\" y1=\"", num(mt), "\" x2=\"", num(px(t)),
                   "\" y2=\"", num(mt + ph), "\" stroke=\"#eee\"/>");
        out += text_el(px(t), mt + ph + 15, tick_label(t), "middle", 11);
    }
    out += text_el(pl + pw / 2, mt + ph + 32, opt.value_label, "middle", 12);
    for (size_t i = 0; i < bars.size(); ++i) {
        const SvgBar& b = bars[i];
        const double y = mt + static_cast<double>(i) * row_h;
        if (show_labels) {
            std::string label = b.label;
            const size_t max_chars = static_cast<size_t>(label_w / 6.5);
            if (label.size() > max_chars && max_chars > 3)
                label = label.substr(0, max_chars - 1) + "\xE2\x80\xA6";
            out += text_el(label_w, y + row_h * 0.75, label, "end", row_h >= 18 ? 11 : 8);
        }
        if (!std::isfinite(b.value)) {
            if (show_labels)
                out += text_el(px(0) + 4, y + row_h * 0.75, "n/a", "start", 10, " fill=\"#888\"");
            continue;
        }
        const double x0 = px(0), x1 = px(b.value);
        out +=
            str("<rect x=\"", num(std::min(x0, x1)), "\" y=\"", num(y + row_h * 0.12),
                "\" width=\"", num(std::max(0.5, std::fabs(x1 - x0))), "\" height=\"",
                num(row_h * 0.76), "\" fill=\"", b.value >= 0 ? "#4c78a8" : "#e45756", "\"><title>",
                html_escape(b.label), ": ", tick_label(b.value), "</title></rect>");
        if (show_labels) {
            char buf[32];
            std::snprintf(buf, sizeof(buf), "%.4f", b.value);
            out += text_el(pl + pw + 6, y + row_h * 0.75, buf, "start", row_h >= 18 ? 11 : 8);
        }
    }
    out += str("<line x1=\"", num(px(0)), "\" y1=\"", num(mt), "\" x2=\"", num(px(0)), "\" y2=\"",
               num(mt + ph), "\" stroke=\"#333\"/>");
    return out + "</svg>";
}

}  // namespace segrank
