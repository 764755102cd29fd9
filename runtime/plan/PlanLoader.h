//===- PlanLoader.h - reading and validating .bplan files -------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// A plan file is untrusted input. The loader parses it (binary protobuf,
// runtime/plan/Plan.proto) and checks every field against the rest of the
// plan, the weights file, the kernel registry and the run before anything
// executes, so that the executor and the kernels can index the arena without
// further checks. Anything wrong is a PlanError that names the field and the
// value, e.g. `buffers[3].offset: 4096 + 512 bytes runs past arena_bytes
// 4000`; nothing crashes.
//
// What a valid plan guarantees, beyond well-formed fields:
//   - buffer ids are exactly 0..n-1; every buffer lies inside the arena and is
//     aligned to its element size; the product of any of its sizes, times
//     the element size, fits in int64;
//   - constants, weights and inputs each fill a buffer of the right byte size;
//     no buffer is filled twice and no two of them overlap;
//   - every weight read from the file exists there with the plan's full shape
//     and dtype (a ZEROS weight's full shape is a valid shape of its own),
//     its block (if any) lies inside it, its sharding splits the block (the
//     whole weight) evenly and the buffer has the shard's shape; weights of
//     one name agree on full shape, dtype, init and state, and the blocks of
//     a state weight do not overlap;
//   - a training plan's tokens and labels are [batch, sequence] i64 or i32
//     inputs and its loss a scalar f32 output;
//   - every kernel's op is in the registry and passes its checks (counts,
//     attributes, shapes, element types);
//   - collectives name existing axes and their shapes agree with the group
//     size;
//   - every event is below num_events, recorded at most once per run, every
//     waited event is recorded, and the streams cannot deadlock on events.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_PLAN_PLANLOADER_H
#define BRAID_RUNTIME_PLAN_PLANLOADER_H

#include "runtime/comm/Communicator.h"
#include "runtime/core/DType.h"
#include "runtime/plan/Plan.pb.h"
#include "runtime/plan/PlanError.h"
#include "runtime/weights/WeightSharding.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace braid::rt {

struct KernelInfo;
class KernelRegistry;
class SafetensorsFile;

/// The plan format this runtime reads (Plan.format_version).
constexpr uint32_t kFormatVersion = 3;

/// The most events a plan may declare; more would only waste memory.
constexpr uint32_t kMaxEvents = 1u << 24;

/// A validated buffer of the plan.
struct BufferInfo {
  uint32_t id = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// What a plan is checked against.
struct LoadOptions {
  /// The backend's kernels; required.
  const KernelRegistry *kernels = nullptr;
  /// The number of ranks of this run; 0 accepts the plan's mesh (simulation,
  /// fuzzing).
  int64_t worldSize = 0;
  /// The weights file; required when the plan reads weights from one (any
  /// weight whose init is FILE).
  const SafetensorsFile *weights = nullptr;
};

/// A plan that passed validation.
struct LoadedPlan {
  plan::Plan proto;
  MeshShape mesh;
  /// Indexed by buffer id.
  std::vector<BufferInfo> buffers;
  /// Per stream and instruction, the kernel's registry entry (null for
  /// instructions that are not kernels).
  std::vector<std::vector<const KernelInfo *>> kernels;
};

/// The plan's spelling of `dtype` (Plan.proto's DType).
plan::DType toPlanDType(DType dtype);
/// The element type of a Plan.proto DType value; nullopt for an unknown one.
std::optional<DType> fromPlanDType(int value);

/// The box of the weights-file tensor that `weight` reads: its block, or the
/// whole tensor of its full_shape when it has none.
ShardRegion weightBlock(const plan::Weight &weight);

/// Validates a plan message; throws PlanError.
LoadedPlan validatePlan(plan::Plan proto, const LoadOptions &options);

/// Parses and validates the bytes of a .bplan file; throws PlanError.
LoadedPlan parsePlan(const void *data, size_t size, const LoadOptions &options);

/// Reads, parses and validates a .bplan file; throws PlanError.
LoadedPlan loadPlanFile(const std::string &path, const LoadOptions &options);

} // namespace braid::rt

#endif // BRAID_RUNTIME_PLAN_PLANLOADER_H
