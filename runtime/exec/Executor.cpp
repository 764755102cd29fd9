//===- Executor.cpp - runs a validated plan on one rank -------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Executor.h"

#include "runtime/weights/Safetensors.h"
#include "runtime/weights/WeightSharding.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

namespace braid::rt {

namespace {
using Clock = std::chrono::steady_clock;

/// Thrown inside a stream that stops because another one failed.
struct Aborted {};

enum class StepKind { Kernel, Collective, Record, Wait };
enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Permute,
  Broadcast
};

CollectiveKind collectiveKind(const std::string &kind) {
  if (kind == "all_reduce")
    return CollectiveKind::AllReduce;
  if (kind == "all_gather")
    return CollectiveKind::AllGather;
  if (kind == "reduce_scatter")
    return CollectiveKind::ReduceScatter;
  if (kind == "all_to_all")
    return CollectiveKind::AllToAll;
  if (kind == "collective_permute")
    return CollectiveKind::Permute;
  return CollectiveKind::Broadcast;
}

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

/// dst[b][a] = src[a][b] for blocks of `chunk` bytes, a < rows, b < columns.
void transposeBlocks(const void *src, void *dst, int64_t rows, int64_t columns,
                     size_t chunk) {
  auto *from = static_cast<const char *>(src);
  auto *to = static_cast<char *>(dst);
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t b = 0; b < columns; ++b)
      std::memcpy(to + (b * rows + a) * chunk, from + (a * columns + b) * chunk,
                  chunk);
}
} // namespace

struct Executor::Step {
  StepKind kind = StepKind::Kernel;
  /// The op, for errors and traces.
  std::string name;
  const std::string *location = nullptr;
  // Kernel.
  const KernelInfo *kernel = nullptr;
  KernelArgs args;
  // Collective.
  CollectiveKind collective = CollectiveKind::AllReduce;
  std::vector<std::string> axes;
  TensorView in, out;
  int64_t groupSize = 1;
  ReduceOp reduction = ReduceOp::Sum;
  int64_t dim = 0, splitDim = 0, concatDim = 0, shift = 0, root = 0;
  // Events.
  uint32_t event = 0;
};

struct Executor::State {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> recorded;
  std::atomic<bool> failed{false};
  std::string firstError;
  Clock::time_point start;
  /// Per stream: buffers for collective rearrangements, reused across runs.
  std::vector<std::array<std::vector<uint8_t>, 3>> scratch;
};

Executor::Executor(const LoadedPlan &plan, Communicator &comm,
                   const SafetensorsFile *weights, ExecutorOptions options)
    : plan_(plan), comm_(comm), options_(options),
      state_(std::make_unique<State>()) {
  const MeshShape &mesh = comm.mesh();
  if (mesh.axisNames != plan.mesh.axisNames ||
      mesh.axisSizes != plan.mesh.axisSizes)
    throw PlanError("the communicator's mesh differs from the plan's mesh");
  int64_t rank = comm.rank();
  const plan::Plan &proto = plan.proto;

  // The arena: anonymous pages are zeroed and page-aligned, and an absurd
  // size fails here rather than when first touched.
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  uint64_t bytes = std::max<uint64_t>(proto.arena_bytes(), 1);
  if (bytes > SIZE_MAX - page)
    throw ExecutionError("rank " + std::to_string(rank) + ": arena_bytes " +
                         std::to_string(proto.arena_bytes()) +
                         " cannot be allocated");
  arenaMapped_ = (bytes + page - 1) / page * page;
  void *arena = ::mmap(nullptr, arenaMapped_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (arena == MAP_FAILED) {
    arenaMapped_ = 0;
    throw ExecutionError("rank " + std::to_string(rank) +
                         ": cannot allocate the arena of " +
                         std::to_string(proto.arena_bytes()) + " bytes");
  }
  arena_ = static_cast<uint8_t *>(arena);

  for (const plan::Constant &constant : proto.constants())
    std::memcpy(arena_ + plan.buffers[constant.buffer()].offset,
                constant.data().data(), constant.data().size());

  for (const plan::Weight &weight : proto.weights()) {
    const SafetensorsTensor *tensor =
        weights ? weights->find(weight.name()) : nullptr;
    if (!tensor)
      throw PlanError("weight '" + weight.name() +
                      "' is not in the weights file given to the executor");
    const BufferInfo &buffer = plan.buffers[weight.buffer()];
    DimAxes dimAxes;
    for (const plan::DimSharding &dim : weight.sharding())
      dimAxes.emplace_back(dim.axes().begin(), dim.axes().end());
    ShardRegion region = shardRegion(weightBlock(weight), dimAxes, mesh, rank);
    // The block's offsets are only valid for the full shape it was checked
    // against.
    if (region.sizes != buffer.shape || tensor->dtype != buffer.dtype ||
        !std::equal(tensor->shape.begin(), tensor->shape.end(),
                    weight.full_shape().begin(), weight.full_shape().end()))
      throw PlanError("weight '" + weight.name() +
                      "' in the weights file given to the executor does not "
                      "match the one the plan was validated against");
    copyRegion(weights->data(*tensor), tensor->shape, byteSize(buffer.dtype),
               region, arena_ + buffer.offset);
  }

  // Every step's tensors and rank-dependent indices are fixed: compute them
  // once.
  profile_.rank = rank;
  steps_.resize(proto.streams_size());
  state_->scratch.resize(proto.streams_size());
  profile_.streams.resize(proto.streams_size());
  for (int s = 0; s < proto.streams_size(); ++s) {
    const plan::Stream &stream = proto.streams(s);
    profile_.streams[s].name = stream.name();
    for (int i = 0; i < stream.instructions_size(); ++i) {
      const plan::Instruction &instruction = stream.instructions(i);
      Step step;
      step.location = &instruction.location();
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
        break;
      }
      case plan::Instruction::kCollective: {
        const plan::Collective &collective = instruction.collective();
        step.kind = StepKind::Collective;
        step.name = collective.kind();
        step.collective = collectiveKind(collective.kind());
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
      profile_.streams[s].instructions.push_back(std::move(timing));
      steps_[s].push_back(std::move(step));
    }
  }
}

Executor::~Executor() {
  if (arena_)
    ::munmap(arena_, arenaMapped_);
}

TensorView Executor::buffer(uint32_t id) const {
  const BufferInfo &info = plan_.buffers.at(id);
  TensorView view;
  view.dtype = info.dtype;
  view.shape = info.shape;
  view.data = arena_ + info.offset;
  return view;
}

TensorView Executor::input(const std::string &name) const {
  for (const plan::Binding &binding : plan_.proto.inputs())
    if (binding.name() == name)
      return buffer(binding.buffer());
  throw std::invalid_argument("the plan has no input named '" + name + "'");
}

TensorView Executor::output(const std::string &name) const {
  for (const plan::Binding &binding : plan_.proto.outputs())
    if (binding.name() == name)
      return buffer(binding.buffer());
  throw std::invalid_argument("the plan has no output named '" + name + "'");
}

void Executor::run() {
  State &state = *state_;
  state.recorded.assign(plan_.proto.num_events(), 0);
  state.failed = false;
  state.firstError.clear();
  for (StreamTiming &stream : profile_.streams)
    for (InstructionTiming &timing : stream.instructions)
      timing.startNs = timing.endNs = -1;

  state.start = Clock::now();
  std::vector<std::thread> workers;
  workers.reserve(steps_.size());
  try {
    for (size_t s = 0; s < steps_.size(); ++s)
      workers.emplace_back([this, s] { runStream(s); });
  } catch (const std::system_error &error) {
    reportFailure(0, 0,
                  std::string("cannot start a stream thread: ") + error.what());
  }
  for (std::thread &worker : workers)
    worker.join();
  profile_.totalNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         Clock::now() - state.start)
                         .count();
  if (state.failed)
    throw ExecutionError(state.firstError);
}

void Executor::runStream(size_t stream) {
  State &state = *state_;
  std::vector<InstructionTiming> &timings =
      profile_.streams[stream].instructions;
  for (size_t i = 0; i < steps_[stream].size(); ++i) {
    if (state.failed)
      return;
    const Step &step = steps_[stream][i];
    timings[i].startNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             Clock::now() - state.start)
                             .count();
    try {
      execute(stream, step);
    } catch (const Aborted &) {
      timings[i].startNs = -1;
      return;
    } catch (const std::exception &error) {
      reportFailure(stream, i, error.what());
      return;
    } catch (...) {
      reportFailure(stream, i, "unknown exception");
      return;
    }
    timings[i].endNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           Clock::now() - state.start)
                           .count();
  }
}

void Executor::reportFailure(size_t stream, size_t index,
                             const std::string &what) {
  State &state = *state_;
  std::string where = "rank " + std::to_string(comm_.rank());
  if (stream < steps_.size() && index < steps_[stream].size()) {
    const Step &step = steps_[stream][index];
    where += ", stream '" + profile_.streams[stream].name + "', instruction " +
             std::to_string(index) + " (" + step.name;
    if (!step.location->empty())
      where += " at " + *step.location;
    where += ")";
  }
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.failed) {
      state.firstError = where + ": " + what;
      state.failed = true;
    }
  }
  state.changed.notify_all();
}

void Executor::execute(size_t stream, const Step &step) {
  switch (step.kind) {
  case StepKind::Kernel:
    step.kernel->run(step.args);
    return;
  case StepKind::Collective:
    runCollective(stream, step);
    return;
  case StepKind::Record:
    recordEvent(step.event);
    return;
  case StepKind::Wait:
    waitEvent(step.event);
    return;
  }
}

void Executor::recordEvent(uint32_t event) {
  State &state = *state_;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    ++state.recorded[event];
  }
  state.changed.notify_all();
}

void Executor::waitEvent(uint32_t event) {
  State &state = *state_;
  std::unique_lock<std::mutex> lock(state.mutex);
  bool ready = state.changed.wait_for(lock, options_.eventTimeout, [&] {
    return state.recorded[event] > 0 || state.failed;
  });
  if (state.failed)
    throw Aborted();
  if (!ready)
    throw std::runtime_error(
        "timed out after " +
        std::to_string(
            std::chrono::duration<double>(options_.eventTimeout).count()) +
        " s waiting for event " + std::to_string(event));
}

void Executor::runCollective(size_t stream, const Step &step) {
  const TensorView &in = step.in, &out = step.out;
  int64_t count = in.numElements();
  if (count == 0)
    return;
  size_t element = byteSize(in.dtype);
  int64_t n = step.groupSize;
  auto &scratch = state_->scratch[stream];
  auto scratchBuffer = [&](int which, uint64_t bytes) {
    scratch[which].resize(bytes);
    return scratch[which].data();
  };

  if (step.collective == CollectiveKind::AllReduce) {
    comm_.allReduce(step.axes, in.data, out.data, count, in.dtype,
                    step.reduction);
    return;
  }
  // Communicators other than all-reduce need distinct input and output.
  const void *source = in.data;
  if (in.overlaps(out)) {
    void *copy = scratchBuffer(0, in.numBytes());
    std::memcpy(copy, in.data, in.numBytes());
    source = copy;
  }

  switch (step.collective) {
  case CollectiveKind::AllReduce:
    return;
  case CollectiveKind::AllGather: {
    // Rank-major blocks [member][outer][chunk] become [outer][member][chunk].
    int64_t outer = product(in.shape, 0, step.dim);
    if (outer == 1) {
      comm_.allGather(step.axes, source, out.data, count, in.dtype);
      return;
    }
    void *gathered = scratchBuffer(1, out.numBytes());
    comm_.allGather(step.axes, source, gathered, count, in.dtype);
    transposeBlocks(gathered, out.data, n, outer,
                    static_cast<size_t>(count / outer) * element);
    return;
  }
  case CollectiveKind::ReduceScatter: {
    // [outer][member][chunk] becomes the communicator's [member][outer][chunk].
    int64_t outer = product(in.shape, 0, step.dim);
    int64_t outCount = out.numElements();
    if (outer == 1) {
      comm_.reduceScatter(step.axes, source, out.data, outCount, in.dtype,
                          step.reduction);
      return;
    }
    void *packed = scratchBuffer(1, in.numBytes());
    transposeBlocks(source, packed, outer, n,
                    static_cast<size_t>(outCount / outer) * element);
    comm_.reduceScatter(step.axes, packed, out.data, outCount, in.dtype,
                        step.reduction);
    return;
  }
  case CollectiveKind::AllToAll: {
    // Block j (for member j) is slice j along split_dim; the block from
    // member i becomes slice i along concat_dim.
    std::vector<int64_t> block = in.shape;
    block[step.splitDim] /= n;
    int64_t blockCount = count / n;
    int64_t outerSplit = product(in.shape, 0, step.splitDim);
    const void *packed = source;
    if (outerSplit != 1) {
      void *buffer = scratchBuffer(1, in.numBytes());
      transposeBlocks(source, buffer, outerSplit, n,
                      static_cast<size_t>(blockCount / outerSplit) * element);
      packed = buffer;
    }
    int64_t outerConcat = product(block, 0, step.concatDim);
    if (outerConcat == 1) {
      comm_.allToAll(step.axes, packed, out.data, blockCount, in.dtype);
      return;
    }
    void *received = scratchBuffer(2, in.numBytes());
    comm_.allToAll(step.axes, packed, received, blockCount, in.dtype);
    transposeBlocks(received, out.data, n, outerConcat,
                    static_cast<size_t>(blockCount / outerConcat) * element);
    return;
  }
  case CollectiveKind::Permute:
    comm_.permute(step.axes, source, out.data, count, in.dtype, step.shift);
    return;
  case CollectiveKind::Broadcast:
    comm_.broadcast(step.axes, source, out.data, count, in.dtype, step.root);
    return;
  }
}

} // namespace braid::rt
