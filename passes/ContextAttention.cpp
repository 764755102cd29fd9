//===- ContextAttention.cpp - ring and 2-D context-parallel attention -----===//
//
// braid-partition's cp preset computes each rank's block of queries against
// keys and values all-gathered along the sequence. These passes replace that
// gather with exchanges that overlap partial attention:
//
// - braid-ring-attention (Ring Attention): P - 1 ring shifts of this rank's
//   K/V block, a partial attention (with its log-sum-exp) on each block as
//   it arrives, one exact merge.
// - braid-attention-2d (ATTENTION2D): the P ranks of the axis become an
//   R x C grid; queries are gathered along a row, K/V travel around the
//   column in R ring steps, and the partial results of a row are exchanged
//   with one all-to-all and merged, so each rank again owns its block.
//
// Causality is exact through positions: every K/V block travels with the
// sequence positions of its keys, and a query sees a key when its position
// is not smaller. A block entirely in a query block's future is fully masked
// (zero output, log-sum-exp -inf, nothing in the merge).
//
//===----------------------------------------------------------------------===//

#include "passes/IRHelpers.h"
#include "passes/Overlap.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDRINGATTENTION
#define GEN_PASS_DEF_BRAIDATTENTION2D
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// Builds the pieces both schemes share.
struct AttentionBuilder {
  AttentionBuilder(AttentionOp attention, MeshOp mesh)
      : b(attention), loc(attention.getLoc()), mesh(mesh) {}

  FlatSymbolRefAttr meshRef() {
    return FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  }
  ArrayAttr axes(ArrayRef<StringRef> names) {
    return b.getStrArrayAttr(names);
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value mul(Value a, int64_t c) {
    return arith::MulIOp::create(b, loc, a, index(c));
  }
  Value add(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }
  Value sub(Value a, Value c) { return arith::SubIOp::create(b, loc, a, c); }
  /// This rank's index in the group of `names` (row-major over them).
  Value groupIndex(ArrayRef<StringRef> names) {
    return mlir::braid::groupIndex(b, loc, mesh, names);
  }
  /// Positions 0..n-1.
  Value positions(int64_t n) {
    auto type = RankedTensorType::get({n}, b.getI64Type());
    SmallVector<int64_t> values(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = i;
    return ConstantOp::create(
        b, loc, type, DenseElementsAttr::get(type, ArrayRef<int64_t>(values)));
  }
  /// `size` elements of the 1-D `v` from the runtime index `offset`.
  Value slice1d(Value v, Value offset, int64_t size) {
    auto type = RankedTensorType::get({size}, b.getI64Type());
    return SliceOp::create(b, loc, type, v, ValueRange{offset},
                           b.getDenseI64ArrayAttr({ShapedType::kDynamic}),
                           b.getDenseI64ArrayAttr({size}),
                           b.getDenseI64ArrayAttr({1}));
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(v.getType());
    return ReshapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), v);
  }
  /// The mask "query position >= key position", [Sq, Sk].
  Value causalMask(Value queryPositions, Value keyPositions) {
    int64_t sq = cast<RankedTensorType>(queryPositions.getType()).getDimSize(0);
    int64_t sk = cast<RankedTensorType>(keyPositions.getType()).getDimSize(0);
    return CompareOp::create(
        b, loc, RankedTensorType::get({sq, sk}, b.getI1Type()),
        CompareKindAttr::get(b.getContext(), CompareKind::GE),
        reshape(queryPositions, {sq, 1}), reshape(keyPositions, {1, sk}));
  }
  /// One ring shift of `v`; attentions sharing K/V share the shifts.
  Value permute(Value v, ArrayRef<StringRef> names,
                llvm::DenseMap<Value, Value> &shifted) {
    if (Value done = shifted.lookup(v))
      return done;
    Value next = CollectivePermuteOp::create(b, loc, v.getType(), meshRef(),
                                             axes(names), v,
                                             b.getI64IntegerAttr(1));
    shifted[v] = next;
    return next;
  }
  Value gather(Value v, ArrayRef<StringRef> names, int64_t dim) {
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] *= mesh.getGroupSize(axes(names));
    return AllGatherOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()),
        meshRef(), axes(names), v, b.getI64IntegerAttr(dim));
  }
  std::pair<Value, Value> partial(AttentionOp attention, Value q, Value k,
                                  Value v, Value mask) {
    auto qType = cast<RankedTensorType>(q.getType());
    auto vType = cast<RankedTensorType>(v.getType());
    auto out = RankedTensorType::get({qType.getDimSize(0), qType.getDimSize(1),
                                      qType.getDimSize(2), vType.getDimSize(3)},
                                     qType.getElementType());
    auto lse = RankedTensorType::get(
        {qType.getDimSize(0), qType.getDimSize(1), qType.getDimSize(2)},
        b.getF32Type());
    auto op = AttentionPartialOp::create(b, loc, out, lse, q, k, v, mask,
                                         /*causal_offset=*/Value(),
                                         /*causal=*/nullptr,
                                         attention.getScaleAttr());
    return {op.getResult(), op.getLse()};
  }
  std::pair<Value, Value> merge(ArrayRef<Value> outputs, ArrayRef<Value> lses) {
    auto op = AttentionMergeOp::create(b, loc, outputs, lses);
    return {op.getResult(), op.getLse()};
  }

  OpBuilder b;
  Location loc;
  MeshOp mesh;
};

/// An attention whose keys and values are all-gathered along the sequence
/// over one group: what braid-partition's cp preset produces.
struct GatheredAttention {
  AttentionOp attention;
  AllGatherOp keys, values;
  MeshOp mesh;
  SmallVector<StringRef> axes;
  /// For a mask "query position >= key position" (braid-balance-sequence):
  /// this rank's query positions [Sq] and all key positions [Sk].
  Value queryPositions, keyPositions;
};

/// Recognizes a mask "query position >= key position": `compare ge` of an
/// [N, 1] column and a [1, Sk] row of i64 positions, possibly cut to this
/// rank's [Sq] rows by a slice (what braid-partition makes of it). Returns
/// the rank's query positions and all key positions, as 1-D values built
/// before `at`.
std::optional<std::pair<Value, Value>> matchPositionMask(Value mask,
                                                         Operation *at) {
  auto slice = mask.getDefiningOp<SliceOp>();
  auto compare = (slice ? slice.getInput() : mask).getDefiningOp<CompareOp>();
  if (!compare || compare.getKind() != CompareKind::GE)
    return std::nullopt;
  auto column = cast<RankedTensorType>(compare.getLhs().getType());
  auto row = cast<RankedTensorType>(compare.getRhs().getType());
  if (column.getRank() != 2 || row.getRank() != 2 ||
      column.getDimSize(1) != 1 || row.getDimSize(0) != 1 ||
      !column.getElementType().isInteger(64) ||
      !row.getElementType().isInteger(64))
    return std::nullopt;
  int64_t sq = cast<RankedTensorType>(mask.getType()).getDimSize(0);
  int64_t sk = row.getDimSize(1);
  if (slice) {
    // Only rows may be cut, by a unit-stride slice.
    if (slice.getStaticOffsets()[1] != 0 || slice.getStaticSizes()[1] != sk ||
        slice.getStaticStrides()[0] != 1)
      return std::nullopt;
  }
  OpBuilder b(at);
  Location loc = at->getLoc();
  auto flat = [&](Value v, int64_t n) {
    return ReshapeOp::create(
        b, loc, RankedTensorType::get({n}, b.getI64Type()), v);
  };
  Value queries = flat(compare.getLhs(), column.getDimSize(0));
  Value keys = flat(compare.getRhs(), sk);
  if (slice) {
    SmallVector<Value> dynamic;
    SmallVector<int64_t> offsets{slice.getStaticOffsets()[0]};
    if (ShapedType::isDynamic(offsets[0]))
      dynamic.push_back(slice.getOffsets().front());
    queries = SliceOp::create(
        b, loc, RankedTensorType::get({sq}, b.getI64Type()), queries, dynamic,
        b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr({sq}),
        b.getDenseI64ArrayAttr({1}));
  }
  return std::make_pair(queries, keys);
}

std::optional<GatheredAttention> matchGathered(AttentionOp attention) {
  auto keys = attention.getKey().getDefiningOp<AllGatherOp>();
  auto values = attention.getValue().getDefiningOp<AllGatherOp>();
  std::optional<std::pair<Value, Value>> positions;
  if (attention.getMask()) {
    positions = matchPositionMask(attention.getMask(), attention);
    if (!positions || attention.getCausal())
      return std::nullopt;
  }
  if (!keys || !values || keys.getDim() != 2 ||
      values.getDim() != 2 || keys.getMeshAttr() != values.getMeshAttr() ||
      keys.getMeshAxes() != values.getMeshAxes())
    return std::nullopt;
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(attention,
                                                           keys.getMeshAttr());
  if (!mesh)
    return std::nullopt;
  GatheredAttention match{attention, keys, values, mesh, {}, {}, {}};
  if (positions)
    std::tie(match.queryPositions, match.keyPositions) = *positions;
  for (Attribute a : keys.getMeshAxes())
    match.axes.push_back(cast<StringAttr>(a).getValue());
  return match;
}

/// The attention's causal offset: where its queries start among the keys
/// (keys numbered from 0 over the whole sequence).
Value causalOffset(AttentionBuilder &h, AttentionOp attention, int64_t sq,
                   int64_t sk) {
  Value offset = attention.getCausalOffset();
  return offset ? offset : h.index(sk - sq);
}

void replaceAttention(AttentionOp attention, Value result) {
  Operation *keys = attention.getKey().getDefiningOp();
  Operation *values = attention.getValue().getDefiningOp();
  Operation *mask =
      attention.getMask() ? attention.getMask().getDefiningOp() : nullptr;
  attention.getResult().replaceAllUsesWith(result);
  attention.erase();
  for (Operation *gather : {keys, values, mask})
    if (gather && gather->use_empty())
      gather->erase();
}

} // namespace

LogicalResult mlir::braid::applyRingAttention(ModuleOp module) {
  SmallVector<GatheredAttention> matches;
  module.walk([&](AttentionOp attention) {
    if (std::optional<GatheredAttention> m = matchGathered(attention))
      matches.push_back(*m);
  });
  llvm::DenseMap<Value, Value> shifted;
  for (GatheredAttention &m : matches) {
    AttentionOp attention = m.attention;
    AttentionBuilder h(attention, m.mesh);
    int64_t ranks = m.mesh.getGroupSize(m.keys.getMeshAxes());
    auto qType = attention.getQuery().getType();
    int64_t sq = qType.getDimSize(2);
    int64_t block = m.keys.getInput().getType().getDimSize(2);
    int64_t sk = block * ranks;
    bool causal = attention.getCausal() || m.keyPositions;
    Value q = attention.getQuery();
    Value k = m.keys.getInput(), v = m.values.getInput();
    Value qPos, kPos;
    if (m.keyPositions) {
      // Positions given by the mask (a reordered sequence).
      qPos = m.queryPositions;
      kPos = h.slice1d(m.keyPositions, h.mul(h.groupIndex(m.axes), block),
                       block);
    } else if (causal) {
      Value all = h.positions(sk);
      qPos = h.slice1d(all, causalOffset(h, attention, sq, sk), sq);
      kPos = h.slice1d(all, h.mul(h.groupIndex(m.axes), block), block);
    }
    SmallVector<Value> outputs, lses;
    for (int64_t step = 0; step < ranks; ++step) {
      if (step > 0) {
        k = h.permute(k, m.axes, shifted);
        v = h.permute(v, m.axes, shifted);
        if (causal)
          kPos = h.permute(kPos, m.axes, shifted);
      }
      Value mask = causal ? h.causalMask(qPos, kPos) : Value();
      auto [o, lse] = h.partial(attention, q, k, v, mask);
      outputs.push_back(o);
      lses.push_back(lse);
    }
    replaceAttention(attention, h.merge(outputs, lses).first);
  }
  return success();
}

/// Splits mesh axis `axis` (size rows * columns) into `axis`_r and `axis`_c
/// everywhere in `module`: ranks are numbered row-major, so a group over the
/// old axis is the group over both new ones, in the same order.
static LogicalResult splitMeshAxis(ModuleOp module, MeshOp mesh, StringRef axis,
                                   int64_t rows, int64_t columns,
                                   std::string &rowAxis,
                                   std::string &columnAxis) {
  std::optional<unsigned> position = mesh.getAxisIndex(axis);
  if (!position)
    return module.emitError("braid-attention-2d: mesh @")
           << mesh.getSymName() << " has no axis '" << axis << "'";
  int64_t size = mesh.getShape()[*position];
  if (rows * columns != size)
    return module.emitError("braid-attention-2d: a ")
           << rows << "x" << columns << " grid does not cover the " << size
           << " ranks of axis '" << axis << "'";
  rowAxis = (axis + "_r").str();
  columnAxis = (axis + "_c").str();
  OpBuilder b(module.getContext());
  SmallVector<Attribute> names;
  SmallVector<int64_t> shape;
  for (auto [i, name] : llvm::enumerate(mesh.getAxisNames())) {
    if (i == *position) {
      names.push_back(b.getStringAttr(rowAxis));
      names.push_back(b.getStringAttr(columnAxis));
      shape.push_back(rows);
      shape.push_back(columns);
    } else {
      names.push_back(name);
      shape.push_back(mesh.getShape()[i]);
    }
  }
  auto expand = [&](ArrayAttr list) {
    SmallVector<Attribute> out;
    for (Attribute a : list) {
      if (cast<StringAttr>(a).getValue() == axis) {
        out.push_back(b.getStringAttr(rowAxis));
        out.push_back(b.getStringAttr(columnAxis));
      } else {
        out.push_back(a);
      }
    }
    return b.getArrayAttr(out);
  };
  mesh.setAxisNamesAttr(b.getArrayAttr(names));
  mesh.setShapeAttr(b.getDenseI64ArrayAttr(shape));
  FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  SmallVector<RankOp> ranks;
  module.walk([&](Operation *op) {
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      if (collective.getMeshAttr() == meshRef)
        op->setAttr("mesh_axes", expand(collective.getMeshAxes()));
    } else if (auto weight = dyn_cast<GetWeightOp>(op)) {
      if (weight.getMeshAttr() == meshRef && weight.getShardingAttr()) {
        SmallVector<Attribute> entries;
        for (Attribute entry : weight.getShardingAttr())
          entries.push_back(expand(cast<ArrayAttr>(entry)));
        weight.setShardingAttr(b.getArrayAttr(entries));
      }
    } else if (auto rank = dyn_cast<RankOp>(op)) {
      if (rank.getMeshAttr() == meshRef && rank.getAxis() == axis)
        ranks.push_back(rank);
    }
  });
  // The old axis's index is the row-major index over the two new ones.
  for (RankOp rank : ranks) {
    b.setInsertionPoint(rank);
    rank.getResult().replaceAllUsesWith(
        groupIndex(b, rank.getLoc(), mesh, {rowAxis, columnAxis}));
    rank.erase();
  }
  return success();
}

LogicalResult mlir::braid::applyAttention2D(ModuleOp module, StringRef axis,
                                            int64_t rows, int64_t columns) {
  auto meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (meshes.size() != 1)
    return module.emitError("braid-attention-2d: expects one braid.mesh");
  MeshOp mesh = meshes.front();
  std::string rowAxis, columnAxis;
  if (failed(splitMeshAxis(module, mesh, axis, rows, columns, rowAxis,
                           columnAxis)))
    return failure();
  SmallVector<StringRef> both{rowAxis, columnAxis};
  SmallVector<GatheredAttention> matches;
  module.walk([&](AttentionOp attention) {
    std::optional<GatheredAttention> m = matchGathered(attention);
    if (m && m->axes == both)
      matches.push_back(*m);
  });
  llvm::DenseMap<Value, Value> shifted;
  for (GatheredAttention &m : matches) {
    AttentionOp attention = m.attention;
    AttentionBuilder h(attention, m.mesh);
    auto qType = attention.getQuery().getType();
    int64_t batch = qType.getDimSize(0), heads = qType.getDimSize(1);
    int64_t sq = qType.getDimSize(2);
    int64_t block = m.keys.getInput().getType().getDimSize(2);
    int64_t sk = block * rows * columns;
    bool causal = attention.getCausal() || m.keyPositions;
    if (sq != block)
      return attention.emitOpError("braid-attention-2d: expects a query "
                                   "block as long as a key block (got ")
             << sq << " and " << block << ")";
    // Queries of this grid row: the C blocks of ranks (i, 0..C-1).
    Value q = h.gather(attention.getQuery(), {columnAxis}, 2);
    Value k = m.keys.getInput(), v = m.values.getInput();
    Value qPos, kPos;
    if (m.keyPositions) {
      // Positions given by the mask (a reordered sequence): the row's query
      // positions are gathered like the queries.
      qPos = h.gather(m.queryPositions, {columnAxis}, 0);
      kPos = h.slice1d(m.keyPositions, h.mul(h.groupIndex(both), block), block);
    } else if (causal) {
      Value all = h.positions(sk);
      // This rank's queries start at the causal offset; its row's at the
      // offset less its column times a block.
      Value rowStart = h.sub(causalOffset(h, attention, sq, sk),
                             h.mul(h.groupIndex({columnAxis}), block));
      qPos = h.slice1d(all, rowStart, sq * columns);
      kPos = h.slice1d(all, h.mul(h.groupIndex(both), block), block);
    }
    // K/V blocks travel around the grid column: R partial attentions.
    SmallVector<Value> outputs, lses;
    for (int64_t step = 0; step < rows; ++step) {
      if (step > 0) {
        k = h.permute(k, {rowAxis}, shifted);
        v = h.permute(v, {rowAxis}, shifted);
        if (causal)
          kPos = h.permute(kPos, {rowAxis}, shifted);
      }
      Value mask = causal ? h.causalMask(qPos, kPos) : Value();
      auto [o, lse] = h.partial(attention, q, k, v, mask);
      outputs.push_back(o);
      lses.push_back(lse);
    }
    auto [rowOut, rowLse] = h.merge(outputs, lses);
    // Each rank of the row holds the row's queries against its column's
    // keys; one all-to-all gives every rank its own block against every
    // column, merged exactly.
    int64_t dv = cast<RankedTensorType>(rowOut.getType()).getDimSize(3);
    auto exchange = [&](Value v, SmallVector<int64_t> shape) {
      Value split = h.reshape(v, shape);
      return AllToAllOp::create(h.b, h.loc, split.getType(), h.meshRef(),
                                h.axes({columnAxis}), split,
                                h.b.getI64IntegerAttr(2),
                                h.b.getI64IntegerAttr(2))
          .getResult();
    };
    Value outs = exchange(rowOut, {batch, heads, columns, block, dv});
    Value logs = exchange(rowLse, {batch, heads, columns, block});
    SmallVector<Value> pieces, pieceLses;
    for (int64_t c = 0; c < columns; ++c) {
      auto take = [&](Value v, int64_t rank) {
        SmallVector<int64_t> shape{batch, heads, block};
        if (rank == 5)
          shape.push_back(dv);
        return h.reshape(sliceAlong(h.b, h.loc, v, 2, c, 1), shape);
      };
      pieces.push_back(take(outs, 5));
      pieceLses.push_back(take(logs, 4));
    }
    replaceAttention(attention, h.merge(pieces, pieceLses).first);
  }
  return success();
}

namespace {
struct RingAttentionPass
    : public mlir::braid::impl::BraidRingAttentionBase<RingAttentionPass> {
  void runOnOperation() override {
    if (failed(requireUnscheduled(getOperation(), "braid-ring-attention")))
      return signalPassFailure();
    bool any = false;
    getOperation().walk([&](AttentionOp attention) {
      any |= matchGathered(attention).has_value();
    });
    // Asked for a ring where there is none to build: say so.
    if (!any)
      getOperation().emitWarning(
          "braid-ring-attention: no attention reads keys and values "
          "all-gathered along a sequence axis (partition with cp=N first); "
          "nothing changed");
    if (failed(applyRingAttention(getOperation())) ||
        failed(mlir::verify(getOperation())))
      signalPassFailure();
  }
};

struct Attention2DPass
    : public mlir::braid::impl::BraidAttention2DBase<Attention2DPass> {
  using BraidAttention2DBase::BraidAttention2DBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(requireUnscheduled(module, "braid-attention-2d")))
      return signalPassFailure();
    auto meshes = llvm::to_vector(module.getOps<MeshOp>());
    std::optional<unsigned> position =
        meshes.size() == 1 ? meshes.front().getAxisIndex(axis) : std::nullopt;
    if (!position) {
      module.emitError("braid-attention-2d: expects one braid.mesh with axis '")
          << axis << "' (partition with cp=N first)";
      return signalPassFailure();
    }
    int64_t size = meshes.front().getShape()[*position];
    int64_t rows = 0, columns = 0;
    recordBaseline(module, "", hw);
    if (grid != "auto") {
      auto [r, c] = StringRef(grid).split('x');
      if (r.getAsInteger(10, rows) || c.getAsInteger(10, columns) || rows < 1 ||
          columns < 1) {
        module.emitError("braid-attention-2d: grid must be RxC or auto, not '")
            << grid << "'";
        return signalPassFailure();
      }
    } else {
      SmallVector<std::pair<int64_t, int64_t>> shapes;
      for (int64_t r = 1; r <= size; ++r)
        if (size % r == 0)
          shapes.push_back({r, size / r});
      FailureOr<size_t> best = pickByCost(
          module, hw, shapes.size(),
          [&](ModuleOp m, size_t i) {
            return applyAttention2D(m, axis, shapes[i].first, shapes[i].second);
          },
          "", "braid-attention-2d", [&](size_t i) {
            return std::to_string(shapes[i].first) + "x" +
                   std::to_string(shapes[i].second);
          });
      if (failed(best))
        return signalPassFailure();
      std::tie(rows, columns) = shapes[*best];
      module->setAttr("braid.attention_2d_grid",
                      StringAttr::get(&getContext(), std::to_string(rows) +
                                                         "x" +
                                                         std::to_string(columns)));
    }
    if (failed(applyAttention2D(module, axis, rows, columns)) ||
        failed(mlir::verify(module)))
      signalPassFailure();
  }
};
} // namespace
