//===- OverlapModel.cpp - time of braid programs for the overlap passes ---===//

#include "passes/OverlapModel.h"

#include "dialects/braid/Fusion.h"

#include "runtime/comm/Communicator.h"
#include "runtime/cost/ClusterCost.h"
#include "runtime/cost/HardwareProfile.h"
#include "runtime/cost/Roofline.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::braid;
namespace rt = ::braid::rt;

CostModel::CostModel() = default;
CostModel::CostModel(CostModel &&) = default;
CostModel::~CostModel() = default;

FailureOr<CostModel> CostModel::load(StringRef hw, Operation *anchor) {
  CostModel model;
  try {
    model.profile = std::make_unique<rt::HardwareProfile>(
        rt::resolveHardwareProfile(hw.str()));
  } catch (const std::exception &e) {
    return anchor->emitError("hardware profile '")
           << hw << "': " << e.what();
  }
  return model;
}

static rt::DType dtypeOf(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (element.isF16())
    return rt::DType::F16;
  if (element.isBF16())
    return rt::DType::BF16;
  if (element.isInteger(64))
    return rt::DType::I64;
  if (element.isInteger(32))
    return rt::DType::I32;
  if (element.isInteger(1))
    return rt::DType::I1;
  return rt::DType::F32;
}

double CostModel::seconds(Operation *op) const {
  if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
        op, collective.getMeshAttr());
    std::optional<rt::CollectiveKind> kind =
        rt::parseCollectiveKind(op->getName().stripDialect());
    if (!mesh || !kind)
      return 0;
    rt::MeshShape shape;
    for (auto [name, size] :
         llvm::zip(mesh.getAxisNames(), mesh.getShape())) {
      shape.axisNames.push_back(cast<StringAttr>(name).str());
      shape.axisSizes.push_back(size);
    }
    std::vector<std::string> axes;
    for (Attribute axis : collective.getMeshAxes())
      axes.push_back(cast<StringAttr>(axis).str());
    // S as nccl-tests defines it: the gathered output for all-gather.
    Value measured = isa<AllGatherOp>(op) ? op->getResult(0)
                                          : collective.getInput();
    double bytes = (double)getNumBytes(measured);
    // The slowest group (groups of one axis set may sit differently).
    double seconds = 0;
    for (int64_t rank = 0; rank < shape.numRanks(); ++rank) {
      std::vector<int64_t> group = shape.group(rank, axes);
      if (group.front() != rank)
        continue;
      rt::GroupPlacement placement =
          rt::placeGroup(group, profile->node.gpusPerNode);
      seconds = std::max(seconds, rt::clusterCollectiveTime(
                                      *profile, *kind,
                                      rt::CollectiveAlgorithm::Auto,
                                      placement, bytes));
    }
    return seconds;
  }
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost || isa<GetWeightOp, ConstantOp>(op))
    return 0;
  Type type = op->getNumOperands() ? op->getOperand(0).getType()
                                   : op->getResult(0).getType();
  StringRef name = op->getName().stripDialect();
  return rt::kernelTime(*profile, rt::classifyKernel(name.str()),
                        dtypeOf(type), (double)cost.getFlops(),
                        (double)cost.getMinBytes())
      .total();
}

CostModel::Kernels CostModel::predictKernels(Block &block) const {
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, size_t> position;
  // events[i]: the asyncs and awaits before position i.
  SmallVector<size_t> events{0};
  for (Operation &op : block) {
    position[&op] = ops.size();
    ops.push_back(&op);
    events.push_back(events.back() + (isa<AsyncOp, AwaitOp>(op) ? 1 : 0));
  }
  // Whether ops at `from` < `to` may fuse: no event between them, and both
  // on the compute stream or both in a communication round.
  auto mayJoin = [&](size_t from, size_t to) {
    return events[to] == events[from + 1] &&
           ops[from]->hasAttr(kRoundAttrName) ==
               ops[to]->hasAttr(kRoundAttrName);
  };
  Kernels kernels;
  llvm::DenseMap<Operation *, double> &seconds = kernels.seconds;
  std::vector<bool> absorbed(ops.size(), false);
  auto kernel = [&](StringRef name, double flops, double bytes) {
    return rt::kernelTime(*profile, rt::classifyKernel(name.str()),
                          rt::DType::F32, flops, bytes)
        .total();
  };
  // Epilogues first, in program order, as braid-to-exec fuses them.
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto matmul = dyn_cast<MatmulOp>(op);
    if (absorbed[i] || !matmul || !matmul.getType().getElementType().isF32())
      continue;
    auto mayMoveUp = [&, i = i](Operation *user) {
      auto at = position.find(user);
      return at != position.end() && at->second > i && mayJoin(i, at->second);
    };
    auto existsAtMatmul = [&, i = i](Value value) {
      Operation *def = viewedValue(value).getDefiningOp();
      auto at = def ? position.find(def) : position.end();
      return at == position.end() || at->second < i;
    };
    Epilogue epilogue = collectEpilogue(matmul, mayMoveUp, existsAtMatmul);
    if (epilogue.ops.empty())
      continue;
    double bytes = (double)(cast<CostOpInterface>(op).getMinBytes() +
                            epilogue.extraBytes());
    seconds[matmul] =
        kernel("matmul",
               (double)(cast<CostOpInterface>(op).getFlops() + epilogue.flops),
               bytes);
    for (Operation *fused : epilogue.ops) {
      absorbed[position[fused]] = true;
      seconds[fused] = 0;
    }
    // With the reshapes between the fused ops (views, no kernel).
    llvm::SetVector<Operation *> members;
    members.insert(op);
    for (Value value : epilogue.internal)
      if (Operation *def = value.getDefiningOp(); def && position.count(def))
        members.insert(def);
    members.insert(epilogue.ops.begin(), epilogue.ops.end());
    SmallVector<Operation *> sorted(members.begin(), members.end());
    llvm::sort(sorted, [&](Operation *a, Operation *b) {
      return position[a] < position[b];
    });
    kernels.fusions.push_back(std::move(sorted));
  }
  // Then trees, roots from the end.
  for (size_t i = ops.size(); i-- > 0;) {
    Operation *root = ops[i];
    if (absorbed[i] || elementwiseKernelName(root).empty())
      continue;
    auto mayMoveDown = [&](Operation *def) {
      auto at = position.find(def);
      return at != position.end() && at->second < i && !absorbed[at->second] &&
             mayJoin(at->second, i);
    };
    ElementwiseGroup group = collectElementwiseTree(root, mayMoveDown);
    if (!group.fusible())
      continue;
    seconds[root] =
        kernel("elementwise", (double)group.flops, (double)group.bytes());
    for (Operation *fused : group.ops)
      if (fused != root) {
        absorbed[position[fused]] = true;
        seconds[fused] = 0;
      }
    SmallVector<Operation *> members(group.ops);
    llvm::sort(members, [&](Operation *a, Operation *b) {
      return position[a] < position[b];
    });
    kernels.fusions.push_back(std::move(members));
  }
  for (Operation *op : ops)
    seconds.try_emplace(op, this->seconds(op));
  return kernels;
}

namespace {
/// predictKernels' seconds, block by block as ops are asked for.
class FusedCosts {
public:
  explicit FusedCosts(const CostModel &model) : model(model) {}
  double operator()(Operation *op) {
    Block *block = op->getBlock();
    auto it = blocks.find(block);
    if (it == blocks.end())
      it = blocks.try_emplace(block, model.predictKernels(*block).seconds)
               .first;
    return it->second.lookup(op);
  }

private:
  const CostModel &model;
  llvm::DenseMap<Block *, llvm::DenseMap<Operation *, double>> blocks;
};
} // namespace

Timeline mlir::braid::estimateTimeline(func::FuncOp function,
                                       const CostModel &model) {
  Timeline timeline;
  FusedCosts seconds(model);
  double main = 0;
  llvm::StringMap<double> streamFree;
  llvm::DenseMap<Value, double> futureEnd;
  SmallVector<std::pair<double, double>> computeIntervals;
  // Position in program order, for "work between async and await".
  llvm::DenseMap<Operation *, size_t> position;
  llvm::DenseMap<Value, size_t> firstAwait;
  SmallVector<size_t> computePositions;
  SmallVector<std::pair<size_t, Value>> asyncCollectives;
  size_t index = 0;
  for (Operation &op : function.getBody().front()) {
    position[&op] = index++;
    if (auto async = dyn_cast<AsyncOp>(op)) {
      StringRef stream = async.getStream();
      double t = std::max(main, streamFree.lookup(stream));
      for (Operation &inner : async.getBody().front()) {
        if (auto await = dyn_cast<AwaitOp>(inner)) {
          t = std::max(t, futureEnd.lookup(await.getFuture()));
          continue;
        }
        double d = seconds(&inner);
        if (isa<CollectiveOpInterface>(inner)) {
          timeline.collectives.push_back(
              {&inner, main, t, t + d, 0, /*async=*/true, false});
          timeline.commBusy += d;
          for (Value future : async.getResults())
            asyncCollectives.push_back(
                {timeline.collectives.size() - 1, future});
        } else {
          computeIntervals.push_back({t, t + d});
          timeline.computeBusy += d;
        }
        t += d;
      }
      streamFree[stream] = t;
      for (Value future : async.getResults())
        futureEnd[future] = t;
      continue;
    }
    if (auto await = dyn_cast<AwaitOp>(op)) {
      main = std::max(main, futureEnd.lookup(await.getFuture()));
      firstAwait.try_emplace(await.getFuture(), position[&op]);
      continue;
    }
    double d = seconds(&op);
    if (isa<CollectiveOpInterface>(op)) {
      timeline.collectives.push_back({&op, main, main, main + d, 0, false,
                                      false});
      timeline.commBusy += d;
    } else if (d > 0) {
      computeIntervals.push_back({main, main + d});
      computePositions.push_back(position[&op]);
      timeline.computeBusy += d;
    }
    main += d;
  }
  timeline.makespan = main;
  for (auto &entry : streamFree)
    timeline.makespan = std::max(timeline.makespan, entry.second);
  for (CollectiveTiming &c : timeline.collectives) {
    if (!c.async)
      continue;
    for (auto [begin, end] : computeIntervals)
      c.hidden += std::max(0.0, std::min(end, c.end) - std::max(begin, c.start));
  }
  for (auto [i, future] : asyncCollectives) {
    CollectiveTiming &c = timeline.collectives[i];
    size_t issued = position[c.collective->getParentOp()];
    auto it = firstAwait.find(future);
    size_t awaited = it == firstAwait.end() ? index : it->second;
    c.workBeforeAwait |= llvm::any_of(computePositions, [&](size_t p) {
      return p > issued && p < awaited;
    });
  }
  return timeline;
}

int64_t mlir::braid::ComputeAndCommunication::coveringCount(int64_t most) const {
  if (compute <= 0)
    return most;
  return std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(communication / compute)), 1, most);
}

FailureOr<ComputeAndCommunication>
mlir::braid::estimateComputeAndCommunication(
    ModuleOp module, StringRef hw, Operation *anchor,
    llvm::function_ref<CostPart(Operation *)> partOf) {
  FailureOr<CostModel> model = CostModel::load(hw, anchor);
  if (failed(model))
    return failure();
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return anchor->emitError("no function @main to estimate"), failure();
  ComputeAndCommunication result;
  FusedCosts seconds(*model);
  main.walk([&](Operation *op) {
    switch (partOf(op)) {
    case CostPart::Compute:
      result.compute += seconds(op);
      break;
    case CostPart::Communication:
      result.communication += seconds(op);
      break;
    case CostPart::Neither:
      break;
    }
  });
  return result;
}
