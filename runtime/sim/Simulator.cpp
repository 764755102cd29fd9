//===- Simulator.cpp - runs a plan in virtual time ------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/Simulator.h"

#include "runtime/cost/ClusterCost.h"
#include "runtime/cost/Contention.h"
#include "runtime/exec/PlanSteps.h"
#include "runtime/kernels/CpuKernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace braid::rt {

namespace {

/// "dp, tp" for messages and summaries.
std::string joinAxes(const std::vector<std::string> &axes) {
  std::string text;
  for (const std::string &axis : axes)
    text += (text.empty() ? "" : ", ") + axis;
  return text;
}

/// Where the groups over some axes sit. Groups over the same axes can sit
/// differently (an axis of 3 over nodes of 8 GPUs), and the one simulated
/// rank stands for all of them, so it takes the slowest: a collective costs
/// the most over the distinct placements of its groups.
class GroupPlacements {
public:
  GroupPlacements(const MeshShape &mesh, int64_t gpusPerNode)
      : mesh_(mesh), gpusPerNode_(gpusPerNode) {}

  const std::vector<GroupPlacement> &of(std::vector<std::string> axes) {
    std::sort(axes.begin(), axes.end());
    auto it = cache_.find(axes);
    if (it != cache_.end())
      return it->second;
    int64_t ranks = mesh_.numRanks();
    std::vector<bool> seen(static_cast<size_t>(ranks), false);
    std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> distinct;
    std::vector<GroupPlacement> placements;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      if (seen[rank])
        continue;
      std::vector<int64_t> group = mesh_.group(rank, axes);
      for (int64_t member : group)
        seen[member] = true;
      GroupPlacement placement = placeGroup(group, gpusPerNode_);
      if (distinct
              .insert({placement.size, placement.nodes, placement.minPerNode,
                       placement.maxPerNode})
              .second)
        placements.push_back(placement);
    }
    return cache_.emplace(axes, std::move(placements)).first->second;
  }

private:
  const MeshShape &mesh_;
  int64_t gpusPerNode_;
  std::map<std::vector<std::string>, std::vector<GroupPlacement>> cache_;
};

/// The element type that sets a kernel's peak: its first input's (a cast
/// computes at its source type), else its first output's.
DType kernelDType(const KernelArgs &args) {
  if (!args.inputs.empty())
    return args.inputs.front().dtype;
  if (!args.outputs.empty())
    return args.outputs.front().dtype;
  return DType::F32;
}

/// Builds every stream's ops with their isolated times from the plan's
/// steps, decoded as the executors decode them (runtime/exec/PlanSteps.h).
/// One rank's plan stands for every rank, so rank 0's steps are taken.
std::vector<SimStream> buildStreams(const LoadedPlan &plan,
                                    const SimConfig &config,
                                    int64_t gpusPerNode) {
  RunProfile decoded;
  std::vector<std::vector<PlanStep>> steps = resolvePlanSteps(
      plan, plan.mesh, /*rank=*/0,
      [&plan](uint32_t id) { return bufferLayout(plan, id); }, decoded);
  GroupPlacements placements(plan.mesh, gpusPerNode);
  std::vector<SimStream> streams;
  for (size_t s = 0; s < steps.size(); ++s) {
    SimStream simStream;
    simStream.name = decoded.streams[s].name;
    simStream.ops.reserve(steps[s].size());
    for (const PlanStep &step : steps[s]) {
      SimOp op;
      op.name = step.name;
      op.location = *step.location;
      switch (step.kind) {
      case StepKind::Kernel:
        op.kind = SimOpKind::Kernel;
        op.kernelClass = classifyKernel(step.name);
        op.dtype = kernelDType(step.args);
        // The compiler's estimates; a negative one would be a compiler bug,
        // and costs nothing rather than failing the whole simulation.
        op.flops = static_cast<double>(std::max<int64_t>(step.flops, 0));
        op.bytes = static_cast<double>(std::max<int64_t>(step.bytes, 0));
        // A copy (a training step's state update) moves exactly its input
        // twice, read and written, whatever the estimate says.
        if (step.name == "copy")
          op.bytes = 2.0 * static_cast<double>(step.args.inputs[0].numBytes());
        op.isolatedSec = kernelTime(config.profile, op.kernelClass, op.dtype,
                                    op.flops, op.bytes)
                             .total();
        break;
      case StepKind::Collective: {
        op.kind = SimOpKind::Collective;
        op.collectiveKind = step.collective;
        op.axes = joinAxes(step.axes);
        // S as nccl-tests defines it: the gathered output for all-gather,
        // the input for every other kind.
        const TensorView &buffer =
            step.collective == CollectiveKind::AllGather ? step.out : step.in;
        op.bytes = static_cast<double>(buffer.numBytes());
        op.dtype = buffer.dtype;
        for (const GroupPlacement &placement : placements.of(step.axes)) {
          op.groupSize = placement.size;
          op.interNode |= placement.spansNodes();
          op.isolatedSec = std::max(
              op.isolatedSec,
              clusterCollectiveTime(config.profile, op.collectiveKind,
                                    config.algorithm, placement, op.bytes));
        }
        break;
      }
      case StepKind::Record:
        op.kind = SimOpKind::RecordEvent;
        op.event = step.event;
        break;
      case StepKind::Wait:
        op.kind = SimOpKind::WaitEvent;
        op.event = step.event;
        break;
      }
      simStream.ops.push_back(std::move(op));
    }
    streams.push_back(std::move(simStream));
  }
  return streams;
}

/// Runs the streams in virtual time (the model in Simulator.h): each
/// iteration advances to the next completion under the current rates.
class Engine {
public:
  Engine(std::vector<SimStream> &streams, uint32_t numEvents,
         const SimConfig &config)
      : streams_(streams), config_(config), next_(streams.size(), 0),
        reachedWait_(streams.size(), false), active_(streams.size(), false),
        recorded_(numEvents, false) {}

  double run() {
    advance();
    while (!running_.empty()) {
      computeRates();
      double step = std::numeric_limits<double>::infinity();
      for (const Running &work : running_)
        step = std::min(step, work.remainingSec / work.rate);
      now_ += step;
      std::vector<Running> still;
      still.reserve(running_.size());
      for (Running &work : running_) {
        work.remainingSec -= work.rate * step;
        SimOp &op = streams_[work.stream].ops[work.op];
        // The op that set the step ends at 0 up to rounding; a relative
        // tolerance also ends ops that finish at the same instant.
        if (work.remainingSec <= 1e-12 * op.isolatedSec) {
          op.endSec = now_;
          active_[work.stream] = false;
        } else {
          still.push_back(work);
        }
      }
      running_ = std::move(still);
      advance();
    }
    for (size_t s = 0; s < streams_.size(); ++s)
      if (next_[s] < streams_[s].ops.size())
        throw PlanError("stream '" + streams_[s].name +
                        "' never passes its wait on event " +
                        std::to_string(streams_[s].ops[next_[s]].event) +
                        " (the streams deadlock)");
    return now_;
  }

private:
  struct Running {
    size_t stream;
    size_t op;
    double remainingSec;
    double rate;
  };

  /// Issues instructions on every idle stream until each is busy, blocked
  /// on an event or done; a record can unblock a stream already visited, so
  /// it repeats until nothing moves.
  void advance() {
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t s = 0; s < streams_.size(); ++s) {
        std::vector<SimOp> &ops = streams_[s].ops;
        while (!active_[s] && next_[s] < ops.size()) {
          SimOp &op = ops[next_[s]];
          if (op.kind == SimOpKind::WaitEvent) {
            if (!reachedWait_[s]) {
              op.startSec = now_;
              reachedWait_[s] = true;
            }
            if (!recorded_[op.event])
              break;
            op.endSec = now_;
            reachedWait_[s] = false;
          } else if (op.kind == SimOpKind::RecordEvent) {
            op.startSec = op.endSec = now_;
            recorded_[op.event] = true;
          } else {
            op.startSec = now_;
            if (op.isolatedSec > 0) {
              running_.push_back({s, next_[s], op.isolatedSec, 1});
              active_[s] = true;
            } else {
              op.endSec = now_;
            }
          }
          ++next_[s];
          progress = true;
        }
      }
    }
  }

  void computeRates() {
    int64_t kernels = 0, intraCollectives = 0, interCollectives = 0;
    for (const Running &work : running_) {
      const SimOp &op = streams_[work.stream].ops[work.op];
      if (op.kind == SimOpKind::Kernel)
        ++kernels;
      else if (op.interNode)
        ++interCollectives;
      else
        ++intraCollectives;
    }
    bool collectiveRunning = intraCollectives + interCollectives > 0;
    const ContentionSpec &contention = config_.profile.contention;
    for (Running &work : running_) {
      const SimOp &op = streams_[work.stream].ops[work.op];
      double share, slowdown = 1;
      if (op.kind == SimOpKind::Kernel) {
        share = static_cast<double>(kernels);
        if (config_.contention)
          slowdown =
              kernelSlowdown(contention, op.kernelClass, collectiveRunning);
      } else {
        share = static_cast<double>(op.interNode ? interCollectives
                                                 : intraCollectives);
        if (config_.contention)
          slowdown = collectiveSlowdown(contention, kernels > 0);
      }
      work.rate = 1 / (share * slowdown);
    }
  }

  std::vector<SimStream> &streams_;
  const SimConfig &config_;
  std::vector<size_t> next_;
  std::vector<bool> reachedWait_;
  std::vector<bool> active_;
  std::vector<bool> recorded_;
  std::vector<Running> running_;
  double now_ = 0;
};

using Interval = std::pair<double, double>;

/// Sorts and merges overlapping or touching intervals.
std::vector<Interval> unionOf(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const Interval &interval : intervals) {
    if (!merged.empty() && interval.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, interval.second);
    else
      merged.push_back(interval);
  }
  return merged;
}

double lengthOf(const std::vector<Interval> &intervals) {
  double total = 0;
  for (const Interval &interval : intervals)
    total += interval.second - interval.first;
  return total;
}

/// The length of the intersection of two merged interval lists.
double overlapOf(const std::vector<Interval> &a,
                 const std::vector<Interval> &b) {
  double total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    double start = std::max(a[i].first, b[j].first);
    double end = std::min(a[i].second, b[j].second);
    if (end > start)
      total += end - start;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return total;
}

SimMetrics measure(const std::vector<SimStream> &streams, double makespan) {
  SimMetrics metrics;
  metrics.makespanSec = makespan;
  std::vector<Interval> compute, communication;
  for (const SimStream &stream : streams)
    for (const SimOp &op : stream.ops) {
      if (op.kind == SimOpKind::Kernel) {
        ++metrics.kernels;
        metrics.totalComputeSec += op.isolatedSec;
        if (op.endSec > op.startSec)
          compute.push_back({op.startSec, op.endSec});
      } else if (op.kind == SimOpKind::Collective) {
        ++metrics.collectives;
        metrics.totalCommunicationSec += op.isolatedSec;
        if (op.endSec > op.startSec)
          communication.push_back({op.startSec, op.endSec});
      }
    }
  compute = unionOf(std::move(compute));
  communication = unionOf(std::move(communication));
  metrics.computeActiveSec = lengthOf(compute);
  metrics.communicationActiveSec = lengthOf(communication);
  metrics.exposedCommunicationSec =
      metrics.communicationActiveSec - overlapOf(compute, communication);
  if (metrics.exposedCommunicationSec < 0)
    metrics.exposedCommunicationSec = 0;
  metrics.hiddenCommunicationFraction =
      metrics.communicationActiveSec > 0
          ? 1 - metrics.exposedCommunicationSec / metrics.communicationActiveSec
          : 1;
  metrics.boundSec =
      std::max(metrics.totalComputeSec, metrics.totalCommunicationSec);
  metrics.overlapEfficiency = makespan > 0 ? metrics.boundSec / makespan : 1;
  return metrics;
}

/// "12.345 ms" (or µs / s, whichever reads best).
std::string formatTime(double seconds) {
  char text[32];
  double magnitude = std::fabs(seconds);
  if (magnitude >= 1)
    std::snprintf(text, sizeof(text), "%.3f s", seconds);
  else if (magnitude >= 1e-3)
    std::snprintf(text, sizeof(text), "%.3f ms", seconds * 1e3);
  else
    std::snprintf(text, sizeof(text), "%.3f us", seconds * 1e6);
  return text;
}

std::string formatPercent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.1f%%", fraction * 100);
  return text;
}

int64_t toNs(double seconds) {
  return static_cast<int64_t>(std::llround(seconds * 1e9));
}

} // namespace

bool SimOp::slowed() const {
  return busy() && durationSec() > isolatedSec * (1 + 1e-9);
}

double SimStream::busySec() const {
  double total = 0;
  for (const SimOp &op : ops)
    if (op.busy())
      total += op.durationSec();
  return total;
}

SimResult simulate(const LoadedPlan &plan, const SimConfig &config) {
  SimResult result;
  result.profileName = config.profile.name;
  result.mesh = plan.mesh;
  result.worldSize = plan.mesh.numRanks();
  result.gpusPerNode = config.profile.node.gpusPerNode;
  result.algorithm = config.algorithm;
  result.arenaBytes = plan.proto.arena_bytes();
  result.gpuMemoryBytes = config.profile.gpu.memoryBytes;
  int64_t needed =
      (result.worldSize + result.gpusPerNode - 1) / result.gpusPerNode;
  if (config.nodes < 0)
    throw std::invalid_argument("the node count must be >= 0, got " +
                                std::to_string(config.nodes));
  result.nodes = config.nodes == 0 ? needed : config.nodes;
  if (result.nodes < needed)
    throw std::invalid_argument(
        "the plan's mesh has " + std::to_string(result.worldSize) +
        " ranks but " + std::to_string(result.nodes) + " node(s) of '" +
        config.profile.name + "' hold only " +
        std::to_string(result.nodes * result.gpusPerNode) + " GPUs (" +
        std::to_string(result.gpusPerNode) + " per node; needs " +
        std::to_string(needed) + " nodes)");
  if (!config.rankSpeeds.empty()) {
    if (static_cast<int64_t>(config.rankSpeeds.size()) != result.worldSize)
      throw std::invalid_argument(
          "--rank-speeds gives " + std::to_string(config.rankSpeeds.size()) +
          " factors for a mesh of " + std::to_string(result.worldSize) +
          " ranks: give one per rank");
    for (size_t r = 0; r < config.rankSpeeds.size(); ++r) {
      double factor = config.rankSpeeds[r];
      if (!(factor > 0) || !std::isfinite(factor))
        throw std::invalid_argument("--rank-speeds: rank " +
                                    std::to_string(r) + "'s factor must be "
                                    "a positive number");
      if (factor > result.slowestFactor) {
        result.slowestFactor = factor;
        result.slowestRank = static_cast<int64_t>(r);
      }
    }
  }
  // The plan's communication resource share (braid-comet) changes both
  // sides of the contention model.
  SimConfig shared = config;
  CommShare share = applyCommSms(config.profile, plan.proto.comm_sms());
  shared.profile.contention = share.contention;
  result.streams = buildStreams(plan, shared, result.gpusPerNode);
  for (SimStream &stream : result.streams)
    for (SimOp &op : stream.ops) {
      if (op.kind == SimOpKind::Collective)
        op.isolatedSec *= share.collectiveTimeScale;
      // The slowest rank's kernels: every collective waits for it.
      if (op.kind == SimOpKind::Kernel)
        op.isolatedSec *= result.slowestFactor;
    }
  Engine engine(result.streams, plan.proto.num_events(), shared);
  double makespan = engine.run();
  result.metrics = measure(result.streams, makespan);
  return result;
}

std::string SimResult::summary() const {
  std::ostringstream os;
  std::string meshText;
  for (size_t i = 0; i < mesh.axisNames.size(); ++i)
    meshText += (i ? " x " : "") + mesh.axisNames[i] + "=" +
                std::to_string(mesh.axisSizes[i]);
  os << "simulated on " << profileName << ": " << nodes << " node(s) x "
     << gpusPerNode << " GPUs; mesh "
     << (meshText.empty() ? "(none)" : meshText) << " = " << worldSize
     << " ranks; collectives: " << toString(algorithm) << "\n";
  if (slowestRank >= 0) {
    char text[160];
    std::snprintf(text, sizeof(text),
                  "  heterogeneous ranks: rank %lld's kernels take %.3gx as "
                  "long; every collective waits for it, so the timeline "
                  "below is that rank's\n",
                  static_cast<long long>(slowestRank), slowestFactor);
    os << text;
  }
  const SimMetrics &m = metrics;
  auto line = [&](const char *label, const std::string &value) {
    char text[64];
    std::snprintf(text, sizeof(text), "  %-34s ", label);
    os << text << value << "\n";
  };
  line("makespan", formatTime(m.makespanSec));
  line("compute (sum of isolated kernels)",
       formatTime(m.totalComputeSec) + " in " + std::to_string(m.kernels) +
           " kernels");
  line("communication (sum of isolated)",
       formatTime(m.totalCommunicationSec) + " in " +
           std::to_string(m.collectives) + " collectives");
  line("bound max(compute, communication)", formatTime(m.boundSec));
  line("overlap efficiency (bound/makespan)",
       formatPercent(m.overlapEfficiency));
  line("exposed communication", formatTime(m.exposedCommunicationSec));
  if (arenaBytes > 0) {
    // The arena is the plan's peak: braid-to-exec packs every buffer into
    // it, so no rank ever needs more device memory than this for the plan.
    char text[200];
    double mib = static_cast<double>(arenaBytes) / (1 << 20);
    if (gpuMemoryBytes > 0) {
      double share = static_cast<double>(arenaBytes) / gpuMemoryBytes;
      std::snprintf(text, sizeof(text), "%llu bytes (%.1f MiB, %.1f%% of a "
                    "GPU's %.0f GB%s)",
                    static_cast<unsigned long long>(arenaBytes), mib,
                    100 * share, gpuMemoryBytes / 1e9,
                    share > 1 ? ": does not fit" : "");
    } else {
      std::snprintf(text, sizeof(text), "%llu bytes (%.1f MiB)",
                    static_cast<unsigned long long>(arenaBytes), mib);
    }
    line("peak memory per rank (arena)", text);
  }
  line("hidden communication",
       formatPercent(m.hiddenCommunicationFraction) + " of " +
           formatTime(m.communicationActiveSec) + " with a collective running");
  for (const SimStream &stream : streams) {
    double busy = stream.busySec();
    line(("stream '" + stream.name + "' busy").c_str(),
         formatTime(busy) + " (" +
             formatPercent(m.makespanSec > 0 ? busy / m.makespanSec : 0) +
             "), " + std::to_string(stream.ops.size()) + " instructions");
  }
  // Time per op and per collective group, largest first.
  struct Total {
    double isolated = 0;
    double simulated = 0;
    int64_t calls = 0;
  };
  std::map<std::string, Total> totals;
  for (const SimStream &stream : streams)
    for (const SimOp &op : stream.ops) {
      if (!op.busy())
        continue;
      std::string key = op.name;
      if (op.kind == SimOpKind::Collective) {
        key += " over [" + op.axes + "] (" + std::to_string(op.groupSize) +
               " ranks, " + (op.interNode ? "across nodes" : "in a node") + ")";
      } else {
        key += " [" + std::string(toString(op.kernelClass)) + "]";
      }
      Total &total = totals[key];
      total.isolated += op.isolatedSec;
      total.simulated += op.durationSec();
      ++total.calls;
    }
  std::vector<std::pair<std::string, Total>> sorted(totals.begin(),
                                                    totals.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) {
    return a.second.simulated > b.second.simulated;
  });
  if (!sorted.empty())
    os << "  time per op (simulated, alone):\n";
  for (size_t i = 0; i < sorted.size() && i < 12; ++i)
    os << "    " << sorted[i].first << ": "
       << formatTime(sorted[i].second.simulated) << ", "
       << formatTime(sorted[i].second.isolated) << " in "
       << sorted[i].second.calls << " calls\n";
  return os.str();
}

RunProfile SimResult::toRunProfile() const {
  RunProfile profile;
  profile.rank = 0;
  profile.totalNs = toNs(metrics.makespanSec);
  for (const SimStream &stream : streams) {
    StreamTiming timing;
    timing.name = stream.name;
    timing.instructions.reserve(stream.ops.size());
    for (const SimOp &op : stream.ops) {
      InstructionTiming instruction;
      instruction.name = op.name;
      instruction.location = op.location;
      instruction.busy = op.busy();
      instruction.startNs = toNs(op.startSec);
      instruction.endNs = toNs(op.endSec);
      timing.instructions.push_back(std::move(instruction));
    }
    profile.streams.push_back(std::move(timing));
  }
  return profile;
}

void SimResult::writeChromeTrace(std::ostream &os) const {
  toRunProfile().writeChromeTrace(os);
}

SimResult measuredResult(const RunProfile &profile, const MeshShape &mesh,
                         const std::string &platform) {
  SimResult result;
  result.profileName = platform;
  result.mesh = mesh;
  result.worldSize = mesh.numRanks();
  result.gpusPerNode = result.worldSize;
  for (const StreamTiming &timing : profile.streams) {
    SimStream stream;
    stream.name = timing.name;
    for (const InstructionTiming &instruction : timing.instructions) {
      if (instruction.startNs < 0)
        continue;
      SimOp op;
      op.name = instruction.name;
      op.location = instruction.location;
      if (std::optional<CollectiveKind> kind =
              parseCollectiveKind(instruction.name)) {
        op.kind = SimOpKind::Collective;
        op.collectiveKind = *kind;
      } else if (!instruction.busy) {
        op.kind = instruction.name == "record_event" ? SimOpKind::RecordEvent
                                                      : SimOpKind::WaitEvent;
      }
      op.startSec = static_cast<double>(instruction.startNs) / 1e9;
      op.endSec = static_cast<double>(instruction.endNs) / 1e9;
      // Measured: what it took, sharing or not.
      op.isolatedSec = op.durationSec();
      stream.ops.push_back(std::move(op));
    }
    result.streams.push_back(std::move(stream));
  }
  result.metrics =
      measure(result.streams, static_cast<double>(profile.totalNs) / 1e9);
  return result;
}

LoadedPlan validatePlanForSimulation(plan::Plan proto) {
  proto.clear_weights();
  LoadOptions options;
  options.kernels = &cpuKernels();
  options.worldSize = 0;
  return validatePlan(std::move(proto), options);
}

LoadedPlan loadPlanForSimulation(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw PlanError("cannot read the plan file '" + path + "'");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  std::string data = bytes.str();
  if (data.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw PlanError("the plan '" + path + "' is larger than 2 GiB");
  plan::Plan proto;
  if (!proto.ParseFromArray(data.data(), static_cast<int>(data.size())))
    throw PlanError("'" + path +
                    "' is not a valid binary Plan message (truncated or not "
                    "a .bplan)");
  return validatePlanForSimulation(std::move(proto));
}

} // namespace braid::rt
