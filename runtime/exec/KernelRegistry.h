//===- KernelRegistry.h - kernels keyed by plan op name ---------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// A backend registers one KernelInfo per `Kernel.op` it runs: how many
// inputs, outputs and index operands the op takes, which attributes, a check
// of shapes and element types run when the plan is loaded, and the function
// that runs it on arena memory. The plan loader rejects an op the registry
// does not know, or a kernel that fails its checks, with a PlanError.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_EXEC_KERNELREGISTRY_H
#define BRAID_RUNTIME_EXEC_KERNELREGISTRY_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace braid::plan {
class Kernel;
class AttrValue;
} // namespace braid::plan

namespace braid::rt {

/// A tensor in the arena as a kernel sees it. `data` is null while a plan is
/// being checked at load time.
struct TensorView {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  void *data = nullptr;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numElements() const;
  uint64_t numBytes() const;
  template <typename T> T *as() const { return static_cast<T *>(data); }
  /// Whether the bytes of the two views overlap.
  bool overlaps(const TensorView &other) const;
};

/// Typed access to a kernel's attributes. Missing boolean attributes are
/// false (the compiler drops unit attributes that are unset); every other
/// getter throws PlanError for a missing attribute or one of another kind.
class KernelAttrs {
public:
  explicit KernelAttrs(const plan::Kernel &kernel) : kernel_(&kernel) {}

  bool has(const std::string &name) const;
  /// `b`, or an integer 0 / 1.
  bool getBool(const std::string &name) const;
  int64_t getInt(const std::string &name) const;
  /// `f`, or an integer.
  double getFloat(const std::string &name) const;
  const std::string &getString(const std::string &name) const;
  std::vector<int64_t> getInts(const std::string &name) const;

private:
  const plan::AttrValue &get(const std::string &name) const;
  const plan::Kernel *kernel_;
};

/// What a kernel runs on: its instruction, its tensors and its index operands
/// evaluated for this rank (empty at load time; `numIndices` is always set).
struct KernelArgs {
  const plan::Kernel *kernel = nullptr;
  std::vector<TensorView> inputs;
  std::vector<TensorView> outputs;
  std::vector<int64_t> indices;
  int numIndices = 0;
  /// The backend's per-stream context while running (the CUDA backend: the
  /// stream's CudaContext); null for the CPU backend and at load time.
  void *context = nullptr;

  KernelAttrs attrs() const { return KernelAttrs(*kernel); }
  /// The op name, for messages.
  const std::string &op() const;
};

/// The kind an attribute must have.
enum class AttrKind { Int, Float, String, Ints, Bool };

struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required = false;
};

/// Throws PlanError when the arguments cannot run (shapes, element types,
/// attribute values). Called once per instruction when a plan is loaded.
using KernelCheckFn = void (*)(const KernelArgs &);
/// Runs the kernel; throws (any std::exception) on a run-time failure such as
/// an index out of range.
using KernelRunFn = void (*)(const KernelArgs &);

/// One op of a backend.
struct KernelInfo {
  std::string op;
  int minInputs = 1;
  /// -1: any number from minInputs.
  int maxInputs = 1;
  int minOutputs = 1;
  int maxOutputs = 1;
  /// -1: the op's check counts them.
  int maxIndices = 0;
  std::vector<AttrSpec> attrs;
  KernelCheckFn check = nullptr;
  KernelRunFn run = nullptr;
};

/// The kernels of one backend, keyed by op name.
class KernelRegistry {
public:
  /// Adds a kernel; throws std::invalid_argument for a duplicate op.
  void add(KernelInfo info);
  /// The kernel for `op`, or null.
  const KernelInfo *lookup(std::string_view op) const;
  /// Every registered op name, sorted.
  std::vector<std::string> ops() const;

  /// Checks counts of inputs, outputs and indices, the attributes (known
  /// names, kinds, required ones present) and then the kernel's own check.
  /// Throws PlanError with the problem (the caller adds the position).
  void verify(const KernelInfo &info, const KernelArgs &args) const;

private:
  std::map<std::string, KernelInfo, std::less<>> kernels_;
};

/// Formats a shape as `[2, 8, 768]` for messages.
std::string shapeToString(const std::vector<int64_t> &shape);

} // namespace braid::rt

#endif // BRAID_RUNTIME_EXEC_KERNELREGISTRY_H
