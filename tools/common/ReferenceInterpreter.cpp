//===- ReferenceInterpreter.cpp - braid IR on the reference kernels -------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "tools/common/ReferenceInterpreter.h"

#include "dialects/braid/BraidDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::braid;
namespace ref = ::braid::rt::ref;
using ::braid::rt::DType;

namespace {
[[noreturn]] void failWith(const llvm::Twine &message) {
  throw InterpreterError(message.str());
}
} // namespace

DType mlir::braid::runtimeDType(Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isInteger(64))
    return DType::I64;
  if (type.isInteger(32))
    return DType::I32;
  if (type.isInteger(1))
    return DType::I1;
  std::string text;
  llvm::raw_string_ostream(text) << type;
  failWith("element type " + text + " has no runtime type");
}

std::vector<int64_t> mlir::braid::tensorShape(Type type) {
  auto shape = cast<RankedTensorType>(type).getShape();
  return std::vector<int64_t>(shape.begin(), shape.end());
}

namespace {
/// Interprets one function with the reference kernels.
class Evaluator {
public:
  explicit Evaluator(const llvm::StringMap<ref::Tensor> &weights)
      : weights(weights) {}

  std::vector<ref::Tensor> run(func::FuncOp function,
                               std::vector<ref::Tensor> inputs) {
    if (inputs.size() != function.getNumArguments())
      failWith("the function takes " + llvm::Twine(function.getNumArguments()) +
               " inputs, the test data has " + llvm::Twine(inputs.size()));
    for (auto [arg, input] : llvm::zip(function.getArguments(), inputs)) {
      if (tensorShape(arg.getType()) != input.shape)
        failWith("an input's shape does not match the function argument");
      tensors[arg] = std::move(input);
    }
    runBlock(function.getBody().front());
    return results;
  }

private:
  ref::Tensor &get(Value value) {
    auto it = tensors.find(value);
    if (it == tensors.end())
      failWith("a value is used before it is computed");
    return it->second;
  }
  int64_t index(Value value) {
    auto it = indices.find(value);
    if (it == indices.end())
      failWith("an index value is not known");
    return it->second;
  }
  void set(Value value, ref::Tensor tensor) {
    if (tensorShape(value.getType()) != tensor.shape)
      failWith("a kernel produced a shape other than the op's type");
    tensors[value] = std::move(tensor);
  }

  void runBlock(Block &block) {
    for (Operation &op : block)
      runOp(&op);
  }

  template <typename OpTy> void unaryOp(OpTy op, ref::UnaryKind kind) {
    set(op.getResult(), ref::unary(kind, get(op.getInput())));
  }
  template <typename OpTy> void binaryOp(OpTy op, ref::BinaryKind kind) {
    set(op.getResult(), ref::binary(kind, get(op.getLhs()), get(op.getRhs())));
  }
  template <typename OpTy> void reduceOp(OpTy op, ref::ReduceKind kind) {
    std::vector<int64_t> dims(op.getDims().begin(), op.getDims().end());
    set(op.getResult(),
        ref::reduce(kind, get(op.getInput()), dims, op.getKeepDims()));
  }
  template <typename OpTy> ref::AttentionResult attentionOp(OpTy op) {
    std::optional<int64_t> offset;
    if (op.getCausalOffset())
      offset = index(op.getCausalOffset());
    return ref::attention(
        get(op.getQuery()), get(op.getKey()), get(op.getValue()),
        op.getMask() ? &get(op.getMask()) : nullptr, op.getCausal(), offset,
        op.getScale().convertToDouble());
  }
  /// Collectives over a group of one rank are the identity; larger groups
  /// need the distributed runtime.
  void collective(Operation *op) {
    auto collective = cast<CollectiveOpInterface>(op);
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
        op, collective.getMeshAttr());
    if (!mesh || mesh.getGroupSize(collective.getMeshAxes()) != 1)
      failWith(op->getName().getStringRef() +
               " over a group of more than one rank: braid-eval runs one "
               "rank");
    set(op->getResult(0), get(collective.getInput()));
  }

  void runOp(Operation *op) {
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](func::ReturnOp ret) {
          for (Value v : ret.getOperands())
            results.push_back(get(v));
        })
        .Case([&](arith::ConstantIndexOp c) { indices[c] = c.value(); })
        .Case([&](arith::ConstantOp c) {
          auto attr = dyn_cast<IntegerAttr>(c.getValue());
          if (!attr || !c.getType().isIndex())
            failWith("only index arith.constant is supported");
          indices[c] = attr.getInt();
        })
        .Case([&](RankOp r) { indices[r] = 0; })
        .Case([&](GetWeightOp w) {
          // The verifier has checked that the declaration exists.
          auto decl = SymbolTable::lookupNearestSymbolFrom<WeightOp>(
              w, w.getNameAttr());
          std::string stored = decl.getStoredName().str();
          auto it = weights.find(stored);
          if (it == weights.end())
            failWith("weight '" + stored + "' is not in the weights file");
          ref::Tensor value =
              ref::cast(it->second, runtimeDType(w.getType().getElementType()));
          if (auto box = decl.getStoredBox(w.getOffsets(), w.getBlock()))
            value = ref::slice(
                value,
                std::vector<int64_t>(box->first.begin(), box->first.end()),
                std::vector<int64_t>(box->second.begin(), box->second.end()),
                std::vector<int64_t>(box->second.size(), 1));
          // Sharding over a group of one rank is the identity.
          if (value.shape != tensorShape(w.getType()))
            failWith("weight '" + w.getName() +
                     "' is sharded over more than one rank: braid-eval runs "
                     "one rank");
          set(w.getResult(), std::move(value));
        })
        .Case([&](ConstantOp c) {
          auto attr = cast<DenseElementsAttr>(c.getValue());
          DType dtype = runtimeDType(attr.getElementType());
          std::vector<int64_t> shape = tensorShape(c.getType());
          if (isa<FloatType>(attr.getElementType())) {
            std::vector<double> values;
            for (APFloat v : attr.getValues<APFloat>())
              values.push_back(v.convertToDouble());
            set(c.getResult(), ref::Tensor::ofFloats(dtype, shape, values));
          } else {
            std::vector<int64_t> values;
            for (APInt v : attr.getValues<APInt>())
              values.push_back(dtype == DType::I1 ? v.getZExtValue()
                                                  : v.getSExtValue());
            set(c.getResult(), ref::Tensor::ofInts(dtype, shape, values));
          }
        })
        .Case([&](AsyncOp a) {
          runBlock(a.getBody().front());
          for (auto [future, value] :
               llvm::zip(a.getResults(), a.getYield().getValues()))
            futures[future] = get(value);
        })
        .Case([&](YieldOp) {})
        .Case([&](AwaitOp a) {
          auto it = futures.find(a.getFuture());
          if (it == futures.end())
            failWith("await of an unknown future");
          set(a.getResult(), it->second);
        })
        .Case([&](NegOp o) { unaryOp(o, ref::UnaryKind::Neg); })
        .Case([&](ExpOp o) { unaryOp(o, ref::UnaryKind::Exp); })
        .Case([&](LogOp o) { unaryOp(o, ref::UnaryKind::Log); })
        .Case([&](SqrtOp o) { unaryOp(o, ref::UnaryKind::Sqrt); })
        .Case([&](RsqrtOp o) { unaryOp(o, ref::UnaryKind::Rsqrt); })
        .Case([&](TanhOp o) { unaryOp(o, ref::UnaryKind::Tanh); })
        .Case([&](ErfOp o) { unaryOp(o, ref::UnaryKind::Erf); })
        .Case([&](SigmoidOp o) { unaryOp(o, ref::UnaryKind::Sigmoid); })
        .Case([&](SiluOp o) { unaryOp(o, ref::UnaryKind::Silu); })
        .Case([&](ReluOp o) { unaryOp(o, ref::UnaryKind::Relu); })
        .Case([&](GeluOp o) {
          unaryOp(o, o.getTanh() ? ref::UnaryKind::GeluTanh
                                 : ref::UnaryKind::Gelu);
        })
        .Case([&](AddOp o) { binaryOp(o, ref::BinaryKind::Add); })
        .Case([&](SubOp o) { binaryOp(o, ref::BinaryKind::Sub); })
        .Case([&](MulOp o) { binaryOp(o, ref::BinaryKind::Mul); })
        .Case([&](DivOp o) { binaryOp(o, ref::BinaryKind::Div); })
        .Case([&](PowOp o) { binaryOp(o, ref::BinaryKind::Pow); })
        .Case([&](MaxOp o) { binaryOp(o, ref::BinaryKind::Max); })
        .Case([&](MinOp o) { binaryOp(o, ref::BinaryKind::Min); })
        .Case([&](CompareOp o) {
          static const ref::CompareKind kinds[] = {
              ref::CompareKind::EQ, ref::CompareKind::NE, ref::CompareKind::LT,
              ref::CompareKind::LE, ref::CompareKind::GT, ref::CompareKind::GE};
          set(o.getResult(), ref::compare(kinds[static_cast<int>(o.getKind())],
                                          get(o.getLhs()), get(o.getRhs())));
        })
        .Case([&](SelectOp o) {
          set(o.getResult(),
              ref::select(get(o.getCondition()), get(o.getTrueValue()),
                          get(o.getFalseValue())));
        })
        .Case([&](CastOp o) {
          set(o.getResult(),
              ref::cast(get(o.getInput()),
                        runtimeDType(o.getType().getElementType())));
        })
        .Case([&](MatmulOp o) {
          set(o.getResult(),
              ref::matmul(get(o.getLhs()), get(o.getRhs()), o.getTransposeLhs(),
                          o.getTransposeRhs()));
        })
        .Case([&](GroupedMatmulOp o) {
          set(o.getResult(),
              ref::groupedMatmul(get(o.getInput()), get(o.getWeight()),
                                 o.getTransposeRhs()));
        })
        .Case([&](ReduceSumOp o) { reduceOp(o, ref::ReduceKind::Sum); })
        .Case([&](ReduceMeanOp o) { reduceOp(o, ref::ReduceKind::Mean); })
        .Case([&](ReduceMaxOp o) { reduceOp(o, ref::ReduceKind::Max); })
        .Case([&](SoftmaxOp o) {
          set(o.getResult(), ref::softmax(get(o.getInput()), o.getDim()));
        })
        .Case([&](LayerNormOp o) {
          set(o.getResult(),
              ref::layerNorm(get(o.getInput()), get(o.getGamma()),
                             o.getBeta() ? &get(o.getBeta()) : nullptr,
                             o.getAxis(), o.getEpsilon().convertToDouble()));
        })
        .Case([&](RmsNormOp o) {
          set(o.getResult(),
              ref::rmsNorm(get(o.getInput()), get(o.getGamma()), o.getAxis(),
                           o.getEpsilon().convertToDouble()));
        })
        .Case([&](RotaryOp o) {
          set(o.getResult(), ref::rotary(get(o.getInput()), get(o.getCos()),
                                         get(o.getSin()), o.getInterleaved()));
        })
        .Case([&](GatherOp o) {
          set(o.getResult(),
              ref::gather(get(o.getInput()), get(o.getIndices()), o.getAxis()));
        })
        .Case([&](ScatterAddOp o) {
          set(o.getResult(),
              ref::scatterAdd(get(o.getUpdates()), get(o.getIndices()),
                              o.getAxis(), tensorShape(o.getType())));
        })
        .Case([&](ReshapeOp o) {
          set(o.getResult(),
              ref::reshape(get(o.getInput()), tensorShape(o.getType())));
        })
        .Case([&](TransposeOp o) {
          std::vector<int64_t> perm(o.getPermutation().begin(),
                                    o.getPermutation().end());
          set(o.getResult(), ref::transpose(get(o.getInput()), perm));
        })
        .Case([&](SliceOp o) {
          std::vector<int64_t> offsets;
          unsigned dynamic = 0;
          for (int64_t offset : o.getStaticOffsets())
            offsets.push_back(ShapedType::isDynamic(offset)
                                  ? index(o.getOffsets()[dynamic++])
                                  : offset);
          set(o.getResult(),
              ref::slice(get(o.getInput()), offsets,
                         std::vector<int64_t>(o.getStaticSizes().begin(),
                                              o.getStaticSizes().end()),
                         std::vector<int64_t>(o.getStaticStrides().begin(),
                                              o.getStaticStrides().end())));
        })
        .Case([&](ConcatOp o) {
          std::vector<ref::Tensor> inputs;
          for (Value v : o.getInputs())
            inputs.push_back(get(v));
          set(o.getResult(), ref::concat(inputs, o.getDim()));
        })
        .Case([&](SplitOp o) {
          std::vector<int64_t> sizes;
          for (Value r : o.getResults())
            sizes.push_back(
                cast<RankedTensorType>(r.getType()).getDimSize(o.getDim()));
          std::vector<ref::Tensor> pieces =
              ref::split(get(o.getInput()), o.getDim(), sizes);
          for (auto [r, piece] : llvm::zip(o.getResults(), pieces))
            set(r, std::move(piece));
        })
        .Case([&](BroadcastToOp o) {
          set(o.getResult(),
              ref::broadcastTo(get(o.getInput()), tensorShape(o.getType())));
        })
        .Case([&](AttentionOp o) { set(o.getResult(), attentionOp(o).out); })
        .Case([&](AttentionPartialOp o) {
          ref::AttentionResult r = attentionOp(o);
          set(o.getResult(), std::move(r.out));
          set(o.getLse(), std::move(r.lse));
        })
        .Case([&](AttentionMergeOp o) {
          std::vector<ref::Tensor> outs, lses;
          for (Value v : o.getOutputs())
            outs.push_back(get(v));
          for (Value v : o.getLses())
            lses.push_back(get(v));
          ref::AttentionResult r = ref::attentionMerge(outs, lses);
          set(o.getResult(), std::move(r.out));
          set(o.getLse(), std::move(r.lse));
        })
        .Case([&](RouterTopKOp o) {
          ref::RouterResult r =
              ref::routerTopK(get(o.getLogits()), o.getK(), o.getNormalize());
          set(o.getWeights(), std::move(r.weights));
          set(o.getExperts(), std::move(r.experts));
        })
        .Case([&](MoeDispatchOp o) {
          auto type = o.getType();
          set(o.getResult(),
              ref::moeDispatch(get(o.getInput()), get(o.getExperts()),
                               type.getDimSize(0), type.getDimSize(1)));
        })
        .Case([&](MoeCombineOp o) {
          set(o.getResult(),
              ref::moeCombine(get(o.getInput()), get(o.getExperts()),
                              get(o.getWeights())));
        })
        .Case([&](CrossEntropyOp o) {
          static const ref::LossReduction kinds[] = {ref::LossReduction::None,
                                                     ref::LossReduction::Mean,
                                                     ref::LossReduction::Sum};
          set(o.getResult(),
              ref::crossEntropy(get(o.getLogits()), get(o.getLabels()),
                                kinds[static_cast<int>(o.getReduction())]));
        })
        .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
              CollectivePermuteOp, BroadcastOp>(
            [&](Operation *c) { collective(c); })
        .Default([&](Operation *other) {
          failWith("braid-eval cannot run " + other->getName().getStringRef());
        });
  }

  const llvm::StringMap<ref::Tensor> &weights;
  llvm::DenseMap<Value, ref::Tensor> tensors, futures;
  llvm::DenseMap<Value, int64_t> indices;
  std::vector<ref::Tensor> results;
};
} // namespace

std::vector<ref::Tensor>
mlir::braid::interpretFunction(func::FuncOp function,
                               std::vector<ref::Tensor> inputs,
                               const llvm::StringMap<ref::Tensor> &weights) {
  Evaluator evaluator(weights);
  return evaluator.run(function, std::move(inputs));
}

TensorError mlir::braid::compareTensors(const ref::Tensor &actual,
                                        const ref::Tensor &expected) {
  double maxAbs = 0, maxRef = 0;
  for (int64_t k = 0; k < actual.numElements(); ++k) {
    double a = actual.at(k), e = expected.at(k);
    double difference = std::fabs(a - e);
    // A NaN where the reference has a number (or the other way round) is
    // as wrong as can be; std::max would drop it.
    if (std::isnan(difference))
      difference = std::isnan(a) && std::isnan(e) ? 0 : HUGE_VAL;
    maxAbs = std::max(maxAbs, difference);
    maxRef = std::max(maxRef, std::fabs(e));
  }
  return {maxAbs, maxRef > 0 ? maxAbs / maxRef : maxAbs};
}
