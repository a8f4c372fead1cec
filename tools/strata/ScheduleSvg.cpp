//===- ScheduleSvg.cpp - Pipeline schedule timelines as SVG ---------------===//
#include "tools/strata/ScheduleSvg.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include <map>

namespace strata {

namespace {
const char *const kForward[] = {"#4c72b0", "#86a6d8", "#2d4e80", "#b3c8ea"};
const char *const kBackward[] = {"#55a868", "#94cfa3", "#33733f", "#c0e3c8"};
constexpr const char *kOptimizer = "#c44e52";

std::string escape(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

/// A legend entry: a swatch (or the message arrow) and its text.
struct LegendItem {
  std::string fill; // empty: the send -> recv arrow
  std::string text;
  double x = 0, y = 0;
};

/// Width of `text` at 12px Helvetica, from above: 0.6 em per character is
/// wider than any lower-case letter but 'm' and 'w'.
double textWidth(llvm::StringRef text) { return 7.2 * double(text.size()); }

/// Places the legend items in rows from (x0, y0), wrapping before `right`;
/// returns the y of the last row.
double layoutLegend(std::vector<LegendItem> &items, double x0, double y0,
                    double right) {
  double x = x0, y = y0;
  for (LegendItem &item : items) {
    double w = (item.fill.empty() ? 30 : 19) + textWidth(item.text);
    if (x > x0 && x + w > right)
      x = x0, y += 22;
    item.x = x;
    item.y = y;
    x += w + 16;
  }
  return y;
}

std::vector<LegendItem> legendItems(const Schedule &s) {
  std::vector<LegendItem> items;
  int64_t V = s.spec.virtualStages;
  for (int64_t c = 0; c < V && c < 4; ++c)
    items.push_back({kForward[c], V > 1 ? "forward, chunk " + std::to_string(c)
                                        : "forward"});
  for (int64_t c = 0; c < V && c < 4; ++c)
    items.push_back({kBackward[c], V > 1
                                       ? "backward, chunk " + std::to_string(c)
                                       : "backward"});
  items.push_back({kOptimizer, "optimizer step"});
  items.push_back({"#e6e6e6", "idle (bubble)"});
  items.push_back({"", "send -> recv"});
  return items;
}
} // namespace

void writeScheduleSvg(llvm::raw_ostream &os, const Schedule &s,
                      const Timeline &t, llvm::StringRef title,
                      llvm::StringRef subtitle) {
  const double left = 80, top = 64, rowH = 30, gap = 12, right = 20;
  double end = 0;
  for (const auto &rank : t.ranks)
    for (const Timeline::Slot &slot : rank)
      end = std::max(end, slot.end);
  const double unit = std::clamp(1100.0 / std::max(end, 1e-9), 10.0, 64.0);
  // Wide enough for the title and subtitle (bold 16px, 13px text).
  const double width =
      std::max({left + end * unit + right,
                left + 1.15 * textWidth(title) * 16 / 12 + right,
                left + textWidth(subtitle) * 13 / 12 + right, 480.0});
  const double legendY = top + double(s.pp) * (rowH + gap) + 8;
  std::vector<LegendItem> legend = legendItems(s);
  const double height = layoutLegend(legend, left, legendY, width - right) + 32;
  auto x = [&](double time) { return left + time * unit; };
  auto y = [&](int64_t r) { return top + double(r) * (rowH + gap); };

  os << llvm::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                     "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                     "font-family=\"Helvetica, Arial, sans-serif\">\n",
                     width, height, width, height);
  os << "<defs><marker id=\"arrow\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" "
        "markerWidth=\"5\" markerHeight=\"5\" orient=\"auto\"><path d=\"M0,0 "
        "L6,3 L0,6 z\" fill=\"#555\"/></marker></defs>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::format("<text x=\"%.0f\" y=\"24\" font-size=\"16\" "
                     "font-weight=\"bold\">",
                     left)
     << escape(title) << "</text>\n";
  os << llvm::format(
            "<text x=\"%.0f\" y=\"44\" font-size=\"13\" fill=\"#333\">", left)
     << escape(subtitle) << "</text>\n";

  // Rows: idle time is the grey background.
  for (int64_t r = 0; r < s.pp; ++r) {
    os << llvm::format("<text x=\"%.0f\" y=\"%.1f\" font-size=\"13\" "
                       "text-anchor=\"end\">rank %lld</text>\n",
                       left - 10, y(r) + rowH / 2 + 4, (long long)r);
    os << llvm::format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                       "height=\"%.1f\" fill=\"#e6e6e6\"/>\n",
                       x(0), y(r), end * unit, rowH);
  }
  // Where each program ran: (kind, microbatch, stage) -> (rank, slot).
  std::map<std::tuple<int, int, int64_t>,
           std::pair<int64_t, const Timeline::Slot *>>
      where;
  for (int64_t r = 0; r < s.pp; ++r)
    for (const Timeline::Slot &slot : t.ranks[r]) {
      const Instr &i = slot.instr;
      const char *fill = i.kind == Instr::Optimizer ? kOptimizer
                         : i.kind == Instr::Forward ? kForward[i.chunk % 4]
                                                    : kBackward[i.chunk % 4];
      double w = (slot.end - slot.start) * unit;
      os << llvm::format(
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
          "height=\"%.1f\" fill=\"%s\" stroke=\"white\" "
          "stroke-width=\"1\"><title>rank %lld: %s</title></rect>\n",
          x(slot.start), y(r), w, rowH, fill, (long long)r, i.str().c_str());
      std::string label =
          i.kind == Instr::Optimizer ? "opt" : std::to_string(i.microbatch);
      double font = std::min(12.0, w / (0.65 * double(label.size()) + 0.3));
      if (font >= 6)
        os << llvm::format("<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" "
                           "text-anchor=\"middle\" fill=\"white\">%s</text>\n",
                           x(slot.start) + w / 2, y(r) + rowH / 2 + font / 3,
                           font, label.c_str());
      if (i.kind != Instr::Optimizer)
        where[{int(i.kind), i.microbatch, s.stageOf(r, i.chunk)}] = {r, &slot};
    }
  // Messages: F of stage j sends to F of stage j+1, B of j to B of j-1.
  for (const auto &[key, from] : where) {
    auto [kind, k, j] = key;
    int64_t to = kind == Instr::Forward ? j + 1 : j - 1;
    auto it = where.find({kind, k, to});
    if (it == where.end())
      continue;
    int64_t src = from.first, dst = it->second.first;
    if (src == dst)
      continue; // no message within a rank
    double y0 = src < dst ? y(src) + rowH : y(src);
    double y1 = src < dst ? y(dst) : y(dst) + rowH;
    os << llvm::format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                       "stroke=\"#555\" stroke-width=\"0.8\" opacity=\"0.6\" "
                       "marker-end=\"url(#arrow)\"/>\n",
                       x(from.second->end), y0, x(it->second.second->start),
                       y1);
  }
  for (const LegendItem &item : legend) {
    if (item.fill.empty())
      os << llvm::format("<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" "
                         "y2=\"%.0f\" stroke=\"#555\" "
                         "marker-end=\"url(#arrow)\"/>",
                         item.x, item.y + 7, item.x + 24, item.y + 7);
    else
      os << llvm::format("<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" "
                         "height=\"14\" fill=\"%s\"/>",
                         item.x, item.y, item.fill.c_str());
    os << llvm::format("<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">",
                       item.x + (item.fill.empty() ? 30 : 19), item.y + 11)
       << escape(item.text) << "</text>\n";
  }
  os << "</svg>\n";
}

} // namespace strata
