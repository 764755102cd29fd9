//===- FuzzTargets.cpp - libFuzzer entry points of the runtime ------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/FuzzTargets.h"

#include "runtime/core/Shape.h"
#include "runtime/exec/PlanSteps.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/weights/Safetensors.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>

namespace braid::rt {
namespace {

/// A guarantee of the loader does not hold: report it as a crash.
[[noreturn]] void broken(const std::string &what) {
  std::fprintf(stderr, "braid fuzz target: %s\n", what.c_str());
  std::abort();
}

/// Everything a backend does with a loaded plan before it runs, for `rank`,
/// on host memory; the plan was validated, so nothing may fail.
void prepareRank(const LoadedPlan &plan, const SafetensorsFile *weights,
                 int64_t rank) {
  try {
    RunProfile profile;
    std::vector<std::vector<PlanStep>> steps = resolvePlanSteps(
        plan, plan.mesh, rank,
        [&plan](uint32_t id) { return bufferLayout(plan, id); }, profile);
    for (const std::vector<PlanStep> &stream : steps)
      for (const PlanStep &step : stream)
        (void)collectiveScratchBytes(step);
    IssueOrder order = issueOrder(steps, plan.proto.num_events());
    if (order.blocked)
      broken("the streams of a validated plan deadlock at " +
             describeStep(rank, profile, steps, order.blocked->first,
                          order.blocked->second));
    std::vector<uint8_t> memory;
    writeInitialData(plan, plan.mesh, rank, weights,
                     [&memory](const BufferInfo &buffer,
                               const std::function<void(void *)> &fill) {
                       // Never empty: fill may pass its target to memcpy.
                       memory.assign(std::max<uint64_t>(buffer.bytes, 1), 0);
                       fill(memory.data());
                     });
  } catch (const PlanError &error) {
    broken(std::string("a validated plan fails before running: ") +
           error.what());
  }
}

/// The weights file fuzzLoadPlan loads `proto` with: "w" f32[4, 4] and
/// "b" f32[4] whatever the plan says (so that mismatches are seen), plus a
/// zero tensor of each other weight's full shape and buffer element type
/// while they stay small (so that real plans get through the weight checks).
/// Most mutations leave the weights alone, so the last files made are kept
/// by what they hold: a real plan's weights take far longer to make than the
/// plan takes to check.
const SafetensorsFile &weightsForPlan(const plan::Plan &proto) {
  std::vector<SafetensorsEntry> entries(2);
  entries[0] = {"w", DType::F32, {4, 4}, {}};
  entries[1] = {"b", DType::F32, {4}, {}};
  std::set<std::string> names = {"w", "b", "__metadata__"};
  uint64_t budget = 1 << 22;
  std::string key;
  for (const plan::Weight &weight : proto.weights()) {
    if (!names.insert(weight.name()).second)
      continue;
    DType dtype = DType::F32;
    if (weight.buffer() < static_cast<uint32_t>(proto.buffers_size()))
      dtype = fromPlanDType(proto.buffers(weight.buffer()).dtype())
                  .value_or(DType::F32);
    std::vector<int64_t> shape(weight.full_shape().begin(),
                               weight.full_shape().end());
    if (std::any_of(shape.begin(), shape.end(),
                    [](int64_t size) { return size < 0; }))
      continue;
    std::optional<uint64_t> bytes = checkedByteSize(shape, byteSize(dtype));
    if (!bytes || *bytes > budget)
      continue;
    budget -= *bytes;
    key += weight.name() + '\0' + std::string(toString(dtype));
    for (int64_t size : shape)
      key += ',' + std::to_string(size);
    key += '\0';
    entries.push_back({weight.name(), dtype, shape, {}});
  }
  static std::map<std::string, SafetensorsFile> made;
  auto found = made.find(key);
  if (found != made.end())
    return found->second;
  if (made.size() >= 16)
    made.clear();
  for (SafetensorsEntry &entry : entries)
    entry.data.assign(*checkedByteSize(entry.shape, byteSize(entry.dtype)), 0);
  return made
      .emplace(key,
               SafetensorsFile::fromBytes(encodeSafetensors(entries), "fuzz"))
      .first->second;
}

/// How the plan of fuzzLoadWeights reads one tensor.
enum class Reading { Whole, SplitRows, BlockWithoutFirstColumn };

/// One weight of that plan.
struct DerivedWeight {
  const SafetensorsTensor *tensor;
  Reading reading;
};

/// The box of its tensor that `weight` puts on `rank` of a mesh x=2,
/// worked out without the runtime's sharding code.
ShardRegion expectedRegion(const DerivedWeight &weight, int64_t rank) {
  ShardRegion region = wholeTensor(weight.tensor->shape);
  if (weight.reading == Reading::SplitRows) {
    region.sizes[0] /= 2;
    region.offsets[0] = rank * region.sizes[0];
  } else if (weight.reading == Reading::BlockWithoutFirstColumn) {
    region.offsets.back() = 1;
    region.sizes.back() -= 1;
  }
  return region;
}

/// Checks that `shard` holds `region` of `tensor`, run by run along the
/// last dimension, with offsets worked out here rather than by copyRegion.
void checkShard(const SafetensorsFile &file, const SafetensorsTensor &tensor,
                const ShardRegion &region, const uint8_t *shard) {
  size_t element = byteSize(*tensor.dtype);
  size_t rank = region.sizes.size();
  uint64_t runs = 1;
  for (int64_t size : region.sizes)
    runs *= static_cast<uint64_t>(size);
  if (runs == 0)
    return;
  uint64_t runElements = rank == 0 ? 1 : region.sizes.back();
  runs /= runElements;
  // A non-empty region lies in a tensor whose bytes are in the file, so
  // every index below fits.
  std::vector<int64_t> index(rank, 0);
  for (uint64_t k = 0; k < runs; ++k) {
    uint64_t flat = 0;
    for (size_t d = 0; d < rank; ++d)
      flat = flat * static_cast<uint64_t>(tensor.shape[d]) +
             static_cast<uint64_t>(region.offsets[d] + index[d]);
    if (std::memcmp(shard + k * runElements * element,
                    file.data(tensor) + flat * element,
                    runElements * element) != 0)
      broken("run " + std::to_string(k) + " of the shard of '" + tensor.name +
             "' is not the run at element " + std::to_string(flat) +
             " of the tensor");
    // The next run: step the dimensions before the last like an odometer.
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      if (++index[d] < region.sizes[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace

int fuzzLoadPlan(const uint8_t *data, size_t size) {
  plan::Plan proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size)))
    return 0;
  const SafetensorsFile &weights = weightsForPlan(proto);
  LoadOptions options;
  options.kernels = &cpuKernels();
  options.weights = &weights;
  std::optional<LoadedPlan> plan;
  try {
    plan = validatePlan(std::move(proto), options);
  } catch (const PlanError &) {
    return 0;
  }
  prepareRank(*plan, &weights, 0);
  if (plan->mesh.numRanks() > 1)
    prepareRank(*plan, &weights, plan->mesh.numRanks() - 1);
  return 0;
}

int fuzzLoadWeights(const uint8_t *data, size_t size) {
  std::optional<SafetensorsFile> file;
  try {
    file = SafetensorsFile::fromBytes(std::vector<uint8_t>(data, data + size),
                                      "fuzz.safetensors");
  } catch (const WeightsError &) {
    return 0;
  }
  // Every tensor is found by its name, and its first and last bytes lie in
  // the input (AddressSanitizer checks the reads).
  uint8_t touched = 0;
  for (const SafetensorsTensor &tensor : file->tensors()) {
    if (file->find(tensor.name) != &tensor)
      broken("find('" + tensor.name + "') does not give its tensor");
    if (tensor.end > tensor.begin) {
      const uint8_t *bytes = file->data(tensor);
      touched ^= bytes[0] ^ bytes[tensor.end - tensor.begin - 1];
    }
  }
  volatile uint8_t keep = touched;
  (void)keep;

  // A plan over a mesh x=2 that reads every tensor a buffer can hold.
  plan::Plan proto;
  proto.set_format_version(kFormatVersion);
  proto.mutable_mesh()->add_axis_names("x");
  proto.mutable_mesh()->add_axis_sizes(2);
  std::vector<DerivedWeight> derived;
  uint64_t arena = 0;
  auto add = [&](const SafetensorsTensor &tensor, Reading reading) {
    DerivedWeight weight{&tensor, reading};
    ShardRegion block = wholeTensor(tensor.shape);
    if (reading == Reading::BlockWithoutFirstColumn)
      block = expectedRegion(weight, 0);
    std::vector<int64_t> sizes = expectedRegion(weight, 0).sizes;
    std::optional<uint64_t> bytes =
        checkedByteSize(sizes, byteSize(*tensor.dtype));
    if (!bytes)
      return; // the loader rejects such a buffer
    uint32_t id = static_cast<uint32_t>(proto.buffers_size());
    plan::Buffer &buffer = *proto.add_buffers();
    buffer.set_id(id);
    buffer.set_offset(arena);
    buffer.set_dtype(toPlanDType(*tensor.dtype));
    for (int64_t size : sizes)
      buffer.add_shape(size);
    arena += (*bytes + 63) / 64 * 64;
    plan::Weight &entry = *proto.add_weights();
    entry.set_name(tensor.name);
    entry.set_buffer(id);
    for (int64_t size : tensor.shape)
      entry.add_full_shape(size);
    if (reading == Reading::BlockWithoutFirstColumn)
      for (size_t d = 0; d < block.sizes.size(); ++d) {
        entry.add_block_offsets(block.offsets[d]);
        entry.add_block_shape(block.sizes[d]);
      }
    if (reading == Reading::SplitRows)
      for (size_t d = 0; d < tensor.shape.size(); ++d) {
        plan::DimSharding &dim = *entry.add_sharding();
        if (d == 0)
          dim.add_axes("x");
      }
    derived.push_back(weight);
  };
  for (const SafetensorsTensor &tensor : file->tensors()) {
    if (!tensor.dtype || derived.size() >= 64)
      continue;
    const std::vector<int64_t> &shape = tensor.shape;
    add(tensor, !shape.empty() && shape[0] % 2 == 0 ? Reading::SplitRows
                                                    : Reading::Whole);
    if (!shape.empty() && shape.back() > 0)
      add(tensor, Reading::BlockWithoutFirstColumn);
  }
  proto.set_arena_bytes(arena);

  LoadOptions options;
  options.kernels = &cpuKernels();
  options.weights = &*file;
  std::optional<LoadedPlan> plan;
  try {
    plan = validatePlan(std::move(proto), options);
  } catch (const PlanError &error) {
    broken(std::string("the plan made for the weights file is rejected: ") +
           error.what());
  }
  for (int64_t rank = 0; rank < 2; ++rank) {
    size_t next = 0;
    writeInitialData(
        *plan, plan->mesh, rank, &*file,
        [&](const BufferInfo &buffer, const std::function<void(void *)> &fill) {
          std::vector<uint8_t> memory(std::max<uint64_t>(buffer.bytes, 1));
          fill(memory.data());
          const DerivedWeight &weight = derived.at(next++);
          checkShard(*file, *weight.tensor, expectedRegion(weight, rank),
                     memory.data());
        });
  }
  return 0;
}

} // namespace braid::rt
