//===- BraidToExec.cpp - braid programs to exec plans ---------------------===//
//
// Four steps: linearize the function into per-stream instructions with
// events; compute live ranges per alias class (reshape and await results
// share their source's memory); place the classes in one arena, first fit
// over program order; emit the exec.plan.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "dialects/braid/ArenaPacking.h"
#include "dialects/braid/BraidDialect.h"
#include "dialects/braid/Fusion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"

#include <map>
#include <set>

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDTOEXEC
#include "lowering/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// A run-time integer: constant + sum of coefficient * rank along an axis.
struct IndexForm {
  int64_t constant = 0;
  llvm::MapVector<StringRef, int64_t> rankTerms;
};

/// One instruction of the linearized program.
struct Instruction {
  enum Kind { Compute, Record, Wait };
  Kind kind = Compute;
  /// The braid op of a Compute instruction.
  Operation *op = nullptr;
  std::string stream;
  int64_t event = -1;
};

/// Bytes of a tensor value (i1 as one byte per element).
static int64_t bytesOf(Value value) { return getNumBytes(value); }

class Lowering {
public:
  Lowering(func::FuncOp main, int64_t alignment, bool fuseEpilogues,
           bool fuseElementwise)
      : main(main), alignment(alignment), fuse(fuseEpilogues),
        fuseChains(fuseElementwise) {}

  /// Builds the plan before `main`; returns its arena size.
  FailureOr<int64_t> run();

private:
  LogicalResult linearize(Block &block, StringRef stream);
  void fuseEpilogues();
  void fuseElementwise();
  void updateWeightsInPlace();
  /// The step's reads of weight `name`.
  SmallVector<GetWeightOp> weightReads(StringRef name);
  /// The tensors an instruction reads and writes (a fused matmul's
  /// epilogue operands and final result included).
  SmallVector<Value> inputsOf(Operation *op);
  SmallVector<Value> outputsOf(Operation *op);
  LogicalResult indexForm(Value value, IndexForm &form);
  Value leader(Value value) { return aliases.getOrInsertLeaderValue(value); }
  void extend(Value value, int64_t position);
  void computeLiveRanges();
  int64_t allocate();
  LogicalResult emit(int64_t arenaBytes);

  func::FuncOp main;
  int64_t alignment;
  bool fuse;
  bool fuseChains;
  std::vector<Instruction> program;
  /// Matmuls with a fused epilogue.
  llvm::DenseMap<Operation *, Epilogue> epilogues;
  /// Roots of fused elementwise trees.
  llvm::DenseMap<Operation *, ElementwiseGroup> groups;
  /// Matmuls and roots not to fuse around: their fusion would grow the
  /// arena past what run() allows; when `onlyAnchors` is set, nothing
  /// outside it either.
  llvm::DenseSet<Operation *> refusedAnchors;
  std::optional<llvm::DenseSet<Operation *>> onlyAnchors;
  bool refused(Operation *anchor) const {
    return refusedAnchors.contains(anchor) ||
           (onlyAnchors && !onlyAnchors->contains(anchor));
  }
  llvm::EquivalenceClasses<Value> aliases;
  /// Live range per alias leader: [first, last] program positions.
  llvm::DenseMap<Value, std::pair<int64_t, int64_t>> ranges;
  /// Leaders that live for the whole run.
  llvm::DenseSet<Value> persistent;
  /// The state weights the step sets, copied after everything else; their
  /// next values live from their definition to the end.
  SmallVector<SetWeightOp> setWeights;
  llvm::DenseSet<Value> liveToEnd;
  /// Arena offset per alias leader.
  llvm::DenseMap<Value, int64_t> offsets;
  /// Future -> (event recorded at the end of its region, yielded value).
  llvm::DenseMap<Value, std::pair<int64_t, Value>> futures;
  /// Asyncs in program order, and the event each one's region records
  /// when it is done.
  SmallVector<AsyncOp> asyncOrder;
  llvm::DenseMap<Operation *, int64_t> doneEvent;
  /// The position of the first main-stream wait for each event, in the
  /// program as it is now (fusions remove instructions, so positions found
  /// while linearizing go stale: they made every value an async region
  /// reads live past its await by as many instructions as fusions had
  /// removed before it, and grew the arena of a scheduled step by an
  /// activation or two for any one fusion).
  llvm::DenseMap<int64_t, int64_t> mainWaitAt;
  /// The main-stream position by which the main stream knows `async` is
  /// done: its own await there or that of a later async on its stream
  /// (streams run in order); the end of the program if none.
  int64_t mainDone(AsyncOp async, int64_t end);
  /// Values in program order (for deterministic buffer numbering).
  SmallVector<Value> values;
  int64_t numEvents = 0;
  /// Per communication round (braid.round on collectives): the events that
  /// end the async regions holding its collectives.
  std::map<int64_t, SmallVector<int64_t>> roundEvents;
  /// Whether a kernel of an optional group writes a value read outside it.
  bool escapesGroup(Operation *op);
  /// The plan's optional groups (braid.optional_until on the function): per
  /// group, the events after which it is skipped.
  FailureOr<ArrayAttr> optionalGroups(Builder &b);
};

} // namespace

LogicalResult Lowering::indexForm(Value value, IndexForm &form) {
  Operation *def = value.getDefiningOp();
  if (auto c = dyn_cast_or_null<arith::ConstantIndexOp>(def)) {
    form.constant = c.value();
    return success();
  }
  if (auto rank = dyn_cast_or_null<RankOp>(def)) {
    form.rankTerms[rank.getAxis()] = 1;
    return success();
  }
  if (isa_and_nonnull<arith::AddIOp, arith::SubIOp, arith::MulIOp>(def)) {
    IndexForm a, b;
    if (failed(indexForm(def->getOperand(0), a)) ||
        failed(indexForm(def->getOperand(1), b)))
      return failure();
    if (isa<arith::MulIOp>(def)) {
      if (!a.rankTerms.empty() && !b.rankTerms.empty())
        return def->emitOpError("multiplies two rank-dependent indices; "
                                "braid-to-exec expresses only linear ones");
      const IndexForm &scaled = a.rankTerms.empty() ? b : a;
      int64_t factor = a.rankTerms.empty() ? a.constant : b.constant;
      form.constant = scaled.constant * factor;
      for (auto [axis, c] : scaled.rankTerms)
        form.rankTerms[axis] = c * factor;
      return success();
    }
    int64_t sign = isa<arith::SubIOp>(def) ? -1 : 1;
    form = a;
    form.constant += sign * b.constant;
    for (auto [axis, c] : b.rankTerms)
      form.rankTerms[axis] += sign * c;
    return success();
  }
  if (def)
    return def->emitOpError("computes an index braid-to-exec cannot express "
                            "(constants, braid.rank, addi, subi, muli)");
  return emitError(value.getLoc(), "an index function argument is not "
                                   "supported by braid-to-exec");
}

LogicalResult Lowering::linearize(Block &block, StringRef stream) {
  for (Operation &op : block) {
    for (Value result : op.getResults())
      if (isa<RankedTensorType>(result.getType()))
        values.push_back(result);
    if (auto async = dyn_cast<AsyncOp>(op)) {
      if (stream != AsyncOp::getMainStream())
        return async.emitOpError("nested async regions are not supported");
      if (async.getStream() == AsyncOp::getMainStream())
        return async.emitOpError("runs on stream \"")
               << AsyncOp::getMainStream()
               << "\", the main stream; name another";
      asyncOrder.push_back(async);
      int64_t start = numEvents++;
      program.push_back({Instruction::Record, nullptr, stream.str(), start});
      program.push_back(
          {Instruction::Wait, nullptr, async.getStream().str(), start});
      if (failed(linearize(async.getBody().front(), async.getStream())))
        return failure();
      int64_t done = numEvents++;
      program.push_back(
          {Instruction::Record, nullptr, async.getStream().str(), done});
      std::set<int64_t> rounds;
      async.walk([&](Operation *inner) {
        if (auto round = inner->getAttrOfType<IntegerAttr>(kRoundAttrName))
          rounds.insert(round.getInt());
      });
      for (int64_t round : rounds)
        roundEvents[round].push_back(done);
      doneEvent[async] = done;
      for (auto [future, value] :
           llvm::zip(async.getResults(), async.getYield().getValues()))
        futures[future] = {done, value};
      continue;
    }
    if (auto await = dyn_cast<AwaitOp>(op)) {
      auto [event, value] = futures.lookup(await.getFuture());
      program.push_back({Instruction::Wait, nullptr, stream.str(), event});
      aliases.unionSets(value, await.getResult());
      continue;
    }
    if (isa<YieldOp, func::ReturnOp, RankOp, arith::ConstantIndexOp,
            arith::AddIOp, arith::SubIOp, arith::MulIOp>(op))
      continue;
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (!c.getType().isIndex())
        return op.emitOpError("is not an index constant");
      continue;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      aliases.unionSets(reshape.getInput(), reshape.getResult());
      continue;
    }
    if (isa<GetWeightOp, ConstantOp>(op)) {
      persistent.insert(op.getResult(0));
      continue;
    }
    if (auto set = dyn_cast<SetWeightOp>(op)) {
      // The weight takes its next value when the step ends: a copy after
      // everything else; the value lives until then.
      if (stream != AsyncOp::getMainStream())
        return set.emitOpError("in an async region: a state weight is set "
                               "on the main stream");
      setWeights.push_back(set);
      liveToEnd.insert(set.getValue());
      continue;
    }
    if (!isa<CostOpInterface>(op) && !isa<CollectiveOpInterface>(op))
      return op.emitOpError("cannot be lowered to exec");
    if (optionalGroupOf(&op) >= 0 && isa<CollectiveOpInterface>(op))
      return op.emitOpError("is a collective in optional group ")
             << optionalGroupOf(&op) << ": every rank must issue it";
    if (optionalGroupOf(&op) >= 0 && stream != AsyncOp::getMainStream())
      return op.emitOpError("is in optional group ")
             << optionalGroupOf(&op)
             << " and in an async region; optional work runs on the main "
                "stream";
    program.push_back({Instruction::Compute, &op, stream.str(), -1});
  }
  return success();
}

/// Each compute instruction's op -> its position in `program`.
static llvm::DenseMap<Operation *, size_t>
positions(ArrayRef<Instruction> program) {
  llvm::DenseMap<Operation *, size_t> position;
  for (auto [index, inst] : llvm::enumerate(program))
    if (inst.op)
      position[inst.op] = index;
  return position;
}

void Lowering::fuseEpilogues() {
  llvm::DenseMap<Operation *, size_t> position = positions(program);
  std::vector<bool> absorbed(program.size(), false);
  std::vector<Instruction> fused;
  llvm::DenseSet<Value> gone;
  for (size_t i = 0; i < program.size(); ++i) {
    if (absorbed[i])
      continue;
    fused.push_back(program[i]);
    const Instruction &inst = program[i];
    auto matmul = inst.kind == Instruction::Compute
                      ? dyn_cast<MatmulOp>(inst.op)
                      : MatmulOp();
    if (!matmul || !isa<FloatType>(matmul.getType().getElementType()) ||
        refused(matmul))
      continue;
    // Each fused op runs later on the same stream with only compute on
    // that stream in between (no event); it moves up to the matmul, so its
    // other operand must exist there: made before the matmul, or not by an
    // instruction at all.
    auto mayMoveUp = [&](Operation *user) {
      auto at = position.find(user);
      if (at == position.end() || at->second <= i)
        return false;
      for (size_t k = i + 1; k < at->second; ++k)
        if (!absorbed[k] && (program[k].kind != Instruction::Compute ||
                             program[k].stream != inst.stream))
          return false;
      return true;
    };
    auto existsAtMatmul = [&](Value operand) {
      Operation *def = viewedValue(operand).getDefiningOp();
      auto it = def ? position.find(def) : position.end();
      return it == position.end() || it->second < i;
    };
    Epilogue epilogue = collectEpilogue(matmul, mayMoveUp, existsAtMatmul);
    if (epilogue.ops.empty())
      continue;
    for (Operation *op : epilogue.ops)
      absorbed[position[op]] = true;
    // The intermediate values get no buffer.
    gone.insert(epilogue.internal.begin(), epilogue.internal.end());
    epilogues[matmul] = std::move(epilogue);
  }
  program = std::move(fused);
  llvm::erase_if(values, [&](Value value) { return gone.contains(value); });
}

void Lowering::fuseElementwise() {
  llvm::DenseMap<Operation *, size_t> position = positions(program);
  std::vector<bool> absorbed(program.size(), false);
  llvm::DenseSet<Value> gone;
  // Roots from the end: an op whose result feeds another fusible op of its
  // shape is absorbed by that op's tree before it is considered as a root.
  for (size_t i = program.size(); i-- > 0;) {
    const Instruction &root = program[i];
    if (absorbed[i] || root.kind != Instruction::Compute ||
        elementwiseKernelName(root.op).empty() || refused(root.op))
      continue;
    // A producer moves down to the root: it must be on the root's stream
    // with only compute there in between (no event).
    auto mayMoveDown = [&](Operation *def) {
      auto at = position.find(def);
      if (at == position.end() || at->second >= i || absorbed[at->second] ||
          program[at->second].stream != root.stream)
        return false;
      for (size_t k = at->second + 1; k < i; ++k)
        if (!absorbed[k] && (program[k].kind != Instruction::Compute ||
                             program[k].stream != root.stream))
          return false;
      return true;
    };
    ElementwiseGroup group = collectElementwiseTree(root.op, mayMoveDown);
    // Nothing to fuse, or too many inputs for the kernel.
    if (!group.fusible())
      continue;
    // The values inside the tree get no buffer.
    for (Operation *op : group.ops)
      if (op != root.op) {
        absorbed[position[op]] = true;
        gone.insert(op->getResult(0));
      }
    groups[root.op] = std::move(group);
  }
  std::vector<Instruction> fused;
  for (auto [index, inst] : llvm::enumerate(program))
    if (!absorbed[index])
      fused.push_back(inst);
  program = std::move(fused);
  llvm::erase_if(values, [&](Value value) { return gone.contains(value); });
}

/// A state weight's next value written over the weight itself, so that no
/// copy is needed at the end of the step (and the value needs no buffer of
/// its own): when an elementwise kernel (an op, or a fused tree's root) on
/// the main stream makes the value, the step reads the weight once, with
/// the value's type, and every reader of it (through reshapes) is a main
/// stream instruction at or before that kernel. The kernel may read the
/// weight itself: elementwise, each element is read before it is written.
/// Anything else (a reader on another stream, such as a ZeRO gather; a
/// reader absorbed where it cannot be placed; a value set twice) keeps the
/// copy.
void Lowering::updateWeightsInPlace() {
  llvm::DenseMap<Operation *, size_t> position = positions(program);
  // Ops fused into a tree run at its root's position.
  for (auto &[root, group] : groups)
    for (Operation *op : group.ops)
      position[op] = position.lookup(root);
  llvm::DenseMap<Value, int> setCount;
  for (SetWeightOp set : setWeights)
    ++setCount[set.getValue()];
  for (SetWeightOp set : setWeights) {
    Value next = set.getValue();
    Operation *writer = next.getDefiningOp();
    auto at = writer ? position.find(writer) : position.end();
    if (setCount[next] != 1 || at == position.end() ||
        program[at->second].op != writer ||
        program[at->second].stream != AsyncOp::getMainStream() ||
        (!groups.count(writer) && elementwiseKernelName(writer).empty()))
      continue;
    SmallVector<GetWeightOp> reads = weightReads(set.getName());
    if (reads.size() != 1 || reads[0].getType() != next.getType() ||
        reads[0].getBlock() || reads[0].getMeshAttr() != set.getMeshAttr() ||
        reads[0].getShardingAttr() != set.getShardingAttr() ||
        leader(reads[0].getResult()) == leader(next))
      continue;
    bool safe = true;
    SmallVector<Value> pending{reads[0].getResult()};
    while (safe && !pending.empty()) {
      Value value = pending.pop_back_val();
      for (Operation *user : value.getUsers()) {
        if (auto reshape = dyn_cast<ReshapeOp>(user)) {
          pending.push_back(reshape.getResult());
          continue;
        }
        auto found = position.find(user);
        safe = found != position.end() && found->second <= at->second &&
               program[found->second].stream == AsyncOp::getMainStream();
        if (!safe)
          break;
      }
    }
    if (!safe)
      continue;
    aliases.unionSets(reads[0].getResult(), next);
  }
}

SmallVector<GetWeightOp> Lowering::weightReads(StringRef name) {
  SmallVector<GetWeightOp> reads;
  main.walk([&](GetWeightOp read) {
    if (read.getName() == name)
      reads.push_back(read);
  });
  return reads;
}

SmallVector<Value> Lowering::inputsOf(Operation *op) {
  if (auto group = groups.find(op); group != groups.end())
    return group->second.leaves;
  SmallVector<Value> inputs(op->getOperands());
  auto it = epilogues.find(op);
  if (it != epilogues.end()) {
    if (it->second.bias)
      inputs.push_back(it->second.bias);
    if (it->second.addend)
      inputs.push_back(it->second.addend);
  }
  return inputs;
}

SmallVector<Value> Lowering::outputsOf(Operation *op) {
  auto it = epilogues.find(op);
  if (it != epilogues.end())
    return {it->second.result};
  return SmallVector<Value>(op->getResults());
}

int64_t Lowering::mainDone(AsyncOp async, int64_t end) {
  int64_t done = end;
  bool later = false;
  for (AsyncOp other : asyncOrder) {
    later |= other == async;
    if (!later || other.getStream() != async.getStream())
      continue;
    if (auto it = mainWaitAt.find(doneEvent.lookup(other));
        it != mainWaitAt.end())
      done = std::min(done, it->second);
  }
  return done;
}

void Lowering::extend(Value value, int64_t position) {
  auto [it, inserted] =
      ranges.try_emplace(leader(value), std::make_pair(position, position));
  it->second.first = std::min(it->second.first, position);
  it->second.second = std::max(it->second.second, position);
}

void Lowering::computeLiveRanges() {
  int64_t end = program.size();
  mainWaitAt.clear();
  for (auto [position, inst] : llvm::enumerate(program))
    if (inst.kind == Instruction::Wait &&
        inst.stream == AsyncOp::getMainStream())
      mainWaitAt.try_emplace(inst.event, position);
  for (BlockArgument arg : main.getArguments())
    persistent.insert(arg);
  main.walk([&](func::ReturnOp ret) {
    for (Value v : ret.getOperands())
      persistent.insert(v);
  });
  for (auto [position, inst] : llvm::enumerate(program)) {
    if (inst.kind != Instruction::Compute)
      continue;
    Operation *op = inst.op;
    // A value an async region reads or writes stays live until the region's
    // futures are awaited on the main stream: the region's stream runs its
    // instructions later than their program positions, so only that await
    // says they are done (this includes values the region awaits itself,
    // which alias another region's results).
    auto async = op->getParentOfType<AsyncOp>();
    int64_t until = position;
    if (async)
      until = std::max<int64_t>(position, mainDone(async, end));
    for (Value operand : inputsOf(op))
      if (isa<RankedTensorType>(operand.getType())) {
        extend(operand, position);
        extend(operand, until);
      }
    for (Value result : outputsOf(op)) {
      extend(result, position);
      extend(result, until);
    }
  }
  // Values read after an await (through the alias) extend via their uses;
  // weights, constants, arguments and outputs live throughout.
  for (Value value : persistent) {
    extend(value, 0);
    extend(value, end);
  }
  for (Value value : liveToEnd)
    extend(value, end);
}

int64_t Lowering::allocate() {
  // Bytes of a class: its largest member (reshapes keep the byte count).
  llvm::DenseMap<Value, int64_t> classBytes;
  for (Value value : values)
    classBytes[leader(value)] =
        std::max(classBytes.lookup(leader(value)), bytesOf(value));
  for (BlockArgument arg : main.getArguments())
    classBytes[leader(arg)] =
        std::max(classBytes.lookup(leader(arg)), bytesOf(arg));
  // Ties among buffers of one start go by first value: arguments first, by
  // argument number, then values in program order (plans must not depend
  // on pointer order).
  llvm::DenseMap<Value, int64_t> rankInValues;
  int64_t numArgs = main.getNumArguments();
  for (BlockArgument arg : main.getArguments())
    rankInValues.try_emplace(leader(arg), arg.getArgNumber() - numArgs);
  for (auto [i, v] : llvm::enumerate(values))
    rankInValues.try_emplace(leader(v), i);
  // `persistent` holds values; a class is persistent if any member is.
  llvm::DenseSet<Value> persistentClasses;
  for (Value value : persistent)
    persistentClasses.insert(leader(value));
  SmallVector<Value> leaders;
  SmallVector<ArenaBuffer> buffers;
  for (auto &[leaderValue, range] : ranges) {
    leaders.push_back(leaderValue);
    buffers.push_back({range.first, range.second,
                       classBytes.lookup(leaderValue),
                       persistentClasses.count(leaderValue) != 0,
                       rankInValues.lookup(leaderValue)});
  }
  ArenaLayout layout = packArena(buffers, alignment);
  for (auto [value, offset] : llvm::zip(leaders, layout.offsets))
    offsets[value] = offset;
  return layout.peak;
}

FailureOr<int64_t> Lowering::run() {
  if (failed(linearize(main.getBody().front(), AsyncOp::getMainStream())))
    return failure();
  computeLiveRanges();
  int64_t arena = allocate();
  // Each change below drops buffers and shortens lifetimes (a fused
  // producer's inputs live longer, though), but first fit over the new
  // lifetimes can pack worse (a LLaMA ZeRO-3 training step: 1,890,048 bytes
  // with fused epilogues against 1,762,048 without, above the memory limit
  // braid-schedule planned for). Each is kept when the arena it leads to is
  // no larger, or larger by at most 1/kFusionArenaSlack of the unfused one
  // and within braid-schedule's memory limit when it kept one: requiring
  // "no larger" threw away every elementwise fusion of a GPT-3-shaped
  // training step (9.4 GB arena) for 64 bytes, and with them 28% of its
  // time. braid-schedule's estimate, which models none of these changes,
  // is therefore within that 1% of the plan's arena, and the limit holds.
  const int64_t unfused = arena;
  int64_t limit = 0;
  if (auto given = main->getAttrOfType<IntegerAttr>(kMemoryLimitAttrName))
    limit = given.getInt();
  auto fits = [&](int64_t changed) {
    return changed <= arena ||
           (changed - unfused <= unfused / kFusionArenaSlack &&
            (limit <= 0 || changed <= limit));
  };
  // Applies `change` to the program as it is now and keeps it when the
  // arena fits. A change that fuses around anchors (a matmul's epilogue, a
  // tree's root; `made` holds them after the change) and does not fit as a
  // whole is tried again without some of them, found by bisection: halves
  // of the anchors are allowed while the arena fits, a half that does not
  // is split, and a single anchor that does not is refused. Refusing a
  // tree's root can make its producers a tree of their own, so a few
  // rounds follow with only the refused left out. One bad tree then costs
  // its own fusion, not every other one's.
  auto keepIfFits = [&](auto change, auto *made) {
    std::vector<Instruction> savedProgram = program;
    SmallVector<Value> savedValues = values;
    llvm::EquivalenceClasses<Value> savedAliases = aliases;
    auto savedRanges = ranges;
    auto savedOffsets = offsets;
    auto restore = [&] {
      program = savedProgram;
      values = savedValues;
      aliases = savedAliases;
      ranges = savedRanges;
      offsets = savedOffsets;
      if (made)
        made->clear();
    };
    auto attempt = [&] {
      restore();
      ranges.clear();
      offsets.clear();
      change();
      computeLiveRanges();
      return allocate();
    };
    auto done = [&](bool keep, int64_t changed) {
      refusedAnchors.clear();
      onlyAnchors.reset();
      if (keep)
        arena = changed;
      else
        restore();
    };
    int64_t changed = attempt();
    if (fits(changed) || !made || made->empty())
      return done(fits(changed), changed);
    llvm::DenseMap<Operation *, size_t> position = positions(savedProgram);
    llvm::DenseSet<Operation *> kept;
    // Each attempt packs the whole arena again, in time growing about as
    // the square of the program: a GPT-3-shaped tp=8 step (3,000
    // instructions) needs about 230 attempts, an ACCO step of GPT-2 small
    // at dp=16 (12,000 instructions, 14,000 buffers) takes 0.15 s one, so
    // the budget shrinks with the square of the program's size (and is
    // never below 16). Past it, halves not yet judged are refused whole.
    int attempts = 0;
    const int64_t size = std::max<int64_t>(savedProgram.size(), 1);
    const int kMaxAttempts = static_cast<int>(
        std::clamp<int64_t>(int64_t{2'000'000'000} / (size * size), 16, 400));
    for (int round = 0; round < 4 && attempts < kMaxAttempts; ++round) {
      // The anchors of the last attempt not judged yet, in program order
      // (halves are neighbourhoods).
      SmallVector<Operation *> candidates;
      for (auto &entry : *made)
        if (!kept.contains(entry.first))
          candidates.push_back(entry.first);
      llvm::sort(candidates, [&](Operation *a, Operation *b) {
        return position.lookup(a) < position.lookup(b);
      });
      std::function<void(ArrayRef<Operation *>)> allow =
          [&](ArrayRef<Operation *> some) {
            if (attempts >= kMaxAttempts)
              return;
            ++attempts;
            onlyAnchors = kept;
            onlyAnchors->insert(some.begin(), some.end());
            if (fits(attempt())) {
              kept.insert(some.begin(), some.end());
              return;
            }
            if (some.size() == 1)
              return;
            size_t half = some.size() / 2;
            allow(some.take_front(half));
            allow(some.drop_front(half));
          };
      allow(candidates);
      for (Operation *anchor : candidates)
        if (!kept.contains(anchor))
          refusedAnchors.insert(anchor);
      onlyAnchors.reset();
      changed = attempt();
      if (fits(changed))
        return done(true, changed);
    }
    onlyAnchors = kept;
    changed = attempt();
    done(fits(changed), changed);
  };
  if (fuse)
    keepIfFits([&] { fuseEpilogues(); }, &epilogues);
  if (fuseChains)
    keepIfFits([&] { fuseElementwise(); }, &groups);
  // Weights updated in place: their next values need no buffer of their
  // own and no copy.
  keepIfFits([&] { updateWeightsInPlace(); },
             static_cast<decltype(epilogues) *>(nullptr));
  if (failed(emit(arena)))
    return failure();
  return arena;
}

/// The attributes a kernel keeps: the op's inherent attributes.
static DictionaryAttr kernelAttrs(Operation *op, Builder &b) {
  SmallVector<NamedAttribute> attrs;
  if (auto dict =
          dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute()))
    for (NamedAttribute attr : dict)
      if (attr.getName() != "operandSegmentSizes")
        attrs.push_back(attr);
  if (auto attention = dyn_cast<AttentionOp>(op))
    attrs.push_back(
        b.getNamedAttr("has_mask", b.getBoolAttr(!!attention.getMask())));
  if (auto attention = dyn_cast<AttentionPartialOp>(op))
    attrs.push_back(
        b.getNamedAttr("has_mask", b.getBoolAttr(!!attention.getMask())));
  return b.getDictionaryAttr(attrs);
}

LogicalResult Lowering::emit(int64_t arenaBytes) {
  ModuleOp module = main->getParentOfType<ModuleOp>();
  OpBuilder b(main);
  Location loc = main.getLoc();
  SmallVector<Attribute> axisNames;
  SmallVector<int64_t> axisSizes;
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (meshes.size() > 1)
    return meshes[1].emitOpError("a second mesh: braid-to-exec lowers "
                                 "programs on one mesh");
  if (meshes.empty()) {
    axisNames.push_back(b.getStringAttr("world"));
    axisSizes.push_back(1);
  } else {
    axisNames.assign(meshes[0].getAxisNames().begin(),
                     meshes[0].getAxisNames().end());
    axisSizes.assign(meshes[0].getShape().begin(), meshes[0].getShape().end());
  }
  auto plan = exec::PlanOp::create(
      b, loc, b.getStringAttr(main.getName()), b.getArrayAttr(axisNames),
      b.getDenseI64ArrayAttr(axisSizes), b.getI64IntegerAttr(arenaBytes),
      b.getI64IntegerAttr(numEvents),
      // braid-comet's communication resource share, if any.
      main->getParentOfType<ModuleOp>()->getAttrOfType<IntegerAttr>(
          "braid.comm_sms"),
      // A training step's data contract (braid-next-token-loss).
      main->getAttrOfType<DictionaryAttr>("braid.training"));
  Block *body = new Block();
  plan.getBody().push_back(body);
  b.setInsertionPointToStart(body);

  // One buffer per tensor value, at its class's offset.
  llvm::DenseMap<Value, FlatSymbolRefAttr> buffers;
  auto bufferOf = [&](Value value) -> FlatSymbolRefAttr {
    auto it = buffers.find(value);
    if (it != buffers.end())
      return it->second;
    std::string name = "b" + std::to_string(buffers.size());
    exec::BufferOp::create(b, value.getLoc(), b.getStringAttr(name),
                           b.getI64IntegerAttr(offsets.lookup(leader(value))),
                           TypeAttr::get(value.getType()));
    auto ref = FlatSymbolRefAttr::get(b.getContext(), name);
    buffers[value] = ref;
    return ref;
  };
  for (BlockArgument arg : main.getArguments())
    bufferOf(arg);
  for (Value value : values)
    bufferOf(value);

  for (auto [i, arg] : llvm::enumerate(main.getArguments())) {
    auto name = main.getArgAttrOfType<StringAttr>(i, "braid.name");
    exec::InputOp::create(b, loc,
                          b.getStringAttr(name ? name.getValue().str()
                                               : "input_" + std::to_string(i)),
                          bufferOf(arg));
  }
  LogicalResult status = success();
  main.walk([&](Operation *op) {
    if (auto weight = dyn_cast<GetWeightOp>(op)) {
      auto type = weight.getType();
      SmallVector<Attribute> sharding(type.getRank(), b.getArrayAttr({}));
      if (std::optional<ArrayAttr> given = weight.getSharding())
        sharding.assign(given->begin(), given->end());
      auto decl = SymbolTable::lookupNearestSymbolFrom<WeightOp>(
          weight, weight.getNameAttr());
      // A part of a stored tensor is loaded (and checkpointed) as the box
      // of that tensor it covers.
      DenseI64ArrayAttr offsets = weight.getOffsetsAttr(),
                        block = weight.getBlockAttr();
      if (decl)
        if (auto box =
                decl.getStoredBox(weight.getOffsets(), weight.getBlock())) {
          offsets = b.getDenseI64ArrayAttr(box->first);
          block = b.getDenseI64ArrayAttr(box->second);
        }
      exec::WeightOp::create(
          b, op->getLoc(),
          b.getStringAttr(decl ? decl.getStoredName() : weight.getName()),
          bufferOf(weight.getResult()),
          b.getDenseI64ArrayAttr(decl ? decl.getStoredShape()
                                      : type.getShape()),
          offsets, block, b.getArrayAttr(sharding),
          decl && decl.getZeros() ? b.getStringAttr("zeros") : StringAttr(),
          decl && decl.getState() ? b.getUnitAttr() : UnitAttr());
    } else if (auto constant = dyn_cast<ConstantOp>(op)) {
      exec::ConstantOp::create(b, op->getLoc(), bufferOf(constant.getResult()),
                               constant.getValue());
    }
  });
  main.walk([&](func::ReturnOp ret) {
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto name = main.getResultAttrOfType<StringAttr>(i, "braid.name");
      exec::OutputOp::create(
          b, loc,
          b.getStringAttr(name ? name.getValue().str()
                               : "output_" + std::to_string(i)),
          bufferOf(v));
    }
  });

  // Streams in order of first appearance; the main stream first.
  llvm::MapVector<StringRef, exec::StreamOp> streams;
  auto streamOf = [&](StringRef name) {
    auto it = streams.find(name);
    if (it != streams.end())
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(body);
    auto stream = exec::StreamOp::create(b, loc, name);
    stream.getBody().push_back(new Block());
    streams[stream.getName()] = stream;
    return stream;
  };
  streamOf(AsyncOp::getMainStream());
  int64_t extraBuffers = 0;
  for (const Instruction &inst : program) {
    exec::StreamOp stream = streamOf(inst.stream);
    OpBuilder sb = OpBuilder::atBlockEnd(&stream.getBody().front());
    if (inst.kind == Instruction::Record) {
      exec::RecordOp::create(sb, loc, inst.event);
      continue;
    }
    if (inst.kind == Instruction::Wait) {
      exec::WaitOp::create(sb, loc, inst.event);
      continue;
    }
    Operation *op = inst.op;
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      SmallVector<NamedAttribute> attrs;
      if (auto dict =
              dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute()))
        for (NamedAttribute attr : dict)
          if (attr.getName() != "mesh" && attr.getName() != "mesh_axes")
            attrs.push_back(attr);
      exec::CollectiveOp::create(
          sb, op->getLoc(), sb.getStringAttr(op->getName().stripDialect()),
          bufferOf(collective.getInput()), bufferOf(op->getResult(0)),
          collective.getMeshAxes(), sb.getDictionaryAttr(attrs));
      continue;
    }
    SmallVector<Attribute> inputs, outputs, indices;
    for (Value operand : inputsOf(op)) {
      if (isa<RankedTensorType>(operand.getType())) {
        inputs.push_back(bufferOf(operand));
        continue;
      }
      IndexForm form;
      if (failed(indexForm(operand, form))) {
        status = failure();
        continue;
      }
      SmallVector<Attribute> entry{sb.getI64IntegerAttr(form.constant)};
      for (auto [axis, c] : form.rankTerms) {
        entry.push_back(sb.getStringAttr(axis));
        entry.push_back(sb.getI64IntegerAttr(c));
      }
      indices.push_back(sb.getArrayAttr(entry));
    }
    auto found = epilogues.find(op);
    const Epilogue *epilogue =
        found == epilogues.end() ? nullptr : &found->second;
    // A fused matmul reads its addend and writes its result as [..., N]
    // products even where reshapes between the fused ops gave them
    // another shape: a buffer of the product's type at the same place.
    auto asProduct = [&](Value value) -> Attribute {
      auto product = cast<RankedTensorType>(op->getResult(0).getType());
      if (value.getType() == product)
        return bufferOf(value);
      std::string name = "b" + std::to_string(buffers.size() + extraBuffers++);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(streams.front().second);
      exec::BufferOp::create(b, value.getLoc(), b.getStringAttr(name),
                             b.getI64IntegerAttr(offsets.lookup(leader(value))),
                             TypeAttr::get(product));
      return FlatSymbolRefAttr::get(b.getContext(), name);
    };
    if (epilogue && epilogue->addend)
      inputs.back() = asProduct(epilogue->addend);
    for (Value result : outputsOf(op))
      outputs.push_back(epilogue ? asProduct(result) : bufferOf(result));
    auto cost = cast<CostOpInterface>(op);
    DictionaryAttr attrs = kernelAttrs(op, sb);
    int64_t flops = cost.getFlops(), bytes = cost.getMinBytes();
    if (epilogue) {
      SmallVector<NamedAttribute> all(attrs.getValue());
      if (epilogue->bias)
        all.push_back(sb.getNamedAttr("has_bias", sb.getBoolAttr(true)));
      if (epilogue->addend)
        all.push_back(sb.getNamedAttr("has_addend", sb.getBoolAttr(true)));
      if (!epilogue->activation.empty())
        all.push_back(sb.getNamedAttr("activation",
                                      sb.getStringAttr(epilogue->activation)));
      attrs = sb.getDictionaryAttr(all);
      flops += epilogue->flops;
      bytes += epilogue->extraBytes();
    }
    StringRef kernel = op->getName().stripDialect();
    if (auto group = groups.find(op); group != groups.end()) {
      kernel = "elementwise";
      attrs = sb.getDictionaryAttr(
          {sb.getNamedAttr("ops", sb.getStringAttr(group->second.names)),
           sb.getNamedAttr("operands",
                           sb.getDenseI64ArrayAttr(group->second.operands))});
      flops = group->second.flops;
      bytes = group->second.bytes();
    }
    auto made = exec::KernelOp::create(
        sb, op->getLoc(), sb.getStringAttr(kernel), sb.getArrayAttr(inputs),
        sb.getArrayAttr(outputs), attrs, sb.getArrayAttr(indices),
        sb.getI64IntegerAttr(flops), sb.getI64IntegerAttr(bytes));
    if (int64_t group = optionalGroupOf(op); group >= 0) {
      made->setAttr("exec.optional_group", sb.getI64IntegerAttr(group + 1));
      if (escapesGroup(op))
        made->setAttr("exec.zero_when_skipped", sb.getUnitAttr());
    }
  }
  FailureOr<ArrayAttr> optional = optionalGroups(b);
  if (failed(optional))
    return failure();
  if (*optional)
    plan->setAttr("exec.optional_groups", *optional);
  if (failed(status))
    return failure();
  // State weights take their next values: one copy into every buffer
  // holding the weight, after the rest of the step.
  OpBuilder sb =
      OpBuilder::atBlockEnd(&streamOf(AsyncOp::getMainStream()).getBody().front());
  for (SetWeightOp set : setWeights) {
    SmallVector<GetWeightOp> reads = weightReads(set.getName());
    if (reads.empty())
      return set.emitOpError("sets weight '")
             << set.getName() << "', which the step never reads";
    for (GetWeightOp read : reads) {
      if (read.getType() != set.getValue().getType() || read.getBlock() ||
          read.getMeshAttr() != set.getMeshAttr() ||
          read.getShardingAttr() != set.getShardingAttr())
        return set.emitOpError("sets weight '")
               << set.getName() << "' as " << set.getValue().getType()
               << (set.getSharding() ? " (a shard)" : " (whole)")
               << ", but it is read as " << read.getType()
               << (read.getBlock()      ? " (a block)"
                   : read.getSharding() ? " (a shard)"
                                        : " (whole)")
               << ": a state weight is stored one way";
      if (leader(read.getResult()) == leader(set.getValue()))
        continue;
      int64_t bytes = getNumBytes(set.getValue());
      exec::KernelOp::create(
          sb, set.getLoc(), sb.getStringAttr("copy"),
          sb.getArrayAttr({bufferOf(set.getValue())}),
          sb.getArrayAttr({bufferOf(read.getResult())}),
          sb.getDictionaryAttr({}), sb.getArrayAttr({}),
          sb.getI64IntegerAttr(0), sb.getI64IntegerAttr(2 * bytes));
    }
  }
  return success();
}

bool Lowering::escapesGroup(Operation *op) {
  int64_t group = optionalGroupOf(op);
  SmallVector<Value> work(outputsOf(op));
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (Operation *user : value.getUsers()) {
      // A view is read where its users read it.
      if (auto reshape = dyn_cast<ReshapeOp>(user)) {
        work.push_back(reshape.getResult());
        continue;
      }
      // Fused ops run inside their anchor, which is in the same group.
      if (optionalGroupOf(user) != group)
        return true;
    }
  }
  return false;
}

FailureOr<ArrayAttr> Lowering::optionalGroups(Builder &b) {
  auto until = main->getAttrOfType<DenseI64ArrayAttr>(kOptionalUntilAttrName);
  int64_t used = -1;
  for (const Instruction &inst : program)
    used = std::max(used, optionalGroupOf(inst.op));
  if (!until) {
    if (used >= 0)
      return main.emitOpError("has ops in optional group ")
                 << used << " but no " << kOptionalUntilAttrName
                 << " saying when a group may be skipped",
             failure();
    return ArrayAttr();
  }
  if (used >= static_cast<int64_t>(until.size()))
    return main.emitOpError("has ops in optional group ")
               << used << ", but " << kOptionalUntilAttrName << " describes "
               << until.size() << " groups",
           failure();
  SmallVector<Attribute> groups;
  for (auto [group, round] : llvm::enumerate(until.asArrayRef())) {
    auto events = roundEvents.find(round);
    if (events == roundEvents.end())
      return main.emitOpError("optional group ")
                 << group << " is skipped once round " << round
                 << "'s communication is done, but no asynchronous "
                    "collective carries "
                 << kRoundAttrName << " = " << round
                 << " (run braid-schedule first)",
             failure();
    groups.push_back(b.getDenseI64ArrayAttr(events->second));
  }
  return b.getArrayAttr(groups);
}

namespace {
struct BraidToExecPass : public braid::impl::BraidToExecBase<BraidToExecPass> {
  using BraidToExecBase::BraidToExecBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>(functionName);
    if (!main) {
      module.emitError("braid-to-exec: no function @") << functionName;
      return signalPassFailure();
    }
    Lowering lowering(main, alignment, fuseEpilogues, fuseElementwise);
    FailureOr<int64_t> arena = lowering.run();
    if (failed(arena))
      return signalPassFailure();
    if (reportMemory) {
      int64_t unshared = 0;
      main.walk([&](Operation *op) {
        for (Value r : op->getResults())
          if (isa<RankedTensorType>(r.getType()) && !isa<ReshapeOp>(op) &&
              !isa<AwaitOp>(op))
            unshared += getNumBytes(r);
      });
      for (BlockArgument arg : main.getArguments())
        unshared += getNumBytes(arg);
      main.emitRemark() << "arena: " << *arena << " bytes (" << unshared
                        << " bytes without reuse)";
    }
    // The braid program is replaced by the plan; declarations go too.
    main.erase();
    for (Operation &op : llvm::make_early_inc_range(module.getOps()))
      if (isa<WeightOp, MeshOp>(op))
        op.erase();
  }
};
} // namespace
