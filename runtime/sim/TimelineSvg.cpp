//===- TimelineSvg.cpp - a picture of a simulated timeline ----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/TimelineSvg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace braid::rt {

namespace {

constexpr double kLeft = 170;
constexpr double kRight = 24;
constexpr double kTop = 64;
constexpr double kLaneHeight = 26;
constexpr double kLaneGap = 10;
constexpr double kStripe = 4;
constexpr const char *kWaitColor = "#c8c8c8";
constexpr const char *kExposedColor = "#d62728";
constexpr const char *kSlowedColor = "#222222";

/// A color per box category, in legend order.
struct Category {
  const char *label;
  const char *color;
};

const Category &categoryOf(const SimOp &op) {
  static const std::map<std::string, Category> collectives = {
      {"all_reduce", {"all_reduce", "#f28e2b"}},
      {"all_gather", {"all_gather", "#e15759"}},
      {"reduce_scatter", {"reduce_scatter", "#edc948"}},
      {"all_to_all", {"all_to_all", "#ff9da7"}},
      {"collective_permute", {"collective_permute", "#9c755f"}},
      {"broadcast", {"broadcast", "#76b7b2"}}};
  static const Category gemm{"GEMM", "#4e79a7"};
  static const Category attention{"attention", "#b07aa1"};
  static const Category memory{"memory-bound kernel", "#59a14f"};
  static const Category other{"collective", "#f28e2b"};
  if (op.kind == SimOpKind::Collective) {
    auto it = collectives.find(op.name);
    return it != collectives.end() ? it->second : other;
  }
  switch (op.kernelClass) {
  case KernelClass::Gemm:
    return gemm;
  case KernelClass::Attention:
    return attention;
  case KernelClass::Memory:
    break;
  }
  return memory;
}

std::string escapeXml(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    switch (c) {
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
      out += "&apos;";
      break;
    default:
      // Control characters are not allowed in XML 1.0.
      if (c >= 0x20 || c == '\t' || c == '\n')
        out += static_cast<char>(c);
    }
  }
  return out;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

/// "12.5 ms" with a unit chosen for `span` (the whole time axis).
std::string timeLabel(double seconds, double span) {
  char text[32];
  if (span >= 1)
    std::snprintf(text, sizeof(text), "%g s", seconds);
  else if (span >= 1e-3)
    std::snprintf(text, sizeof(text), "%g ms", std::round(seconds * 1e6) / 1e3);
  else
    std::snprintf(text, sizeof(text), "%g us", std::round(seconds * 1e9) / 1e3);
  return text;
}

std::string durationText(double seconds) {
  char text[32];
  if (seconds >= 1)
    std::snprintf(text, sizeof(text), "%.3f s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(text, sizeof(text), "%.3f ms", seconds * 1e3);
  else
    std::snprintf(text, sizeof(text), "%.3f us", seconds * 1e6);
  return text;
}

/// A tick step of 1, 2 or 5 times a power of ten giving at most ~10 ticks.
double tickStep(double span) {
  if (span <= 0)
    return 1;
  double raw = span / 10;
  double power = std::pow(10, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (factor * power >= raw)
      return factor * power;
  return 10 * power;
}

/// Emits boxes of one lane, merging runs of sub-pixel boxes of one color.
class LaneWriter {
public:
  LaneWriter(std::ostream &os, double y, double height)
      : os_(os), y_(y), height_(height) {}

  ~LaneWriter() { flush(); }

  /// A box from x0 to x1 (pixels); `tooltip` is shown when it is wide
  /// enough to point at.
  void box(double x0, double x1, const char *color, bool slowed,
           const std::string &tooltip) {
    double width = x1 - x0;
    if (width < 1 && pending_ && pendingColor_ == color &&
        x0 - pendingX1_ < 0.5 && pendingX1_ - pendingX0_ < 2) {
      pendingX1_ = std::max(pendingX1_, x1);
      pendingSlowed_ |= slowed;
      return;
    }
    flush();
    if (width < 1) {
      pending_ = true;
      pendingX0_ = x0;
      pendingX1_ = x1;
      pendingColor_ = color;
      pendingSlowed_ = slowed;
      return;
    }
    draw(x0, x1, color, slowed, tooltip);
  }

  void flush() {
    if (!pending_)
      return;
    pending_ = false;
    draw(pendingX0_, pendingX1_, pendingColor_, pendingSlowed_, "");
  }

private:
  void draw(double x0, double x1, const char *color, bool slowed,
            const std::string &tooltip) {
    // Keep even a zero-width merged run visible.
    double width = std::max(x1 - x0, 0.4);
    os_ << "<rect x=\"" << number(x0) << "\" y=\"" << number(y_)
        << "\" width=\"" << number(width) << "\" height=\"" << number(height_)
        << "\" fill=\"" << color << "\"";
    if (width >= 3)
      os_ << " stroke=\"#ffffff\" stroke-width=\"0.5\"";
    if (tooltip.empty()) {
      os_ << "/>\n";
    } else {
      os_ << "><title>" << escapeXml(tooltip) << "</title></rect>\n";
    }
    if (slowed)
      os_ << "<rect x=\"" << number(x0) << "\" y=\"" << number(y_)
          << "\" width=\"" << number(width) << "\" height=\"" << kStripe
          << "\" fill=\"" << kSlowedColor << "\"/>\n";
  }

  std::ostream &os_;
  double y_;
  double height_;
  bool pending_ = false;
  double pendingX0_ = 0;
  double pendingX1_ = 0;
  const char *pendingColor_ = nullptr;
  bool pendingSlowed_ = false;
};

} // namespace

void writeTimelineSvg(const SimResult &result, std::ostream &os,
                      const TimelineSvgOptions &options) {
  const SimMetrics &m = result.metrics;
  double width = std::max(options.width, 400);
  double plotWidth = width - kLeft - kRight;
  size_t lanes = result.streams.size() + 1; // + exposed communication
  double lanesBottom =
      kTop + static_cast<double>(lanes) * (kLaneHeight + kLaneGap);
  double axisY = lanesBottom + 4;
  double legendY = axisY + 40;
  double height = legendY + 50;
  double span = m.makespanSec > 0 ? m.makespanSec : 1e-6;
  auto xOf = [&](double seconds) { return kLeft + seconds / span * plotWidth; };

  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << number(width)
     << "\" height=\"" << number(height) << "\" viewBox=\"0 0 " << number(width)
     << " " << number(height)
     << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";

  // Title: what was simulated, then the numbers.
  std::string title =
      options.title.empty() ? "Simulated timeline" : options.title;
  if (options.where.empty())
    title += " on " + result.profileName + ", " +
             std::to_string(result.nodes) + " node(s) x " +
             std::to_string(result.gpusPerNode) + " GPUs, " +
             std::to_string(result.worldSize) + " ranks";
  else
    title += ", " + options.where;
  char numbers[512];
  std::snprintf(
      numbers, sizeof(numbers),
      "makespan %s | compute %s | communication %s | overlap efficiency "
      "%.1f%% | exposed communication %s | hidden %.1f%%",
      durationText(m.makespanSec).c_str(),
      durationText(m.totalComputeSec).c_str(),
      durationText(m.totalCommunicationSec).c_str(), m.overlapEfficiency * 100,
      durationText(m.exposedCommunicationSec).c_str(),
      m.hiddenCommunicationFraction * 100);
  os << "<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">"
     << escapeXml(title) << "</text>\n"
     << "<text x=\"12\" y=\"46\" font-size=\"13\" fill=\"#333333\">"
     << escapeXml(numbers) << "</text>\n";

  // Grid lines and tick labels.
  double step = tickStep(span);
  os << "<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  for (double t = 0; t <= span * (1 + 1e-9); t += step)
    os << "<line x1=\"" << number(xOf(t)) << "\" y1=\"" << number(kTop - 4)
       << "\" x2=\"" << number(xOf(t)) << "\" y2=\"" << number(axisY)
       << "\"/>\n";
  os << "</g>\n";
  os << "<line x1=\"" << number(kLeft) << "\" y1=\"" << number(axisY)
     << "\" x2=\"" << number(kLeft + plotWidth) << "\" y2=\"" << number(axisY)
     << "\" stroke=\"#333333\" stroke-width=\"1\"/>\n";
  os << "<g font-size=\"11\" fill=\"#333333\" text-anchor=\"middle\">\n";
  for (double t = 0; t <= span * (1 + 1e-9); t += step) {
    os << "<line x1=\"" << number(xOf(t)) << "\" y1=\"" << number(axisY)
       << "\" x2=\"" << number(xOf(t)) << "\" y2=\"" << number(axisY + 5)
       << "\" stroke=\"#333333\"/>\n";
    os << "<text x=\"" << number(xOf(t)) << "\" y=\"" << number(axisY + 18)
       << "\">" << timeLabel(t, span) << "</text>\n";
  }
  os << "</g>\n";
  os << "<text x=\"" << number(kLeft + plotWidth / 2) << "\" y=\""
     << number(axisY + 34)
     << "\" font-size=\"12\" text-anchor=\"middle\" fill=\"#333333\">"
        "virtual time</text>\n";

  // One lane per stream.
  std::set<const Category *> used;
  bool anyWait = false, anySlowed = false;
  for (size_t s = 0; s < result.streams.size(); ++s) {
    const SimStream &stream = result.streams[s];
    double y = kTop + static_cast<double>(s) * (kLaneHeight + kLaneGap);
    os << "<text x=\"" << number(kLeft - 8) << "\" y=\""
       << number(y + kLaneHeight / 2 + 4)
       << "\" font-size=\"12\" text-anchor=\"end\">" << escapeXml(stream.name)
       << "</text>\n";
    os << "<rect x=\"" << number(kLeft) << "\" y=\"" << number(y)
       << "\" width=\"" << number(plotWidth) << "\" height=\""
       << number(kLaneHeight) << "\" fill=\"#f7f7f7\"/>\n";
    // Waits first, so that boxes draw over them.
    for (const SimOp &op : stream.ops)
      if (op.kind == SimOpKind::WaitEvent && op.durationSec() > 0) {
        anyWait = true;
        os << "<rect x=\"" << number(xOf(op.startSec)) << "\" y=\""
           << number(y + kLaneHeight * 0.4) << "\" width=\""
           << number(std::max(xOf(op.endSec) - xOf(op.startSec), 0.4))
           << "\" height=\"" << number(kLaneHeight * 0.2) << "\" fill=\""
           << kWaitColor << "\"/>\n";
      }
    LaneWriter lane(os, y, kLaneHeight);
    for (const SimOp &op : stream.ops) {
      if (!op.busy() || op.durationSec() <= 0)
        continue;
      const Category &category = categoryOf(op);
      used.insert(&category);
      bool slowed = op.slowed();
      anySlowed |= slowed;
      double x0 = xOf(op.startSec), x1 = xOf(op.endSec);
      std::string tooltip;
      if (x1 - x0 >= 1.5) {
        tooltip = op.name;
        if (op.kind == SimOpKind::Collective)
          tooltip += " over [" + op.axes + "] (" +
                     std::to_string(op.groupSize) + " ranks" +
                     (op.interNode ? ", across nodes" : "") + ")";
        tooltip += ": " + durationText(op.durationSec());
        if (slowed)
          tooltip += " (alone " + durationText(op.isolatedSec) + ")";
        if (!op.location.empty())
          tooltip += " at " + op.location;
      }
      lane.box(x0, x1, category.color, slowed, tooltip);
    }
  }

  // Exposed communication: collectives running while no kernel does.
  {
    double y = kTop + static_cast<double>(result.streams.size()) *
                          (kLaneHeight + kLaneGap);
    os << "<text x=\"" << number(kLeft - 8) << "\" y=\""
       << number(y + kLaneHeight / 2 + 4)
       << "\" font-size=\"12\" text-anchor=\"end\" fill=\"" << kExposedColor
       << "\">exposed comm.</text>\n";
    os << "<rect x=\"" << number(kLeft) << "\" y=\"" << number(y)
       << "\" width=\"" << number(plotWidth) << "\" height=\""
       << number(kLaneHeight) << "\" fill=\"#fbf3f3\"/>\n";
    // Sweep the start and end points of kernels and collectives.
    std::vector<std::pair<double, int>> points; // (time, +-1 kernel / +-2 comm)
    for (const SimStream &stream : result.streams)
      for (const SimOp &op : stream.ops) {
        if (!op.busy() || op.durationSec() <= 0)
          continue;
        int weight = op.kind == SimOpKind::Kernel ? 1 : 2;
        points.push_back({op.startSec, weight});
        points.push_back({op.endSec, -weight});
      }
    std::sort(points.begin(), points.end());
    int kernels = 0, collectives = 0;
    LaneWriter lane(os, y, kLaneHeight);
    double exposedStart = -1;
    for (size_t i = 0; i < points.size();) {
      double t = points[i].first;
      for (; i < points.size() && points[i].first == t; ++i) {
        if (points[i].second == 1 || points[i].second == -1)
          kernels += points[i].second;
        else
          collectives += points[i].second / 2;
      }
      bool exposed = collectives > 0 && kernels == 0;
      if (exposed && exposedStart < 0)
        exposedStart = t;
      if (!exposed && exposedStart >= 0) {
        lane.box(xOf(exposedStart), xOf(t), kExposedColor, false,
                 "exposed communication: " + durationText(t - exposedStart));
        exposedStart = -1;
      }
    }
  }

  // Legend.
  double x = kLeft;
  os << "<g font-size=\"12\">\n";
  auto legendItem = [&](const char *color, const std::string &label,
                        double boxHeight) {
    os << "<rect x=\"" << number(x) << "\" y=\""
       << number(legendY + (14 - boxHeight) / 2) << "\" width=\"14\" height=\""
       << number(boxHeight) << "\" fill=\"" << color << "\"/>\n";
    os << "<text x=\"" << number(x + 19) << "\" y=\"" << number(legendY + 11)
       << "\">" << escapeXml(label) << "</text>\n";
    x += 34 + 7.0 * static_cast<double>(label.size());
  };
  std::vector<const Category *> ordered(used.begin(), used.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const Category *a, const Category *b) {
              return std::string(a->label) < std::string(b->label);
            });
  for (const Category *category : ordered)
    legendItem(category->color, category->label, 14);
  if (anyWait)
    legendItem(kWaitColor, "waiting on an event", 4);
  if (anySlowed)
    legendItem(kSlowedColor, "slowed by contention", kStripe);
  legendItem(kExposedColor, "exposed communication", 14);
  os << "</g>\n</svg>\n";
}

void writeStackedTimelineSvg(
    const std::vector<std::pair<const SimResult *, TimelineSvgOptions>> &parts,
    std::ostream &os) {
  // Each part is a whole picture; the outer one places them one above the
  // other (an <svg> inside an <svg> takes x and y).
  std::vector<std::string> pictures;
  double width = 0, height = 0;
  std::vector<double> tops;
  for (const auto &[result, options] : parts) {
    std::ostringstream picture;
    writeTimelineSvg(*result, picture, options);
    std::string text = picture.str();
    size_t open = text.find("<svg ");
    std::string body = text.substr(open);
    auto attribute = [&](const std::string &name) {
      size_t at = body.find(" " + name + "=\"");
      size_t from = at + name.size() + 3;
      return std::stod(body.substr(from, body.find('"', from) - from));
    };
    tops.push_back(height);
    width = std::max(width, attribute("width"));
    height += attribute("height");
    pictures.push_back(std::move(body));
  }
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << number(width)
     << "\" height=\"" << number(height) << "\" viewBox=\"0 0 "
     << number(width) << " " << number(height) << "\">\n";
  for (size_t i = 0; i < pictures.size(); ++i)
    os << "<svg x=\"0\" y=\"" << number(tops[i]) << "\""
       << pictures[i].substr(4);
  os << "</svg>\n";
}

} // namespace braid::rt
