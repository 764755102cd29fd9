//===- PlanSteps.cpp - a plan's instructions, resolved for one rank -------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/PlanSteps.h"

#include "runtime/plan/PlanError.h"
#include "runtime/weights/Safetensors.h"
#include "runtime/weights/WeightSharding.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace braid::rt {
namespace {

ReduceOp reduceOp(const std::string &reduction) {
  if (reduction == "max")
    return ReduceOp::Max;
  if (reduction == "min")
    return ReduceOp::Min;
  if (reduction == "avg")
    return ReduceOp::Avg;
  return ReduceOp::Sum;
}

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t count = 1;
  for (size_t d = begin; d < end; ++d)
    count *= shape[d];
  return count;
}

} // namespace

CollectiveLayout collectiveLayout(const PlanStep &step) {
  const TensorView &in = step.in, &out = step.out;
  CollectiveLayout layout;
  layout.count = in.numElements();
  size_t element = byteSize(in.dtype);
  int64_t n = step.groupSize;
  switch (step.collective) {
  case CollectiveKind::AllGather: {
    // Rank-major blocks [member][outer][chunk] become [outer][member][chunk].
    int64_t outer = product(in.shape, 0, step.dim);
    if (outer != 1 && layout.count != 0)
      layout.after = BlockTranspose{
          n, outer, static_cast<size_t>(layout.count / outer) * element};
    break;
  }
  case CollectiveKind::ReduceScatter: {
    // [outer][member][chunk] becomes the communicator's [member][outer][chunk].
    int64_t outer = product(in.shape, 0, step.dim);
    layout.count = out.numElements();
    if (outer != 1 && layout.count != 0)
      layout.before = BlockTranspose{
          outer, n, static_cast<size_t>(layout.count / outer) * element};
    break;
  }
  case CollectiveKind::AllToAll: {
    // Block j (for member j) is slice j along split_dim; the block from
    // member i becomes slice i along concat_dim.
    std::vector<int64_t> block = in.shape;
    block[step.splitDim] /= n;
    int64_t blockCount = layout.count / n;
    layout.count = blockCount;
    if (blockCount == 0)
      break;
    int64_t outerSplit = product(in.shape, 0, step.splitDim);
    if (outerSplit != 1)
      layout.before = BlockTranspose{
          outerSplit, n,
          static_cast<size_t>(blockCount / outerSplit) * element};
    int64_t outerConcat = product(block, 0, step.concatDim);
    if (outerConcat != 1)
      layout.after = BlockTranspose{
          n, outerConcat,
          static_cast<size_t>(blockCount / outerConcat) * element};
    break;
  }
  default:
    break;
  }
  return layout;
}

std::array<uint64_t, 3> collectiveScratchBytes(const PlanStep &step) {
  if (step.kind != StepKind::Collective ||
      step.collective == CollectiveKind::AllReduce ||
      step.in.numElements() == 0)
    return {0, 0, 0};
  CollectiveLayout layout = collectiveLayout(step);
  return {step.in.overlaps(step.out) ? step.in.numBytes() : 0,
          layout.before ? step.in.numBytes() : 0,
          layout.after ? step.out.numBytes() : 0};
}

std::vector<std::vector<PlanStep>>
resolvePlanSteps(const LoadedPlan &plan, const MeshShape &mesh, int64_t rank,
                 const std::function<TensorView(uint32_t)> &buffer,
                 RunProfile &profile) {
  const plan::Plan &proto = plan.proto;
  std::vector<std::vector<PlanStep>> steps(proto.streams_size());
  profile.rank = rank;
  profile.streams.assign(proto.streams_size(), StreamTiming());
  for (int s = 0; s < proto.streams_size(); ++s) {
    const plan::Stream &stream = proto.streams(s);
    profile.streams[s].name = stream.name();
    for (int i = 0; i < stream.instructions_size(); ++i) {
      const plan::Instruction &instruction = stream.instructions(i);
      PlanStep step;
      step.location = &instruction.location();
      step.optionalGroup = static_cast<int32_t>(instruction.optional_group()) - 1;
      step.zeroWhenSkipped = instruction.zero_when_skipped();
      switch (instruction.kind_case()) {
      case plan::Instruction::kKernel: {
        const plan::Kernel &kernel = instruction.kernel();
        step.kind = StepKind::Kernel;
        step.name = kernel.op();
        step.kernel = plan.kernels[s][i];
        step.args.kernel = &kernel;
        for (uint32_t id : kernel.inputs())
          step.args.inputs.push_back(buffer(id));
        for (uint32_t id : kernel.outputs())
          step.args.outputs.push_back(buffer(id));
        for (const plan::IndexExpr &index : kernel.indices()) {
          int64_t value = index.constant();
          for (int a = 0; a < index.rank_axes_size(); ++a)
            value += index.rank_coefficients(a) *
                     mesh.coordinate(rank, index.rank_axes(a));
          step.args.indices.push_back(value);
        }
        step.args.numIndices = kernel.indices_size();
        step.flops = kernel.flops();
        step.bytes = kernel.bytes();
        break;
      }
      case plan::Instruction::kCollective: {
        const plan::Collective &collective = instruction.collective();
        step.kind = StepKind::Collective;
        step.name = collective.kind();
        // Validated against the dialect's spellings when the plan loaded.
        step.collective = parseCollectiveKind(collective.kind())
                              .value_or(CollectiveKind::Broadcast);
        step.axes.assign(collective.axes().begin(), collective.axes().end());
        for (const std::string &axis : step.axes)
          step.groupSize *=
              mesh.axisSizes[std::find(mesh.axisNames.begin(),
                                       mesh.axisNames.end(), axis) -
                             mesh.axisNames.begin()];
        step.in = buffer(collective.input());
        step.out = buffer(collective.output());
        step.reduction = reduceOp(collective.reduction());
        step.dim = collective.dim();
        step.splitDim = collective.split_dim();
        step.concatDim = collective.concat_dim();
        step.shift = collective.shift();
        step.root = collective.root();
        break;
      }
      case plan::Instruction::kRecordEvent:
        step.kind = StepKind::Record;
        step.name = "record_event";
        step.event = instruction.record_event();
        break;
      case plan::Instruction::kWaitEvent:
        step.kind = StepKind::Wait;
        step.name = "wait_event";
        step.event = instruction.wait_event();
        break;
      case plan::Instruction::KIND_NOT_SET:
        throw PlanError("an instruction has no kind (the plan was not "
                        "validated)");
      }
      InstructionTiming timing;
      timing.name = step.name;
      timing.location = *step.location;
      timing.busy =
          step.kind == StepKind::Kernel || step.kind == StepKind::Collective;
      profile.streams[s].instructions.push_back(std::move(timing));
      steps[s].push_back(std::move(step));
    }
  }
  return steps;
}

void writeInitialData(
    const LoadedPlan &plan, const MeshShape &mesh, int64_t rank,
    const SafetensorsFile *weights,
    const std::function<void(const BufferInfo &,
                             const std::function<void(void *)> &)> &sink,
    const SafetensorsFile *checkpoint) {
  const plan::Plan &proto = plan.proto;
  for (const plan::Constant &constant : proto.constants())
    sink(plan.buffers[constant.buffer()], [&](void *target) {
      std::memcpy(target, constant.data().data(), constant.data().size());
    });

  for (const plan::Weight &weight : proto.weights()) {
    const BufferInfo &buffer = plan.buffers[weight.buffer()];
    const SafetensorsFile *source =
        weight.state() && checkpoint ? checkpoint : weights;
    if (weight.init() == plan::ZEROS && source != checkpoint) {
      sink(buffer, [&](void *target) { std::memset(target, 0, buffer.bytes); });
      continue;
    }
    const char *what =
        source == checkpoint ? "checkpoint" : "weights file";
    const SafetensorsTensor *tensor =
        source ? source->find(weight.name()) : nullptr;
    if (!tensor)
      throw PlanError("weight '" + weight.name() + "' is not in the " + what +
                      " given to the executor");
    DimAxes dimAxes;
    for (const plan::DimSharding &dim : weight.sharding())
      dimAxes.emplace_back(dim.axes().begin(), dim.axes().end());
    ShardRegion region = shardRegion(weightBlock(weight), dimAxes, mesh, rank);
    // The block's offsets are only valid for the full shape it was checked
    // against.
    if (region.sizes != buffer.shape || tensor->dtype != buffer.dtype ||
        !std::equal(tensor->shape.begin(), tensor->shape.end(),
                    weight.full_shape().begin(), weight.full_shape().end()))
      throw PlanError("weight '" + weight.name() + "' in the " + what +
                      " given to the executor does not match the one the "
                      "plan was validated against");
    // The file's pages are dropped as the copy passes them (every 8 MiB):
    // a large weight's mapping would otherwise sit beside its copy.
    constexpr uint64_t kReleaseStep = 8u << 20;
    uint64_t released = 0;
    sink(buffer, [&](void *target) {
      copyRegion(source->data(*tensor), tensor->shape, byteSize(buffer.dtype),
                 region, target, [&](size_t upTo) {
                   if (upTo >= released + kReleaseStep) {
                     source->release(*tensor, upTo);
                     released = upTo;
                   }
                 });
    });
    source->release(*tensor);
  }
}

IssueOrder issueOrder(const std::vector<std::vector<PlanStep>> &steps,
                      uint32_t numEvents) {
  IssueOrder order;
  std::vector<size_t> next(steps.size(), 0);
  std::vector<char> recorded(numEvents, 0);
  size_t remaining = 0;
  for (const auto &stream : steps)
    remaining += stream.size();
  order.steps.reserve(remaining);
  while (remaining > 0) {
    bool progressed = false;
    for (size_t s = 0; s < steps.size(); ++s) {
      while (next[s] < steps[s].size()) {
        const PlanStep &step = steps[s][next[s]];
        if (step.kind == StepKind::Wait &&
            (step.event >= numEvents || !recorded[step.event]))
          break;
        order.steps.emplace_back(s, next[s]);
        if (step.kind == StepKind::Record && step.event < numEvents)
          recorded[step.event] = 1;
        ++next[s];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      for (size_t s = 0; s < steps.size(); ++s)
        if (next[s] < steps[s].size()) {
          order.blocked = std::make_pair(s, next[s]);
          break;
        }
      break;
    }
  }
  return order;
}

const char *toString(OptionalPolicy policy) {
  switch (policy) {
  case OptionalPolicy::Dynamic:
    return "dynamic";
  case OptionalPolicy::All:
    return "all";
  case OptionalPolicy::None:
    return "none";
  }
  return "?";
}

std::optional<OptionalPolicy> parseOptionalPolicy(const std::string &text) {
  if (text == "dynamic")
    return OptionalPolicy::Dynamic;
  if (text == "all")
    return OptionalPolicy::All;
  if (text == "none")
    return OptionalPolicy::None;
  return std::nullopt;
}

TensorView arenaView(const LoadedPlan &plan, uint8_t *arena, uint32_t id) {
  TensorView view = bufferLayout(plan, id);
  view.data = arena + plan.buffers[id].offset;
  return view;
}

TensorView bufferLayout(const LoadedPlan &plan, uint32_t id) {
  const BufferInfo &info = plan.buffers.at(id);
  TensorView view;
  view.dtype = info.dtype;
  view.shape = info.shape;
  return view;
}

uint32_t bindingBuffer(const LoadedPlan &plan, const std::string &name,
                       bool input) {
  const auto &bindings = input ? plan.proto.inputs() : plan.proto.outputs();
  for (const plan::Binding &binding : bindings)
    if (binding.name() == name)
      return binding.buffer();
  throw std::invalid_argument(std::string("the plan has no ") +
                              (input ? "input" : "output") + " named '" +
                              name + "'");
}

std::string describeStep(int64_t rank, const RunProfile &profile,
                         const std::vector<std::vector<PlanStep>> &steps,
                         size_t stream, size_t index) {
  std::string where = "rank " + std::to_string(rank);
  if (stream < steps.size() && index < steps[stream].size()) {
    const PlanStep &step = steps[stream][index];
    where += ", stream '" + profile.streams[stream].name + "', instruction " +
             std::to_string(index) + " (" + step.name;
    if (!step.location->empty())
      where += " at " + *step.location;
    where += ")";
  }
  return where;
}

std::vector<size_t>
collectiveChannels(const std::vector<std::vector<PlanStep>> &steps,
                   const MeshShape &mesh) {
  std::vector<size_t> channels(steps.size(), 0);
  std::vector<std::set<std::string>> taken; // per channel: axes in use
  for (size_t stream = 0; stream < steps.size(); ++stream) {
    std::set<std::string> axes;
    for (const PlanStep &step : steps[stream])
      if (step.kind == StepKind::Collective)
        for (const std::string &axis : step.axes)
          for (size_t k = 0; k < mesh.axisNames.size(); ++k)
            if (mesh.axisNames[k] == axis && mesh.axisSizes[k] > 1)
              axes.insert(axis);
    if (axes.empty())
      continue;
    size_t channel = 0;
    for (;; ++channel) {
      if (channel == taken.size())
        taken.emplace_back();
      bool clash = false;
      for (const std::string &axis : axes)
        clash = clash || taken[channel].count(axis);
      if (!clash)
        break;
    }
    taken[channel].insert(axes.begin(), axes.end());
    channels[stream] = channel;
  }
  return channels;
}

} // namespace braid::rt
