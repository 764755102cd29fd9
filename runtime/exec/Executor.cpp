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
#include <map>
#include <mutex>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

namespace braid::rt {

namespace {
using Clock = std::chrono::steady_clock;

/// Thrown inside a stream that stops because another one failed.
struct Aborted {};

/// dst[b][a] = src[a][b] for blocks of `chunk` bytes, a < rows, b < columns.
void transposeBlocks(const void *src, void *dst, const BlockTranspose &t) {
  auto *from = static_cast<const char *>(src);
  auto *to = static_cast<char *>(dst);
  for (int64_t a = 0; a < t.rows; ++a)
    for (int64_t b = 0; b < t.columns; ++b)
      std::memcpy(to + (b * t.rows + a) * t.chunk,
                  from + (a * t.columns + b) * t.chunk, t.chunk);
}
} // namespace

struct Executor::State {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> recorded;
  /// Per optional group of the plan: 0 not reached yet in this run, 1 runs,
  /// 2 skipped. Only the group's own stream reads and writes its entry.
  std::vector<uint8_t> groupDecisions;
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

  writeInitialData(plan, mesh, rank, weights,
                   [this](const BufferInfo &buffer,
                          const std::function<void(void *)> &fill) {
                     fill(arena_ + buffer.offset);
                   },
                   options_.checkpoint);

  // Every step's tensors and rank-dependent indices are fixed: compute them
  // once.
  steps_ = resolvePlanSteps(plan, mesh, rank,
                            [this](uint32_t id) { return buffer(id); },
                            profile_);
  if (options_.prepareKernels && !proto.has_training())
    prepareKernels();
  state_->scratch.resize(steps_.size());
  std::vector<size_t> channels = collectiveChannels(steps_, mesh);
  for (size_t channel : channels)
    while (duplicates_.size() < channel)
      duplicates_.push_back(comm.duplicate());
  for (size_t channel : channels)
    streamComm_.push_back(channel == 0 ? &comm_
                                       : duplicates_[channel - 1].get());
}

Executor::~Executor() {
  if (arena_)
    ::munmap(arena_, arenaMapped_);
}

void Executor::prepareKernels() {
  struct Range {
    uint64_t begin, end;
    bool overlaps(const Range &other) const {
      return begin < other.end && other.begin < end;
    }
  };
  auto rangeOf = [this](const TensorView &view) {
    uint64_t begin = static_cast<uint8_t *>(view.data) - arena_;
    return Range{begin, begin + view.numBytes()};
  };
  auto bufferRange = [this](uint32_t id) {
    const BufferInfo &info = plan_.buffers.at(id);
    return Range{info.offset, info.offset + info.bytes};
  };
  // Bytes set at load (weights, constants) and bytes the plan writes (every
  // instruction's outputs, the input bindings).
  const plan::Plan &proto = plan_.proto;
  std::vector<Range> filled, written;
  for (const plan::Weight &weight : proto.weights())
    filled.push_back(bufferRange(weight.buffer()));
  for (const plan::Constant &constant : proto.constants())
    filled.push_back(bufferRange(constant.buffer()));
  for (const plan::Binding &binding : proto.inputs())
    written.push_back(bufferRange(binding.buffer()));
  for (const std::vector<PlanStep> &stream : steps_)
    for (const PlanStep &step : stream) {
      if (step.kind == StepKind::Kernel)
        for (const TensorView &out : step.args.outputs)
          written.push_back(rangeOf(out));
      else if (step.kind == StepKind::Collective)
        written.push_back(rangeOf(step.out));
    }
  auto isConstant = [&](const TensorView &view) {
    if (!view.data || view.numBytes() == 0)
      return false;
    Range range = rangeOf(view);
    bool inside = std::any_of(filled.begin(), filled.end(), [&](Range f) {
      return f.begin <= range.begin && range.end <= f.end;
    });
    return inside && std::none_of(written.begin(), written.end(),
                                  [&](Range w) { return w.overlaps(range); });
  };

  // Every read of the arena: by which kernel's input (null: a collective or
  // an output binding, which read the arena itself).
  struct Read {
    Range range;
    PlanStep *step;
    size_t input;
  };
  std::vector<Read> reads;
  for (const plan::Binding &binding : proto.outputs())
    reads.push_back({bufferRange(binding.buffer()), nullptr, 0});
  for (std::vector<PlanStep> &stream : steps_)
    for (PlanStep &step : stream) {
      if (step.kind == StepKind::Collective)
        reads.push_back({rangeOf(step.in), nullptr, 0});
      if (step.kind != StepKind::Kernel)
        continue;
      for (size_t i = 0; i < step.args.inputs.size(); ++i)
        if (step.args.inputs[i].data)
          reads.push_back({rangeOf(step.args.inputs[i]), &step, i});
    }

  std::map<std::string, std::shared_ptr<void>> shared;
  std::map<const PlanStep *, std::vector<bool>> copied;
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  auto release = [this, page](const void *data, uint64_t bytes) {
    uint64_t from = static_cast<const uint8_t *>(data) - arena_;
    uint64_t begin = (from + page - 1) / page * page;
    uint64_t end = (from + bytes) / page * page;
    if (end > begin)
      ::madvise(arena_ + begin, end - begin, MADV_DONTNEED);
  };
  // `sole`: the input of this instruction that is its weight's only read.
  auto prepare = [&](PlanStep &step, int sole) {
    if (copied.count(&step))
      return;
    PrepareInputs inputs;
    for (size_t i = 0; i < step.args.inputs.size(); ++i) {
      inputs.constant.push_back(isConstant(step.args.inputs[i]));
      inputs.soleReader.push_back(inputs.constant[i] &&
                                  static_cast<int>(i) == sole);
    }
    inputs.shared = &shared;
    inputs.release = release;
    PreparedKernel prepared = step.kernel->prepare(step.args, inputs);
    std::vector<bool> &flags = copied[&step];
    flags.assign(step.args.inputs.size(), false);
    if (!prepared.state)
      return;
    step.args.prepared = prepared.state.get();
    prepared_.push_back(prepared.state);
    for (size_t i = 0; i < prepared.copied.size() && i < flags.size(); ++i)
      flags[i] = prepared.copied[i];
  };

  // Weight by weight: prepare the kernels that read it, and when each of
  // them keeps its own copy and nothing else reads it, give its whole pages
  // back at once, so the arena's copy and the prepared one are both
  // resident for one weight at a time.
  for (Range weight : filled) {
    std::vector<const Read *> readers;
    for (const Read &read : reads)
      if (read.range.overlaps(weight))
        readers.push_back(&read);
    bool preparable = !readers.empty();
    for (const Read *read : readers)
      preparable = preparable && read->step && read->step->kernel->prepare &&
                   isConstant(read->step->args.inputs[read->input]);
    if (!preparable)
      continue;
    bool allCopied = true;
    for (const Read *read : readers) {
      prepare(*read->step,
              readers.size() == 1 ? static_cast<int>(read->input) : -1);
      allCopied = allCopied && copied[read->step][read->input];
    }
    if (allCopied)
      release(arena_ + weight.begin, weight.end - weight.begin);
  }
  // Nothing else is prepared: a copy of a weight that stays in the arena
  // would only add memory.
}

TensorView Executor::buffer(uint32_t id) const {
  return arenaView(plan_, arena_, id);
}

TensorView Executor::input(const std::string &name) const {
  return buffer(bindingBuffer(plan_, name, /*input=*/true));
}

TensorView Executor::output(const std::string &name) const {
  return buffer(bindingBuffer(plan_, name, /*input=*/false));
}

void Executor::run() {
  State &state = *state_;
  state.recorded.assign(plan_.proto.num_events(), 0);
  state.groupDecisions.assign(plan_.proto.optional_groups_size(), 0);
  profile_.groupsRun.assign(state.groupDecisions.size(), true);
  state.failed = false;
  state.firstError.clear();
  for (StreamTiming &stream : profile_.streams)
    for (InstructionTiming &timing : stream.instructions)
      timing.startNs = timing.endNs = -1;

  state.start = Clock::now();
  // The first stream runs on the calling thread: no hand-off for a plan of
  // one stream, and the kernels' OpenMP pool, which belongs to the thread
  // that starts it, lives from run to run instead of being made anew.
  std::vector<std::thread> workers;
  workers.reserve(steps_.size());
  try {
    for (size_t s = 1; s < steps_.size(); ++s)
      workers.emplace_back([this, s] { runStream(s); });
  } catch (const std::system_error &error) {
    reportFailure(0, 0,
                  std::string("cannot start a stream thread: ") + error.what());
  }
  if (!steps_.empty())
    runStream(0);
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
    const PlanStep &step = steps_[stream][i];
    timings[i].startNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             Clock::now() - state.start)
                             .count();
    try {
      if (step.optionalGroup >= 0 && skipsGroup(step.optionalGroup) &&
          step.kind == StepKind::Kernel) {
        // A skipped group's kernel: zeros where the plan reads its results
        // later, nothing otherwise (not in the trace either).
        if (!step.zeroWhenSkipped) {
          timings[i].startNs = -1;
          continue;
        }
        for (const TensorView &out : step.args.outputs)
          std::memset(out.data, 0, out.numBytes());
      } else {
        execute(stream, step);
      }
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

bool Executor::skipsGroup(int32_t group) {
  State &state = *state_;
  uint8_t &decision = state.groupDecisions[group];
  if (decision == 0) {
    bool skip = false;
    switch (options_.optionalPolicy) {
    case OptionalPolicy::All:
      break;
    case OptionalPolicy::None:
      skip = true;
      break;
    case OptionalPolicy::Dynamic: {
      std::lock_guard<std::mutex> lock(state.mutex);
      skip = true;
      for (uint32_t event : plan_.proto.optional_groups(group).until_events())
        skip = skip && state.recorded[event] > 0;
      break;
    }
    }
    decision = skip ? 2 : 1;
    profile_.groupsRun[group] = !skip;
  }
  return decision == 2;
}

void Executor::reportFailure(size_t stream, size_t index,
                             const std::string &what) {
  State &state = *state_;
  std::string where = describeStep(comm_.rank(), profile_, steps_, stream, index);
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.failed) {
      state.firstError = where + ": " + what;
      state.failed = true;
    }
  }
  state.changed.notify_all();
}

void Executor::execute(size_t stream, const PlanStep &step) {
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

void Executor::runCollective(size_t stream, const PlanStep &step) {
  // Host memory: scratch grows as needed and is kept across runs.
  struct HostOps {
    std::array<std::vector<uint8_t>, 3> &buffers;
    void *scratch(int which, uint64_t bytes) {
      buffers[which].resize(bytes);
      return buffers[which].data();
    }
    void copy(void *dst, const void *src, uint64_t bytes) {
      std::memcpy(dst, src, bytes);
    }
    void transpose(const void *src, void *dst, const BlockTranspose &t) {
      transposeBlocks(src, dst, t);
    }
  } ops{state_->scratch[stream]};
  runCollectiveStep(step, *streamComm_[stream], ops);
}

} // namespace braid::rt
