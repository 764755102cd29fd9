//===- Partition.cpp - single-device programs to SPMD programs ------------===//
//
// Forward propagation of shardings through the dimension mapping of every
// op, one mesh axis at a time, with the cheapest correct resharding where an
// op cannot honour what it receives. See docs/partitioning.md and the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "dialects/braid/Fusion.h"
#include "passes/IRHelpers.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDPARTITION
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

static constexpr StringLiteral kShardingAttrName = "braid.sharding";

/// The weight read `v` is: a braid.get_weight's result, or a float-to-float
/// cast of one (braid-mixed-precision's reads, which convert a weight where
/// it enters).
static GetWeightOp weightReadOf(Value v) {
  if (auto read = v.getDefiningOp<GetWeightOp>())
    return read;
  auto convert = v.getDefiningOp<CastOp>();
  if (!convert || !isa<FloatType>(getElementTypeOrSelf(v.getType())) ||
      !isa<FloatType>(getElementTypeOrSelf(convert.getInput().getType())))
    return {};
  return convert.getInput().getDefiningOp<GetWeightOp>();
}

namespace {

/// How the partitioning along one mesh axis is seeded (the presets).
struct AxisStrategy {
  std::string axis;
  int64_t size = 1;
  /// Split dimension `inputDim` of every function input (dp: 0, cp: 1).
  int64_t inputDim = -1;
  /// Only where it divides (ep: the batch is split when it can be; the
  /// experts are split regardless).
  bool inputDimIfDivisible = false;
  /// Megatron: an op contracting a weight read only there computes the
  /// weight's own output factor (a matmul's columns) sharded unless its
  /// contraction already is.
  bool columnParallel = false;
  /// Megatron sequence parallelism: partial sums are reduce-scattered along
  /// the token dimension instead of all-reduced.
  bool sequenceParallel = false;
  /// Context parallelism: a partial sum of activations (the backward's
  /// gradient of keys and values gathered along the sequence) is
  /// reduce-scattered along its sequence dimension, the transpose of that
  /// all-gather, instead of all-reduced and computed whole on every rank.
  bool contextParallel = false;
  /// Expert parallelism: ops contracting expert weights are split by the
  /// factor the weight shares with the activations (the experts), and ops
  /// routing tokens split their tokens.
  bool expertParallel = false;
  /// ZeRO stage 1 (dp of a training step): zero-initialized state weights
  /// (optimizer moments) are stored split along their zeroDim, and a
  /// partial value (a weight gradient) read by an op computing a value of
  /// its own shape is reduce-scattered along that dimension into it, so the
  /// update runs on this rank's slice and only the parameter is gathered.
  bool zero = false;
  /// ZeRO stage 3 (FSDP): the parameters (every state weight) are stored
  /// split too and all-gathered where the step reads them whole.
  bool zeroParameters = false;
  /// How many ways the axes partitioned before this one split the inputs'
  /// batch (dp) and sequence (cp): this rank's tokens are [B / batchSplit,
  /// S / sequenceSplit].
  int64_t batchSplit = 1, sequenceSplit = 1;
};

/// How a value is split along one mesh axis: dimension `dim` viewed as
/// [outer, size / outer], the second part cut into one contiguous block per
/// rank for each of the `outer` indices of the first. `outer == 1` is the
/// usual contiguous block; `outer > 1` arises where a split factor is merged
/// below another one (kv heads below the batch in LLaMA's repeated keys).
struct Shard {
  int64_t dim = -1;
  int64_t outer = 1;
  bool operator==(const Shard &other) const {
    return dim == other.dim && outer == other.outer;
  }
};

/// The factor an op is computed in blocks of, split `within` ways (see
/// FactorBlock).
struct FactorSplit {
  int factor = -1;
  int64_t within = 1;
};

/// The shard of a value whose dimensions are `dims` when the op computes a
/// block of `split`, or std::nullopt when no dimension holds the factor.
static std::optional<Shard> shardOfSplit(const DimensionMapping &mapping,
                                         const ValueFactors &dims,
                                         FactorSplit split) {
  for (auto [d, dimFactors] : llvm::enumerate(dims)) {
    int64_t prefix = 1;
    for (unsigned f : dimFactors) {
      if ((int)f == split.factor)
        return Shard{(int64_t)d, prefix * split.within};
      prefix *= mapping.getFactors()[f].size;
    }
  }
  return std::nullopt;
}

/// The factor split that a value shard `shard` of a value with dimensions
/// `dims` is, over `ranks` ranks, or std::nullopt when the shard is no block
/// of any factor (a contiguous half of a dimension of 3 x 4 elements).
static std::optional<FactorSplit> splitOfShard(const DimensionMapping &mapping,
                                               const ValueFactors &dims,
                                               Shard shard, int64_t ranks) {
  if (shard.dim < 0 || shard.dim >= (int64_t)dims.size())
    return std::nullopt;
  int64_t prefix = 1;
  for (unsigned f : dims[shard.dim]) {
    int64_t size = mapping.getFactors()[f].size;
    if (shard.outer % prefix == 0) {
      int64_t within = shard.outer / prefix;
      if (size % within == 0 && (size / within) % ranks == 0)
        return FactorSplit{(int)f, within};
    }
    prefix *= size;
  }
  return std::nullopt;
}

/// Where the slots of a value came from: the expert choices that routed a
/// block of tokens into them, and how that block was cut (`within`, see
/// FactorBlock), which a combine of the same tokens must cut alike.
struct Routing {
  Value choices;
  int64_t within = 1;
  /// The dimension of the value that holds the slots.
  int64_t dim = -1;
};

class AxisPartitioner {
public:
  /// `storedSharded`: state weights to load sharded before anything else
  /// (a previous attempt found them set sharded; see run()).
  AxisPartitioner(func::FuncOp function, MeshOp mesh, AxisStrategy strategy,
                  bool allowReplicated,
                  const llvm::MapVector<StringAttr, Shard> &storedSharded,
                  bool byCost)
      : function(function), mesh(mesh), strategy(std::move(strategy)),
        allowReplicated(allowReplicated), storedSharded(storedSharded),
        byCost(byCost), builder(function.getContext()) {}

  /// Partitions the function along the axis. State weights (training) are
  /// stored the way the step reads them: a parameter that a column-parallel
  /// matmul reads first is loaded, updated and stored sharded. A state
  /// weight read whole but set from a sharded value (an optimizer moment,
  /// read only by the update) is listed in `wantedSharded()`; the caller
  /// then partitions the original function again with those weights in
  /// `storedSharded`, so that they too stay sharded instead of being
  /// gathered at every step.
  LogicalResult run();
  /// Says what ran whole, or that nothing was partitioned (an error unless
  /// replication was accepted). Once, after the last run().
  LogicalResult report();
  const llvm::MapVector<StringAttr, Shard> &wantedSharded() const {
    return wantSharded;
  }
  /// Whether an op took the split of an operand other than the first
  /// sharded one because it moves less (see cheapestCarried).
  bool choseOtherThanFirst() const { return choseByCost; }

private:
  int64_t size() const { return strategy.size; }
  /// How a value is sharded on this axis, or std::nullopt when it is whole.
  std::optional<Shard> shardOf(Value v) const {
    auto it = sharded.find(v);
    if (it == sharded.end())
      return std::nullopt;
    return it->second;
  }
  void setShard(Value v, Shard shard) {
    sharded[v] = shard;
    partitionedSomething = true;
  }
  /// `type` with dimension `dim` divided (split) or multiplied by the axis
  /// size.
  RankedTensorType resize(RankedTensorType type, int64_t dim, bool split) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = split ? shape[dim] / size() : shape[dim] * size();
    return RankedTensorType::get(shape, type.getElementType());
  }
  ArrayAttr axes() { return builder.getStrArrayAttr({strategy.axis}); }
  FlatSymbolRefAttr meshRef() {
    return FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  }
  /// The value a local slice made by this pass was cut from (to compare the
  /// expert choices a dispatch and a combine route by).
  Value rootOf(Value v) const {
    auto it = sliceSource.find(v);
    return it == sliceSource.end() ? v : it->second;
  }
  /// The expert choices `v` holds, to compare routings: its root, seen
  /// through reshapes. The gradients read [T, k] choices as one (token,
  /// choice) pair per row, [T * k, 1]; a dispatch fills slots in the
  /// row-major order of the choices, which a reshape keeps, and a block of
  /// tokens is the same block of pairs.
  Value choicesOf(Value v) const {
    for (v = rootOf(v); auto reshape = v.getDefiningOp<ReshapeOp>();)
      v = rootOf(reshape.getInput());
    return v;
  }

  /// `v` reshaped so that every dimension `d` listed in `outers` becomes
  /// [outers[d], size / outers[d]] (only where outers[d] > 1), before
  /// `user`; `position[d]` receives the index of d's second part.
  Value expand(Value v, ArrayRef<std::pair<int64_t, int64_t>> outers,
               SmallVectorImpl<int64_t> &position, Operation *user);
  /// `v` reshaped to `type` before `user` (no-op when already).
  Value reshapeTo(Value v, RankedTensorType type, Operation *user);

  /// Completes the partial value `v` with its combiner before its first
  /// user `user` and makes every user read the completed value: an
  /// all-reduce, or with sequence parallelism a reduce-scatter along the
  /// token dimension.
  Value complete(Value v, Operation *user);
  /// The dimension of `type` that holds the program's tokens, with the
  /// batch outer to it where tokens are flattened ([B * S, ...]), when a
  /// partial value of that type is reduce-scattered there (sequence or
  /// context parallelism); std::nullopt to all-reduce it.
  std::optional<Shard> tokenShard(RankedTensorType type) const;
  /// The whole tensor of the sharded value `v`, gathered before `user`.
  FailureOr<Value> gather(Value v, Operation *user);
  /// `v` sharded as `want` for `user`: kept, exchanged from another sharded
  /// dimension (all_to_all), loaded sharded (a weight read only there), or
  /// sliced locally from this rank's index.
  FailureOr<Value> shardOn(Value v, Shard want, Operation *user);
  /// This rank's block of the whole value `v` as `want`, sliced locally.
  Value sliceLocally(Value v, Shard want, Operation *user);
  /// `v` computed on this rank's block `want` instead of sliced from the
  /// whole, where v is made elementwise from values that are constant or
  /// size 1 along the cut dimension (a one-hot of the labels, a broadcast
  /// of a per-position scale: large whole, cheap as a block); null
  /// otherwise.
  Value computeBlock(Value v, Shard want, Operation *user);
  /// Ops whose whole result computeBlock replaced for a reader; erased at
  /// the end when nothing else reads them.
  llvm::SetVector<Operation *> blockedWholes;
  /// Makes `v` whole on this axis for `user` (completed and gathered).
  FailureOr<Value> replicate(Value v, Operation *user);
  /// This rank's index along the axis times `block`, before `user`.
  Value blockOffset(int64_t block, Operation *user);
  /// Whether `v` is a weight that `user` reads before anything else does:
  /// read only there, or a whole read of a state weight (the training
  /// step's parameters, read by the forward pass, the backward pass and the
  /// update) whose first reader is `user`.
  bool readFirstBy(Value v, Operation *user);
  /// Makes the read `weight` load this rank's block `want` on this axis.
  void loadSharded(GetWeightOp weight, Shard want);
  /// Gives a state weight its next value, stored as it is read.
  LogicalResult partitionSetWeight(SetWeightOp set);
  /// Slots that this rank's tokens filled are in that block's order (each
  /// source rank's slots after the previous one's, padded to its capacity),
  /// not in the order a dispatch of all tokens fills: an error when `op`
  /// would pair them slot by slot with slots not routed the same way.
  LogicalResult checkSlotOrders(Operation *op, const DimensionMapping &mapping);
  /// ZeRO-3: every parameter read sharded is all-gathered right before its
  /// first use in the forward pass, and again before its first use in the
  /// backward pass, for the ops that read it whole there; the update (ops
  /// computing a value of the parameter's shape) reads the shard.
  LogicalResult gatherParameters();
  /// ZeRO: the dimension a value of `type` is split along (the first that
  /// divides over the axis), or -1.
  int64_t zeroDim(RankedTensorType type) const {
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.getDimSize(d) > 1 && type.getDimSize(d) % size() == 0)
        return d;
    return -1;
  }
  /// This rank's block `want` of the sum (or mean) of the partial `v`,
  /// reduce-scattered before `user`; `v` stays partial for other readers.
  Value reduceScatter(Value v, Shard want, Operation *user);

  /// Whether `split` of `op` can be computed in blocks on this axis.
  bool usable(Operation *op, const DimensionMapping &mapping,
              FactorSplit split) {
    return whyNotUsable(op, mapping, split).empty();
  }
  /// Why `split` cannot be, for diagnostics; empty when it can.
  std::string whyNotUsable(Operation *op, const DimensionMapping &mapping,
                           FactorSplit split);
  /// The split of the factor that `shard` of operand `i` is, if usable.
  std::optional<FactorSplit> carriedSplit(Operation *op,
                                          const DimensionMapping &mapping,
                                          unsigned i, Shard shard);
  /// The operand of `op` that is a weight read there first, whole, which
  /// the op contracts (the weight of a matmul), or -1 (see readFirstBy).
  int contractedWeight(Operation *op, const DimensionMapping &mapping);
  /// Whether computing `value` sharded as `shard` pays: following it
  /// through the ops that can carry the split (parallel factors), it ends in
  /// a contraction or reduction over it (Megatron's row-parallel pair, an
  /// all-reduce of a smaller partial), a function result or a state
  /// weight's next value, never in an op
  /// that needs it whole (which would gather it right back: a column-parallel
  /// projection feeding a LayerNorm or a router's top-k is better
  /// replicated). Looks ahead through consumers, so a producer's choice
  /// follows what its users need.
  bool splitPays(Value value, Shard shard, unsigned depth = 0);
  /// Elements of the sharded operands of `op` that computing it in blocks
  /// of `split` moves: an operand sharded otherwise is exchanged (its
  /// block) or gathered (every other rank's block), unless that resharding
  /// exists already.
  int64_t reshardingCost(Operation *op, const DimensionMapping &mapping,
                         FactorSplit split);
  /// The gather of the sharded `v` made already that `user` may read, or
  /// null.
  Value ownWhole(Value v, Operation *user);
  /// Whether gather(v, user) would make no collective: a gather of `v`, or
  /// of the value a reshape computed `v` from, exists for it.
  bool hasWhole(Value v, Operation *user);
  /// The op computing the training step's loss when the function is one.
  Operation *loss = nullptr;
  /// Of the factor splits that the sharded operands of `op` carry, the one
  /// with the smallest reshardingCost (the first on a tie), or std::nullopt.
  /// In the backward pass under sequence parallelism, the gradient arrives
  /// split by tokens and the weight by features: Megatron-SP's choice,
  /// gathering the gradient, is the cheaper one where the weight is larger
  /// than the gradient's block times the ranks, and keeps the backward's
  /// activations split by features as the forward pass stored them.
  std::optional<FactorSplit> cheapestCarried(Operation *op,
                                             const DimensionMapping &mapping);
  /// The combiner of the partial operands of `op` when they may flow
  /// through it uncompleted (see DimensionMappingOpInterface::
  /// propagatesPartialSums), or std::nullopt when they are completed first.
  std::optional<ReductionKind> partialThrough(Operation *op,
                                              const DimensionMapping &mapping);
  /// The factor `op` is computed in blocks along: requested by an
  /// annotation, seeded by the strategy, or carried by a sharded operand.
  FailureOr<FactorSplit> chooseFactor(Operation *op,
                                      const DimensionMapping &mapping);
  LogicalResult partition(Operation *op);
  /// Megatron's vocabulary-parallel embedding: a trained table that `gather`
  /// reads first, by the token ids, is loaded split along the gathered
  /// axis; each rank looks up the indices in its block (the others clamped
  /// and zeroed), and the result is a partial sum. False where it does not
  /// apply.
  bool partitionVocabParallel(GatherOp gather);
  /// The gradient of a vocabulary-parallel embedding (Megatron's masked
  /// local scatter): a scatter_add of the same token ids into a table of
  /// the split table's type adds only the rows of this rank's block, into
  /// that block, so the table's gradient, its moments and its update are
  /// split like the table and no rank builds the whole [V, h]. False where
  /// no gather of those ids was made vocabulary-parallel.
  bool partitionVocabParallel(ScatterAddOp scatter);
  /// Indices into this rank's block of `rows` rows along the split
  /// dimension, before `user`: `indices` minus the block's first row,
  /// clamped into the block, and whether each index was in it.
  std::pair<Value, Value> blockIndices(Value indices, int64_t rows,
                                       Operation *user);
  /// The token ids that `indices` is a view of (an argument, perhaps
  /// reshaped or sliced by an outer axis), or null.
  static BlockArgument tokenIdsOf(Value indices);
  /// Tables (their whole type and split dimension) whose gathers by these
  /// token ids were made vocabulary-parallel on this axis.
  llvm::DenseSet<std::tuple<Value, Type, int64_t>> vocabParallelTables;
  LogicalResult seedArguments();
  /// Honours a `braid.sharding` annotation that leaves the result of `op`
  /// whole on this axis.
  LogicalResult honourReplicatedAnnotation(Operation *op);
  /// Records that the strategy wanted `op` split but it runs whole.
  void leftWhole(Operation *op, const Twine &why);

  func::FuncOp function;
  MeshOp mesh;
  AxisStrategy strategy;
  bool allowReplicated;
  const llvm::MapVector<StringAttr, Shard> &storedSharded;
  /// cheapestCarried compares costs; otherwise the first sharded operand's
  /// split is taken.
  bool byCost;
  bool choseByCost = false;
  OpBuilder builder;
  /// State weights read sharded on this axis, with how.
  llvm::DenseMap<StringAttr, Shard> stateShards;
  /// State weights read whole but set sharded (see run()).
  llvm::MapVector<StringAttr, Shard> wantSharded;
  /// Reduce-scatters of partial values: they read the partial value itself,
  /// which completing it for other readers must not replace.
  llvm::SmallPtrSet<Operation *, 8> partialReaders;
  llvm::DenseMap<Value, Shard> sharded;
  /// Partial values and the combiner that completes each.
  llvm::DenseMap<Value, ReductionKind> partial;
  /// Values whose slot dimension holds the slots that this rank's block of
  /// tokens filled, in that block's order: the root of the expert choices
  /// that routed them. Only a combine of the same tokens may read them.
  llvm::DenseMap<Value, Routing> routing;
  llvm::DenseMap<Value, Value> sliceSource;
  /// Reshardings already made: (value, dimension or -1 for whole, outer).
  llvm::DenseMap<std::tuple<Value, int64_t, int64_t>, Value> resharded;
  /// Mappings computed before any rewrite on this axis.
  llvm::DenseMap<Operation *, DimensionMapping> mappings;
  /// Ops asked to compute their result split on a dimension because an
  /// input they read could not be split where the preset splits inputs.
  llvm::DenseMap<Operation *, int64_t> resultSeeds;
  /// The batch and sequence sizes of the program's token inputs ([B, S]):
  /// a dimension of B * S elements holds flattened tokens.
  int64_t tokenBatch = 1, tokenSequence = 1;
  /// The types of the program's weights (context parallelism keeps their
  /// gradients' partial sums whole).
  llvm::DenseSet<Type> weightTypes;
  /// Whether anything is split, partial or exchanged on this axis.
  bool partitionedSomething = false;
  /// Answers of splitPays, by (value, dimension, outer).
  llvm::DenseMap<std::tuple<Value, int64_t, int64_t>, bool> paysCache;
  /// Ops the strategy wanted split that run whole, with why.
  SmallVector<std::pair<Operation *, std::string>> wholeOps;
};

} // namespace

Value AxisPartitioner::blockOffset(int64_t block, Operation *user) {
  builder.setInsertionPoint(user);
  Location loc = user->getLoc();
  Value rank = RankOp::create(builder, loc, meshRef(),
                              builder.getStringAttr(strategy.axis));
  Value blockSize = arith::ConstantIndexOp::create(builder, loc, block);
  return arith::MulIOp::create(builder, loc, rank, blockSize);
}

Value AxisPartitioner::reshapeTo(Value v, RankedTensorType type,
                                 Operation *user) {
  if (v.getType() == type)
    return v;
  builder.setInsertionPoint(user);
  return ReshapeOp::create(builder, user->getLoc(), type, v);
}

Value AxisPartitioner::expand(Value v,
                              ArrayRef<std::pair<int64_t, int64_t>> outers,
                              SmallVectorImpl<int64_t> &position,
                              Operation *user) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  position.assign(type.getRank(), -1);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t outer = 1;
    for (auto [dim, o] : outers)
      if (dim == d)
        outer = o;
    if (outer > 1)
      shape.push_back(outer);
    position[d] = shape.size();
    shape.push_back(type.getDimSize(d) / outer);
  }
  return reshapeTo(v, RankedTensorType::get(shape, type.getElementType()),
                   user);
}

std::optional<Shard> AxisPartitioner::tokenShard(RankedTensorType type) const {
  int64_t rank = type.getRank();
  // Tokens flattened as [batch * sequence] are split along the sequence
  // like the unflattened ones: strided by the batch.
  auto outerOf = [&](int64_t d) -> int64_t {
    return tokenBatch > 1 && type.getDimSize(d) == tokenBatch * tokenSequence
               ? tokenBatch
               : 1;
  };
  auto divides = [&](int64_t d) {
    return (type.getDimSize(d) / outerOf(d)) % size() == 0;
  };
  if (strategy.sequenceParallel) {
    // Megatron's activations are [..., tokens, hidden].
    int64_t tokens = rank - 2;
    if (tokens >= 0 && divides(tokens))
      return Shard{tokens, outerOf(tokens)};
    return std::nullopt;
  }
  if (!strategy.contextParallel || rank < 2 || tokenSequence < 2)
    return std::nullopt;
  // A weight's gradient is no activation: it is all-reduced whole.
  if (weightTypes.contains(type))
    return std::nullopt;
  // Flattened tokens lead ([B * S, hidden], B this rank's part of the
  // batch where dp split it first).
  if (rank == 2) {
    int64_t lead = type.getDimSize(0);
    if (lead < tokenSequence || lead % tokenSequence != 0 ||
        tokenBatch % (lead / tokenSequence) != 0 || tokenSequence % size() != 0)
      return std::nullopt;
    return Shard{0, lead / tokenSequence};
  }
  // Otherwise the batch leads and the sequence follows it somewhere: heads
  // first ([B, H, S, D]: second to last), or heads after ([B, S, H, D]).
  int64_t tokens = -1;
  if (type.getDimSize(rank - 2) == tokenSequence)
    tokens = rank - 2;
  else
    for (int64_t d = 1; d < rank && tokens < 0; ++d)
      if (type.getDimSize(d) == tokenSequence)
        tokens = d;
  if (tokens < 0 || !divides(tokens))
    return std::nullopt;
  return Shard{tokens, 1};
}

Value AxisPartitioner::complete(Value v, Operation *user) {
  builder.setInsertionPoint(user);
  Location loc = user->getLoc();
  auto type = cast<RankedTensorType>(v.getType());
  auto combiner = ReductionKindAttr::get(builder.getContext(), partial.at(v));
  Operation *collective;
  assert(!shardOf(v) && "a partial value is never split");
  if (std::optional<Shard> shard = tokenShard(type)) {
    int64_t tokens = shard->dim, outer = shard->outer;
    SmallVector<int64_t> position;
    Value expanded = expand(v, {{tokens, outer}}, position, user);
    auto expandedType = cast<RankedTensorType>(expanded.getType());
    builder.setInsertionPoint(user);
    collective = ReduceScatterOp::create(
        builder, loc, resize(expandedType, position[tokens], /*split=*/true),
        meshRef(), axes(), expanded, combiner,
        builder.getI64IntegerAttr(position[tokens]));
    Value r = reshapeTo(collective->getResult(0),
                        resize(type, tokens, /*split=*/true), user);
    v.replaceUsesWithIf(r, [&](OpOperand &use) {
      return use.getOwner() != collective &&
             use.getOwner() != expanded.getDefiningOp();
    });
    setShard(r, Shard{tokens, outer});
    partial.erase(v);
    return r;
  }
  collective =
      AllReduceOp::create(builder, loc, type, meshRef(), axes(), v, combiner);
  Value r = collective->getResult(0);
  v.replaceUsesWithIf(r, [&](OpOperand &use) {
    return use.getOwner() != collective &&
           !partialReaders.contains(use.getOwner());
  });
  partial.erase(v);
  return r;
}

Value AxisPartitioner::reduceScatter(Value v, Shard want, Operation *user) {
  if (auto it = resharded.find({v, want.dim, want.outer});
      it != resharded.end())
    return it->second;
  auto type = cast<RankedTensorType>(v.getType());
  builder.setInsertionPoint(user);
  auto scatter = ReduceScatterOp::create(
      builder, user->getLoc(), resize(type, want.dim, /*split=*/true),
      meshRef(), axes(), v,
      ReductionKindAttr::get(builder.getContext(), partial.at(v)),
      builder.getI64IntegerAttr(want.dim));
  partialReaders.insert(scatter);
  Value r = scatter.getResult();
  setShard(r, want);
  resharded[{v, want.dim, want.outer}] = r;
  return r;
}

FailureOr<Value> AxisPartitioner::gather(Value v, Operation *user) {
  Shard shard = *shardOf(v);
  if (routing.count(v))
    return user->emitOpError("braid-partition: this op needs whole the "
                             "expert slots that a block of tokens filled "
                             "on axis '")
           << strategy.axis << "'; only a braid.moe_combine of the same "
           << "tokens can read them";
  auto type = cast<RankedTensorType>(v.getType());
  if (Value whole = ownWhole(v, user))
    return whole;
  // A reshape this pass computed on blocks of a value gathered already:
  // the reshape of that whole, so that the gather is shared (a weight
  // gradient reads the tokens flattened, [B * S, h], the data gradient
  // [B, S, h]).
  if (auto reshape = v.getDefiningOp<ReshapeOp>();
      reshape && shardOf(reshape.getInput()) &&
      !routing.count(reshape.getInput()) &&
      hasWhole(reshape.getInput(), user)) {
    FailureOr<Value> input = gather(reshape.getInput(), user);
    if (failed(input))
      return failure();
    Value g = reshapeTo(*input, resize(type, shard.dim, /*split=*/false),
                        user);
    resharded[{v, -1, 1}] = g;
    return g;
  }
  SmallVector<int64_t> position;
  Value expanded = expand(v, {{shard.dim, shard.outer}}, position, user);
  auto expandedType = cast<RankedTensorType>(expanded.getType());
  builder.setInsertionPoint(user);
  Value g = AllGatherOp::create(
      builder, user->getLoc(),
      resize(expandedType, position[shard.dim], /*split=*/false), meshRef(),
      axes(), expanded, builder.getI64IntegerAttr(position[shard.dim]));
  // Gathered before and not reused here (ownWhole: Megatron-SP's backward
  // pass; gatherParameters: ZeRO-3's backward pass): a second gather of
  // the same block, which CSE must not merge with the first.
  auto gatherOp = cast<AllGatherOp>(g.getDefiningOp());
  if (firstSameGather(gatherOp))
    gatherOp->setAttr(kRegatherAttrName, builder.getUnitAttr());
  g = reshapeTo(g, resize(type, shard.dim, /*split=*/false), user);
  resharded[{v, -1, 1}] = g;
  return g;
}

FailureOr<Value> AxisPartitioner::replicate(Value v, Operation *user) {
  if (partial.contains(v))
    v = complete(v, user);
  if (!shardOf(v))
    return v;
  return gather(v, user);
}

/// The elementwise ops (numpy broadcasting) and broadcast_to, which
/// computeBlock recomputes on a block.
static bool isBroadcastElementwise(Operation *op) {
  return op && op->getNumResults() == 1 && op->getNumRegions() == 0 &&
         isa<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, ErfOp, SigmoidOp,
             SiluOp, ReluOp, GeluOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp,
             MinOp, CompareOp, SelectOp, CastOp, BroadcastToOp>(op);
}

/// Whether `v` is size 1 along result dimension `dim` of a result of rank
/// `rank` (or lacks it), a constant, or made by isBroadcastElementwise ops
/// from such values.
static bool generatedAlong(Value v, int64_t dim, int64_t rank,
                           unsigned depth = 0) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || depth > 16)
    return false;
  int64_t own = dim - (rank - type.getRank());
  if (own < 0 || type.getDimSize(own) == 1)
    return true;
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<ConstantOp>(def))
    return true;
  if (!isBroadcastElementwise(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return generatedAlong(operand, own, type.getRank(), depth + 1);
  });
}

Value AxisPartitioner::computeBlock(Value v, Shard want, Operation *user) {
  Operation *def = v.getDefiningOp();
  auto type = cast<RankedTensorType>(v.getType());
  if (want.outer != 1 || !isBroadcastElementwise(def) ||
      !generatedAlong(v, want.dim, type.getRank()) ||
      llvm::any_of(def->getOperands(), [&](Value operand) {
        return shardOf(operand) || partial.contains(operand);
      }))
    return Value();
  SmallVector<Value> operands;
  for (Value operand : def->getOperands()) {
    auto operandType = cast<RankedTensorType>(operand.getType());
    int64_t own = want.dim - (type.getRank() - operandType.getRank());
    if (own < 0 || operandType.getDimSize(own) == 1) {
      operands.push_back(operand);
      continue;
    }
    FailureOr<Value> block = shardOn(operand, Shard{own, 1}, user);
    if (failed(block))
      return Value();
    operands.push_back(*block);
  }
  builder.setInsertionPoint(user);
  Operation *clone = builder.clone(*def);
  clone->setOperands(operands);
  clone->getResult(0).setType(resize(type, want.dim, /*split=*/true));
  blockedWholes.insert(def);
  return clone->getResult(0);
}

Value AxisPartitioner::sliceLocally(Value v, Shard want, Operation *user) {
  if (Value block = computeBlock(v, want, user))
    return block;
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> position;
  Value expanded = expand(v, {{want.dim, want.outer}}, position, user);
  auto expandedType = cast<RankedTensorType>(expanded.getType());
  int64_t dim = position[want.dim];
  RankedTensorType local = resize(expandedType, dim, /*split=*/true);
  Value offset = blockOffset(local.getDimSize(dim), user);
  SmallVector<int64_t> offsets(expandedType.getRank(), 0);
  offsets[dim] = ShapedType::kDynamic;
  SmallVector<int64_t> strides(expandedType.getRank(), 1);
  Value slice = SliceOp::create(builder, user->getLoc(), local, expanded,
                                ValueRange{offset},
                                builder.getDenseI64ArrayAttr(offsets),
                                builder.getDenseI64ArrayAttr(local.getShape()),
                                builder.getDenseI64ArrayAttr(strides));
  return reshapeTo(slice, resize(type, want.dim, /*split=*/true), user);
}

FailureOr<Value> AxisPartitioner::shardOn(Value v, Shard want,
                                          Operation *user) {
  std::optional<Shard> current = shardOf(v);
  if (current == want)
    return v;
  if (auto it = resharded.find({v, want.dim, want.outer});
      it != resharded.end())
    return it->second;
  auto type = cast<RankedTensorType>(v.getType());
  Location loc = user->getLoc();
  // A broadcast sharded on another dimension: broadcast its input's block
  // again (a per-position scale, [B, S / n, 1] -> [B, S / n, V], wanted
  // split by V: gathering the [B, S, 1] moves V times less than an
  // all-to-all of the broadcast).
  if (auto broadcast = v.getDefiningOp<BroadcastToOp>();
      broadcast && current && current->dim != want.dim && want.outer == 1) {
    Value input = broadcast.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    int64_t own = want.dim - (type.getRank() - inputType.getRank());
    FailureOr<Value> block =
        own < 0 || inputType.getDimSize(own) == 1
            ? replicate(input, user)
            : shardOn(input, Shard{own, 1}, user);
    if (failed(block))
      return failure();
    builder.setInsertionPoint(user);
    Value r = BroadcastToOp::create(
        builder, loc,
        resize(resize(type, current->dim, /*split=*/false), want.dim,
               /*split=*/true),
        *block);
    setShard(r, want);
    resharded[{v, want.dim, want.outer}] = r;
    return r;
  }
  // Sharded on another dimension: one all-to-all moves the split (around
  // the views that make both splits contiguous).
  if (current && current->dim != want.dim) {
    SmallVector<int64_t> position;
    Value expanded = expand(
        v, {{current->dim, current->outer}, {want.dim, want.outer}}, position,
        user);
    auto expandedType = cast<RankedTensorType>(expanded.getType());
    int64_t split = position[want.dim], concat = position[current->dim];
    builder.setInsertionPoint(user);
    Value exchanged = AllToAllOp::create(
        builder, loc,
        resize(resize(expandedType, concat, /*split=*/false), split,
               /*split=*/true),
        meshRef(), axes(), expanded, builder.getI64IntegerAttr(split),
        builder.getI64IntegerAttr(concat));
    exchanged = reshapeTo(
        exchanged,
        resize(resize(type, current->dim, /*split=*/false), want.dim,
               /*split=*/true),
        user);
    setShard(exchanged, want);
    // A copy: inserting may grow the map and move the entry `it` points at.
    if (auto it = routing.find(v); it != routing.end()) {
      Routing slots = it->second;
      routing[exchanged] = slots;
    }
    resharded[{v, want.dim, want.outer}] = exchanged;
    return exchanged;
  }
  if (routing.count(v))
    return user->emitOpError("braid-partition: cannot slice expert slots "
                             "that a block of tokens filled");
  // The same dimension cut another way: gather, then cut.
  if (current) {
    FailureOr<Value> whole = gather(v, user);
    if (failed(whole))
      return failure();
    return shardOn(*whole, want, user);
  }
  // A weight read here first is loaded sharded.
  if (GetWeightOp weight = weightReadOf(v);
      weight && readFirstBy(v, user) && want.outer == 1) {
    loadSharded(weight, want);
    if (v != weight.getResult()) {
      v.setType(resize(cast<RankedTensorType>(v.getType()), want.dim,
                       /*split=*/true));
      setShard(v, want);
    }
    return v;
  }
  // Anything else: this rank's block, from its index along the axis.
  Value slice = sliceLocally(v, want, user);
  setShard(slice, want);
  sliceSource[slice] = rootOf(v);
  resharded[{v, want.dim, want.outer}] = slice;
  return slice;
}

/// Whether `weight` reads a whole `state` weight (no block).
static bool readsWholeState(GetWeightOp weight) {
  if (weight.getBlock())
    return false;
  auto decl = SymbolTable::lookupNearestSymbolFrom<WeightOp>(
      weight, weight.getNameAttr());
  return decl && decl.getState();
}

/// `entries` (a weight's sharding, or none) with `axis` appended to
/// dimension `dim`'s axes.
static ArrayAttr withAxis(Builder &b, ArrayAttr entries, int64_t rank,
                          int64_t dim, StringRef axis) {
  SmallVector<Attribute> all;
  if (entries)
    all.assign(entries.begin(), entries.end());
  else
    all.assign(rank, b.getArrayAttr({}));
  SmallVector<Attribute> dimAxes(cast<ArrayAttr>(all[dim]).getValue());
  dimAxes.push_back(b.getStringAttr(axis));
  all[dim] = b.getArrayAttr(dimAxes);
  return b.getArrayAttr(all);
}

bool AxisPartitioner::readFirstBy(Value v, Operation *user) {
  GetWeightOp weight = weightReadOf(v);
  if (!weight || shardOf(v) || shardOf(weight.getResult()))
    return false;
  // `x` is read by `user` first (`through`, the cast between, aside).
  auto first = [&](Value x, Operation *reader, Operation *through) {
    if (x.hasOneUse())
      return *x.getUsers().begin() == reader;
    return readsWholeState(weight) &&
           llvm::all_of(x.getUsers(), [&](Operation *other) {
             return other == reader || other == through ||
                    user->isBeforeInBlock(other);
           });
  };
  if (v == weight.getResult())
    return first(v, user, nullptr);
  Operation *convert = v.getDefiningOp();
  return first(v, user, nullptr) &&
         first(weight.getResult(), convert, convert);
}

void AxisPartitioner::loadSharded(GetWeightOp weight, Shard want) {
  Value v = weight.getResult();
  auto type = cast<RankedTensorType>(v.getType());
  weight.setMeshAttr(meshRef());
  weight.setShardingAttr(withAxis(builder, weight.getShardingAttr(),
                                  type.getRank(), want.dim, strategy.axis));
  v.setType(resize(type, want.dim, /*split=*/true));
  setShard(v, want);
  if (readsWholeState(weight))
    stateShards[weight.getNameAttr().getAttr()] = want;
}

/// The op that computes the loss of a training step (its first result),
/// through the collectives that complete it on an earlier axis (a fused
/// cross entropy, or the vocabulary-parallel loss's mean): the backward
/// pass starts after it. Null without results, and with `stepOnly` unless
/// the function is a training step (a scalar first result, weights set).
static Operation *lossOf(func::FuncOp function, bool stepOnly) {
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto scalar = ret.getNumOperands() == 0
                    ? nullptr
                    : dyn_cast<RankedTensorType>(ret.getOperand(0).getType());
  if (!scalar || (stepOnly && (scalar.getRank() != 0 ||
                               body.getOps<SetWeightOp>().empty())))
    return nullptr;
  Value v = ret.getOperand(0);
  while (auto reduce = v.getDefiningOp<AllReduceOp>())
    v = reduce.getInput();
  return v.getDefiningOp();
}

LogicalResult AxisPartitioner::gatherParameters() {
  Block &body = function.getBody().front();
  Operation *lossOp = lossOf(function, /*stepOnly=*/false);
  for (auto read : llvm::make_early_inc_range(body.getOps<GetWeightOp>())) {
    auto decl = SymbolTable::lookupNearestSymbolFrom<WeightOp>(
        read, read.getNameAttr());
    Value shard = read.getResult();
    if (!decl || !decl.getState() || decl.getZeros() || !shardOf(shard))
      continue;
    // The parameter as the step read it before this axis split it (the
    // tensor-parallel shard under tp): the update computes values of that
    // type from it, and reads this axis's shard.
    RankedTensorType unsplit =
        resize(cast<RankedTensorType>(shard.getType()), shardOf(shard)->dim,
               /*split=*/false);
    SmallVector<OpOperand *> groups[2];
    for (OpOperand &use : shard.getUses()) {
      Operation *user = use.getOwner();
      if (user->getBlock() != &body)
        continue;
      if (user->getNumResults() == 1 &&
          user->getResult(0).getType() == unsplit)
        continue;
      bool backward = lossOp && lossOp->isBeforeInBlock(user);
      groups[backward].push_back(&use);
    }
    for (int g = 0; g < 2; ++g) {
      if (groups[g].empty())
        continue;
      Operation *first = groups[g].front()->getOwner();
      for (OpOperand *use : groups[g])
        if (use->getOwner()->isBeforeInBlock(first))
          first = use->getOwner();
      resharded.erase({shard, -1, 1});
      FailureOr<Value> whole = gather(shard, first);
      if (failed(whole))
        return failure();
      // Two gathers of one value are the point (the first is released
      // after the forward pass): gather marks the second braid.regather.
      for (OpOperand *use : groups[g])
        use->set(*whole);
    }
    resharded.erase({shard, -1, 1});
  }
  return success();
}

LogicalResult
AxisPartitioner::checkSlotOrders(Operation *op,
                                 const DimensionMapping &mapping) {
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto it = routing.find(operand);
    if (it == routing.end())
      continue;
    ArrayRef<unsigned> slots = mapping.getOperands()[i][it->second.dim];
    for (auto [j, other] : llvm::enumerate(op->getOperands())) {
      auto type = dyn_cast<RankedTensorType>(other.getType());
      auto otherIt = routing.find(other);
      if (j == i || !type ||
          (otherIt != routing.end() &&
           otherIt->second.choices == it->second.choices))
        continue;
      for (auto [d, dimFactors] : llvm::enumerate(mapping.getOperands()[j]))
        if (type.getDimSize(d) > 1 &&
            llvm::any_of(dimFactors, [&](unsigned f) {
              return llvm::is_contained(slots, f);
            }))
          return op->emitOpError("braid-partition: operand #")
                 << i << " holds the expert slots that this rank's block of "
                 << "tokens filled on axis '" << strategy.axis
                 << "' and operand #" << j
                 << " slots that were not routed the same way (a dispatch "
                 << "of all tokens, or other expert choices); their slots "
                 << "are in different orders";
    }
  }
  return success();
}

LogicalResult AxisPartitioner::partitionSetWeight(SetWeightOp set) {
  Value value = set.getValue();
  StringAttr name = set.getNameAttr().getAttr();
  auto stored = stateShards.find(name);
  if (stored == stateShards.end()) {
    // Stored whole: the value is made whole. Where it was computed
    // sharded, the weight is better stored sharded (asked of the caller).
    // (ZeRO keeps parameters whole: the forward pass reads them whole.)
    if (std::optional<Shard> shard = shardOf(value);
        shard && shard->outer == 1 && !routing.count(value) && !strategy.zero)
      wantSharded.insert({name, *shard});
    FailureOr<Value> whole = replicate(value, set);
    if (failed(whole))
      return failure();
    set.getValueMutable().assign(*whole);
    return success();
  }
  if (partial.contains(value))
    value = complete(value, set);
  FailureOr<Value> local = shardOn(value, stored->second, set);
  if (failed(local))
    return failure();
  set.getValueMutable().assign(*local);
  auto type = cast<RankedTensorType>(value.getType());
  set.setMeshAttr(meshRef());
  set.setShardingAttr(withAxis(builder, set.getShardingAttr(), type.getRank(),
                               stored->second.dim, strategy.axis));
  return success();
}

std::string AxisPartitioner::whyNotUsable(Operation *op,
                                          const DimensionMapping &mapping,
                                          FactorSplit split) {
  if (split.factor < 0)
    return "the dimension is a broadcast of size 1";
  const Factor &factor = mapping.getFactors()[split.factor];
  switch (factor.kind) {
  case FactorKind::Whole:
    return "the op needs that dimension whole";
  case FactorKind::CausalPrefix:
    return "causal attention needs all earlier keys of a query block";
  case FactorKind::Parallel:
  case FactorKind::Reduction:
  case FactorKind::Routed:
    break;
  }
  if (factor.size % split.within != 0 ||
      (factor.size / split.within) % size() != 0)
    return ("its factor of size " + Twine(factor.size / split.within) +
            " does not divide over " + Twine(size()) + " ranks")
        .str();
  if (split.within != 1 &&
      !cast<DimensionMappingOpInterface>(op).canComputeBlock(
          mapping, split.factor, split.within))
    return "the op needs a contiguous block of that dimension, which is "
           "merged below another one";
  if (factor.kind == FactorKind::Routed) {
    // Slots of this block of tokens must come from a dispatch of the same
    // block: every operand dimension of the slot factor must be routed by
    // the same expert choices.
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      if (!shardOfSplit(mapping, mapping.getOperands()[i],
                        FactorSplit{(int)*factor.routesTo, 1}))
        continue;
      auto it = routing.find(operand);
      if (it == routing.end())
        return "its expert slots were not filled by this rank's tokens";
      bool sameChoices = llvm::any_of(op->getOperands(), [&](Value other) {
        return choicesOf(other) == it->second.choices;
      });
      if (!sameChoices)
        return "its expert slots were routed by other expert choices";
    }
  }
  return "";
}

std::optional<FactorSplit>
AxisPartitioner::carriedSplit(Operation *op, const DimensionMapping &mapping,
                              unsigned i, Shard shard) {
  std::optional<FactorSplit> split =
      splitOfShard(mapping, mapping.getOperands()[i], shard, size());
  if (!split || !usable(op, mapping, *split))
    return std::nullopt;
  return split;
}

int AxisPartitioner::contractedWeight(Operation *op,
                                      const DimensionMapping &mapping) {
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (readFirstBy(operand, op) && !mapping.getContractionFactors(i).empty())
      return i;
  return -1;
}

bool AxisPartitioner::splitPays(Value value, Shard shard, unsigned depth) {
  auto key = std::make_tuple(value, shard.dim, shard.outer);
  if (auto it = paysCache.find(key); it != paysCache.end())
    return it->second;
  // Deep chains are assumed to pay (they would end in some contraction).
  if (depth > 64)
    return true;
  paysCache[key] = true; // a cycle through a region cannot occur; be safe
  bool pays = true;
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    // A state weight's next value is stored as it is computed.
    if (isa<func::ReturnOp, SetWeightOp>(user))
      continue;
    auto it = mappings.find(user);
    if (it == mappings.end()) {
      pays = false;
      break;
    }
    const DimensionMapping &mapping = it->second;
    std::optional<FactorSplit> split = splitOfShard(
        mapping, mapping.getOperands()[use.getOperandNumber()], shard, size());
    if (!split || !whyNotUsable(user, mapping, *split).empty()) {
      pays = false;
      break;
    }
    if (mapping.getFactors()[split->factor].kind != FactorKind::Parallel)
      continue;
    for (auto [r, result] : llvm::enumerate(user->getResults()))
      if (std::optional<Shard> next =
              shardOfSplit(mapping, mapping.getResults()[r], *split))
        if (!splitPays(result, *next, depth + 1)) {
          pays = false;
          break;
        }
    if (!pays)
      break;
  }
  paysCache[key] = pays;
  return pays;
}

std::optional<ReductionKind>
AxisPartitioner::partialThrough(Operation *op,
                                const DimensionMapping &mapping) {
  SmallVector<bool> mask;
  std::optional<ReductionKind> kind;
  int64_t largest = 0;
  for (Value operand : op->getOperands()) {
    auto it = partial.find(operand);
    mask.push_back(it != partial.end());
    if (it == partial.end())
      continue;
    // A sum and an average do not mix; a value read twice would be
    // completed for one reader after the other read it partial.
    if ((kind && *kind != it->second) || !operand.hasOneUse() ||
        (it->second != ReductionKind::Sum && it->second != ReductionKind::Avg))
      return std::nullopt;
    kind = it->second;
    largest = std::max(largest, getNumElements(operand));
  }
  if (!kind)
    return std::nullopt;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    if (!mapping.getContractionFactors(i).empty())
      return std::nullopt;
  for (Value result : op->getResults())
    if (!isa<RankedTensorType>(result.getType()) ||
        getNumElements(result) > largest)
      return std::nullopt;
  if (!cast<DimensionMappingOpInterface>(op).propagatesPartialSums(mask))
    return std::nullopt;
  return kind;
}

int64_t AxisPartitioner::reshardingCost(Operation *op,
                                        const DimensionMapping &mapping,
                                        FactorSplit split) {
  // In elements each rank receives, times size / (size - 1): an all-to-all
  // of a block b receives b (size - 1) / size, a gather b (size - 1), a
  // reduce-scatter of a whole partial w receives w (size - 1) / size.
  int64_t cost = 0;
  for (auto [j, operand] : llvm::enumerate(op->getOperands())) {
    std::optional<Shard> current = shardOf(operand);
    if (!current)
      continue;
    std::optional<Shard> want =
        shardOfSplit(mapping, mapping.getOperands()[j], split);
    if (want == current)
      continue;
    if (want ? resharded.contains({operand, want->dim, want->outer})
             : hasWhole(operand, op))
      continue;
    int64_t block = getNumElements(operand);
    // A broadcast moves its input (see shardOn).
    if (auto broadcast = operand.getDefiningOp<BroadcastToOp>();
        broadcast && want && want->dim != current->dim && want->outer == 1)
      block = getNumElements(broadcast.getInput());
    cost += want ? block : block * size();
  }
  // A contraction split leaves the result partial, completed later.
  if (mapping.getFactors()[split.factor].kind == FactorKind::Reduction)
    for (Value result : op->getResults())
      if (isa<RankedTensorType>(result.getType()))
        cost += getNumElements(result);
  return cost;
}

Value AxisPartitioner::ownWhole(Value v, Operation *user) {
  auto it = resharded.find({v, -1, 1});
  if (it == resharded.end())
    return Value();
  // Megatron-SP: the backward pass gathers a forward activation again
  // rather than keeping it whole from the forward pass (what sequence
  // parallelism saves is that activation's memory). Context parallelism
  // keeps its gathered keys and values for the backward pass.
  Operation *gathered = it->second.getDefiningOp();
  if (strategy.sequenceParallel && loss && gathered &&
      gathered->getBlock() == loss->getBlock() &&
      user->getBlock() == loss->getBlock() &&
      !loss->isBeforeInBlock(gathered) && loss->isBeforeInBlock(user) &&
      !weightReadOf(v))
    return Value();
  return it->second;
}

bool AxisPartitioner::hasWhole(Value v, Operation *user) {
  for (;;) {
    if (ownWhole(v, user))
      return true;
    auto reshape = v.getDefiningOp<ReshapeOp>();
    if (!reshape || !shardOf(reshape.getInput()) ||
        routing.count(reshape.getInput()))
      return false;
    v = reshape.getInput();
  }
}

std::optional<FactorSplit>
AxisPartitioner::cheapestCarried(Operation *op,
                                 const DimensionMapping &mapping) {
  std::optional<FactorSplit> best;
  int64_t bestCost = 0;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    std::optional<Shard> shard = shardOf(operand);
    if (!shard)
      continue;
    std::optional<FactorSplit> split = carriedSplit(op, mapping, i, *shard);
    if (!split || (best && best->factor == split->factor &&
                   best->within == split->within))
      continue;
    int64_t cost = reshardingCost(op, mapping, *split);
    if (best && cost >= bestCost)
      continue;
    // Another operand's split only where its users can carry the result's
    // (none needs it whole, no expert slots routed otherwise).
    if (best && op->getNumResults() == 1)
      if (std::optional<Shard> result =
              shardOfSplit(mapping, mapping.getResults()[0], *split);
          result && !splitPays(op->getResult(0), *result))
        continue;
    if (best && !byCost)
      continue;
    choseByCost |= (bool)best;
    best = split;
    bestCost = cost;
  }
  return best;
}

void AxisPartitioner::leftWhole(Operation *op, const Twine &why) {
  if (llvm::any_of(wholeOps, [&](const auto &entry) { return entry.first == op; }))
    return;
  wholeOps.push_back({op, why.str()});
}

FailureOr<FactorSplit>
AxisPartitioner::chooseFactor(Operation *op, const DimensionMapping &mapping) {
  const ValueFactors &out = mapping.getResults().empty()
                                ? ValueFactors()
                                : mapping.getResults()[0];
  // An annotation on the op decides.
  if (auto annotation = op->getAttrOfType<ShardingAttr>(kShardingAttrName)) {
    for (auto [d, entry] : llvm::enumerate(annotation.getDims())) {
      if (!llvm::is_contained(annotation.getAxes(d), strategy.axis))
        continue;
      std::optional<FactorSplit> split =
          splitOfShard(mapping, out, Shard{(int64_t)d, 1}, size());
      std::string why =
          split ? whyNotUsable(op, mapping, *split)
                : whyNotUsable(op, mapping,
                               FactorSplit{leadingFactor(out, d), 1});
      if (!split && why.empty())
        why = "no block of that dimension is a block of one of the op's "
              "factors";
      if (!why.empty())
        return op->emitOpError("cannot compute dimension ")
               << d << " of its result split over mesh axis '"
               << strategy.axis << "': " << why;
      return *split;
    }
    return FactorSplit{};
  }
  // An input the preset splits that this op could not read split: the op
  // computes its result split on that dimension instead.
  if (auto it = resultSeeds.find(op); it != resultSeeds.end())
    if (std::optional<FactorSplit> split =
            splitOfShard(mapping, out, Shard{it->second, 1}, size());
        split && usable(op, mapping, *split))
      return *split;

  int weight = contractedWeight(op, mapping);
  // Expert parallel: expert weights stay where their experts live.
  if (weight >= 0 && strategy.expertParallel) {
    FactorSplit experts{mapping.getSharedBatchFactor(weight), 1};
    if (experts.factor >= 0) {
      std::string why = whyNotUsable(op, mapping, experts);
      if (why.empty())
        return experts;
      leftWhole(op, "its expert weight is not split by expert: " + why);
    }
  }
  // Slots that this rank's tokens filled cannot be gathered: the op works
  // on them where they are, or combines them with the same tokens.
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto it = routing.find(operand);
    if (it == routing.end())
      continue;
    if (std::optional<FactorSplit> split =
            carriedSplit(op, mapping, i, *shardOf(operand))) {
      // Where another operand is split by a parallel factor that the slots
      // also have (an expert-parallel weight: the experts), the slots move
      // to it (the all-to-all that the forward pass made already) rather
      // than the weight being gathered to every rank's slots, or an expert
      // weight's gradient being contracted over the slots into a partial
      // sum of the whole weight.
      for (auto [j, other] : llvm::enumerate(op->getOperands()))
        if (std::optional<Shard> shard = shardOf(other);
            shard && j != i)
          if (std::optional<FactorSplit> parallel =
                  carriedSplit(op, mapping, j, *shard);
              parallel &&
              mapping.getFactors()[parallel->factor].kind ==
                  FactorKind::Parallel &&
              shardOfSplit(mapping, mapping.getOperands()[i], *parallel))
            return *parallel;
      return *split;
    }
    for (auto [g, factor] : llvm::enumerate(mapping.getFactors()))
      if (factor.kind == FactorKind::Routed &&
          usable(op, mapping, FactorSplit{(int)g, it->second.within}))
        return FactorSplit{(int)g, it->second.within};
  }
  // The factor a sharded operand carries; where operands carry different
  // ones, the one that moves the fewest elements of the others.
  std::optional<FactorSplit> carried = cheapestCarried(op, mapping);
  // Megatron: the weight's own output factor (column parallel) unless the
  // contraction is already split (row parallel).
  if (weight >= 0 && strategy.columnParallel) {
    bool contraction =
        carried &&
        mapping.getFactors()[carried->factor].kind == FactorKind::Reduction;
    FactorSplit columns{mapping.getOwnOutputFactor(weight), 1};
    if (!contraction && columns.factor >= 0) {
      std::string why = whyNotUsable(op, mapping, columns);
      std::optional<Shard> result =
          shardOfSplit(mapping, mapping.getResults()[0], columns);
      if (why.empty() && result && splitPays(op->getResult(0), *result))
        return columns;
      // One output column cannot be split (a gate); a split that its users
      // would gather right back is a choice, not a loss.
      if (!why.empty() && !carried &&
          mapping.getFactors()[columns.factor].size > 1)
        leftWhole(op, "its weight is not split: " + why);
    }
  }
  if (carried)
    return *carried;
  // Expert parallel: each rank routes its own block of tokens.
  if (strategy.expertParallel)
    for (auto [f, factor] : llvm::enumerate(mapping.getFactors()))
      if (factor.kind == FactorKind::Routed &&
          usable(op, mapping, FactorSplit{(int)f, 1}))
        return FactorSplit{(int)f, 1};
  // Megatron expects a contraction against a stored weight; one against an
  // inline constant cannot be loaded split.
  if (strategy.columnParallel && weight < 0)
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (auto constant = operand.getDefiningOp<ConstantOp>();
          constant && getNumElements(operand) > 1 &&
          isa<FloatType>(getElementTypeOrSelf(operand.getType())) &&
          !mapping.getContractionFactors(i).empty()) {
        leftWhole(op, "it contracts an inline constant, not a weight");
        break;
      }
  return FactorSplit{};
}

LogicalResult AxisPartitioner::honourReplicatedAnnotation(Operation *op) {
  auto annotation = op->getAttrOfType<ShardingAttr>(kShardingAttrName);
  if (!annotation || op->getNumResults() == 0)
    return success();
  for (unsigned d = 0, e = annotation.getDims().size(); d < e; ++d)
    if (llvm::is_contained(annotation.getAxes(d), strategy.axis))
      return success();
  Value result = op->getResult(0);
  if (!shardOf(result) && !partial.contains(result))
    return success();
  Operation *next = op->getNextNode();
  FailureOr<Value> whole = replicate(result, next);
  if (failed(whole))
    return failure();
  result.replaceAllUsesExcept(*whole, whole->getDefiningOp());
  return success();
}

BlockArgument AxisPartitioner::tokenIdsOf(Value indices) {
  Value ids = viewedValue(indices);
  while (auto slice = ids.getDefiningOp<SliceOp>())
    ids = viewedValue(slice.getInput());
  return dyn_cast<BlockArgument>(ids);
}

std::pair<Value, Value> AxisPartitioner::blockIndices(Value indices,
                                                      int64_t rows,
                                                      Operation *user) {
  Location loc = user->getLoc();
  Type element = cast<RankedTensorType>(indices.getType()).getElementType();
  // This rank's first row as a [1] tensor: its entry of [0, rows, 2 rows,
  // ...], sliced at the rank.
  SmallVector<int64_t> firsts(size());
  for (int64_t r = 0; r < size(); ++r)
    firsts[r] = r * rows;
  builder.setInsertionPoint(user);
  Value starts = integerVector(builder, loc, element, firsts);
  Value first = SliceOp::create(
      builder, loc, RankedTensorType::get({1}, element), starts,
      ValueRange{blockOffset(1, user)},
      builder.getDenseI64ArrayAttr({ShapedType::kDynamic}),
      builder.getDenseI64ArrayAttr({1}), builder.getDenseI64ArrayAttr({1}));
  auto scalar = [&](int64_t v) {
    return scalarConstant(builder, loc, element, (double)v);
  };
  Value local = SubOp::create(builder, loc, indices, first);
  Value clamped = MaxOp::create(
      builder, loc, MinOp::create(builder, loc, local, scalar(rows - 1)),
      scalar(0));
  Value mine = CompareOp::create(
      builder, loc, CompareKindAttr::get(builder.getContext(), CompareKind::EQ),
      local, clamped);
  return {clamped, mine};
}

/// `mine` (whether each index is in this rank's block) shaped to broadcast
/// against a gathered (or scattered) [outer..., indices..., inner...] of
/// rank `rank`, gathering along `axis`.
static Value indexMask(OpBuilder &builder, Location loc, Value mine,
                       int64_t axis, int64_t rank) {
  auto indexType = cast<RankedTensorType>(mine.getType());
  SmallVector<int64_t> shape(indexType.getShape());
  shape.append(rank - 1 - axis, 1);
  return ReshapeOp::create(builder, loc,
                           RankedTensorType::get(shape, builder.getI1Type()),
                           mine);
}

bool AxisPartitioner::partitionVocabParallel(GatherOp gather) {
  Value table = gather.getInput(), indices = gather.getIndices();
  GetWeightOp weight = weightReadOf(table);
  auto tableType = cast<RankedTensorType>(table.getType());
  int64_t axis = gather.getAxis();
  int64_t vocab = tableType.getDimSize(axis);
  if (!strategy.columnParallel || strategy.expertParallel ||
      strategy.contextParallel || !weight || !readsWholeState(weight) ||
      !readFirstBy(table, gather) || vocab % size() != 0 ||
      vocab / size() < 2 || shardOf(indices) || partial.contains(indices))
    return false;
  // The token ids: a table indexed by computed positions is small, and
  // split it would cost an all-reduce.
  BlockArgument ids = tokenIdsOf(indices);
  if (!ids)
    return false;
  FailureOr<Value> block = shardOn(table, Shard{axis, 1}, gather);
  if (failed(block))
    return false;
  vocabParallelTables.insert({ids, tableType, axis});
  auto [clamped, mine] = blockIndices(indices, vocab / size(), gather);
  gather.getInputMutable().assign(*block);
  gather.getIndicesMutable().assign(clamped);
  // Rows of other ranks' blocks read as zeros.
  Location loc = gather.getLoc();
  auto resultType = cast<RankedTensorType>(gather.getType());
  builder.setInsertionPointAfter(gather);
  Value mask = indexMask(builder, loc, mine, axis, tableType.getRank());
  Value zero = scalarConstant(builder, loc, resultType.getElementType(), 0.0);
  auto select = SelectOp::create(builder, loc, mask, gather.getResult(), zero);
  gather.getResult().replaceAllUsesExcept(select.getResult(), select);
  partial[select.getResult()] = ReductionKind::Sum;
  partitionedSomething = true;
  return true;
}

bool AxisPartitioner::partitionVocabParallel(ScatterAddOp scatter) {
  Value indices = scatter.getIndices();
  auto resultType = cast<RankedTensorType>(scatter.getType());
  int64_t axis = scatter.getAxis();
  BlockArgument ids = tokenIdsOf(indices);
  if (!ids || shardOf(indices) || partial.contains(indices) ||
      !vocabParallelTables.contains({ids, resultType, axis}))
    return false;
  // Every rank adds all of the updates that fall in its block.
  FailureOr<Value> updates = replicate(scatter.getUpdates(), scatter);
  if (failed(updates))
    return false;
  auto [clamped, mine] =
      blockIndices(indices, resultType.getDimSize(axis) / size(), scatter);
  Location loc = scatter.getLoc();
  builder.setInsertionPoint(scatter);
  Value mask = indexMask(builder, loc, mine, axis, resultType.getRank());
  Value zero = scalarConstant(builder, loc, resultType.getElementType(), 0.0);
  Value masked = SelectOp::create(builder, loc, mask, *updates, zero);
  scatter.getUpdatesMutable().assign(masked);
  scatter.getIndicesMutable().assign(clamped);
  scatter.getResult().setType(resize(resultType, axis, /*split=*/true));
  setShard(scatter.getResult(), Shard{axis, 1});
  return true;
}

LogicalResult AxisPartitioner::partition(Operation *op) {
  if (isa<func::ReturnOp>(op)) {
    for (OpOperand &operand : op->getOpOperands()) {
      FailureOr<Value> whole = replicate(operand.get(), op);
      if (failed(whole))
        return failure();
      operand.set(*whole);
    }
    return success();
  }
  if (isa<GetWeightOp, ConstantOp, RankOp>(op))
    return success();
  if (auto gather = dyn_cast<GatherOp>(op);
      gather && partitionVocabParallel(gather))
    return success();
  if (auto scatter = dyn_cast<ScatterAddOp>(op);
      scatter && partitionVocabParallel(scatter))
    return success();
  if (auto set = dyn_cast<SetWeightOp>(op))
    return partitionSetWeight(set);
  auto hasTensor = [](TypeRange types) {
    return llvm::any_of(types, llvm::IsaPred<RankedTensorType>);
  };
  if (!hasTensor(op->getOperandTypes()) && !hasTensor(op->getResultTypes()))
    return success();
  auto mappingOp = dyn_cast<DimensionMappingOpInterface>(op);
  // An op the pass knows nothing about reads whole tensors.
  if (!mappingOp) {
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<RankedTensorType>(operand.get().getType()))
        continue;
      FailureOr<Value> whole = replicate(operand.get(), op);
      if (failed(whole))
        return failure();
      operand.set(*whole);
    }
    return success();
  }

  const DimensionMapping &mapping = mappings[op];
  // Partial values are completed before any use, except by an op linear in
  // them that is no contraction, makes nothing larger and runs whole: the
  // partial sums flow through it and are completed once, later. (A value
  // cannot be both partial and split: rank r holds only block r, but block
  // r's sum needs every rank's part of it.)
  std::optional<ReductionKind> flowing;
  FactorSplit chosen;
  if (llvm::none_of(op->getOperands(), [&](Value v) { return shardOf(v); }))
    flowing = partialThrough(op, mapping);
  if (flowing) {
    FailureOr<FactorSplit> chosenOr = chooseFactor(op, mapping);
    if (failed(chosenOr))
      return failure();
    chosen = *chosenOr;
    if (chosen.factor >= 0)
      flowing.reset();
  }
  if (!flowing) {
    // Partial operands are completed before the choice (sequence
    // parallelism's reduce-scatter leaves them split, which the choice
    // follows). ZeRO instead chooses first: an op computing a value of a
    // partial sum's shape (the update reading a weight gradient) computes
    // it split along zeroDim and reads the sum reduce-scattered there.
    if (!strategy.zero) {
      for (OpOperand &operand : op->getOpOperands())
        if (partial.contains(operand.get()))
          complete(operand.get(), op);
    } else if (op->getNumResults() == 1 && !resultSeeds.count(op)) {
      for (Value operand : op->getOperands()) {
        auto it = partial.find(operand);
        auto type = dyn_cast<RankedTensorType>(operand.getType());
        if (it != partial.end() && it->second == ReductionKind::Sum && type &&
            op->getResult(0).getType() == type && zeroDim(type) >= 0) {
          resultSeeds[op] = zeroDim(type);
          break;
        }
      }
    }
    FailureOr<FactorSplit> chosenOr = chooseFactor(op, mapping);
    if (failed(chosenOr))
      return failure();
    chosen = *chosenOr;
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      auto it = partial.find(operand);
      if (it == partial.end())
        continue;
      std::optional<Shard> want =
          chosen.factor >= 0
              ? shardOfSplit(mapping, mapping.getOperands()[i], chosen)
              : std::nullopt;
      if (want && want->outer == 1 && it->second == ReductionKind::Sum)
        reduceScatter(operand, *want, op);
      else
        complete(operand, op);
    }
  }

  // The factors computed in blocks: the chosen one, and for routed tokens
  // the slots they fill.
  SmallVector<FactorSplit, 2> splits;
  const Factor *factor = nullptr;
  if (chosen.factor >= 0) {
    factor = &mapping.getFactors()[chosen.factor];
    splits.push_back(chosen);
    if (factor->kind == FactorKind::Routed)
      splits.push_back(FactorSplit{(int)*factor->routesTo, 1});
  }
  auto shardIn = [&](const ValueFactors &dims) -> std::optional<Shard> {
    for (FactorSplit split : splits)
      if (std::optional<Shard> shard = shardOfSplit(mapping, dims, split))
        return shard;
    return std::nullopt;
  };

  // Operands: sharded where the chosen factor is, whole elsewhere.
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    std::optional<Shard> want = shardIn(mapping.getOperands()[i]);
    FailureOr<Value> local =
        want                         ? shardOn(operand, *want, op)
        : !partial.contains(operand) ? replicate(operand, op)
        : shardOf(operand)           ? gather(operand, op)
                                     : FailureOr<Value>(operand);
    if (failed(local))
      return failure();
    op->setOperand(i, *local);
  }
  if (flowing)
    for (Value result : op->getResults())
      partial[result] = *flowing;
  if (!factor)
    return honourReplicatedAnnotation(op);

  // The blocks, with where a contiguous one starts for ops that depend on
  // absolute positions.
  SmallVector<FactorBlock, 2> blocks;
  Value offset;
  for (FactorSplit split : splits) {
    int64_t blockSize = mapping.getFactors()[split.factor].size / size();
    FactorBlock block{(unsigned)split.factor, split.within, blockSize, {}};
    if (split.factor == chosen.factor && split.within == 1)
      block.offset = offset = blockOffset(blockSize / split.within, op);
    blocks.push_back(block);
  }
  builder.setInsertionPoint(op);
  if (failed(computeOnBlock(builder, op, mapping, blocks)))
    return op->emitOpError("cannot be partitioned along factor f")
           << chosen.factor << " of its dimension mapping on mesh axis '"
           << strategy.axis << "'";
  if (offset && offset.use_empty()) {
    Operation *mul = offset.getDefiningOp();
    SmallVector<Operation *> dead{mul, mul->getOperand(0).getDefiningOp(),
                                  mul->getOperand(1).getDefiningOp()};
    for (Operation *d : dead)
      d->erase();
  }

  if (failed(checkSlotOrders(op, mapping)))
    return failure();

  // Results: sharded where the factor is, partial for a reduction.
  // Routing tokens fills slots (a dispatch); reading slots back into
  // tokens (a combine), or contracting them (an expert weight's gradient),
  // ends the routing: a result holds slots where it has a slot factor.
  std::optional<Routing> routedBy;
  SmallVector<unsigned> slotFactors;
  if (factor->kind == FactorKind::Routed) {
    routedBy = Routing{choicesOf(op->getOperand(*factor->routedBy)),
                       chosen.within};
    slotFactors.push_back(*factor->routesTo);
  }
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (auto it = routing.find(operand);
        it != routing.end() && factor->kind != FactorKind::Routed) {
      routedBy = it->second;
      llvm::append_range(slotFactors,
                         mapping.getOperands()[i][it->second.dim]);
    }
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    if (std::optional<Shard> shard = shardIn(mapping.getResults()[r]))
      setShard(result, *shard);
    if (factor->kind == FactorKind::Reduction) {
      if (flowing && *flowing != *factor->combiner)
        return op->emitOpError("braid-partition: a partial ")
               << stringifyReductionKind(*flowing)
               << " would meet a reduction with another combiner";
      partial[result] = *factor->combiner;
      partitionedSomething = true;
    }
    if (!routedBy || !shardOf(result))
      continue;
    for (auto [d, dimFactors] : llvm::enumerate(mapping.getResults()[r]))
      if (llvm::any_of(dimFactors, [&](unsigned f) {
            return llvm::is_contained(slotFactors, f);
          })) {
        Routing slots = *routedBy;
        slots.dim = d;
        routing[result] = slots;
        break;
      }
  }
  return honourReplicatedAnnotation(op);
}

LogicalResult AxisPartitioner::seedArguments() {
  Block &body = function.getBody().front();
  for (BlockArgument arg : function.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || arg.use_empty())
      continue;
    int64_t dim = -1;
    std::string what = ("argument " + Twine(arg.getArgNumber()) + " of @" +
                        function.getSymName())
                           .str();
    if (auto annotation = function.getArgAttrOfType<ShardingAttr>(
            arg.getArgNumber(), kShardingAttrName)) {
      for (unsigned d = 0, e = annotation.getDims().size(); d < e; ++d)
        if (llvm::is_contained(annotation.getAxes(d), strategy.axis))
          dim = d;
    } else if (strategy.inputDim >= 0 && type.getRank() > strategy.inputDim &&
               type.getDimSize(strategy.inputDim) != 1) {
      dim = strategy.inputDim;
      if (type.getDimSize(dim) % size() != 0) {
        if (strategy.inputDimIfDivisible)
          continue;
        return function.emitError("braid-partition: dimension ")
               << dim << " (size " << type.getDimSize(dim) << ") of " << what
               << " does not divide over mesh axis '" << strategy.axis
               << "' of size " << size();
      }
      // A preset does not split an input that no reader could use split (a
      // gather reading it as its table): it would only be gathered back.
      // Its readers compute their results split on that dimension instead
      // (an input reordered by a constant index, braid-balance-sequence,
      // is then split through the index).
      bool anyUser = llvm::any_of(arg.getUses(), [&](OpOperand &use) {
        auto it = mappings.find(use.getOwner());
        if (it == mappings.end())
          return true;
        return carriedSplit(use.getOwner(), it->second,
                            use.getOperandNumber(), Shard{dim, 1})
            .has_value();
      });
      if (!anyUser) {
        for (Operation *user : arg.getUsers())
          resultSeeds[user] = dim;
        continue;
      }
    }
    if (dim < 0)
      continue;
    if (type.getDimSize(dim) % size() != 0)
      return function.emitError("braid-partition: dimension ")
             << dim << " (size " << type.getDimSize(dim) << ") of " << what
             << " does not divide over mesh axis '" << strategy.axis
             << "' of size " << size();
    FailureOr<Value> local = shardOn(arg, Shard{dim, 1}, &body.front());
    if (failed(local))
      return failure();
    arg.replaceAllUsesExcept(*local, local->getDefiningOp());
  }
  return success();
}

LogicalResult AxisPartitioner::run() {
  // A state weight has one layout: its whole reads become one read, which
  // is loaded sharded or whole for every reader (and its set agrees). A
  // read an earlier axis sharded keeps that axis's layout (an expert
  // weight split on ep is not split again on tp), except for ZeRO, which
  // splits each rank's shard of every optimizer state (and under ZeRO-3
  // parameter) again over dp.
  llvm::DenseMap<StringAttr, GetWeightOp> stateReads;
  for (Operation &op : llvm::make_early_inc_range(function.getBody().front())) {
    auto weight = dyn_cast<GetWeightOp>(&op);
    if (!weight || (weight.getSharding() && !strategy.zero) ||
        !readsWholeState(weight))
      continue;
    auto [it, first] =
        stateReads.insert({weight.getNameAttr().getAttr(), weight});
    if (first)
      continue;
    weight.getResult().replaceAllUsesWith(it->second.getResult());
    weight.erase();
  }
  SmallVector<Operation *> ops;
  for (Operation &op : function.getBody().front())
    ops.push_back(&op);
  if (!ops.empty())
    loss = lossOf(function, /*stepOnly=*/true);
  for (Operation *op : ops)
    if (auto mappingOp = dyn_cast<DimensionMappingOpInterface>(op))
      mappings[op] = mappingOp.getDimensionMapping();
  if (ops.empty())
    return success();
  function.walk([&](GetWeightOp read) {
    weightTypes.insert(read.getResult().getType());
    for (Operation *user : read->getUsers())
      if (isa<CastOp>(user) && weightReadOf(user->getResult(0)))
        weightTypes.insert(user->getResult(0).getType());
  });
  for (BlockArgument arg : function.getArguments())
    if (auto type = dyn_cast<RankedTensorType>(arg.getType());
        type && type.getRank() >= 2) {
      tokenBatch = type.getDimSize(0);
      tokenSequence = type.getDimSize(1);
      if (tokenBatch % strategy.batchSplit == 0)
        tokenBatch /= strategy.batchSplit;
      if (tokenSequence % strategy.sequenceSplit == 0)
        tokenSequence /= strategy.sequenceSplit;
      break;
    }
  for (auto [name, shard] : storedSharded)
    if (GetWeightOp read = stateReads.lookup(name))
      loadSharded(read, shard);
  // ZeRO: the optimizer's state (zero-initialized state weights) is split.
  if (strategy.zero)
    for (auto [name, read] : stateReads) {
      auto decl = SymbolTable::lookupNearestSymbolFrom<WeightOp>(
          read, read.getNameAttr());
      int64_t dim = zeroDim(read.getType());
      if (decl && (decl.getZeros() || strategy.zeroParameters) && dim >= 0 &&
          !shardOf(read.getResult()))
        loadSharded(read, Shard{dim, 1});
    }
  if (strategy.zeroParameters && failed(gatherParameters()))
    return failure();
  if (failed(seedArguments()))
    return failure();
  for (Operation *op : ops)
    if (failed(partition(op)))
      return failure();
  // The wholes that only computed blocks are read no more (the latest
  // first: an earlier one may feed it).
  for (Operation *whole : llvm::reverse(blockedWholes))
    if (whole->use_empty())
      whole->erase();
  function.setType(FunctionType::get(
      function.getContext(), function.getArgumentTypes(),
      function.getBody().front().getTerminator()->getOperandTypes()));
  return success();
}

LogicalResult AxisPartitioner::report() {
  // Partitioning never does less than asked without saying so: every op
  // the strategy wanted split and could not is named, and an axis that
  // splits nothing at all is an error unless replication was accepted.
  for (auto &[op, why] : wholeOps)
    mlir::emitWarning(op->getLoc())
        << "braid-partition: '" << op->getName() << "' runs whole on mesh axis '"
        << strategy.axis << "' (" << size() << " ranks): " << why;
  if (partitionedSomething)
    return success();
  InFlightDiagnostic diag =
      allowReplicated ? mlir::emitWarning(function.getLoc())
                      : mlir::emitError(function.getLoc());
  diag << "braid-partition: mesh axis '" << strategy.axis << "' ("
       << size() << " ranks) partitions nothing in @" << function.getSymName()
       << ": every rank would compute the whole program";
  if (!allowReplicated) {
    diag << " (accept that with allow-replicated, braidc "
            "--allow-replicated)";
    return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The pass: presets, annotations, the mesh
//===----------------------------------------------------------------------===//

/// Checks a `braid.sharding` annotation against the mesh and the value.
static LogicalResult checkAnnotation(ShardingAttr annotation, MeshOp mesh,
                                     Type type, Operation *anchor,
                                     const Twine &what) {
  auto fail = [&]() {
    return anchor->emitError("braid-partition: the sharding of ") << what;
  };
  if (annotation.getMesh().getValue() != mesh.getSymName())
    return fail() << " names mesh " << annotation.getMesh()
                  << ", but the program is partitioned over @"
                  << mesh.getSymName();
  if (annotation.getPartial() && !annotation.getPartial().empty())
    return fail() << " asks for a partial sum; only how dimensions are "
                     "split can be requested";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != (int64_t)annotation.getDims().size())
    return fail() << " has " << annotation.getDims().size()
                  << " entries for a value of type " << type;
  int lastAxis = -1;
  for (unsigned d = 0; d < annotation.getDims().size(); ++d) {
    int64_t parts = 1;
    for (StringRef axis : annotation.getAxes(d)) {
      std::optional<unsigned> index = mesh.getAxisIndex(axis);
      if (!index)
        return fail() << " names axis '" << axis << "', which mesh @"
                      << mesh.getSymName() << " does not have";
      parts *= mesh.getGroupSize(
          ArrayAttr::get(mesh.getContext(), {StringAttr::get(
                                                mesh.getContext(), axis)}));
      if ((int)*index < lastAxis)
        return fail() << " lists axis '" << axis
                      << "' after a later mesh axis; list a dimension's "
                         "axes in mesh order";
      lastAxis = *index;
    }
    lastAxis = -1;
    if (tensor.getDimSize(d) % parts != 0)
      return fail() << ": dimension " << d << " (size "
                    << tensor.getDimSize(d) << ") does not divide over "
                    << parts << " ranks";
  }
  return success();
}

namespace {
struct PartitionPass : public braid::impl::BraidPartitionBase<PartitionPass> {
  using BraidPartitionBase::BraidPartitionBase;

  void runOnOperation() override;
};
} // namespace

/// A sum of scalars, some of them all-reduced sums over one group (the
/// global gradient norm that clipping needs: one sum of squares per
/// parameter, partial for every tensor-parallel one), is regrouped so that
/// the group's terms are added first and all-reduced once:
/// ar(a) + w + ar(b) -> ar(a + b) + w. One latency-bound collective instead
/// of one per sharded parameter. The additions are reassociated, which
/// moves the float sum by rounding only.
static void mergeAllReducedSums(func::FuncOp function) {
  auto scalarAdd = [](Operation *op) -> AddOp {
    auto add = dyn_cast_or_null<AddOp>(op);
    auto type = add ? dyn_cast<RankedTensorType>(add.getType()) : nullptr;
    if (!type || type.getRank() != 0 ||
        !isa<FloatType>(type.getElementType()) ||
        add.getLhs().getType() != type || add.getRhs().getType() != type)
      return nullptr;
    return add;
  };
  SmallVector<AddOp> roots;
  function.walk([&](AddOp add) {
    if (!scalarAdd(add))
      return;
    if (add->hasOneUse() && scalarAdd(*add->user_begin()))
      return;
    roots.push_back(add);
  });
  for (AddOp root : roots) {
    // The terms of the tree of single-use additions under the root.
    SmallVector<Value> terms;
    SmallVector<Operation *> inner;
    std::function<void(Value)> collect = [&](Value v) {
      AddOp add = scalarAdd(v.getDefiningOp());
      if (add && (add == root || add->hasOneUse())) {
        inner.push_back(add);
        collect(add.getLhs());
        collect(add.getRhs());
        return;
      }
      terms.push_back(v);
    };
    collect(root.getResult());
    // All-reduced sums, by group.
    llvm::MapVector<std::pair<Attribute, Attribute>, SmallVector<AllReduceOp>>
        groups;
    for (Value term : terms)
      if (auto reduce = term.getDefiningOp<AllReduceOp>();
          reduce && reduce->hasOneUse() &&
          reduce.getReduction() == ReductionKind::Sum)
        groups[{reduce.getMeshAttr(), reduce.getMeshAxesAttr()}].push_back(
            reduce);
    if (llvm::none_of(groups, [](auto &g) { return g.second.size() > 1; }))
      continue;
    OpBuilder b(root);
    Location loc = root.getLoc();
    auto add = [&](Value x, Value y) -> Value {
      return x ? AddOp::create(b, loc, x, y).getResult() : y;
    };
    // The group's first term stands for its one all-reduce.
    llvm::DenseMap<Value, AllReduceOp> merged;
    llvm::DenseSet<Value> dropped;
    for (auto &[key, reduces] : groups) {
      if (reduces.size() < 2)
        continue;
      Value partial;
      for (AllReduceOp reduce : reduces)
        partial = add(partial, reduce.getInput());
      auto one = AllReduceOp::create(b, loc, partial.getType(),
                                     reduces.front().getMeshAttr(),
                                     reduces.front().getMeshAxesAttr(), partial,
                                     reduces.front().getReductionAttr());
      merged[reduces.front().getResult()] = one;
      for (AllReduceOp reduce : llvm::drop_begin(reduces))
        dropped.insert(reduce.getResult());
    }
    Value total;
    for (Value term : terms) {
      if (dropped.contains(term))
        continue;
      auto it = merged.find(term);
      total = add(total, it != merged.end() ? it->second.getResult() : term);
    }
    root.getResult().replaceAllUsesWith(total);
    for (Operation *op : inner)
      op->dropAllUses(), op->erase();
    for (auto &[key, reduces] : groups)
      if (reduces.size() > 1)
        for (AllReduceOp reduce : reduces)
          reduce->erase();
  }
}

void PartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fail = [&](const Twine &message) {
    module.emitError("braid-partition: ") << message;
    signalPassFailure();
  };
  auto function = module.lookupSymbol<func::FuncOp>(functionName);
  if (!function)
    return fail("no function @" + functionName);

  // The axes the presets ask for, outermost first.
  SmallVector<AxisStrategy> strategies;
  auto addAxis = [&](StringRef name, int64_t ranks) {
    AxisStrategy s;
    s.axis = name.str();
    s.size = ranks;
    strategies.push_back(s);
    return &strategies.back();
  };
  for (auto [name, ranks] : {std::pair<StringRef, int64_t>{"dp", dpSize},
                             {"ep", epSize},
                             {"cp", cpSize},
                             {"tp", tpSize}}) {
    if (ranks < 0 || (ranks == 1 && name == "tp" && sequenceParallel))
      return fail("axis '" + name + "' needs at least 2 ranks, got " +
                  Twine(ranks));
    if (ranks < 2)
      continue;
    AxisStrategy *s = addAxis(name, ranks);
    s->inputDim = name == "dp" || name == "ep" ? 0 : name == "cp" ? 1 : -1;
    s->columnParallel = name == "tp";
    s->sequenceParallel = name == "tp" && sequenceParallel;
    s->contextParallel = name == "cp";
    s->expertParallel = name == "ep";
    s->inputDimIfDivisible = name == "ep";
    s->zero = name == "dp" && zero > 0;
    s->zeroParameters = name == "dp" && zero == 3;
  }
  if (zero < 0 || zero > 3)
    return fail("zero=" + Twine(zero) + ": ZeRO stages are 1, 2 and 3");
  if (zero > 0 && (epSize > 1 || cpSize > 1))
    return fail("zero=" + Twine(zero) + " with ep or cp is not supported "
                "yet (dp and tp are)");
  if (zero > 0 && dpSize < 2)
    return fail("zero=" + Twine(zero) + " splits the optimizer state over "
                "the dp axis and needs dp=N with N >= 2");
  if (sequenceParallel && (strategies.empty() ||
                           strategies.back().axis != "tp"))
    return fail("sequence parallelism (sp) needs tensor parallelism (tp=N)");

  // The mesh: created from the presets, or the program's own (annotations).
  auto meshes = llvm::to_vector(module.getOps<MeshOp>());
  MeshOp mesh;
  if (!meshes.empty()) {
    if (!strategies.empty())
      return fail("the program already declares mesh @" +
                  meshes.front().getSymName() +
                  "; give either presets or a mesh with annotations");
    if (meshes.size() != 1)
      return fail("the program declares several meshes; annotate over one");
    mesh = meshes.front();
    for (auto [name, ranks] :
         llvm::zip(mesh.getAxisNames(), mesh.getShape())) {
      AxisStrategy s;
      s.axis = cast<StringAttr>(name).getValue().str();
      s.size = ranks;
      strategies.push_back(s);
    }
  } else {
    if (strategies.empty())
      return fail("nothing to partition over: give tp, dp, ep or cp, or "
                  "declare a braid.mesh and annotate with braid.sharding");
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    SmallVector<StringRef> names;
    SmallVector<int64_t> sizes;
    for (const AxisStrategy &s : strategies) {
      names.push_back(s.axis);
      sizes.push_back(s.size);
    }
    mesh = MeshOp::create(b, module.getLoc(), "world",
                          b.getStrArrayAttr(names),
                          b.getDenseI64ArrayAttr(sizes));
  }

  // Nothing is rewritten before the whole program is known to be supported.
  for (Operation &op : function.getBody().front())
    if (op.getNumRegions() != 0) {
      op.emitOpError("braid-partition does not handle regions yet "
                     "(partition first, then overlap)");
      return signalPassFailure();
    }

  // Annotations are checked once, against the mesh.
  for (BlockArgument arg : function.getArguments())
    if (auto annotation = function.getArgAttrOfType<ShardingAttr>(
            arg.getArgNumber(), kShardingAttrName))
      if (failed(checkAnnotation(annotation, mesh, arg.getType(), function,
                                 "argument " + Twine(arg.getArgNumber()))))
        return signalPassFailure();
  WalkResult walk = function.walk([&](Operation *op) {
    auto annotation = op->getAttrOfType<ShardingAttr>(kShardingAttrName);
    if (!annotation)
      return WalkResult::advance();
    if (op->getNumResults() != 1)
      return op->emitError("braid-partition: a sharding annotation needs an "
                           "op with one result"),
             WalkResult::interrupt();
    if (failed(checkAnnotation(annotation, mesh, op->getResult(0).getType(),
                               op, "'" + op->getName().getStringRef() +
                                       "' result")))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();

  // ZeRO shards what the other axes leave on a rank: the dp axis is
  // partitioned last, so that its split of a parameter, a gradient and a
  // moment is a block of the tensor-parallel shard (Megatron's distributed
  // optimizer shards each rank's tp-local parameters over its dp group).
  // The mesh keeps dp outermost; only the order of the passes changes.
  SmallVector<const AxisStrategy *> order;
  for (const AxisStrategy &strategy : strategies)
    if (!strategy.zero)
      order.push_back(&strategy);
  for (const AxisStrategy &strategy : strategies)
    if (strategy.zero)
      order.push_back(&strategy);
  int64_t batchSplit = 1, sequenceSplit = 1;
  for (const AxisStrategy *next : order) {
    AxisStrategy strategy = *next;
    strategy.batchSplit = batchSplit;
    strategy.sequenceSplit = sequenceSplit;
    // dp and cp split every input (ep's split depends on divisibility).
    if (strategy.inputDim == 0 && !strategy.inputDimIfDivisible)
      batchSplit *= strategy.size;
    if (strategy.inputDim == 1)
      sequenceSplit *= strategy.size;
    // State weights set sharded but read whole are stored sharded on a
    // second attempt (see AxisPartitioner::run); each attempt can only add
    // weights, so this ends.
    llvm::MapVector<StringAttr, Shard> storedSharded;
    // Choices by cost are local: where one leads to a program this pass
    // cannot partition (a gradient split by features reaching expert slots
    // that a block of tokens filled), the axis is partitioned again taking
    // the first sharded operand's split, as before costs were compared.
    bool byCost = true;
    while (true) {
      func::FuncOp original = function.clone();
      AxisPartitioner partitioner(function, mesh, strategy, allowReplicated,
                                  storedSharded, byCost);
      SmallVector<Diagnostic> held;
      LogicalResult status = failure();
      {
        ScopedDiagnosticHandler hold(&getContext(), [&](Diagnostic &d) {
          held.push_back(std::move(d));
          return success();
        });
        status = partitioner.run();
      }
      if (failed(status) && byCost && partitioner.choseOtherThanFirst()) {
        byCost = false;
        function.getBody().takeBody(original.getBody());
        function.setType(original.getFunctionType());
        original.erase();
        continue;
      }
      for (Diagnostic &d : held)
        getContext().getDiagEngine().emit(std::move(d));
      bool again = false;
      if (succeeded(status))
        for (auto [name, shard] : partitioner.wantedSharded())
          again |= storedSharded.insert({name, shard}).second;
      if (!again) {
        original.erase();
        if (failed(status) || failed(partitioner.report()))
          return signalPassFailure();
        break;
      }
      function.getBody().takeBody(original.getBody());
      function.setType(original.getFunctionType());
      original.erase();
    }
  }
  // Annotations are requests to this pass; the program no longer needs them.
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    function.removeArgAttr(i, kShardingAttrName);
  function.walk([](Operation *op) { op->removeAttr(kShardingAttrName); });
  // A value partial on several axes (a weight gradient under dp and cp, a
  // ZeRO shard's square sum under dp and tp) was completed once per axis:
  // one all-reduce over all of them instead. Before the sums are merged,
  // so that the merge sees one group per set of axes.
  auto mergeChains = [&] {
    RewritePatternSet patterns(&getContext());
    AllReduceOp::getCanonicalizationPatterns(patterns, &getContext());
    walkAndApplyPatterns(function, std::move(patterns));
  };
  if (strategies.size() > 1)
    mergeChains();
  mergeAllReducedSums(function);
}
