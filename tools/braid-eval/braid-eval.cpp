//===- braid-eval.cpp - run braid IR with the reference kernels -----------===//
//
//   braid-eval model.mlir --weights model.safetensors --test-data DIR
//
// Interprets the `main` function of a single-rank braid module op by op with
// the runtime's reference kernels, reading inputs (and expected outputs) in
// ONNX's test-data layout (input_N.pb, output_N.pb). The oracle for the
// importer, raising and every transformation: slow and obviously correct.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "frontend/onnx/OnnxModel.h"
#include "runtime/reference/ReferenceKernels.h"
#include "tools/common/ToolOptions.h"

#include "onnx/onnx_pb.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>

using namespace mlir;
using namespace mlir::braid;
namespace ref = ::braid::rt::ref;
using ::braid::rt::DType;

namespace {
llvm::cl::OptionCategory &category = mlir::braid::getBraidToolCategory();

llvm::cl::opt<std::string> inputPath(llvm::cl::Positional,
                                     llvm::cl::desc("<module.mlir>"),
                                     llvm::cl::Required,
                                     llvm::cl::cat(category));
llvm::cl::opt<std::string> weightsPath("weights",
                                       llvm::cl::desc("Weights (.safetensors)"),
                                       llvm::cl::value_desc("file"),
                                       llvm::cl::cat(category));
llvm::cl::opt<std::string> testData(
    "test-data", llvm::cl::desc("Folder with input_N.pb and output_N.pb"),
    llvm::cl::value_desc("dir"), llvm::cl::Required, llvm::cl::cat(category));
llvm::cl::opt<double> rtol("rtol",
                           llvm::cl::desc("Largest error allowed, relative to "
                                          "the largest expected magnitude"),
                           llvm::cl::init(1e-4), llvm::cl::cat(category));

/// An error that names what went wrong; main prints it and exits 1.
struct EvalError {
  std::string message;
};
[[noreturn]] void failWith(const llvm::Twine &message) {
  throw EvalError{message.str()};
}
} // namespace

static DType dtypeOf(Type type) {
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

static std::vector<int64_t> shapeOf(Type type) {
  auto shape = cast<RankedTensorType>(type).getShape();
  return std::vector<int64_t>(shape.begin(), shape.end());
}

/// Converts an ONNX host tensor to a reference tensor of `dtype`.
static ref::Tensor fromHost(const onnx_import::HostTensor &host, DType dtype) {
  std::vector<int64_t> shape(host.shape.begin(), host.shape.end());
  if (host.isFloat())
    return ref::Tensor::ofFloats(dtype, shape, host.floats);
  return ref::Tensor::ofInts(dtype, shape, host.ints);
}

static ref::Tensor readPb(const std::string &path, DType dtype) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    failWith("cannot read '" + path + "': " + buffer.getError().message());
  onnx::TensorProto proto;
  if (!proto.ParseFromArray((*buffer)->getBufferStart(),
                            (*buffer)->getBufferSize()))
    failWith("'" + path + "' is not an ONNX TensorProto");
  auto raw = onnx_import::readTensor(proto, llvm::sys::path::parent_path(path));
  if (!raw)
    failWith(path + ": " + llvm::toString(raw.takeError()));
  auto host = onnx_import::toHost(*raw);
  if (!host)
    failWith(path + ": " + llvm::toString(host.takeError()));
  return fromHost(*host, dtype);
}

/// Reads every tensor of a safetensors file.
static llvm::StringMap<ref::Tensor> readSafetensors(const std::string &path) {
  llvm::StringMap<ref::Tensor> tensors;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    failWith("cannot read '" + path + "': " + buffer.getError().message());
  llvm::StringRef data = (*buffer)->getBuffer();
  if (data.size() < 8)
    failWith("'" + path + "' is too short for a safetensors file");
  uint64_t headerSize = 0;
  for (int b = 7; b >= 0; --b)
    headerSize = (headerSize << 8) | static_cast<uint8_t>(data[b]);
  if (headerSize > data.size() - 8)
    failWith("'" + path + "' has a header longer than the file");
  nlohmann::json header =
      nlohmann::json::parse(data.substr(8, headerSize).str(), nullptr, false);
  if (header.is_discarded() || !header.is_object())
    failWith("'" + path + "' has no valid JSON header");
  llvm::StringRef payload = data.substr(8 + headerSize);
  static const std::pair<const char *, std::pair<int32_t, DType>> kinds[] = {
      {"F32", {onnx_import::kFloat, DType::F32}},
      {"F16", {onnx_import::kFloat16, DType::F16}},
      {"BF16", {onnx_import::kBFloat16, DType::BF16}},
      {"I64", {onnx_import::kInt64, DType::I64}},
      {"I32", {onnx_import::kInt32, DType::I32}},
      {"BOOL", {onnx_import::kBool, DType::I1}}};
  for (auto &[name, entry] : header.items()) {
    if (name == "__metadata__")
      continue;
    std::string dtype = entry.value("dtype", "");
    const auto *kind =
        llvm::find_if(kinds, [&](const auto &k) { return dtype == k.first; });
    if (kind == std::end(kinds))
      failWith("weight '" + name + "' has unsupported dtype '" + dtype + "'");
    onnx_import::RawTensor raw;
    raw.type = kind->second.first;
    for (int64_t d : entry["shape"])
      raw.shape.push_back(d);
    uint64_t begin = entry["data_offsets"][0], end = entry["data_offsets"][1];
    if (begin > end || end > payload.size())
      failWith("weight '" + name + "' lies outside the file");
    raw.bytes = payload.substr(begin, end - begin).str();
    auto host = onnx_import::toHost(raw);
    if (!host)
      failWith(llvm::toString(host.takeError()));
    tensors[name] = fromHost(*host, kind->second.second);
  }
  return tensors;
}

namespace {
/// Interprets one function with the reference kernels.
class Evaluator {
public:
  explicit Evaluator(llvm::StringMap<ref::Tensor> weights)
      : weights(std::move(weights)) {}

  std::vector<ref::Tensor> run(func::FuncOp function,
                               std::vector<ref::Tensor> inputs) {
    if (inputs.size() != function.getNumArguments())
      failWith("the function takes " + llvm::Twine(function.getNumArguments()) +
               " inputs, the test data has " + llvm::Twine(inputs.size()));
    for (auto [arg, input] : llvm::zip(function.getArguments(), inputs)) {
      if (shapeOf(arg.getType()) != input.shape)
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
    if (shapeOf(value.getType()) != tensor.shape)
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
          auto it = weights.find(w.getName());
          if (it == weights.end())
            failWith("weight '" + w.getName() + "' is not in the weights file");
          ref::Tensor value =
              ref::cast(it->second, dtypeOf(w.getType().getElementType()));
          if (std::optional<ArrayRef<int64_t>> block = w.getBlock())
            value =
                ref::slice(value,
                           std::vector<int64_t>(w.getOffsets()->begin(),
                                                w.getOffsets()->end()),
                           std::vector<int64_t>(block->begin(), block->end()),
                           std::vector<int64_t>(block->size(), 1));
          // Sharding over a group of one rank is the identity.
          if (value.shape != shapeOf(w.getType()))
            failWith("weight '" + w.getName() +
                     "' is sharded over more than one rank: braid-eval runs "
                     "one rank");
          set(w.getResult(), std::move(value));
        })
        .Case([&](ConstantOp c) {
          auto attr = cast<DenseElementsAttr>(c.getValue());
          DType dtype = dtypeOf(attr.getElementType());
          std::vector<int64_t> shape = shapeOf(c.getType());
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
          set(o.getResult(), ref::cast(get(o.getInput()),
                                       dtypeOf(o.getType().getElementType())));
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
        .Case([&](ReshapeOp o) {
          set(o.getResult(),
              ref::reshape(get(o.getInput()), shapeOf(o.getType())));
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
              ref::broadcastTo(get(o.getInput()), shapeOf(o.getType())));
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

  llvm::StringMap<ref::Tensor> weights;
  llvm::DenseMap<Value, ref::Tensor> tensors, futures;
  llvm::DenseMap<Value, int64_t> indices;
  std::vector<ref::Tensor> results;
};
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::braid::hideRegisteredOptions();
  mlir::braid::setBraidVersionPrinter("braid-eval");
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "Run braid IR with the reference kernels "
                                    "and compare with expected outputs\n");
  MLIRContext context;
  context.loadDialect<BraidDialect, func::FuncDialect, arith::ArithDialect>();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputPath, &context);
  if (!module)
    return 1;
  try {
    auto function = module->lookupSymbol<func::FuncOp>("main");
    if (!function)
      failWith("the module has no function @main");
    llvm::StringMap<ref::Tensor> weights;
    if (!weightsPath.empty())
      weights = readSafetensors(weightsPath);
    std::vector<ref::Tensor> inputs;
    for (auto [i, arg] : llvm::enumerate(function.getArguments()))
      inputs.push_back(readPb(
          testData + "/input_" + std::to_string(i) + ".pb",
          dtypeOf(cast<RankedTensorType>(arg.getType()).getElementType())));
    Evaluator evaluator(std::move(weights));
    std::vector<ref::Tensor> outputs = evaluator.run(function, inputs);
    bool ok = true;
    for (auto [i, output] : llvm::enumerate(outputs)) {
      std::string path = testData + "/output_" + std::to_string(i) + ".pb";
      ref::Tensor expected = readPb(path, output.dtype);
      if (expected.shape != output.shape)
        failWith("output " + llvm::Twine(i) + " has another shape than " +
                 path);
      double maxAbs = 0, maxRef = 0;
      for (int64_t k = 0; k < output.numElements(); ++k) {
        maxAbs = std::max(maxAbs, std::fabs(output.at(k) - expected.at(k)));
        maxRef = std::max(maxRef, std::fabs(expected.at(k)));
      }
      double rel = maxRef > 0 ? maxAbs / maxRef : maxAbs;
      bool pass = rel <= rtol;
      ok &= pass;
      llvm::outs() << "output " << i << ": " << output.numElements()
                   << " elements, max abs error "
                   << llvm::format("%.3e", maxAbs) << ", relative "
                   << llvm::format("%.3e", rel) << " ("
                   << (pass ? "PASS" : "FAIL") << ", rtol "
                   << llvm::format("%.0e", rtol.getValue()) << ")\n";
    }
    return ok ? 0 : 1;
  } catch (const EvalError &error) {
    llvm::errs() << "error: " << error.message << "\n";
    return 1;
  } catch (const std::invalid_argument &error) {
    llvm::errs() << "error: " << error.what() << "\n";
    return 1;
  }
}
