//===- RunProfile.cpp - timings of one run of a plan ----------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/RunProfile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>

namespace braid::rt {

namespace {
std::string milliseconds(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f ms", static_cast<double>(ns) / 1e6);
  return text;
}

std::string percent(int64_t part, int64_t whole) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.1f%%",
                whole > 0 ? 100.0 * static_cast<double>(part) /
                                static_cast<double>(whole)
                          : 0.0);
  return text;
}
} // namespace

int64_t StreamTiming::busyNs() const {
  int64_t total = 0;
  for (const InstructionTiming &timing : instructions)
    if (timing.busy && timing.startNs >= 0 && timing.endNs >= timing.startNs)
      total += timing.endNs - timing.startNs;
  return total;
}

std::string RunProfile::summary() const {
  std::string text = "rank " + std::to_string(rank) + ": total " +
                     milliseconds(totalNs) + "\n";
  struct OpTotal {
    int64_t ns = 0;
    int64_t calls = 0;
  };
  if (!untimed.empty())
    return text + "  (no per-instruction times: " + untimed + ")\n";
  std::map<std::string, OpTotal> ops;
  for (const StreamTiming &stream : streams) {
    int64_t busy = stream.busyNs();
    text += "  stream '" + stream.name + "': busy " + milliseconds(busy) +
            " (" + percent(busy, totalNs) + "), " +
            std::to_string(stream.instructions.size()) + " instructions\n";
    for (const InstructionTiming &timing : stream.instructions)
      if (timing.busy && timing.startNs >= 0) {
        OpTotal &op = ops[timing.name];
        op.ns += timing.endNs - timing.startNs;
        ++op.calls;
      }
  }
  std::vector<std::pair<std::string, OpTotal>> sorted(ops.begin(), ops.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) {
    return a.second.ns > b.second.ns;
  });
  if (!sorted.empty())
    text += "  time per op:\n";
  for (size_t i = 0; i < sorted.size() && i < 10; ++i)
    text += "    " + sorted[i].first + ": " +
            milliseconds(sorted[i].second.ns) + " in " +
            std::to_string(sorted[i].second.calls) + " calls\n";
  return text;
}

void RunProfile::writeChromeTrace(std::ostream &os) const {
  using nlohmann::json;
  json events = json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", rank},
                    {"args", {{"name", "rank " + std::to_string(rank)}}}});
  for (size_t s = 0; s < streams.size(); ++s) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", rank},
                      {"tid", s},
                      {"args", {{"name", streams[s].name}}}});
    for (const InstructionTiming &timing : streams[s].instructions) {
      if (timing.startNs < 0)
        continue;
      events.push_back(
          {{"name", timing.name},
           {"cat", timing.busy ? "work" : "event"},
           {"ph", "X"},
           {"pid", rank},
           {"tid", s},
           {"ts", static_cast<double>(timing.startNs) / 1e3},
           {"dur", static_cast<double>(timing.endNs - timing.startNs) / 1e3},
           {"args", {{"location", timing.location}}}});
    }
  }
  json trace = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
  // Names come from the plan file: replace invalid UTF-8 instead of throwing.
  os << trace.dump(1, ' ', false, json::error_handler_t::replace) << "\n";
}

} // namespace braid::rt
