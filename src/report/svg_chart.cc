#include "src/report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "src/report/markup.h"

namespace kopt::report {

namespace {

constexpr int kCharWidth = 7;  // average width of a 12px sans-serif character, for layout
constexpr int kLegendRow = 18;

struct Range {
  double low = 0, high = 1;
  double span() const { return high - low; }
};

// The data range widened to nice tick values, never empty.
Range padded(double low, double high, std::vector<double>& ticks, int count) {
  if (!(high > low)) {
    double pad = low == 0 ? 1 : std::abs(low) * 0.1;
    low -= pad;
    high += pad;
  }
  ticks = nice_ticks(low, high, count);
  return {std::min(low, ticks.front()), std::max(high, ticks.back())};
}

std::string text_element(double x, double y, const std::string& anchor, const std::string& text,
                         const std::string& css_class = "") {
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\"{}>{}</text>", x, y, anchor,
                     css_class.empty() ? "" : " class=\"" + css_class + "\"", html_text(text));
}

// The <svg> start tag of a chart, with its title drawn at `title_x` when there is one.
std::string svg_open(const std::string& id, const std::string& kind, const std::string& title,
                     int width, int height, double title_x) {
  std::string out = fmt::format(
      "<svg id=\"{}\" class=\"chart\" data-chart=\"{}\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">",
      html_text(id), html_text(kind), width, height, width, height, html_text(title));
  if (!title.empty()) out += text_element(title_x, 18, "start", title, "title");
  return out;
}

// Legend entries laid out left to right, wrapping at `width`; returns the markup and its height.
std::pair<std::string, int> legend(const std::vector<std::string>& names,
                                   const std::vector<std::string>& colors, double left, double top,
                                   double width) {
  std::string out = "<g class=\"legend\">";
  double x = left, y = top;
  for (size_t i = 0; i < names.size(); ++i) {
    double item = 22 + kCharWidth * double(names[i].size()) + 14;
    if (x > left && x + item > left + width) {
      x = left;
      y += kLegendRow;
    }
    out += fmt::format(
        "<g data-legend=\"{}\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" "
        "rx=\"2\" fill=\"{}\"/>{}</g>",
        html_text(names[i]), x, y, colors[i], text_element(x + 17, y + 10.5, "start", names[i]));
    x += item;
  }
  out += "</g>";
  return {out, names.empty() ? 0 : int(y - top) + kLegendRow};
}

}  // namespace

std::vector<double> nice_ticks(double low, double high, int count) {
  if (!(high > low) || count < 1) return {low};
  double raw = (high - low) / count;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  // Multiples of the step by index, so rounding errors do not accumulate along the axis.
  std::vector<double> ticks;
  double first = std::floor(low / step);
  for (int i = 0; i < 100; ++i) {
    double t = (first + i) * step;
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= high - step * 1e-9) break;
  }
  return ticks;
}

std::string short_number(double value) {
  double a = std::abs(value);
  auto trimmed = [](double v, const char* suffix) {
    std::string s = fmt::format("{:.2f}", v);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s + suffix;
  };
  if (a >= 1e9) return trimmed(value / 1e9, "G");
  if (a >= 1e6) return trimmed(value / 1e6, "M");
  if (a >= 1e4) return trimmed(value / 1e3, "k");
  return trimmed(value, "");
}

const std::string& palette_color(size_t i) {
  // Tableau 10 plus two darker tones: readable on white, distinct in print.
  static const std::vector<std::string> kPalette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                    "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                    "#9c755f", "#bab0ac", "#1f3b5a", "#7a3d12"};
  return kPalette[i % kPalette.size()];
}

namespace {

// Where a line chart's data lands: the plot area inside the margins and the padded ranges.
struct LinePlot {
  double left = 56, top = 0, plot_w = 0, plot_h = 0;
  Range xr, yr;
  std::vector<double> x_ticks, y_ticks;
  double px(double x) const { return left + (x - xr.low) / xr.span() * plot_w; }
  double py(double y) const { return top + plot_h - (y - yr.low) / yr.span() * plot_h; }
};

LinePlot line_plot(const LineChart& chart) {
  LinePlot plot;
  const double right = 14, bottom = 40;
  plot.top = chart.title.empty() ? 12 : 30;
  plot.plot_w = chart.width - plot.left - right;
  plot.plot_h = chart.height - plot.top - bottom;
  double x_low = 0, x_high = 0, y_low = 0, y_high = 0;
  bool any = false;
  for (const auto& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      if (!any) {
        x_low = x_high = x;
        y_low = y_high = y;
        any = true;
      }
      x_low = std::min(x_low, x);
      x_high = std::max(x_high, x);
      y_low = std::min(y_low, y);
      y_high = std::max(y_high, y);
    }
  }
  if (chart.y_from_zero) y_low = std::min(0.0, y_low);
  plot.xr = padded(x_low, x_high, plot.x_ticks, 6);
  plot.yr = padded(y_low, y_high, plot.y_ticks, 5);
  return plot;
}

// Grid lines, tick labels, the x axis and both axis labels.
std::string line_axes(const LineChart& chart, const LinePlot& p) {
  std::string out = "<g class=\"axes\">";
  for (double t : p.y_ticks) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>", p.left,
        p.left + p.plot_w, p.py(t), p.py(t));
    out += text_element(p.left - 6, p.py(t) + 4, "end", short_number(t));
  }
  for (double t : p.x_ticks) {
    out += text_element(p.px(t), p.top + p.plot_h + 16, "middle", short_number(t));
  }
  out += fmt::format(
      "<line class=\"axis\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/>", p.left,
      p.left + p.plot_w, p.top + p.plot_h);
  out +=
      text_element(p.left + p.plot_w / 2, p.top + p.plot_h + 34, "middle", chart.x_label, "label");
  out += fmt::format(
      "<text class=\"label\" transform=\"translate(14 {:.1f}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>",
      p.top + p.plot_h / 2, html_text(chart.y_label));
  return out + "</g>";
}

// One series: its path (steps or straight segments) and a point with a tooltip per value.
std::string line_series(const LineSeries& s, const LinePlot& p) {
  std::string out = fmt::format("<g class=\"series\" data-series=\"{}\">", html_text(s.name));
  std::string d;
  for (size_t i = 0; i < s.points.size(); ++i) {
    double x = p.px(s.points[i].first), y = p.py(s.points[i].second);
    if (i == 0) {
      d += fmt::format("M{:.1f} {:.1f}", x, y);
    } else if (s.step) {
      d += fmt::format(" H{:.1f} V{:.1f}", x, y);
    } else {
      d += fmt::format(" L{:.1f} {:.1f}", x, y);
    }
  }
  if (!d.empty()) {
    out +=
        fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>", d, s.color);
  }
  // Points carry a tooltip with their exact values; a lone point would be invisible otherwise.
  for (const auto& [x, y] : s.points) {
    out += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"><title>{}: {} at {}</title>"
        "</circle>",
        p.px(x), p.py(y), s.color, html_text(s.name), short_number(y), short_number(x));
  }
  return out + "</g>";
}

}  // namespace

std::string render_line_chart(const LineChart& chart) {
  LinePlot plot = line_plot(chart);
  std::vector<std::string> names, colors;
  for (const auto& s : chart.series) {
    names.push_back(s.name);
    colors.push_back(s.color);
  }
  auto [legend_markup, legend_h] =
      chart.legend ? legend(names, colors, plot.left, chart.height, plot.plot_w) : std::pair{"", 0};
  int total_h = chart.height + (legend_h ? legend_h + 4 : 0);
  std::string out = svg_open(chart.id, chart.kind, chart.title, chart.width, total_h, plot.left);
  out += line_axes(chart, plot);
  for (const auto& s : chart.series) out += line_series(s, plot);
  out += legend_markup;
  out += "</svg>";
  return out;
}

std::string render_bar_chart(const BarChart& chart) {
  size_t series = chart.series_names.size();
  size_t label_chars = 4;
  for (const auto& c : chart.categories) label_chars = std::max(label_chars, c.size());
  // Category labels sit left of the bars; allow a wide character so none is clipped.
  const double left = std::min<double>(220, 16 + (kCharWidth + 1) * double(label_chars));
  const double right = 56, top_title = chart.title.empty() ? 6 : 26;
  const double plot_w = chart.width - left - right;
  const double bar_h = chart.stacked ? 16 : 10;
  const double row_h = (chart.stacked ? bar_h : bar_h * double(std::max<size_t>(series, 1))) + 8;

  auto [legend_markup, legend_h] =
      legend(chart.series_names, chart.series_colors, left, top_title, plot_w);
  const double top = top_title + legend_h + 8;
  const double plot_h = row_h * double(chart.categories.size());
  const int height = int(top + plot_h + 42);

  double max_value = chart.max_value;
  if (max_value <= 0) {
    for (const auto& row : chart.values) {
      double total = 0;
      for (double v : row) total = chart.stacked ? total + v : std::max(total, v);
      max_value = std::max(max_value, total);
    }
  }
  std::vector<double> ticks;
  Range vr = padded(0, max_value > 0 ? max_value : 1, ticks, 5);
  auto px = [&](double v) { return left + v / vr.high * plot_w; };

  std::string out = svg_open(chart.id, chart.kind, chart.title, chart.width, height, left);
  out += legend_markup;
  out += "<g class=\"axes\">";
  for (double t : ticks) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/>", px(t),
        top - 4, top + plot_h);
    out += text_element(px(t), top + plot_h + 16, "middle", short_number(t));
  }
  out += text_element(left + plot_w / 2, top + plot_h + 34, "middle", chart.value_label, "label");
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    out +=
        text_element(left - 6, top + row_h * double(c) + row_h / 2 + 4, "end", chart.categories[c]);
  }
  out += "</g>";

  // One group per series so that a series can be found (and hidden by a reader) as a whole.
  std::vector<double> stack_end(chart.categories.size(), 0);
  for (size_t s = 0; s < series; ++s) {
    out += fmt::format("<g class=\"series\" data-series=\"{}\" fill=\"{}\">",
                       html_text(chart.series_names[s]), chart.series_colors[s]);
    for (size_t c = 0; c < chart.categories.size(); ++c) {
      double v = s < chart.values[c].size() ? chart.values[c][s] : 0;
      if (!(v > 0)) continue;
      double y = top + row_h * double(c) + 4 + (chart.stacked ? 0 : bar_h * double(s));
      double x0 = chart.stacked ? px(stack_end[c]) : px(0);
      double x1 = chart.stacked ? px(stack_end[c] + v) : px(v);
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{} {}: {}"
          "</title></rect>",
          x0, y, std::max(0.5, x1 - x0), bar_h - 1, html_text(chart.categories[c]),
          html_text(chart.series_names[s]), short_number(v));
      if (chart.stacked) {
        stack_end[c] += v;
      } else {
        out += text_element(x1 + 4, y + bar_h - 2, "start", short_number(v), "value");
      }
    }
    out += "</g>";
  }
  if (chart.stacked) {
    for (size_t c = 0; c < chart.categories.size(); ++c) {
      if (stack_end[c] > 0) {
        out += text_element(px(stack_end[c]) + 4, top + row_h * double(c) + 4 + bar_h - 4, "start",
                            short_number(stack_end[c]), "value");
      }
    }
  }
  out += "</svg>";
  return out;
}

}  // namespace kopt::report
