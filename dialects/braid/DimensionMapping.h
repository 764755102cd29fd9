//===- DimensionMapping.h - how op dimensions relate -------------*- C++
//-*-===//
//
// The data behind DimensionMappingOpInterface: an iteration space of factors,
// and for every dimension of every tensor operand and result the factors it is
// made of. Partitioning, Domino, ISO and COMET read only this.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECTS_BRAID_DIMENSIONMAPPING_H
#define BRAID_DIALECTS_BRAID_DIMENSIONMAPPING_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir {
namespace braid {

enum class ReductionKind : uint32_t;

/// How slices along a factor relate to the op's results.
enum class FactorKind {
  /// Slices are independent; the factor appears in at least one result.
  Parallel,
  /// Appears only in operands; a slice gives a partial result that the
  /// factor's combiner completes (a sum for a contraction).
  Reduction,
  /// The op needs every dimension made of this factor in one piece.
  Whole,
  /// Appears only in operands; chunk i along factor `prefixOf` needs chunks
  /// 0..i of this factor (keys/values of causal attention).
  CausalPrefix,
  /// Tokens routed into the slots of factor `routesTo` (MoE dispatch and
  /// combine): a block of tokens fills a block of slots, but in an order
  /// local to the block, so slots sliced this way are consistent only with
  /// ops routing the same block of tokens.
  Routed,
};

/// One axis of an op's iteration space.
struct Factor {
  int64_t size;
  FactorKind kind;
  /// The combiner of a Reduction factor.
  std::optional<ReductionKind> combiner;
  /// For a CausalPrefix factor, the factor whose chunks bound its prefix.
  std::optional<unsigned> prefixOf;
  /// For a Routed factor, the slot factor its tokens are routed into.
  std::optional<unsigned> routesTo;
  /// For a Routed factor, the operand holding the routing choices (which
  /// expert each token goes to): slots are consistent only between ops
  /// routed by the same choices.
  std::optional<unsigned> routedBy;
};

/// A block of one factor that an op computes alone (a rank's share under
/// partitioning, a chunk under Domino/ISO). The factor's range is viewed as
/// [within, size / within]; the block holds `size` indices: `size / within`
/// consecutive indices of the second part, for each of the `within` indices
/// of the first. `within == 1` is one contiguous block.
struct FactorBlock {
  unsigned factor = 0;
  int64_t within = 1;
  /// Indices of the factor in the block.
  int64_t size = 0;
  /// Where a contiguous block starts (an `index` value); null when `within`
  /// is not 1, where no single start exists.
  Value offset;
};

/// The factors of one dimension, major to minor; empty for a dimension of
/// size 1 that is broadcast.
using DimFactors = SmallVector<unsigned, 1>;
/// The factors of every dimension of one value; empty for non-tensor values.
using ValueFactors = SmallVector<DimFactors, 4>;

/// How one operand dimension relates to a result dimension.
enum class DimRelation {
  /// Slice i of the result dimension needs slice i of the operand dimension.
  Parallel,
  /// Slice i of the result dimension needs slices 0..i of the operand one.
  CausalPrefix,
};

/// An operand dimension that a result dimension depends on.
struct OperandDimRef {
  unsigned operand;
  unsigned dim;
  DimRelation relation;
  bool operator==(const OperandDimRef &other) const {
    return operand == other.operand && dim == other.dim &&
           relation == other.relation;
  }
};

/// The factor mapping of one op (see DimensionMappingOpInterface).
class DimensionMapping {
public:
  /// Adds a factor to the iteration space and returns its index.
  unsigned addFactor(int64_t size, FactorKind kind,
                     std::optional<ReductionKind> combiner = std::nullopt,
                     std::optional<unsigned> prefixOf = std::nullopt);
  /// Adds a Routed token factor whose tokens fill slots of factor `slots`
  /// by the choices in operand `routedBy`.
  unsigned addRoutedFactor(int64_t size, unsigned slots, unsigned routedBy);
  /// Appends the mapping of the next operand / result.
  void addOperand(ValueFactors dims) { operands.push_back(std::move(dims)); }
  void addResult(ValueFactors dims) { results.push_back(std::move(dims)); }

  ArrayRef<Factor> getFactors() const { return factors; }
  ArrayRef<ValueFactors> getOperands() const { return operands; }
  ArrayRef<ValueFactors> getResults() const { return results; }

  /// Returns every operand dimension that result `result`'s dimension `dim`
  /// depends on, and how: those sharing one of its factors (parallel) and
  /// those made of a causal-prefix factor bounded by one of its factors.
  SmallVector<OperandDimRef> getOperandDimsOf(unsigned result,
                                              unsigned dim) const;

  /// Checks the mapping against the op's types: one entry per operand and
  /// result, factor sizes multiplying to each dimension's size, every factor
  /// used, reduction and causal factors absent from results. Returns a
  /// description of the first problem, or std::nullopt when consistent.
  std::optional<std::string> check(Operation *op) const;

  /// Whether factor `f` leads every dimension it is part of: only then is a
  /// block of it one contiguous block of each of those dimensions.
  bool leadsEveryDimension(unsigned f) const;

  /// The size that dimension `dims` has when the op computes only `blocks`
  /// (each listed factor holding its block's indices).
  int64_t blockDimSize(const DimFactors &dims,
                       ArrayRef<FactorBlock> blocks) const;

  /// The factors of operand `operand` that are reductions shared with
  /// another operand (the contraction of a matmul against that operand).
  SmallVector<unsigned> getContractionFactors(unsigned operand) const;
  /// The factor of `operand` that is parallel and shared with the first
  /// result but with no other operand (a matmul's output columns, N), or -1.
  int getOwnOutputFactor(unsigned operand) const;
  /// The factor of `operand` that is parallel and shared with the first
  /// result and with another operand (a grouped matmul's experts, a batch),
  /// or -1 when there is none.
  int getSharedBatchFactor(unsigned operand) const;

  /// Prints `([f0, f1], [f1, f2]) -> ([f0, f2]) {f0 = 8, f1 = 16 sum, ...}`:
  /// `_` for a factorless dimension, `-` for a non-tensor value, `(f0 f1)` for
  /// a dimension made of several factors.
  void print(raw_ostream &os) const;
  std::string toString() const;

private:
  SmallVector<Factor> factors;
  SmallVector<ValueFactors> operands;
  SmallVector<ValueFactors> results;
};

/// The factor leading dimension `dim` of `dims`, or -1 (no such dimension,
/// or a broadcast dimension without factors).
int leadingFactor(const ValueFactors &dims, int64_t dim);
/// The dimension of `dims` that factor `f` leads, or -1.
int64_t dimLedBy(const ValueFactors &dims, int f);

/// Mapping of an elementwise op with numpy broadcasting: one parallel factor
/// per result dimension; an operand dimension maps to the factor of the result
/// dimension it aligns with, or to none where it is a broadcast size 1.
DimensionMapping getElementwiseMapping(Operation *op);

/// Returns the factors of `value` when its shape, aligned at the trailing
/// dimensions, broadcasts numpy-style to `resultShape` whose dimensions have
/// `resultFactors`: an equal dimension shares the factor, a broadcast size 1
/// has none. Non-tensor values map to no dimensions.
ValueFactors alignToResult(Value value, ArrayRef<unsigned> resultFactors,
                           ArrayRef<int64_t> resultShape);

/// Adds one parallel factor per dimension of `shape` and returns them.
SmallVector<unsigned> addParallelFactors(DimensionMapping &mapping,
                                         ArrayRef<int64_t> shape);

/// Mapping of an op that passes operand 0 to result 0 of the same rank,
/// keeping some dimensions and resizing the others (slice, all_gather, ...): a
/// kept dimension is one parallel factor; a resized one is whole on the input
/// and its own parallel factor on the result. Other operands map to nothing.
DimensionMapping getResizeMapping(Operation *op,
                                  function_ref<bool(int64_t)> keepsDim);

/// Mapping of a reduction of operand 0 over `dims` into result 0.
DimensionMapping getReductionMapping(Operation *op, ArrayRef<int64_t> dims,
                                     bool keepDims, ReductionKind combiner);

/// Mapping of a normalization over dimensions [axis, rank) of operand 0, with
/// every other operand (scale, bias) shaped like those trailing dimensions.
DimensionMapping getNormalizationMapping(Operation *op, int64_t axis);

/// Returns the number of elements of a statically shaped tensor value.
int64_t getNumElements(Value value);
/// Returns the bytes of a statically shaped tensor value (i1 as one byte).
int64_t getNumBytes(Value value);
/// Returns the bytes of all tensor operands and results of `op`.
int64_t getOperandAndResultBytes(Operation *op);

} // namespace braid
} // namespace mlir

#endif // BRAID_DIALECTS_BRAID_DIMENSIONMAPPING_H
