//===- VerifyCollectives.cpp - one collective order on every rank ---------===//
//
// Replays each function in program order, the way braid-to-exec linearizes
// it into streams and events, keeping a vector clock per stream: entry s of
// a clock counts the collectives of stream s known to have been issued. A
// collective takes its stream's clock; an async's stream joins the clock of
// the stream that reaches it, and an await joins the clock its async's body
// ended with. Collective A happens before B exactly when B's clock has
// counted A. Every edge points forward in program order, so each collective
// is compared with the earlier ones only.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDVERIFYCOLLECTIVES
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// Per stream, how many of its collectives are known to have been issued.
using Clock = SmallVector<int64_t>;

/// A collective that involves other ranks, where and when it is issued.
struct IssuedCollective {
  CollectiveOpInterface op;
  MeshOp mesh;
  /// The mesh axes longer than 1 among the op's axes: they name its group.
  llvm::SmallBitVector axes;
  unsigned stream;
  /// The issuing stream's clock just after the op.
  Clock clock;
};

/// Replays one function and reports the collectives that conflict.
class CollectiveOrder {
public:
  CollectiveOrder(SymbolTableCollection &symbolTables, bool serialized)
      : symbolTables(symbolTables), serialized(serialized) {
    streamOf(AsyncOp::getMainStream());
  }

  /// Replays `region` on the main stream; fails after reporting errors.
  LogicalResult run(Region &region) {
    visit(region, mainStream);
    return failure(hadError);
  }

private:
  static constexpr unsigned mainStream = 0;

  unsigned streamOf(StringRef name);
  void visit(Region &region, unsigned stream);
  void visitAsync(AsyncOp async, unsigned stream);
  void issue(CollectiveOpInterface op, unsigned stream);
  /// Why `earlier` and `later`, unordered, may hang: empty if they may not.
  std::optional<std::string> conflict(IssuedCollective &earlier,
                                      IssuedCollective &later);
  std::string describe(IssuedCollective &collective);

  SymbolTableCollection &symbolTables;
  bool serialized;
  bool hadError = false;
  llvm::StringMap<unsigned> streamIds;
  SmallVector<std::string> streamNames;
  SmallVector<Clock> clocks;
  /// The clock of each async's stream when its body ends.
  llvm::DenseMap<Operation *, Clock> asyncEnds;
  SmallVector<IssuedCollective> issued;
};

} // namespace

/// Raises every entry of `clock` to at least the one of `other`.
static void join(Clock &clock, const Clock &other) {
  if (clock.size() < other.size())
    clock.resize(other.size(), 0);
  for (auto [mine, theirs] : llvm::zip(clock, other))
    mine = std::max(mine, theirs);
}

unsigned CollectiveOrder::streamOf(StringRef name) {
  auto [it, inserted] = streamIds.try_emplace(name, streamNames.size());
  if (inserted) {
    streamNames.push_back(name.str());
    clocks.emplace_back();
  }
  return it->second;
}

void CollectiveOrder::visit(Region &region, unsigned stream) {
  for (Block &block : region) {
    for (Operation &op : block) {
      if (auto async = dyn_cast<AsyncOp>(op)) {
        visitAsync(async, stream);
        continue;
      }
      if (auto await = dyn_cast<AwaitOp>(op)) {
        if (auto async = await.getFuture().getDefiningOp<AsyncOp>())
          join(clocks[stream], asyncEnds.lookup(async));
        continue;
      }
      if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
        issue(collective, stream);
        continue;
      }
      for (Region &nested : op.getRegions())
        visit(nested, stream);
    }
  }
}

void CollectiveOrder::visitAsync(AsyncOp async, unsigned stream) {
  // Neither runs under braid-to-exec. They are modeled anyway (the body runs
  // after what precedes it on `stream`), so that the errors below still
  // mean something.
  if (stream != mainStream) {
    async.emitOpError("is nested in an async on stream \"")
        << streamNames[stream]
        << "\"; only async regions in the main flow can be run";
    hadError = true;
  }
  if (async.getStream() == AsyncOp::getMainStream()) {
    async.emitOpError("runs on stream \"")
        << AsyncOp::getMainStream()
        << "\", the main stream; an async region needs another stream";
    hadError = true;
  }
  unsigned target = streamOf(async.getStream());
  // `clocks` may grow in streamOf: index it only afterwards.
  join(clocks[target], clocks[stream]);
  visit(async.getBody(), target);
  asyncEnds[async] = clocks[target];
}

void CollectiveOrder::issue(CollectiveOpInterface op, unsigned stream) {
  Clock &clock = clocks[stream];
  if (clock.size() <= stream)
    clock.resize(stream + 1, 0);
  ++clock[stream];

  auto mesh =
      symbolTables.lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  if (!mesh) // The op's verifier reports this.
    return;
  llvm::SmallBitVector axes(mesh.getShape().size());
  for (Attribute name : op.getMeshAxes())
    if (std::optional<unsigned> axis =
            mesh.getAxisIndex(cast<StringAttr>(name).getValue()))
      if (mesh.getShape()[*axis] > 1)
        axes.set(*axis);
  // A group of one rank waits for nobody.
  if (axes.none())
    return;

  IssuedCollective collective{op, mesh, std::move(axes), stream, clock};
  for (IssuedCollective &earlier : issued) {
    if (earlier.stream == stream)
      continue;
    // `earlier` happens before this one if this clock has counted it.
    int64_t seen = earlier.stream < clock.size() ? clock[earlier.stream] : 0;
    if (seen >= earlier.clock[earlier.stream])
      continue;
    std::optional<std::string> reason = conflict(earlier, collective);
    if (!reason)
      continue;
    InFlightDiagnostic diag = op->emitOpError();
    diag << describe(collective) << " and the '" << earlier.op->getName()
         << "' " << describe(earlier) << *reason
         << " may be issued in different orders on different ranks: nothing "
            "orders them; put them on one stream or await one before issuing "
            "the other";
    diag.attachNote(earlier.op->getLoc()) << "the other collective";
    hadError = true;
    // One error per collective: the first conflict says what to fix.
    break;
  }
  issued.push_back(std::move(collective));
}

std::optional<std::string> CollectiveOrder::conflict(IssuedCollective &earlier,
                                                     IssuedCollective &later) {
  // The runtime gives each of two streams whose collectives share a mesh
  // axis its own communicators (collectiveChannels), so unordered
  // collectives on different streams are never matched against each other;
  // only a backend that runs one collective at a time can deadlock on them.
  if (!serialized)
    return std::nullopt;
  if (earlier.mesh == later.mesh) {
    if (earlier.axes == later.axes)
      return std::string();
    if (earlier.axes.anyCommon(later.axes)) {
      llvm::SmallBitVector common = earlier.axes;
      common &= later.axes;
      std::string text;
      llvm::raw_string_ostream os(text);
      os << " (both span";
      for (unsigned axis : common.set_bits())
        os << " " << later.mesh.getAxisNames()[axis];
      os << ")";
      return text;
    }
  }
  return std::string(" (serialized-collectives: a rank runs one collective "
                     "at a time)");
}

std::string CollectiveOrder::describe(IssuedCollective &collective) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "on " << collective.op.getMeshAttr() << collective.op.getMeshAxes();
  if (collective.stream == mainStream)
    os << " (the main flow)";
  else
    os << " (stream \"" << streamNames[collective.stream] << "\")";
  return text;
}

namespace {
struct VerifyCollectivesPass
    : public braid::impl::BraidVerifyCollectivesBase<VerifyCollectivesPass> {
  using BraidVerifyCollectivesBase::BraidVerifyCollectivesBase;

  void runOnOperation() override {
    SymbolTableCollection symbolTables;
    bool failed = false;
    for (auto function : getOperation().getOps<FunctionOpInterface>()) {
      if (function.isExternal())
        continue;
      CollectiveOrder order(symbolTables, serializedCollectives);
      failed |= mlir::failed(order.run(function.getFunctionBody()));
    }
    markAllAnalysesPreserved();
    if (failed)
      signalPassFailure();
  }
};
} // namespace
