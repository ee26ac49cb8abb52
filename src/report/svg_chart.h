// Charts drawn as inline SVG text, so a report is one self-contained file that opens without a
// network (no chart library, no fonts, no scripts). Every series is a <g class="series"
// data-series="NAME"> element, which is what the tests and a reader's devtools look for.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kopt::report {

// One line of a line chart; points are (x, y) in data units, in increasing x.
struct LineSeries {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;
  bool step = false;  // a running best: horizontal until the next improvement
};

struct LineChart {
  std::string id;     // the svg element's id
  std::string kind;   // data-chart attribute ("speedup", "llm-tokens"...)
  std::string title;  // drawn above the plot
  std::string x_label, y_label;
  std::vector<LineSeries> series;
  int width = 560, height = 260;
  bool legend = true;
  bool y_from_zero = true;  // false: the axis starts near the smallest value
};

// Bars per category: one bar per series side by side, or stacked.
struct BarChart {
  std::string id;
  std::string kind;
  std::string title;
  std::string value_label;                  // the value axis' label ("% of speed of light")
  std::vector<std::string> series_names;    // one per value of each category
  std::vector<std::string> series_colors;   // parallel to series_names
  std::vector<std::string> categories;      // one row each (bars are horizontal)
  std::vector<std::vector<double>> values;  // [category][series]
  bool stacked = false;
  double max_value = 0;  // 0: from the data
  int width = 760;
};

std::string render_line_chart(const LineChart& chart);
std::string render_bar_chart(const BarChart& chart);

// Axis ticks: about `count` round values covering [low, high] (1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double low, double high, int count);

// A compact number for tick labels: "0.5", "12", "1.5k", "2M".
std::string short_number(double value);

// The i-th color of a palette that stays distinguishable for a dozen series.
const std::string& palette_color(size_t i);

}  // namespace kopt::report
