//===- Comet.cpp - fine-grained MoE communication overlap (COMET) ---------===//
//
// Under expert parallelism (braid-partition ep=N) an MoE layer is
//
//   dispatch -> all_to_all (split experts, concat slots) -> expert GEMMs
//            -> all_to_all (split slots, concat experts) -> combine
//
// and no expert GEMM starts before the whole all-to-all is done. braid-comet
// cuts both all-to-alls into one piece per source rank: this rank's own
// slots first (no communication), then those of the ranks 1, 2, ... steps
// around the ring (`braid.collective_permute` with shift t). The expert
// GEMMs run piece by piece (passes/Chunking.h clones them per piece), so the
// GEMM on rows that have arrived runs while later pieces are in flight, and
// each piece's result travels back (shift -t) while the next piece computes;
// with `combine-chunks=K` each piece's last GEMM is also split along its
// output columns so its return overlaps the next column chunk.
//
// Which expert block goes to which rank depends on the rank: the dispatch
// buffer is rotated with a `braid.gather` whose index row is this rank's row
// of a constant table (a rank-dependent slice), and the returned blocks are
// rotated back the same way. The cost model picks `combine-chunks` and the
// SMs the communication may take (`braid.comm_sms`, recorded in the plan):
// COMET's adaptive assignment, balancing one piece's GEMM, slowed by the SMs
// communication holds, against its transfer, sped up by more SMs.
//
//===----------------------------------------------------------------------===//

#include "passes/Chunking.h"
#include "passes/IRHelpers.h"
#include "passes/Overlap.h"
#include "passes/Passes.h"

#include "runtime/cost/HardwareProfile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <limits>

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDCOMET
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// One expert-parallel MoE layer as braid-partition leaves it.
struct MoeLayer {
  AllToAllOp dispatch; // split 0 (experts), concat 1 (slots)
  AllToAllOp combine;  // split 1 (slots), concat 0 (experts)
  MeshOp mesh;
  SmallVector<StringRef> axes;
};

SmallVector<MoeLayer> findLayers(ModuleOp module) {
  SmallVector<MoeLayer> layers;
  module.walk([&](AllToAllOp combine) {
    if (combine.getSplitDim() != 1 || combine.getConcatDim() != 0 ||
        !combine->hasOneUse() || !isa<MoeCombineOp>(*combine->user_begin()))
      return;
    // The dispatch all-to-all the expert GEMMs read, walking back through
    // the ops between them.
    SmallVector<Value> work{combine.getInput()};
    llvm::DenseSet<Operation *> seen;
    AllToAllOp dispatch;
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || !seen.insert(def).second)
        continue;
      if (auto a2a = dyn_cast<AllToAllOp>(def)) {
        if (a2a.getSplitDim() == 0 && a2a.getConcatDim() == 1 &&
            a2a.getInput().getDefiningOp<MoeDispatchOp>() &&
            a2a.getMeshAttr() == combine.getMeshAttr() &&
            a2a.getMeshAxes() == combine.getMeshAxes())
          dispatch = a2a;
        continue;
      }
      if (isa<GetWeightOp, ConstantOp>(def))
        continue;
      for (Value operand : def->getOperands())
        work.push_back(operand);
    }
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
        combine, combine.getMeshAttr());
    if (!dispatch || !mesh)
      return;
    MoeLayer layer{dispatch, combine, mesh, {}};
    for (Attribute a : combine.getMeshAxes())
      layer.axes.push_back(cast<StringAttr>(a).getValue());
    layers.push_back(layer);
  });
  return layers;
}

/// This rank's row of the table rotate[r][t * block + e] =
/// ((t + sign * r) mod P) * block + e: a rank-dependent gather index.
Value rotationIndex(OpBuilder &b, Location loc, MeshOp mesh,
                    ArrayRef<StringRef> axes, int64_t ranks, int64_t block,
                    int64_t sign) {
  int64_t experts = ranks * block;
  SmallVector<int64_t> table;
  for (int64_t r = 0; r < ranks; ++r)
    for (int64_t t = 0; t < ranks; ++t)
      for (int64_t e = 0; e < block; ++e)
        table.push_back((((t + sign * r) % ranks + ranks) % ranks) * block + e);
  auto tableType = RankedTensorType::get({ranks, experts}, b.getI64Type());
  Value constant = ConstantOp::create(
      b, loc, tableType,
      DenseElementsAttr::get(tableType, ArrayRef<int64_t>(table)));
  Value index = groupIndex(b, loc, mesh, axes);
  auto rowType = RankedTensorType::get({1, experts}, b.getI64Type());
  Value row = SliceOp::create(
      b, loc, rowType, constant, ValueRange{index},
      b.getDenseI64ArrayAttr({ShapedType::kDynamic, 0}),
      b.getDenseI64ArrayAttr({1, experts}), b.getDenseI64ArrayAttr({1, 1}));
  return ReshapeOp::create(
      b, loc, RankedTensorType::get({experts}, b.getI64Type()), row);
}

Value gatherRows(OpBuilder &b, Location loc, Value table, Value index) {
  return GatherOp::create(b, loc, table.getType(), table, index,
                          b.getI64IntegerAttr(0));
}

Value shift(OpBuilder &b, Location loc, MoeLayer &layer, Value v,
            int64_t by) {
  return CollectivePermuteOp::create(
      b, loc, v.getType(), FlatSymbolRefAttr::get(layer.mesh.getSymNameAttr()),
      b.getStrArrayAttr(SmallVector<StringRef>(layer.axes)), v,
      b.getI64IntegerAttr(by));
}

} // namespace

LogicalResult mlir::braid::applyComet(ModuleOp module, int64_t combineChunks) {
  for (MoeLayer &layer : findLayers(module)) {
    AllToAllOp dispatch = layer.dispatch, combine = layer.combine;
    int64_t ranks = layer.mesh.getGroupSize(dispatch.getMeshAxes());
    auto local = cast<RankedTensorType>(dispatch.getInput().getType());
    int64_t experts = local.getDimSize(0), slots = local.getDimSize(1);
    int64_t block = experts / ranks;
    Location loc = dispatch.getLoc();
    OpBuilder b(dispatch);

    // COMET cuts the slots by source rank, in an order that depends on the
    // rank (its own first). Slots cut by position (Domino's row chunks slice
    // the all-to-all's result) or joined with another all-to-all's (Domino's
    // column chunks concatenate two) would be paired with slots of other
    // sources. Refuse rather than compute that.
    for (Operation *user : dispatch.getResult().getUsers())
      if (isa<SliceOp, SplitOp, ConcatOp>(user))
        return user->emitOpError(
            "braid-comet: the slots of an expert-parallel all-to-all are cut "
            "or joined before the experts (Domino's chunks?); COMET cuts "
            "them by source rank itself: run it on MoE layers Domino has not "
            "split");

    // Dispatch: rotate so that block t holds the experts of rank r + t, and
    // send block t t steps around the ring (block 0 stays here).
    Value rotated = gatherRows(
        b, loc, dispatch.getInput(),
        rotationIndex(b, loc, layer.mesh, layer.axes, ranks, block, +1));
    SmallVector<Value> arrived;
    for (int64_t t = 0; t < ranks; ++t) {
      Value piece = sliceAlong(b, loc, rotated, 0, t * block, block);
      arrived.push_back(t == 0 ? piece : shift(b, loc, layer, piece, t));
    }
    // The expert GEMMs, once per piece: the all-to-all's result is seeded
    // as already cut into the pieces (slots of rank r - t).
    Value gathered = dispatch.getResult();
    ChunkAnalysis pieces;
    pieces.seedPieces(gathered, {1, SmallVector<int64_t>(ranks, slots)},
                      arrived);
    Block &body = *dispatch->getBlock();
    pieces.run(body);
    // Everything between the two all-to-alls must have been cut (the
    // pieces' order differs from the all-to-all's, so nothing may need the
    // whole in between).
    const ChunkLayout *last = pieces.getLayout(combine.getInput());
    if (!last || last->dim != 1)
      return combine.emitOpError("braid-comet: the expert computation "
                                 "between the all-to-alls is not parallel in "
                                 "its slots");
    for (auto &[op, chunking] : pieces.getOps())
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (user != combine && !pieces.getOps().count(user))
            return user->emitOpError("braid-comet: reads the expert "
                                     "computation whole");
    if (failed(pieces.rewrite(body)))
      return failure();
    dispatch.erase();

    // Combine: piece t goes back t steps; block t of what arrives holds the
    // results of rank r + t's experts for this rank's slots.
    auto whole = combine.getInput().getDefiningOp<ConcatOp>();
    if (!whole)
      return combine.emitOpError("braid-comet: expected the pieces' concat");
    SmallVector<Value> results(whole.getOperands());
    b.setInsertionPoint(combine);
    SmallVector<Value> returned;
    for (int64_t t = 0; t < ranks; ++t) {
      Value piece = results[t];
      if (combineChunks > 1 && t > 0) {
        // Column chunks of the piece, each returned on its own.
        auto type = cast<RankedTensorType>(piece.getType());
        SmallVector<int64_t> sizes =
            evenChunks(type.getDimSize(2), combineChunks);
        SmallVector<Value> parts;
        int64_t start = 0;
        for (int64_t size : sizes) {
          parts.push_back(shift(b, loc, layer,
                                sliceAlong(b, loc, piece, 2, start, size),
                                ranks - t));
          start += size;
        }
        piece = ConcatOp::create(b, loc, type, parts, b.getI64IntegerAttr(2));
      } else if (t > 0) {
        piece = shift(b, loc, layer, piece, ranks - t);
      }
      returned.push_back(piece);
    }
    Value rotatedBack = ConcatOp::create(b, loc, combine.getType(), returned,
                                         b.getI64IntegerAttr(0));
    // Row e of the original order sits at position ((e/block - r) mod P).
    Value result = gatherRows(
        b, loc, rotatedBack,
        rotationIndex(b, loc, layer.mesh, layer.axes, ranks, block, -1));
    combine.getResult().replaceAllUsesWith(result);
    combine.erase();
    if (whole->use_empty())
      whole.erase();
  }
  return success();
}

namespace {
struct CometPass : public mlir::braid::impl::BraidCometBase<CometPass> {
  using BraidCometBase::BraidCometBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(requireUnscheduled(module, "braid-comet")))
      return signalPassFailure();
    FailureOr<CostModel> model = CostModel::load(hw, module);
    if (failed(model))
      return signalPassFailure();
    if (findLayers(module).empty()) {
      // Asked for COMET where there is no expert-parallel layer: say so.
      module.emitWarning("braid-comet: no expert-parallel MoE layer (an "
                         "all-to-all dispatch to the experts and back over "
                         "an ep axis; partition with ep=N first); nothing "
                         "changed");
      return;
    }
    recordBaseline(module, "", hw);
    int64_t chunks;
    if (!combineChunks.isAuto()) {
      chunks = combineChunks.getCount();
    } else {
      SmallVector<int64_t> candidates{1, 2, 4};
      FailureOr<size_t> best = pickByCost(
          module, hw, candidates.size(),
          [&](ModuleOp m, size_t c) { return applyComet(m, candidates[c]); },
          "", "braid-comet", [&](size_t c) {
            return "combine-chunks=" + std::to_string(candidates[c]);
          });
      if (failed(best))
        return signalPassFailure();
      chunks = candidates[*best];
    }
    if (failed(applyComet(module, chunks)) || failed(mlir::verify(module)))
      return signalPassFailure();
    // COMET's resource assignment: the SMs communication may hold. With P
    // pieces, one piece's GEMMs g (slowed by the SMs they lose) pipeline with
    // one piece's transfer c (slowed on fewer SMs than NCCL's usual), and one
    // transfer at each end is exposed: P * max(g', c') + 2 * c'.
    const ::braid::rt::HardwareProfile &profile = model->getProfile();
    int64_t sms = profile.gpu.smCount, nominal = profile.contention.commSms;
    double gemm = 0, comm = 0;
    int64_t transfers = 0, layers = 0;
    module.walk([&](Operation *op) {
      if (isa<GroupedMatmulOp>(op))
        gemm += model->seconds(op);
      else if (isa<CollectivePermuteOp>(op)) {
        comm += model->seconds(op);
        ++transfers;
      } else if (isa<MoeCombineOp>(op))
        ++layers;
    });
    if (sms > 2 && nominal > 0 && gemm > 0 && transfers > 0 && layers > 0) {
      int64_t pieces = transfers / (2 * layers) + 1;
      double g = gemm / (double)(pieces * layers), c = comm / (double)transfers;
      auto estimate = [&](int64_t s) {
        double gs = g * (double)sms / (double)(sms - s);
        double cs = c * (double)nominal / (double)std::min(s, nominal);
        return (double)pieces * std::max(gs, cs) + 2 * cs;
      };
      int64_t best = nominal;
      for (int64_t s = 1; s <= nominal && s < sms; ++s)
        if (estimate(s) < estimate(best))
          best = s;
      module->setAttr("braid.comm_sms",
                      IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                       best));
    }
    module->setAttr("braid.comet_combine_chunks",
                    IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                     chunks));
  }
};
} // namespace
