//===- Buckets.cpp - all-reduces fused into buckets, in production order --===//
//
// PyTorch DDP's gradient buckets, decided at compile time: the all-reduces
// of a function are taken in the order their operands are produced (the
// backward pass produces weight gradients last layer first, while the
// partitioner places their all-reduces where the update reads them, in
// parameter order), and grouped, in that order, into buckets of at most a
// given size whose results are all read after the last operand of the
// bucket exists (reduce-scatters only move to production order). Each bucket becomes one all-reduce of the concatenated
// operands, placed right after its last operand is produced; braid-schedule
// then issues it at once and awaits it where the update reads it. Buckets
// trade the per-collective latency (fewer, larger all-reduces) against how
// late a bucket's first gradient starts moving; bucket=auto lets the cost
// model pick the size.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Overlap.h"
#include "passes/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"

#include <limits>

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDBUCKETS
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// One all-reduce and where, in the function's block, its operand becomes
/// available and its result is first read.
struct Member {
  AllReduceOp op;
  int64_t ready;
  int64_t firstUse;
  int64_t bytes;
  /// Its operand is another all-reduce's result: that one's position is
  /// its `ready`, which the bucket test (ready < firstUse) cannot tell from
  /// an independent producer, so it stays alone.
  bool chained = false;
};

/// A bucket being filled: all-reduces of one mesh, axes, reduction and
/// element type.
struct Bucket {
  SmallVector<Member> members;
  int64_t bytes = 0;
  int64_t ready = -1;
  int64_t firstUse = std::numeric_limits<int64_t>::max();
};

using BucketKey = std::tuple<Attribute, Attribute, Attribute, Type>;

BucketKey keyOf(AllReduceOp op) {
  return {op.getMeshAttr(), op.getMeshAxesAttr(), op.getReductionAttr(),
          op.getType().getElementType()};
}

/// Replaces the bucket's all-reduces by one, right after the op producing
/// its last operand (at the start of `block` when every operand is an
/// argument). An operand may be the result of an earlier bucket, emitted
/// after its producer; the caller sorts the block topologically afterwards.
void emitBucket(ArrayRef<Member> members, Block &block) {
  OpBuilder b(block.getParentOp()->getContext());
  Operation *after = nullptr;
  for (Member m : members)
    if (Operation *producer = m.op.getInput().getDefiningOp();
        producer && (!after || after->isBeforeInBlock(producer)))
      after = producer;
  if (after)
    b.setInsertionPointAfter(after);
  else
    b.setInsertionPointToStart(&block);
  AllReduceOp first = members.front().op;
  Location loc = first.getLoc();
  Type element = first.getType().getElementType();
  if (members.size() == 1) {
    first->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    return;
  }
  auto reshape = [&](Location loc, Value v, RankedTensorType type) -> Value {
    if (v.getType() == type)
      return v;
    return ReshapeOp::create(b, loc, type, v);
  };
  SmallVector<Value> flat;
  int64_t total = 0;
  for (Member m : members) {
    int64_t n = getNumElements(m.op.getInput());
    flat.push_back(reshape(m.op.getLoc(), m.op.getInput(),
                           RankedTensorType::get({n}, element)));
    total += n;
  }
  auto bucketType = RankedTensorType::get({total}, element);
  Value joined =
      ConcatOp::create(b, loc, bucketType, flat, b.getI64IntegerAttr(0));
  Value reduced = AllReduceOp::create(b, loc, bucketType, first.getMeshAttr(),
                                      first.getMeshAxesAttr(), joined,
                                      first.getReductionAttr());
  int64_t offset = 0;
  for (Member m : members) {
    int64_t n = getNumElements(m.op.getInput());
    Value piece = SliceOp::create(
        b, m.op.getLoc(), RankedTensorType::get({n}, element), reduced,
        ValueRange{}, b.getDenseI64ArrayAttr({offset}),
        b.getDenseI64ArrayAttr({n}), b.getDenseI64ArrayAttr({1}));
    Value result = reshape(m.op.getLoc(), piece, m.op.getType());
    m.op.getResult().replaceAllUsesWith(result);
    offset += n;
  }
  // Only now: the builder may be inserting right before one of them.
  for (Member m : members)
    m.op.erase();
}

} // namespace

LogicalResult mlir::braid::applyBuckets(ModuleOp module, StringRef name,
                                        int64_t bucketBytes) {
  FailureOr<SmallVector<func::FuncOp>> functions =
      selectUnscheduledFunctions(module, name, "braid-buckets");
  if (failed(functions))
    return failure();
  for (func::FuncOp function : *functions) {
    Block &block = function.getBody().front();
    // Reduce-scatters (ZeRO's gradients) are not fused, but they move to
    // where their operand is produced too, so that braid-schedule, which
    // issues collectives in program order, issues them in backward order.
    for (Operation &op : llvm::make_early_inc_range(block))
      if (auto scatter = dyn_cast<ReduceScatterOp>(&op))
        if (Operation *producer = scatter.getInput().getDefiningOp())
          scatter->moveAfter(producer);
    llvm::DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(block))
      position[&op] = i;
    SmallVector<Member> members;
    for (Operation &op : block) {
      auto reduce = dyn_cast<AllReduceOp>(&op);
      if (!reduce)
        continue;
      Member m{reduce, -1, std::numeric_limits<int64_t>::max(),
               getNumBytes(reduce.getInput())};
      if (Operation *producer = reduce.getInput().getDefiningOp()) {
        m.ready = position.lookup(producer);
        m.chained = isa<AllReduceOp>(producer);
      }
      for (Operation *user : reduce->getUsers())
        m.firstUse = std::min(m.firstUse, position.lookup(user));
      members.push_back(m);
    }
    // Production order; ties keep program order.
    llvm::stable_sort(members, [](const Member &a, const Member &b) {
      return a.ready < b.ready;
    });
    llvm::MapVector<BucketKey, Bucket> open;
    auto flush = [&](Bucket &bucket) {
      if (!bucket.members.empty())
        emitBucket(bucket.members, block);
      bucket = Bucket();
    };
    for (const Member &m : members) {
      Bucket &bucket = open[keyOf(m.op)];
      int64_t ready = std::max(bucket.ready, m.ready);
      int64_t firstUse = std::min(bucket.firstUse, m.firstUse);
      bool fits = !bucket.members.empty() && !m.chained &&
                  !bucket.members.front().chained &&
                  bucket.bytes + m.bytes <= bucketBytes && ready < firstUse;
      if (!fits)
        flush(bucket);
      bucket.members.push_back(m);
      bucket.bytes += m.bytes;
      bucket.ready = std::max(bucket.ready, m.ready);
      bucket.firstUse = std::min(bucket.firstUse, m.firstUse);
    }
    for (auto &[key, bucket] : open)
      flush(bucket);
    // A bucket is read only after all its operands exist (ready <
    // firstUse), so buckets form no cycle; an operand that an earlier
    // bucket's slice now produces moves the reader after it.
    if (!sortTopologically(&block))
      return function.emitError("braid-buckets: the buckets of @")
             << function.getSymName() << " form a cycle";
  }
  return success();
}

namespace {
struct BucketsPass : public mlir::braid::impl::BraidBucketsBase<BucketsPass> {
  using BraidBucketsBase::BraidBucketsBase;

  /// The sizes bucket=auto weighs: none fused (each all-reduce alone, in
  /// production order), 64 KiB to 64 MiB, and everything in one bucket.
  static constexpr int64_t kCandidates[] = {
      0,       64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20,
      std::numeric_limits<int64_t>::max()};

  static std::string describe(int64_t bytes) {
    if (bytes == 0)
      return "none";
    if (bytes == std::numeric_limits<int64_t>::max())
      return "one bucket";
    if (bytes < (1 << 20))
      return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes >> 20) + " MiB";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(forEachUnscheduledFunction(
            module, functionName, "braid-buckets",
            [&](func::FuncOp function) { return runOn(module, function.getSymName()); })))
      signalPassFailure();
  }

  LogicalResult runOn(ModuleOp module, StringRef name) {
    recordBaseline(module, name, hw);
    if (!mib.isAuto()) {
      int64_t bytes = mib.getCount() << 20;
      return applyUnlessSlower(
          module, hw, name, "braid-buckets",
          "bucket=" + std::to_string(mib.getCount()) + " MiB", force,
          [&](ModuleOp m) { return applyBuckets(m, name, bytes); });
    }
    FailureOr<size_t> best = pickByCost(
        module, hw, std::size(kCandidates),
        [&](ModuleOp m, size_t c) {
          return applyBuckets(m, name, kCandidates[c]);
        },
        name, "braid-buckets",
        [&](size_t c) { return "bucket=" + describe(kCandidates[c]); });
    if (failed(best))
      return failure();
    module->setAttr("braid.bucket_bytes",
                    IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                     kCandidates[*best]));
    return applyBuckets(module, name, kCandidates[*best]);
  }
};
} // namespace
