//===- PlanLoader.cpp - reading and validating .bplan files ---------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoader.h"

#include "runtime/core/Shape.h"
#include "runtime/exec/KernelRegistry.h"
#include "runtime/weights/Safetensors.h"
#include "runtime/weights/WeightSharding.h"

#include <algorithm>
#include <climits>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

namespace braid::rt {

namespace {

[[noreturn]] void fail(const std::string &field, const std::string &problem) {
  throw PlanError(field + ": " + problem);
}

std::string quoted(const std::string &text) { return "'" + text + "'"; }

std::string describe(const BufferInfo &buffer) {
  return "buffer " + std::to_string(buffer.id) + " (" +
         std::string(toString(buffer.dtype)) + " " +
         shapeToString(buffer.shape) + ")";
}

/// Checks one plan; holds what later checks need.
class Validator {
public:
  Validator(LoadedPlan &result, const LoadOptions &options)
      : result_(result), plan_(result.proto), options_(options) {}

  void run() {
    if (!options_.kernels)
      throw PlanError("no kernel registry given to the plan loader");
    if (plan_.format_version() != kFormatVersion)
      fail("format_version", std::to_string(plan_.format_version()) +
                                 " is not the supported version " +
                                 std::to_string(kFormatVersion));
    checkMesh();
    checkBuffers();
    checkConstants();
    checkWeights();
    checkBindings();
    checkTraining();
    checkFilledOverlaps();
    if (plan_.num_events() > kMaxEvents)
      fail("num_events", std::to_string(plan_.num_events()) +
                             " is more than the supported " +
                             std::to_string(kMaxEvents));
    checkStreams();
    checkEvents();
    checkOptionalGroups();
  }

private:
  void checkMesh() {
    const plan::Mesh &mesh = plan_.mesh();
    if (mesh.axis_names_size() == 0)
      fail("mesh", "has no axes (a one-rank plan has an axis of size 1)");
    if (mesh.axis_names_size() != mesh.axis_sizes_size())
      fail("mesh", std::to_string(mesh.axis_names_size()) + " axis names but " +
                       std::to_string(mesh.axis_sizes_size()) + " sizes");
    int64_t ranks = 1;
    std::set<std::string> names;
    for (int i = 0; i < mesh.axis_names_size(); ++i) {
      const std::string &name = mesh.axis_names(i);
      int64_t size = mesh.axis_sizes(i);
      std::string field = "mesh.axis_names[" + std::to_string(i) + "]";
      if (name.empty())
        fail(field, "is empty");
      if (!names.insert(name).second)
        fail(field, quoted(name) + " appears twice");
      if (size <= 0)
        fail("mesh.axis_sizes[" + std::to_string(i) + "]",
             std::to_string(size) + " for axis " + quoted(name) +
                 " is not positive");
      if (__builtin_mul_overflow(ranks, size, &ranks) || ranks > (1 << 30))
        fail("mesh.axis_sizes", "more than 2^30 ranks");
    }
    result_.mesh.axisNames.assign(mesh.axis_names().begin(),
                                  mesh.axis_names().end());
    result_.mesh.axisSizes.assign(mesh.axis_sizes().begin(),
                                  mesh.axis_sizes().end());
    if (options_.worldSize != 0 && options_.worldSize != ranks)
      fail("mesh", "the plan needs " + std::to_string(ranks) +
                       " ranks but this run has " +
                       std::to_string(options_.worldSize));
  }

  void checkBuffers() {
    size_t count = plan_.buffers_size();
    result_.buffers.assign(count, BufferInfo());
    std::vector<bool> seen(count, false);
    for (size_t i = 0; i < count; ++i) {
      const plan::Buffer &buffer = plan_.buffers(i);
      std::string field = "buffers[" + std::to_string(i) + "]";
      if (buffer.id() >= count)
        fail(field + ".id",
             std::to_string(buffer.id()) + " is not below the buffer count " +
                 std::to_string(count) + " (ids must be exactly 0..n-1)");
      if (seen[buffer.id()])
        fail(field + ".id", std::to_string(buffer.id()) + " appears twice");
      seen[buffer.id()] = true;
      std::optional<DType> dtype = fromPlanDType(buffer.dtype());
      if (!dtype)
        fail(field + ".dtype",
             std::to_string(buffer.dtype()) + " is not a known element type");
      for (int d = 0; d < buffer.shape_size(); ++d)
        if (buffer.shape(d) < 0)
          fail(field + ".shape[" + std::to_string(d) + "]",
               std::to_string(buffer.shape(d)) + " is negative");
      Shape shape(buffer.shape().begin(), buffer.shape().end());
      std::optional<uint64_t> checked =
          checkedByteSize(shape, byteSize(*dtype));
      if (!checked)
        fail(field + ".shape", shapeToString(shape) + " of " +
                                   std::string(toString(*dtype)) +
                                   ": its non-zero sizes hold 2^63 bytes or "
                                   "more");
      uint64_t bytes = *checked;
      uint64_t arena = plan_.arena_bytes();
      if (buffer.offset() > arena || bytes > arena - buffer.offset())
        fail(field + ".offset",
             std::to_string(buffer.offset()) + " + " + std::to_string(bytes) +
                 " bytes runs past arena_bytes " + std::to_string(arena));
      if (buffer.offset() % byteSize(*dtype) != 0)
        fail(field + ".offset",
             std::to_string(buffer.offset()) + " is not aligned to the " +
                 std::to_string(byteSize(*dtype)) + "-byte elements");
      BufferInfo &info = result_.buffers[buffer.id()];
      info.id = buffer.id();
      info.offset = buffer.offset();
      info.bytes = bytes;
      info.dtype = *dtype;
      info.shape = std::move(shape);
    }
  }

  const BufferInfo &bufferRef(const std::string &field, uint32_t id) const {
    if (id >= result_.buffers.size())
      fail(field, "buffer " + std::to_string(id) +
                      " does not exist (the plan has " +
                      std::to_string(result_.buffers.size()) + ")");
    return result_.buffers[id];
  }

  /// Records that `what` fills buffer `id` before the run; a buffer is filled
  /// once.
  void fill(const std::string &field, uint32_t id, const std::string &what) {
    auto [it, inserted] = filledBy_.emplace(id, what);
    if (!inserted)
      fail(field, "buffer " + std::to_string(id) + " is filled by both " +
                      it->second + " and " + what);
  }

  /// Filled buffers must not share bytes: filling one would clobber another.
  void checkFilledOverlaps() const {
    std::vector<const BufferInfo *> filled;
    for (const auto &entry : filledBy_)
      if (result_.buffers[entry.first].bytes > 0)
        filled.push_back(&result_.buffers[entry.first]);
    std::sort(filled.begin(), filled.end(),
              [](auto *a, auto *b) { return a->offset < b->offset; });
    const BufferInfo *furthest = nullptr;
    for (const BufferInfo *buffer : filled) {
      if (furthest && buffer->offset < furthest->offset + furthest->bytes)
        fail("buffers", filledBy_.at(buffer->id) + " (buffer " +
                            std::to_string(buffer->id) + ") overlaps " +
                            filledBy_.at(furthest->id) + " (buffer " +
                            std::to_string(furthest->id) + ") in the arena");
      if (!furthest ||
          buffer->offset + buffer->bytes > furthest->offset + furthest->bytes)
        furthest = buffer;
    }
  }

  void checkConstants() {
    for (int i = 0; i < plan_.constants_size(); ++i) {
      const plan::Constant &constant = plan_.constants(i);
      std::string field = "constants[" + std::to_string(i) + "]";
      const BufferInfo &buffer =
          bufferRef(field + ".buffer", constant.buffer());
      if (constant.data().size() != buffer.bytes)
        fail(field + ".data", std::to_string(constant.data().size()) +
                                  " bytes, but " + describe(buffer) +
                                  " needs " + std::to_string(buffer.bytes));
      if (buffer.dtype == DType::I1)
        for (size_t k = 0; k < constant.data().size(); ++k)
          if (static_cast<uint8_t>(constant.data()[k]) > 1)
            fail(field + ".data",
                 "i1 element " + std::to_string(k) + " is " +
                     std::to_string(static_cast<uint8_t>(constant.data()[k])) +
                     ", not 0 or 1");
      fill(field + ".buffer", constant.buffer(),
           "constant " + std::to_string(i));
    }
  }

  /// Checks that the block of `weight` (if any) lies inside its full shape,
  /// which matches the weights file.
  void checkBlock(const std::string &field, const plan::Weight &weight) {
    if (weight.block_offsets_size() == 0 && weight.block_shape_size() == 0)
      return;
    const std::string &name = weight.name();
    int rank = weight.full_shape_size();
    if (weight.block_shape_size() != rank)
      fail(field + ".block_shape",
           "has " + std::to_string(weight.block_shape_size()) +
               " entries for " + quoted(name) + " of rank " +
               std::to_string(rank));
    if (weight.block_offsets_size() != rank)
      fail(field + ".block_offsets",
           "has " + std::to_string(weight.block_offsets_size()) +
               " entries for " + quoted(name) + " of rank " +
               std::to_string(rank));
    for (int d = 0; d < rank; ++d) {
      int64_t offset = weight.block_offsets(d), size = weight.block_shape(d),
              full = weight.full_shape(d);
      if (offset < 0 || offset > full)
        fail(field + ".block_offsets",
             "offset " + std::to_string(offset) + " of dimension " +
                 std::to_string(d) + " lies outside size " +
                 std::to_string(full) + " of " + quoted(name));
      if (size < 0 || size > full - offset)
        fail(field + ".block_shape",
             "size " + std::to_string(size) + " of dimension " +
                 std::to_string(d) + " at offset " + std::to_string(offset) +
                 " runs past size " + std::to_string(full) + " of " +
                 quoted(name));
    }
  }

  /// Checks the weights-file tensor that a FILE weight reads: present, of
  /// the buffer's dtype and the plan's full shape.
  void checkWeightInFile(const std::string &field, const plan::Weight &weight,
                         const BufferInfo &buffer) {
    const std::string &name = weight.name();
    const SafetensorsTensor *tensor = options_.weights->find(name);
    if (!tensor)
      fail(field + ".name", quoted(name) + " is not in the weights file " +
                                quoted(options_.weights->path()));
    if (!tensor->dtype)
      fail(field + ".name", quoted(name) + " has dtype " + tensor->dtypeName +
                                " in the weights file, which Braid buffers "
                                "cannot hold");
    if (*tensor->dtype != buffer.dtype)
      fail(field + ".buffer",
           quoted(name) + " is " + std::string(toString(*tensor->dtype)) +
               " in the weights file but " + describe(buffer) + " is " +
               std::string(toString(buffer.dtype)));
    std::vector<int64_t> fullShape(weight.full_shape().begin(),
                                   weight.full_shape().end());
    if (fullShape != tensor->shape)
      fail(field + ".full_shape", shapeToString(fullShape) +
                                      " differs from the shape " +
                                      shapeToString(tensor->shape) + " of " +
                                      quoted(name) + " in the weights file");
  }

  /// A ZEROS weight has no tensor in the weights file: its full shape must
  /// be a valid tensor shape of the buffer's dtype on its own.
  void checkZerosShape(const std::string &field, const plan::Weight &weight,
                       const BufferInfo &buffer) {
    Shape fullShape(weight.full_shape().begin(), weight.full_shape().end());
    for (size_t d = 0; d < fullShape.size(); ++d)
      if (fullShape[d] < 0)
        fail(field + ".full_shape[" + std::to_string(d) + "]",
             std::to_string(fullShape[d]) + " is negative");
    if (!checkedByteSize(fullShape, byteSize(buffer.dtype)))
      fail(field + ".full_shape",
           shapeToString(fullShape) + " of " +
               std::string(toString(buffer.dtype)) +
               ": its non-zero sizes hold 2^63 bytes or more");
  }

  /// Weights of one name are one tensor: the same full shape, element type,
  /// init and state everywhere. Two blocks of a state weight must not
  /// overlap: each would be updated on its own and they would disagree.
  void checkSameName(const std::string &field, int index) {
    const plan::Weight &weight = plan_.weights(index);
    auto [it, first] = firstOfName_.emplace(weight.name(), index);
    if (first)
      return;
    const plan::Weight &other = plan_.weights(it->second);
    std::string otherField = "weights[" + std::to_string(it->second) + "]";
    std::string name = quoted(weight.name());
    if (!std::equal(weight.full_shape().begin(), weight.full_shape().end(),
                    other.full_shape().begin(), other.full_shape().end()))
      fail(field + ".full_shape", "differs from the full shape of " + name +
                                      " in " + otherField);
    if (result_.buffers[weight.buffer()].dtype !=
        result_.buffers[other.buffer()].dtype)
      fail(field + ".buffer", "has another element type than the buffer of " +
                                  name + " in " + otherField);
    if (weight.init() != other.init())
      fail(field + ".init",
           "differs from the init of " + name + " in " + otherField);
    if (weight.state() != other.state())
      fail(field + ".state", name + " is state here but not in " +
                                 otherField + " (or the other way round)");
    if (!weight.state())
      return;
    for (int j = 0; j < index; ++j) {
      const plan::Weight &earlier = plan_.weights(j);
      if (earlier.name() != weight.name())
        continue;
      ShardRegion a = weightBlock(weight), b = weightBlock(earlier);
      bool overlap = true;
      for (size_t d = 0; d < a.sizes.size(); ++d)
        overlap &= a.offsets[d] < b.offsets[d] + b.sizes[d] &&
                   b.offsets[d] < a.offsets[d] + a.sizes[d];
      if (overlap)
        fail(field, "the state weight " + name + " overlaps its block in "
                    "weights[" + std::to_string(j) +
                        "]; each block of a state weight must be held "
                        "once");
    }
  }

  void checkWeights() {
    for (const plan::Weight &weight : plan_.weights())
      if (weight.init() == plan::FILE && !options_.weights)
        fail("weights", "the plan reads weights from a weights file (the "
                        "first is " +
                            quoted(weight.name()) +
                            ") but no weights file was given");
    for (int i = 0; i < plan_.weights_size(); ++i) {
      const plan::Weight &weight = plan_.weights(i);
      std::string field = "weights[" + std::to_string(i) + "]";
      const std::string &name = weight.name();
      const BufferInfo &buffer = bufferRef(field + ".buffer", weight.buffer());
      if (weight.init() == plan::FILE)
        checkWeightInFile(field, weight, buffer);
      else if (weight.init() == plan::ZEROS)
        checkZerosShape(field, weight, buffer);
      else
        fail(field + ".init", std::to_string(weight.init()) +
                                  " is not a known weight init (FILE or "
                                  "ZEROS)");
      checkBlock(field, weight);
      DimAxes dimAxes;
      for (const plan::DimSharding &dim : weight.sharding())
        dimAxes.emplace_back(dim.axes().begin(), dim.axes().end());
      std::vector<int64_t> shard;
      try {
        shard = shardShape(weightBlock(weight).sizes, dimAxes, result_.mesh);
      } catch (const std::invalid_argument &error) {
        fail(field + ".sharding", quoted(name) + ": " + error.what());
      }
      if (shard != buffer.shape)
        fail(field + ".buffer", "the shard of " + quoted(name) + " is " +
                                    shapeToString(shard) + " but " +
                                    describe(buffer) + " has another shape");
      checkSameName(field, i);
      fill(field + ".buffer", weight.buffer(), "weight " + quoted(name));
    }
  }

  /// The buffer of the input (or output) binding `name`, for `field`.
  const BufferInfo &bindingRef(const std::string &field,
                               const std::string &name, bool input) const {
    const auto &bindings = input ? plan_.inputs() : plan_.outputs();
    for (const plan::Binding &binding : bindings)
      if (binding.name() == name)
        return result_.buffers[binding.buffer()];
    fail(field, quoted(name) + " is not " +
                    (input ? "an input" : "an output") + " of the plan");
  }

  void checkTraining() {
    if (!plan_.has_training())
      return;
    const plan::Training &training = plan_.training();
    if (training.batch() <= 0)
      fail("training.batch",
           std::to_string(training.batch()) + " is not positive");
    if (training.sequence() <= 0)
      fail("training.sequence",
           std::to_string(training.sequence()) + " is not positive");
    if (training.steps() < 0)
      fail("training.steps",
           std::to_string(training.steps()) + " is negative");
    if (!training.algorithm().empty() && training.algorithm() != "cocod-sgd" &&
        training.algorithm() != "acco")
      fail("training.algorithm",
           quoted(training.algorithm()) +
               " is not a training algorithm braid-run knows (cocod-sgd, "
               "acco)");
    // steps 0 (an older plan) is one step per call.
    int64_t steps = std::max<int64_t>(training.steps(), 1);
    std::vector<int64_t> batchShape = {steps * training.batch(),
                                       training.sequence()};
    const char *fields[] = {"training.tokens_input", "training.labels_input"};
    const std::string *names[] = {&training.tokens_input(),
                                  &training.labels_input()};
    for (int k = 0; k < 2; ++k) {
      const BufferInfo &buffer =
          bindingRef(fields[k], *names[k], /*input=*/true);
      if (buffer.dtype != DType::I64 && buffer.dtype != DType::I32)
        fail(fields[k], "input " + quoted(*names[k]) + " is " +
                            describe(buffer) + "; token ids need i64 or i32");
      if (buffer.shape != batchShape)
        fail(fields[k], "input " + quoted(*names[k]) + " is " +
                            describe(buffer) + ", not [" +
                            (steps > 1 ? "steps * batch" : "batch") +
                            ", sequence] = " + shapeToString(batchShape));
    }
    if (training.tokens_input() == training.labels_input())
      fail("training.labels_input",
           quoted(training.labels_input()) +
               " is also the tokens input; labels need their own input");
    const BufferInfo &loss = bindingRef(
        "training.loss_output", training.loss_output(), /*input=*/false);
    std::vector<int64_t> lossShape;
    if (steps > 1)
      lossShape.push_back(steps);
    if (loss.dtype != DType::F32 || loss.shape != lossShape)
      fail("training.loss_output",
           "output " + quoted(training.loss_output()) + " is " +
               describe(loss) +
               (steps > 1 ? "; the loss must be f32 [steps] = " +
                                shapeToString(lossShape)
                          : std::string("; the loss must be a scalar f32")));
    if (!training.ran_output().empty()) {
      const BufferInfo &ran = bindingRef(
          "training.ran_output", training.ran_output(), /*input=*/false);
      if (ran.dtype != DType::F32 || ran.shape != lossShape)
        fail("training.ran_output",
             "output " + quoted(training.ran_output()) + " is " +
                 describe(ran) + "; it counts the ranks that ran each step, " +
                 "f32 " + shapeToString(lossShape) + " like the loss");
    }
  }

  void checkBindings() {
    const char *lists[] = {"inputs", "outputs"};
    for (int list = 0; list < 2; ++list) {
      const auto &bindings = list == 0 ? plan_.inputs() : plan_.outputs();
      std::set<std::string> names;
      for (int i = 0; i < bindings.size(); ++i) {
        const plan::Binding &binding = bindings[i];
        std::string field =
            std::string(lists[list]) + "[" + std::to_string(i) + "]";
        if (binding.name().empty())
          fail(field + ".name", "is empty");
        if (!names.insert(binding.name()).second)
          fail(field + ".name", quoted(binding.name()) + " appears twice");
        bufferRef(field + ".buffer", binding.buffer());
        if (list == 0)
          fill(field + ".buffer", binding.buffer(),
               "input " + quoted(binding.name()));
      }
    }
  }

  /// "streams[1] ('comm').instructions[4] (all_reduce at loc(...))"
  std::string position(int s, int i) const {
    const plan::Stream &stream = plan_.streams(s);
    const plan::Instruction &instruction = stream.instructions(i);
    std::string what;
    switch (instruction.kind_case()) {
    case plan::Instruction::kKernel:
      what = instruction.kernel().op();
      break;
    case plan::Instruction::kCollective:
      what = instruction.collective().kind();
      break;
    case plan::Instruction::kRecordEvent:
      what = "record_event";
      break;
    case plan::Instruction::kWaitEvent:
      what = "wait_event";
      break;
    case plan::Instruction::KIND_NOT_SET:
      what = "no kind";
      break;
    }
    if (!instruction.location().empty())
      what += " at " + instruction.location();
    return "streams[" + std::to_string(s) + "] (" + quoted(stream.name()) +
           ").instructions[" + std::to_string(i) + "] (" + what + ")";
  }

  void checkStreams() {
    std::set<std::string> names;
    result_.kernels.resize(plan_.streams_size());
    for (int s = 0; s < plan_.streams_size(); ++s) {
      const plan::Stream &stream = plan_.streams(s);
      std::string field = "streams[" + std::to_string(s) + "]";
      if (stream.name().empty())
        fail(field + ".name", "is empty");
      if (!names.insert(stream.name()).second)
        fail(field + ".name", quoted(stream.name()) + " appears twice");
      result_.kernels[s].assign(stream.instructions_size(), nullptr);
      for (int i = 0; i < stream.instructions_size(); ++i) {
        const plan::Instruction &instruction = stream.instructions(i);
        std::string where = position(s, i);
        switch (instruction.kind_case()) {
        case plan::Instruction::kKernel:
          result_.kernels[s][i] = checkKernel(where, instruction.kernel());
          break;
        case plan::Instruction::kCollective:
          checkCollective(where, instruction.collective());
          break;
        case plan::Instruction::kRecordEvent:
          checkEvent(where, instruction.record_event());
          ++records_[instruction.record_event()];
          break;
        case plan::Instruction::kWaitEvent:
          checkEvent(where, instruction.wait_event());
          break;
        case plan::Instruction::KIND_NOT_SET:
          fail(where, "the instruction has no kind (kernel, collective, "
                      "record_event or wait_event)");
        }
      }
    }
  }

  const KernelInfo *checkKernel(const std::string &where,
                                const plan::Kernel &kernel) {
    const KernelInfo *info = options_.kernels->lookup(kernel.op());
    if (!info)
      fail(where, "unknown kernel op " + quoted(kernel.op()));
    KernelArgs args;
    args.kernel = &kernel;
    for (int k = 0; k < 2; ++k) {
      const auto &ids = k == 0 ? kernel.inputs() : kernel.outputs();
      auto &views = k == 0 ? args.inputs : args.outputs;
      for (int j = 0; j < ids.size(); ++j) {
        const BufferInfo &buffer =
            bufferRef(where + (k == 0 ? ".inputs[" : ".outputs[") +
                          std::to_string(j) + "]",
                      ids[j]);
        TensorView view;
        view.dtype = buffer.dtype;
        view.shape = buffer.shape;
        views.push_back(std::move(view));
      }
    }
    for (int j = 0; j < kernel.indices_size(); ++j)
      checkIndex(where + ".indices[" + std::to_string(j) + "]",
                 kernel.indices(j));
    args.numIndices = kernel.indices_size();
    try {
      options_.kernels->verify(*info, args);
    } catch (const PlanError &error) {
      fail(where, error.what());
    }
    return info;
  }

  int64_t axisSize(const std::string &field, const std::string &axis) const {
    for (size_t a = 0; a < result_.mesh.axisNames.size(); ++a)
      if (result_.mesh.axisNames[a] == axis)
        return result_.mesh.axisSizes[a];
    fail(field, "axis " + quoted(axis) + " is not in the mesh");
  }

  void checkIndex(const std::string &field, const plan::IndexExpr &index) {
    if (index.rank_axes_size() != index.rank_coefficients_size())
      fail(field, std::to_string(index.rank_axes_size()) + " rank_axes but " +
                      std::to_string(index.rank_coefficients_size()) +
                      " rank_coefficients");
    // The value must fit in int64 for every rank.
    __int128 bound = index.constant() < 0 ? -(__int128)index.constant()
                                          : (__int128)index.constant();
    for (int a = 0; a < index.rank_axes_size(); ++a) {
      int64_t size = axisSize(field + ".rank_axes[" + std::to_string(a) + "]",
                              index.rank_axes(a));
      __int128 coefficient = index.rank_coefficients(a);
      bound += (coefficient < 0 ? -coefficient : coefficient) * (size - 1);
      if (bound > INT64_MAX)
        fail(field, "overflows a 64-bit integer");
    }
  }

  void checkCollective(const std::string &where,
                       const plan::Collective &collective) {
    static const std::set<std::string> kinds = {
        "all_reduce", "all_gather",         "reduce_scatter",
        "all_to_all", "collective_permute", "broadcast"};
    const std::string &kind = collective.kind();
    if (!kinds.count(kind))
      fail(where, "unknown collective kind " + quoted(kind));
    int64_t group = 1;
    std::set<std::string> axes;
    for (int a = 0; a < collective.axes_size(); ++a) {
      std::string field = where + ".axes[" + std::to_string(a) + "]";
      group *= axisSize(field, collective.axes(a));
      if (!axes.insert(collective.axes(a)).second)
        fail(field, "axis " + quoted(collective.axes(a)) + " appears twice");
    }
    const BufferInfo &in = bufferRef(where + ".input", collective.input());
    const BufferInfo &out = bufferRef(where + ".output", collective.output());
    if (in.dtype != out.dtype)
      fail(where, "input " + describe(in) + " and output " + describe(out) +
                      " have different element types");
    if (kind == "all_reduce" || kind == "reduce_scatter") {
      static const std::set<std::string> reductions = {"sum", "max", "min",
                                                       "avg"};
      if (!reductions.count(collective.reduction()))
        fail(where + ".reduction", quoted(collective.reduction()) +
                                       " is not one of sum, max, min, avg");
    }
    int64_t rank = static_cast<int64_t>(in.shape.size());
    auto dimField = [&](const char *name, int64_t dim) {
      if (dim < 0 || dim >= rank)
        fail(where + "." + name, std::to_string(dim) +
                                     " is out of range for the input " +
                                     describe(in));
    };
    std::vector<int64_t> expected = in.shape;
    auto divide = [&](const char *name, int64_t dim) {
      if (expected[dim] % group != 0)
        fail(where + "." + name, "dimension " + std::to_string(dim) +
                                     " of the input " + describe(in) +
                                     " does not split into " +
                                     std::to_string(group) + " equal parts");
      expected[dim] /= group;
    };
    if (kind == "all_gather") {
      dimField("dim", collective.dim());
      expected[collective.dim()] *= group;
    } else if (kind == "reduce_scatter") {
      dimField("dim", collective.dim());
      divide("dim", collective.dim());
    } else if (kind == "all_to_all") {
      dimField("split_dim", collective.split_dim());
      dimField("concat_dim", collective.concat_dim());
      divide("split_dim", collective.split_dim());
      expected[collective.concat_dim()] *= group;
    } else if (kind == "broadcast") {
      if (collective.root() < 0 || collective.root() >= group)
        fail(where + ".root", std::to_string(collective.root()) +
                                  " is outside a group of " +
                                  std::to_string(group));
    }
    if (out.shape != expected)
      fail(where + ".output", describe(out) + " should have shape " +
                                  shapeToString(expected) + " for " + kind +
                                  " of " + describe(in) + " over a group of " +
                                  std::to_string(group));
  }

  void checkEvent(const std::string &where, uint32_t event) {
    if (event >= plan_.num_events())
      fail(where, "event " + std::to_string(event) +
                      " is not below num_events " +
                      std::to_string(plan_.num_events()));
  }

  void checkEvents() {
    for (const auto &[event, count] : records_)
      if (count > 1)
        fail("streams", "event " + std::to_string(event) + " is recorded " +
                            std::to_string(count) +
                            " times; an event is recorded once per run");
    // Run the streams abstractly: a wait passes once its event is recorded.
    // Waits that never pass are a deadlock (or an event nobody records).
    int streams = plan_.streams_size();
    std::vector<int> next(streams, 0);
    std::vector<bool> recorded(plan_.num_events(), false);
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < streams; ++s) {
        const plan::Stream &stream = plan_.streams(s);
        while (next[s] < stream.instructions_size()) {
          const plan::Instruction &instruction = stream.instructions(next[s]);
          if (instruction.has_wait_event() &&
              !recorded[instruction.wait_event()])
            break;
          if (instruction.has_record_event())
            recorded[instruction.record_event()] = true;
          ++next[s];
          progress = true;
        }
      }
    }
    for (int s = 0; s < streams; ++s)
      if (next[s] < plan_.streams(s).instructions_size()) {
        uint32_t event = plan_.streams(s).instructions(next[s]).wait_event();
        fail(position(s, next[s]),
             records_.count(event)
                 ? "waits on event " + std::to_string(event) +
                       ", which can only be recorded after this wait "
                       "(the streams deadlock)"
                 : "waits on event " + std::to_string(event) +
                       ", which no instruction records");
      }
  }

  /// Every optional group lies on one stream, holds no collective and is
  /// skipped only on events that some instruction records;
  /// zero_when_skipped marks kernels of groups only.
  void checkOptionalGroups() {
    size_t groups = plan_.optional_groups_size();
    std::vector<int> streamOf(groups, -1);
    for (int s = 0; s < plan_.streams_size(); ++s) {
      const plan::Stream &stream = plan_.streams(s);
      for (int i = 0; i < stream.instructions_size(); ++i) {
        const plan::Instruction &instruction = stream.instructions(i);
        uint32_t group = instruction.optional_group();
        if (group == 0) {
          if (instruction.zero_when_skipped())
            fail(position(s, i), "is zero_when_skipped but in no optional "
                                 "group");
          continue;
        }
        if (group > groups)
          fail(position(s, i), "optional_group " + std::to_string(group) +
                                   " is not one of the plan's " +
                                   std::to_string(groups) +
                                   " optional groups (1-based)");
        if (instruction.has_collective())
          fail(position(s, i), "a collective cannot be in an optional group "
                               "(every rank must issue it)");
        if (instruction.zero_when_skipped() && !instruction.has_kernel())
          fail(position(s, i), "zero_when_skipped marks kernels only");
        int &owner = streamOf[group - 1];
        if (owner >= 0 && owner != s)
          fail(position(s, i), "optional group " + std::to_string(group) +
                                   " is also on " +
                                   quoted(plan_.streams(owner).name()) +
                                   "; a group lies on one stream");
        owner = s;
      }
    }
    for (size_t g = 0; g < groups; ++g) {
      std::string field = "optional_groups[" + std::to_string(g) + "]";
      const plan::OptionalGroup &group = plan_.optional_groups(g);
      if (streamOf[g] < 0)
        fail(field, "has no instruction");
      if (group.until_events_size() == 0)
        fail(field + ".until_events", "is empty (the group would always be "
                                      "skipped)");
      for (int e = 0; e < group.until_events_size(); ++e) {
        std::string where =
            field + ".until_events[" + std::to_string(e) + "]";
        checkEvent(where, group.until_events(e));
        if (!records_.count(group.until_events(e)))
          fail(where, "event " + std::to_string(group.until_events(e)) +
                          " is recorded by no instruction");
      }
    }
  }

  LoadedPlan &result_;
  const plan::Plan &plan_;
  const LoadOptions &options_;
  std::map<uint32_t, std::string> filledBy_;
  std::map<uint32_t, int> records_;
  /// The index of the first weight of each name.
  std::map<std::string, int> firstOfName_;
};

} // namespace

std::optional<DType> fromPlanDType(int value) {
  switch (value) {
  case plan::F32:
    return DType::F32;
  case plan::F16:
    return DType::F16;
  case plan::BF16:
    return DType::BF16;
  case plan::I64:
    return DType::I64;
  case plan::I32:
    return DType::I32;
  case plan::I1:
    return DType::I1;
  default:
    return std::nullopt;
  }
}

plan::DType toPlanDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return plan::F32;
  case DType::F16:
    return plan::F16;
  case DType::BF16:
    return plan::BF16;
  case DType::I64:
    return plan::I64;
  case DType::I32:
    return plan::I32;
  case DType::I1:
    return plan::I1;
  }
  return plan::F32;
}

ShardRegion weightBlock(const plan::Weight &weight) {
  if (weight.block_shape_size() == 0)
    return wholeTensor(std::vector<int64_t>(weight.full_shape().begin(),
                                            weight.full_shape().end()));
  return ShardRegion{std::vector<int64_t>(weight.block_offsets().begin(),
                                          weight.block_offsets().end()),
                     std::vector<int64_t>(weight.block_shape().begin(),
                                          weight.block_shape().end())};
}

LoadedPlan validatePlan(plan::Plan proto, const LoadOptions &options) {
  LoadedPlan result;
  result.proto = std::move(proto);
  Validator(result, options).run();
  return result;
}

LoadedPlan parsePlan(const void *data, size_t size,
                     const LoadOptions &options) {
  if (size > static_cast<size_t>(INT_MAX))
    throw PlanError("the plan is " + std::to_string(size) +
                    " bytes; protobuf reads at most 2 GiB (keep weights in "
                    "the weights file)");
  plan::Plan proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size)))
    throw PlanError("the plan is not a valid binary Plan message (" +
                    std::to_string(size) +
                    " bytes; truncated or not a .bplan)");
  return validatePlan(std::move(proto), options);
}

LoadedPlan loadPlanFile(const std::string &path, const LoadOptions &options) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw PlanError("cannot open plan file '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(file)),
                    std::istreambuf_iterator<char>());
  if (file.bad())
    throw PlanError("cannot read plan file '" + path + "'");
  try {
    return parsePlan(bytes.data(), bytes.size(), options);
  } catch (const PlanError &error) {
    throw PlanError("plan file '" + path + "': " + error.what());
  }
}

} // namespace braid::rt
