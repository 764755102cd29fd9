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

/// Builds every stream's ops with their isolated times from `rank`'s steps
/// of the plan, decoded as the executors decode them
/// (runtime/exec/PlanSteps.h).
std::vector<SimStream> buildStreams(const LoadedPlan &plan,
                                    const SimConfig &config,
                                    GroupPlacements &placements,
                                    int64_t rank) {
  RunProfile decoded;
  std::vector<std::vector<PlanStep>> steps = resolvePlanSteps(
      plan, plan.mesh, rank,
      [&plan](uint32_t id) { return bufferLayout(plan, id); }, decoded);
  std::vector<SimStream> streams;
  for (size_t s = 0; s < steps.size(); ++s) {
    SimStream simStream;
    simStream.name = decoded.streams[s].name;
    simStream.ops.reserve(steps[s].size());
    for (const PlanStep &step : steps[s]) {
      SimOp op;
      op.name = step.name;
      op.location = *step.location;
      op.optionalGroup = step.optionalGroup;
      op.zeroWhenSkipped = step.zeroWhenSkipped;
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
        if (op.zeroWhenSkipped) {
          // A memset of its outputs.
          double written = 0;
          for (const TensorView &out : step.args.outputs)
            written += static_cast<double>(out.numBytes());
          op.zeroFillSec = kernelTime(config.profile, KernelClass::Memory,
                                      op.dtype, 0, written)
                               .total();
        }
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
        std::vector<int64_t> group = plan.mesh.group(rank, step.axes);
        op.groupLeader = *std::min_element(group.begin(), group.end());
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

/// One simulated rank: its streams and where each of them stands.
struct Instance {
  SimRank info;
  std::vector<SimStream> streams;
  std::vector<size_t> next;
  /// The stream has reached its next op, a wait or (every rank simulated)
  /// a collective, and waits there.
  std::vector<bool> reached;
  std::vector<bool> active;
  std::vector<bool> recorded;
  /// Per optional group: 0 undecided, 1 run, 2 skipped.
  std::vector<uint8_t> groups;
};

/// Runs the ranks' streams in virtual time (the model in Simulator.h): each
/// iteration advances to the next completion under the current rates.
class Engine {
public:
  /// `everyRank`: the instances are every rank of the mesh and a
  /// collective waits for its whole group; otherwise the one instance
  /// stands for every rank and a collective starts when it is reached.
  Engine(std::vector<Instance> &instances, const LoadedPlan &plan,
         const SimConfig &config, bool everyRank)
      : instances_(instances), config_(config), everyRank_(everyRank) {
    for (Instance &instance : instances_) {
      size_t streams = instance.streams.size();
      instance.next.assign(streams, 0);
      instance.reached.assign(streams, false);
      instance.active.assign(streams, false);
      instance.recorded.assign(plan.proto.num_events(), false);
      instance.groups.assign(plan.proto.optional_groups_size(), 0);
    }
    for (const plan::OptionalGroup &group : plan.proto.optional_groups())
      untilEvents_.emplace_back(group.until_events().begin(),
                                group.until_events().end());
  }

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
        Instance &instance = instances_[work.instance];
        SimOp &op = instance.streams[work.stream].ops[work.op];
        // The op that set the step ends at 0 up to rounding; a relative
        // tolerance also ends ops that finish at the same instant.
        if (work.remainingSec <= 1e-12 * op.isolatedSec) {
          op.endSec = now_;
          instance.active[work.stream] = false;
        } else {
          still.push_back(work);
        }
      }
      running_ = std::move(still);
      advance();
    }
    for (const Instance &instance : instances_)
      for (size_t s = 0; s < instance.streams.size(); ++s) {
        const SimStream &stream = instance.streams[s];
        if (instance.next[s] >= stream.ops.size())
          continue;
        const SimOp &op = stream.ops[instance.next[s]];
        std::string who = everyRank_ ? "rank " +
                                           std::to_string(instance.info.rank) +
                                           "'s stream '"
                                     : "stream '";
        if (op.kind == SimOpKind::Collective)
          throw PlanError(who + stream.name + "' waits at instruction " +
                          std::to_string(instance.next[s]) + ", " + op.name + " over [" + op.axes +
                          "], for members that never reach it (the ranks "
                          "deadlock)");
        throw PlanError(who + stream.name + "' never passes its wait on event " +
                        std::to_string(op.event) + " (the streams deadlock)");
      }
    return now_;
  }

private:
  struct Running {
    size_t instance;
    size_t stream;
    size_t op;
    double remainingSec;
    double rate;
    /// The collective's meeting (every rank simulated): its members run at
    /// the rate of the slowest; -1 otherwise.
    int64_t meeting = -1;
  };

  /// Whether `instance` skips optional group `group`: decided when one of
  /// its streams first reaches the group, as the executors decide.
  bool skips(Instance &instance, int32_t group) {
    uint8_t &decision = instance.groups[group];
    if (decision == 0) {
      bool skip = false;
      switch (instance.info.policy) {
      case OptionalPolicy::All:
        break;
      case OptionalPolicy::None:
        skip = true;
        break;
      case OptionalPolicy::Dynamic:
        skip = true;
        for (uint32_t event : untilEvents_[group])
          skip = skip && instance.recorded[event];
        break;
      }
      decision = skip ? 2 : 1;
      if (!skip)
        ++instance.info.groupsRun;
    }
    return decision == 2;
  }

  /// Starts `op` on stream `s` of `instance` for its isolated time.
  void start(size_t instance, size_t s, int64_t meeting) {
    Instance &at = instances_[instance];
    SimOp &op = at.streams[s].ops[at.next[s]];
    op.startSec = now_;
    if (op.isolatedSec > 0 || meeting >= 0) {
      running_.push_back({instance, s, at.next[s], op.isolatedSec, 1, meeting});
      at.active[s] = true;
    } else {
      op.endSec = now_;
    }
    ++at.next[s];
  }

  /// Issues instructions on every idle stream of every rank until each is
  /// busy, blocked (on an event or, every rank simulated, on a collective's
  /// other members) or done; a record or an arrival can unblock a stream
  /// already visited, so it repeats until nothing moves.
  void advance() {
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t i = 0; i < instances_.size(); ++i) {
        Instance &instance = instances_[i];
        for (size_t s = 0; s < instance.streams.size(); ++s) {
          std::vector<SimOp> &ops = instance.streams[s].ops;
          while (!instance.active[s] && instance.next[s] < ops.size()) {
            SimOp &op = ops[instance.next[s]];
            if (op.optionalGroup >= 0 && skips(instance, op.optionalGroup) &&
                op.kind == SimOpKind::Kernel && !op.skipped) {
              // The executors zero its outputs or leave it out.
              op.skipped = true;
              op.isolatedSec = op.zeroWhenSkipped ? op.zeroFillSec : 0;
            }
            if (op.kind == SimOpKind::WaitEvent) {
              if (!instance.reached[s]) {
                op.startSec = now_;
                instance.reached[s] = true;
              }
              if (!instance.recorded[op.event])
                break;
              op.endSec = now_;
              instance.reached[s] = false;
              ++instance.next[s];
            } else if (op.kind == SimOpKind::RecordEvent) {
              op.startSec = op.endSec = now_;
              instance.recorded[op.event] = true;
              ++instance.next[s];
            } else if (op.kind == SimOpKind::Collective && everyRank_) {
              std::vector<size_t> &arrived =
                  meetings_[{s, instance.next[s], op.groupLeader}];
              if (!instance.reached[s]) {
                instance.reached[s] = true;
                arrived.push_back(i);
              }
              if (static_cast<int64_t>(arrived.size()) < op.groupSize)
                break;
              // The last member is here: the collective starts on all.
              std::vector<size_t> members = std::move(arrived);
              meetings_.erase({s, instance.next[s], op.groupLeader});
              int64_t meeting = nextMeeting_++;
              for (size_t member : members) {
                instances_[member].reached[s] = false;
                start(member, s, meeting);
              }
            } else {
              start(i, s, -1);
            }
            progress = true;
          }
        }
      }
    }
  }

  void computeRates() {
    struct Load {
      int64_t kernels = 0, intra = 0, inter = 0;
    };
    std::vector<Load> loads(instances_.size());
    for (const Running &work : running_) {
      const SimOp &op =
          instances_[work.instance].streams[work.stream].ops[work.op];
      Load &load = loads[work.instance];
      if (op.kind == SimOpKind::Kernel)
        ++load.kernels;
      else if (op.interNode)
        ++load.inter;
      else
        ++load.intra;
    }
    const ContentionSpec &contention = config_.profile.contention;
    std::map<int64_t, double> slowest;
    for (Running &work : running_) {
      const SimOp &op =
          instances_[work.instance].streams[work.stream].ops[work.op];
      const Load &load = loads[work.instance];
      double share, slowdown = 1;
      if (op.kind == SimOpKind::Kernel) {
        share = static_cast<double>(load.kernels);
        if (config_.contention)
          slowdown = kernelSlowdown(contention, op.kernelClass,
                                    load.intra + load.inter > 0);
      } else {
        share = static_cast<double>(op.interNode ? load.inter : load.intra);
        if (config_.contention)
          slowdown = collectiveSlowdown(contention, load.kernels > 0);
      }
      work.rate = 1 / (share * slowdown);
      if (work.meeting >= 0) {
        auto [it, fresh] = slowest.emplace(work.meeting, work.rate);
        if (!fresh)
          it->second = std::min(it->second, work.rate);
      }
    }
    for (Running &work : running_)
      if (work.meeting >= 0)
        work.rate = slowest[work.meeting];
  }

  std::vector<Instance> &instances_;
  const SimConfig &config_;
  bool everyRank_;
  std::vector<std::vector<uint32_t>> untilEvents_;
  /// Collectives some members have reached: (stream, instruction, the
  /// group's lowest rank) -> the instances there.
  std::map<std::tuple<size_t, size_t, int64_t>, std::vector<size_t>>
      meetings_;
  int64_t nextMeeting_ = 0;
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
      // A skipped kernel that writes nothing did not run.
      if (op.skipped && !op.zeroWhenSkipped)
        continue;
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

  auto factorOf = [&](int64_t rank) {
    return config.rankSpeeds.empty() ? 1.0
                                     : config.rankSpeeds[static_cast<size_t>(rank)];
  };
  auto policyOf = [&](int64_t rank) {
    const std::vector<OptionalPolicy> &policies = config.optionalPolicies;
    if (policies.empty())
      return OptionalPolicy::Dynamic;
    return policies[std::min(static_cast<size_t>(rank), policies.size() - 1)];
  };
  // Ranks do different work only when they decide optional groups
  // differently: at different speeds, or under different policies.
  result.optionalGroups = plan.proto.optional_groups_size();
  bool differ = result.slowestRank >= 0;
  for (int64_t rank = 1; rank < result.worldSize; ++rank)
    differ = differ || policyOf(rank) != policyOf(0);
  result.everyRank = result.optionalGroups > 0 && differ;
  result.shownRank = std::max<int64_t>(result.slowestRank, 0);

  GroupPlacements placements(plan.mesh, result.gpusPerNode);
  std::vector<Instance> instances;
  for (int64_t rank = 0; rank < result.worldSize; ++rank) {
    if (!result.everyRank && rank != result.shownRank)
      continue;
    Instance instance;
    instance.info.rank = rank;
    // One rank standing for all: the slowest's kernels, since every
    // collective waits for it.
    instance.info.factor = result.everyRank ? factorOf(rank) : result.slowestFactor;
    instance.info.policy = policyOf(rank);
    instance.streams = buildStreams(plan, shared, placements, rank);
    for (SimStream &stream : instance.streams)
      for (SimOp &op : stream.ops) {
        if (op.kind == SimOpKind::Collective)
          op.isolatedSec *= share.collectiveTimeScale;
        if (op.kind == SimOpKind::Kernel) {
          op.isolatedSec *= instance.info.factor;
          op.zeroFillSec *= instance.info.factor;
        }
      }
    instances.push_back(std::move(instance));
  }
  Engine engine(instances, plan, shared, result.everyRank);
  double makespan = engine.run();
  for (Instance &instance : instances) {
    for (const SimStream &stream : instance.streams)
      for (const SimOp &op : stream.ops) {
        instance.info.finishSec = std::max(instance.info.finishSec, op.endSec);
        if (op.kind == SimOpKind::Kernel)
          instance.info.kernelSec += op.durationSec();
      }
    result.ranks.push_back(instance.info);
    if (instance.info.rank == result.shownRank)
      result.streams = std::move(instance.streams);
  }
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
    char text[240];
    if (everyRank)
      std::snprintf(text, sizeof(text),
                    "  heterogeneous ranks: rank %lld's kernels take %.3gx as "
                    "long; every rank simulated (the plan has optional "
                    "groups), the timeline below is rank %lld's\n",
                    static_cast<long long>(slowestRank), slowestFactor,
                    static_cast<long long>(shownRank));
    else
      std::snprintf(text, sizeof(text),
                    "  heterogeneous ranks: rank %lld's kernels take %.3gx as "
                    "long; every collective waits for it, so the timeline "
                    "below is that rank's\n",
                    static_cast<long long>(slowestRank), slowestFactor);
    os << text;
  } else if (everyRank) {
    os << "  every rank simulated (their optional-group policies differ); "
          "the timeline below is rank "
       << shownRank << "'s\n";
  }
  const SimMetrics &m = metrics;
  auto line = [&](const char *label, const std::string &value) {
    char text[64];
    std::snprintf(text, sizeof(text), "  %-34s ", label);
    os << text << value << "\n";
  };
  line("makespan", formatTime(m.makespanSec));
  if (optionalGroups > 0) {
    // "2 of 3 on rank 0; 3 of 3 on ranks 1-15 (dynamic)": the ranks by how
    // many groups they ran, most first.
    std::map<int64_t, std::vector<int64_t>, std::greater<int64_t>> byCount;
    std::set<OptionalPolicy> policies;
    for (const SimRank &rank : ranks) {
      byCount[rank.groupsRun].push_back(rank.rank);
      policies.insert(rank.policy);
    }
    std::string text;
    for (const auto &[count, members] : byCount) {
      text += (text.empty() ? "" : "; ") + std::to_string(count) + " of " +
              std::to_string(optionalGroups) + " on ";
      if (!everyRank) {
        text += "every rank";
        continue;
      }
      text += members.size() > 1 ? "ranks " : "rank ";
      // Runs of consecutive ranks as "a-b".
      for (size_t i = 0; i < members.size();) {
        size_t j = i;
        while (j + 1 < members.size() && members[j + 1] == members[j] + 1)
          ++j;
        text += (i ? "," : "") + std::to_string(members[i]) +
                (j > i ? "-" + std::to_string(members[j]) : "");
        i = j + 1;
      }
    }
    text += policies.size() == 1
                ? std::string(" (") + toString(*policies.begin()) + ")"
                : std::string(" (policies per rank)");
    line("optional groups run", text);
    if (everyRank) {
      // Who finished when: the fast ranks wait for the slow at the last
      // collective, or finish their own work first.
      double first = std::numeric_limits<double>::infinity(), last = 0;
      for (const SimRank &rank : ranks) {
        first = std::min(first, rank.finishSec);
        last = std::max(last, rank.finishSec);
      }
      line("ranks finish between", formatTime(first) + " and " + formatTime(last));
    }
  }
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
  profile.rank = shownRank;
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
