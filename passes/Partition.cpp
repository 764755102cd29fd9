//===- Partition.cpp - single-device programs to SPMD programs ------------===//
//
// Forward propagation of one mesh axis's sharding through the dimension
// mapping of every op, with the cheapest correct resharding where an op
// cannot honour what it receives. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDPARTITION
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// Whether factor `f` leads every dimension it appears in: only then does a
/// block of it stay one contiguous block of each dimension.
bool majorEverywhere(const DimensionMapping &mapping, int f) {
  auto check = [&](ArrayRef<ValueFactors> values) {
    for (const ValueFactors &dims : values)
      for (const DimFactors &factors : dims)
        if (llvm::is_contained(factors, (unsigned)f) &&
            factors.front() != (unsigned)f)
          return false;
    return true;
  };
  return check(mapping.getOperands()) && check(mapping.getResults());
}

class Partitioner {
public:
  /// Partitions over mesh axis `axis` of `size` ranks. With
  /// `columnParallel` (tp), weights seed the sharding; otherwise (dp) the
  /// function's inputs are split along their first (batch) dimension.
  Partitioner(func::FuncOp function, MeshOp mesh, StringRef axis, int64_t size,
              bool columnParallel)
      : function(function), mesh(mesh), axis(axis), size(size),
        columnParallel(columnParallel), builder(function.getContext()) {}

  LogicalResult run();

private:
  /// Sharded dimension of a value, or -1 when replicated.
  int64_t dimOf(Value v) const {
    auto it = sharded.find(v);
    return it == sharded.end() ? -1 : it->second;
  }
  RankedTensorType localType(RankedTensorType type, int64_t dim) const {
    if (dim < 0)
      return type;
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] /= size;
    return RankedTensorType::get(shape, type.getElementType());
  }
  ArrayAttr axes() { return builder.getStrArrayAttr({axis}); }
  FlatSymbolRefAttr meshRef() {
    return FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  }

  /// Completes a partial sum before `user` reads it.
  Value reduce(Value v, Operation *user);
  /// Gathers a sharded value to the full tensor before `user`.
  Value gather(Value v, Operation *user);
  /// Makes `v` sharded on `dim` for `user`: a weight read only there is
  /// loaded sliced; anything else is sliced locally.
  Value shard(Value v, int64_t dim, Operation *user);
  LogicalResult partition(Operation *op);

  func::FuncOp function;
  MeshOp mesh;
  StringRef axis;
  int64_t size;
  bool columnParallel;
  OpBuilder builder;
  llvm::DenseMap<Value, int64_t> sharded;
  llvm::DenseSet<Value> partial;
  /// Mappings computed on the single-device types, before any rewrite.
  llvm::DenseMap<Operation *, DimensionMapping> mappings;
};

} // namespace

Value Partitioner::reduce(Value v, Operation *user) {
  builder.setInsertionPoint(user);
  Value r = AllReduceOp::create(
      builder, user->getLoc(), v.getType(), meshRef(), axes(), v,
      ReductionKindAttr::get(builder.getContext(), ReductionKind::Sum));
  partial.erase(v);
  return r;
}

Value Partitioner::gather(Value v, Operation *user) {
  int64_t dim = dimOf(v);
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> full(type.getShape());
  full[dim] *= size;
  builder.setInsertionPoint(user);
  return AllGatherOp::create(builder, user->getLoc(),
                             RankedTensorType::get(full, type.getElementType()),
                             meshRef(), axes(), v,
                             builder.getI64IntegerAttr(dim));
}

Value Partitioner::shard(Value v, int64_t dim, Operation *user) {
  auto type = cast<RankedTensorType>(v.getType());
  RankedTensorType local = localType(type, dim);
  if (auto weight = v.getDefiningOp<GetWeightOp>(); weight && v.hasOneUse()) {
    SmallVector<Attribute> entries(type.getRank(), builder.getArrayAttr({}));
    entries[dim] = axes();
    weight.setMeshAttr(meshRef());
    weight.setShardingAttr(builder.getArrayAttr(entries));
    v.setType(local);
    sharded[v] = dim;
    return v;
  }
  // Slice this rank's block: offset rank * (size / ranks) along `dim`.
  builder.setInsertionPoint(user);
  Location loc = user->getLoc();
  Value rank =
      RankOp::create(builder, loc, meshRef(), builder.getStringAttr(axis));
  Value block =
      arith::ConstantIndexOp::create(builder, loc, local.getDimSize(dim));
  Value offset = arith::MulIOp::create(builder, loc, rank, block);
  SmallVector<int64_t> offsets(type.getRank(), 0);
  offsets[dim] = ShapedType::kDynamic;
  SmallVector<int64_t> strides(type.getRank(), 1);
  Value slice = SliceOp::create(builder, loc, local, v, ValueRange{offset},
                                builder.getDenseI64ArrayAttr(offsets),
                                builder.getDenseI64ArrayAttr(local.getShape()),
                                builder.getDenseI64ArrayAttr(strides));
  sharded[slice] = dim;
  return slice;
}

LogicalResult Partitioner::partition(Operation *op) {
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    for (OpOperand &operand : ret->getOpOperands()) {
      Value v = operand.get();
      if (partial.contains(v))
        v = reduce(v, op);
      if (dimOf(v) >= 0)
        v = gather(v, op);
      operand.set(v);
    }
    return success();
  }
  auto mappingOp = dyn_cast<DimensionMappingOpInterface>(op);
  if (!mappingOp || isa<GetWeightOp, ConstantOp, RankOp>(op))
    return success();
  if (op->getNumRegions() != 0)
    return op->emitOpError("braid-partition does not handle regions yet");

  // Partial sums are completed before any use.
  for (OpOperand &operand : op->getOpOperands())
    if (partial.contains(operand.get()))
      operand.set(reduce(operand.get(), op));

  const DimensionMapping &mapping = mappings[op];
  ArrayRef<Factor> factors = mapping.getFactors();
  auto majorFactor = [&](const ValueFactors &dims, int64_t d) -> int {
    return dims[d].empty() ? -1 : dims[d].front();
  };
  // The factor this op is sharded along, from its sharded operands.
  int chosen = -1;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    int64_t d = dimOf(operand);
    if (d < 0)
      continue;
    const ValueFactors &dims = mapping.getOperands()[i];
    int f = majorFactor(dims, d);
    bool usable = f >= 0 && majorEverywhere(mapping, f) &&
                  factors[f].size % size == 0 &&
                  (factors[f].kind == FactorKind::Parallel ||
                   factors[f].kind == FactorKind::Reduction);
    if (usable && (chosen < 0 || chosen == f)) {
      chosen = f;
      continue;
    }
    op->setOperand(i, gather(operand, op));
  }
  // Megatron: a replicated activation times a weight is column parallel.
  if (auto matmul = dyn_cast<MatmulOp>(op);
      matmul && chosen < 0 && columnParallel) {
    auto weight = matmul.getRhs().getDefiningOp<GetWeightOp>();
    const ValueFactors &out = mapping.getResults()[0];
    int n = out.back().empty() ? -1 : out.back().front();
    if (weight && matmul.getRhs().hasOneUse() && n >= 0 &&
        factors[n].size % size == 0 && majorEverywhere(mapping, n))
      chosen = n;
  }
  if (chosen < 0)
    return success();

  // Every operand dimension made of the factor gets it.
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    const ValueFactors &dims = mapping.getOperands()[i];
    for (auto [d, dimFactors] : llvm::enumerate(dims)) {
      if (dimFactors.empty() || (int)dimFactors.front() != chosen)
        continue;
      if (dimOf(operand) != (int64_t)d)
        op->setOperand(i, shard(operand, d, op));
    }
  }
  // Results: sharded where the factor is, partial for a reduction.
  bool reduction = factors[chosen].kind == FactorKind::Reduction;
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    const ValueFactors &dims = mapping.getResults()[r];
    for (auto [d, dimFactors] : llvm::enumerate(dims))
      if (!dimFactors.empty() && (int)dimFactors.front() == chosen) {
        result.setType(localType(cast<RankedTensorType>(result.getType()), d));
        sharded[result] = d;
      }
    if (reduction)
      partial.insert(result);
  }
  // Shapes some ops keep in attributes follow their result.
  if (auto slice = dyn_cast<SliceOp>(op))
    slice.setStaticSizes(slice.getType().getShape());
  if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
    return op->emitOpError("cannot be partitioned along factor f")
           << chosen << " of its dimension mapping";
  return success();
}

LogicalResult Partitioner::run() {
  SmallVector<Operation *> ops;
  for (Operation &op : function.getBody().front())
    ops.push_back(&op);
  for (Operation *op : ops)
    if (auto mappingOp = dyn_cast<DimensionMappingOpInterface>(op))
      mappings[op] = mappingOp.getDimensionMapping();
  // Data parallel: every rank takes its block of each input's batch.
  if (!columnParallel && !ops.empty())
    for (BlockArgument arg : function.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() == 0 || type.getDimSize(0) % size != 0)
        continue;
      Value local = shard(arg, 0, ops.front());
      arg.replaceAllUsesExcept(local, local.getDefiningOp());
    }
  for (Operation *op : ops)
    if (failed(partition(op)))
      return failure();
  function.setType(FunctionType::get(
      function.getContext(), function.getArgumentTypes(),
      function.getBody().front().getTerminator()->getOperandTypes()));
  return success();
}

namespace {
struct PartitionPass : public braid::impl::BraidPartitionBase<PartitionPass> {
  using BraidPartitionBase::BraidPartitionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (preset != "tp" && preset != "dp") {
      module.emitError("braid-partition: preset '")
          << preset << "' is not implemented yet (available: tp, dp)";
      return signalPassFailure();
    }
    int64_t ranks = preset == "tp" ? tpSize : dpSize;
    if (ranks < 1) {
      module.emitError("braid-partition: the number of ranks must be "
                       "positive, got ")
          << ranks;
      return signalPassFailure();
    }
    auto function = module.lookupSymbol<func::FuncOp>(functionName);
    if (!function) {
      module.emitError("braid-partition: no function @") << functionName;
      return signalPassFailure();
    }
    if (!module.getOps<MeshOp>().empty()) {
      module.emitError("braid-partition expects a single-device program "
                       "(this one already declares a mesh)");
      return signalPassFailure();
    }
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto mesh =
        MeshOp::create(b, module.getLoc(), "world", b.getStrArrayAttr({preset}),
                       b.getDenseI64ArrayAttr({ranks}));
    Partitioner partitioner(function, mesh,
                            cast<StringAttr>(mesh.getAxisNames()[0]).getValue(),
                            ranks, /*columnParallel=*/preset == "tp");
    if (failed(partitioner.run()))
      signalPassFailure();
  }
};
} // namespace
