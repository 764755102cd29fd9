//===- OverlapModel.h - time of braid programs for the overlap passes -*-===//
//
// The runtime's cost model (runtime/cost: roofline per kernel, alpha-beta
// per collective on the cluster the hardware profile describes) applied to
// braid IR, and a timeline of one function: ops outside asyncs run in
// program order on the compute stream; an async's body runs on its named
// stream, in program order per stream, starting when the program reaches it
// and its stream is free; an await blocks the compute stream until its
// future is done. Communication contending with compute is not modelled here
// (the simulator does that on plans); this is the estimate passes use to
// choose between schedules and to explain them.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_PASSES_OVERLAPMODEL_H
#define BRAID_PASSES_OVERLAPMODEL_H

#include "dialects/braid/BraidDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>

namespace braid::rt {
struct HardwareProfile;
} // namespace braid::rt

namespace mlir {
namespace braid {

class CostModel {
public:
  /// Loads hardware profile `hw` (a name in runtime/profiles or a path);
  /// reports a failure at `anchor`.
  static FailureOr<CostModel> load(StringRef hw, Operation *anchor);
  CostModel(CostModel &&);
  ~CostModel();

  /// Seconds op `op` takes alone: a compute op's roofline time, a
  /// collective's time on the cluster its group spans; 0 for the rest.
  double seconds(Operation *op) const;
  /// The kernels braid-to-exec will run for the ops of `block` (not those
  /// inside its ops' regions): per op, the seconds its kernel takes, where
  /// the ops fused into a matmul's epilogue or into an elementwise tree
  /// (dialects/braid/Fusion.h) cost nothing and the matmul or the tree's
  /// root the fused kernel (every other op: seconds(op)); and each fusion's
  /// ops in block order. A fusion never crosses an async or an await of
  /// the block (braid-to-exec's events) nor joins a communication round's
  /// kernel (braid.round) with another op, and each one is assumed kept
  /// (braid-to-exec refuses the few that grow the arena too much).
  struct Kernels {
    llvm::DenseMap<Operation *, double> seconds;
    SmallVector<SmallVector<Operation *>> fusions;
  };
  Kernels predictKernels(Block &block) const;
  const ::braid::rt::HardwareProfile &getProfile() const { return *profile; }

private:
  CostModel();
  std::unique_ptr<::braid::rt::HardwareProfile> profile;
};

/// When one collective ran in the estimated timeline.
struct CollectiveTiming {
  Operation *collective;
  /// Issued (the program reached it), started, finished.
  double issue = 0, start = 0, end = 0;
  /// Seconds of compute-stream work inside [start, end].
  double hidden = 0;
  /// Whether it runs in a braid.async, and whether some op runs on the
  /// compute stream between its async and its first await.
  bool async = false;
  bool workBeforeAwait = false;
};

struct Timeline {
  double makespan = 0;
  double computeBusy = 0;
  double commBusy = 0;
  SmallVector<CollectiveTiming> collectives;
};

/// Estimates the timeline of `function` (see the file comment).
Timeline estimateTimeline(func::FuncOp function, const CostModel &model);

/// For the training algorithms' `auto` counts: the seconds @main of
/// `module` spends, alone, in the ops `partOf` calls communication and in
/// those it calls compute, on hardware profile `hw` (errors reported at
/// `anchor`).
enum class CostPart { Compute, Communication, Neither };
struct ComputeAndCommunication {
  double compute = 0, communication = 0;
  /// The fewest units of `compute` that cover `communication` (ceil of the
  /// ratio), within [1, most]; `most` when there is no compute.
  int64_t coveringCount(int64_t most) const;
};
FailureOr<ComputeAndCommunication>
estimateComputeAndCommunication(
    ModuleOp module, StringRef hw, Operation *anchor,
    llvm::function_ref<CostPart(Operation *)> partOf);

} // namespace braid
} // namespace mlir

#endif // BRAID_PASSES_OVERLAPMODEL_H
