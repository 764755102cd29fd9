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
#include <stdexcept>

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
/// Time and calls of each op, over the busy instructions that ran.
struct OpTotal {
  int64_t ns = 0;
  int64_t calls = 0;
};
using OpTotals = std::map<std::string, OpTotal>;

void addOps(const StreamTiming &stream, OpTotals &ops) {
  for (const InstructionTiming &timing : stream.instructions)
    if (timing.busy && timing.startNs >= 0) {
      OpTotal &op = ops[timing.name];
      op.ns += timing.endNs - timing.startNs;
      ++op.calls;
    }
}

/// The ten ops that took longest, under `heading`.
std::string topOps(const OpTotals &ops, const std::string &heading) {
  std::vector<std::pair<std::string, OpTotal>> sorted(ops.begin(), ops.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) {
    return a.second.ns > b.second.ns;
  });
  std::string text = sorted.empty() ? "" : "  " + heading + ":\n";
  for (size_t i = 0; i < sorted.size() && i < 10; ++i)
    text += "    " + sorted[i].first + ": " +
            milliseconds(sorted[i].second.ns) + " in " +
            std::to_string(sorted[i].second.calls) + " calls\n";
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
  if (!untimed.empty())
    return text + "  (no per-instruction times: " + untimed + ")\n";
  OpTotals ops;
  for (const StreamTiming &stream : streams) {
    int64_t busy = stream.busyNs();
    text += "  stream '" + stream.name + "': busy " + milliseconds(busy) +
            " (" + percent(busy, totalNs) + "), " +
            std::to_string(stream.instructions.size()) + " instructions\n";
    addOps(stream, ops);
  }
  return text + topOps(ops, "time per op");
}

namespace {
/// The Chrome trace events of one rank's run, shifted by `offsetNs`.
void appendTraceEvents(const RunProfile &profile, nlohmann::json &events) {
  using nlohmann::json;
  int64_t rank = profile.rank;
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", rank},
                    {"args", {{"name", "rank " + std::to_string(rank)}}}});
  events.push_back({{"name", "process_sort_index"},
                    {"ph", "M"},
                    {"pid", rank},
                    {"args", {{"sort_index", rank}}}});
  for (size_t s = 0; s < profile.streams.size(); ++s) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", rank},
                      {"tid", s},
                      {"args", {{"name", profile.streams[s].name}}}});
    for (const InstructionTiming &timing : profile.streams[s].instructions) {
      if (timing.startNs < 0)
        continue;
      events.push_back(
          {{"name", timing.name},
           {"cat", timing.busy ? "work" : "event"},
           {"ph", "X"},
           {"pid", rank},
           {"tid", s},
           {"ts", static_cast<double>(profile.offsetNs + timing.startNs) / 1e3},
           {"dur", static_cast<double>(timing.endNs - timing.startNs) / 1e3},
           {"args", {{"location", timing.location}}}});
    }
  }
}

void writeTrace(const nlohmann::json &events, std::ostream &os) {
  using nlohmann::json;
  json trace = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
  // Names come from the plan file: replace invalid UTF-8 instead of throwing.
  os << trace.dump(1, ' ', false, json::error_handler_t::replace) << "\n";
}
} // namespace

void RunProfile::writeChromeTrace(std::ostream &os) const {
  nlohmann::json events = nlohmann::json::array();
  appendTraceEvents(*this, events);
  writeTrace(events, os);
}

std::string RunProfile::toJson() const {
  using nlohmann::json;
  json streamList = json::array();
  for (const StreamTiming &stream : streams) {
    json instructions = json::array();
    for (const InstructionTiming &timing : stream.instructions)
      instructions.push_back({timing.name, timing.location, timing.busy,
                              timing.startNs, timing.endNs});
    streamList.push_back({{"name", stream.name},
                          {"instructions", std::move(instructions)}});
  }
  json profile = {{"rank", rank},         {"totalNs", totalNs},
                  {"offsetNs", offsetNs}, {"untimed", untimed},
                  {"streams", streamList}};
  return profile.dump(-1, ' ', false, json::error_handler_t::replace);
}

RunProfile RunProfile::fromJson(const std::string &text) {
  RunProfile profile;
  try {
    nlohmann::json value = nlohmann::json::parse(text);
    profile.rank = value.at("rank").get<int64_t>();
    profile.totalNs = value.at("totalNs").get<int64_t>();
    profile.offsetNs = value.at("offsetNs").get<int64_t>();
    profile.untimed = value.at("untimed").get<std::string>();
    for (const nlohmann::json &stream : value.at("streams")) {
      StreamTiming timing;
      timing.name = stream.at("name").get<std::string>();
      for (const nlohmann::json &i : stream.at("instructions"))
        timing.instructions.push_back(
            {i.at(0).get<std::string>(), i.at(1).get<std::string>(),
             i.at(2).get<bool>(), i.at(3).get<int64_t>(),
             i.at(4).get<int64_t>()});
      profile.streams.push_back(std::move(timing));
    }
  } catch (const nlohmann::json::exception &error) {
    throw std::invalid_argument(std::string("not a run profile: ") +
                                error.what());
  }
  return profile;
}

void MergedProfile::writeChromeTrace(std::ostream &os) const {
  nlohmann::json events = nlohmann::json::array();
  for (const RunProfile &profile : ranks)
    appendTraceEvents(profile, events);
  writeTrace(events, os);
}

std::string MergedProfile::summary() const {
  if (ranks.empty())
    return "";
  if (ranks.size() == 1)
    return ranks.front().summary();
  const RunProfile *slowest = &ranks.front(), *fastest = &ranks.front();
  for (const RunProfile &profile : ranks) {
    if (profile.totalNs > slowest->totalNs)
      slowest = &profile;
    if (profile.totalNs < fastest->totalNs)
      fastest = &profile;
  }
  std::string text = std::to_string(ranks.size()) + " ranks: total " +
                     milliseconds(slowest->totalNs) + " (slowest, rank " +
                     std::to_string(slowest->rank) + "; fastest " +
                     milliseconds(fastest->totalNs) + ", rank " +
                     std::to_string(fastest->rank) + ")\n";
  for (const RunProfile &profile : ranks)
    if (!profile.untimed.empty())
      return text + "  (no per-instruction times: " + profile.untimed + ")\n";
  // Streams by name (every rank runs the same plan, so the same streams).
  struct StreamTotal {
    int64_t busyNs = 0, totalNs = 0, instructions = 0, ranks = 0;
  };
  std::vector<std::pair<std::string, StreamTotal>> streams;
  OpTotals ops;
  for (const RunProfile &profile : ranks)
    for (const StreamTiming &stream : profile.streams) {
      auto found = std::find_if(streams.begin(), streams.end(),
                                [&](const auto &s) {
                                  return s.first == stream.name;
                                });
      if (found == streams.end())
        found = streams.insert(streams.end(), {stream.name, {}});
      found->second.busyNs += stream.busyNs();
      found->second.totalNs += profile.totalNs;
      found->second.instructions += stream.instructions.size();
      ++found->second.ranks;
      addOps(stream, ops);
    }
  for (const auto &[name, total] : streams)
    text += "  stream '" + name + "': busy " +
            milliseconds(total.busyNs / total.ranks) + " per rank (" +
            percent(total.busyNs, total.totalNs) + "), " +
            std::to_string(total.instructions / total.ranks) +
            " instructions per rank\n";
  return text + topOps(ops, "time per op, summed over ranks");
}

} // namespace braid::rt
