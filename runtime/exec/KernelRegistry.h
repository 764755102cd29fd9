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
#include <functional>
#include <map>
#include <memory>
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
  /// What the kernel's `prepare` made of this instruction when the plan was
  /// loaded (e.g. a GEMM primitive with its weight repacked); null when it
  /// has none.
  const void *prepared = nullptr;

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

/// What an executor tells a kernel's `prepare` about its inputs.
struct PrepareInputs {
  /// Per input: its bytes are set when the plan is loaded (a weight or a
  /// constant) and nothing in the plan writes them, so they are the same in
  /// every run; and when every instruction that reads them copies them, the
  /// executor releases the arena's copy (a kernel may copy such an input
  /// without doubling its memory).
  std::vector<bool> constant;
  /// Objects shared between the instructions of one executor (e.g. one
  /// repacked copy of a weight that several instructions read), by a key the
  /// kernel chooses.
  std::map<std::string, std::shared_ptr<void>> *shared = nullptr;
  /// Per input: this instruction is the only reader of a constant input,
  /// so a kernel that copies it may give the arena's pages back as it goes
  /// with `release` (the whole pages inside [data, data + bytes)), and the
  /// copy and the original are never both resident in full. After a
  /// release the kernel must not fail back to reading the input.
  std::vector<bool> soleReader;
  std::function<void(const void *data, uint64_t bytes)> release;
};

/// What `prepare` made of one instruction.
struct PreparedKernel {
  /// Passed to the kernel as KernelArgs::prepared on every run; null: the
  /// kernel runs unprepared.
  std::shared_ptr<const void> state;
  /// Per input (empty: none): the prepared kernel keeps its own copy of
  /// this constant input and never reads the arena's again, so an executor
  /// may release those bytes when no other instruction reads them.
  std::vector<bool> copied;
};

/// Called after the weights are in the arena (args with data), before the
/// first run, once for each instruction that reads a weight or constant
/// whose every reader has a `prepare` (the others run unprepared); throws
/// like a kernel on failure.
using KernelPrepareFn = PreparedKernel (*)(const KernelArgs &,
                                           const PrepareInputs &);

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
  /// Optional: work done once per instruction when a plan is loaded (see
  /// KernelPrepareFn for which instructions).
  KernelPrepareFn prepare = nullptr;
};

/// The kernels of one backend, keyed by op name.
class KernelRegistry {
public:
  /// Adds a kernel; throws std::invalid_argument for a duplicate op.
  void add(KernelInfo info);
  /// Gives a registered kernel its `prepare`; throws std::invalid_argument
  /// for an unknown op.
  void setPrepare(std::string_view op, KernelPrepareFn prepare);
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

/// The most inputs and steps an `elementwise` kernel (a chain of f32
/// elementwise ops braid-to-exec fused) has; every backend runs chains up to
/// these, and braid-to-exec (lowering/BraidToExec.cpp) forms none longer.
constexpr int kMaxChainInputs = 8;
constexpr int kMaxChainSteps = 32;

/// Formats a shape as `[2, 8, 768]` for messages.
std::string shapeToString(const std::vector<int64_t> &shape);

} // namespace braid::rt

#endif // BRAID_RUNTIME_EXEC_KERNELREGISTRY_H
