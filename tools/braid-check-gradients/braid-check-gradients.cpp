//===- braid-check-gradients.cpp - gradients against finite differences ---===//
//
// Checks braid-autodiff on a function computing a scalar loss: the
// function is differentiated (with respect to its trained weights or its
// float arguments), run by the reference interpreter on random data, and
// each gradient is compared with central finite differences of the
// original function along a random direction:
//
//   <grad L(x), d>  against  (L(x + e d) - L(x - e d)) / (2 e)
//
// By default the interpreter computes in double precision (the f64
// reference: `--precision=f64`); `--precision=native` rounds every value
// to its element type as the runtime does (looser tolerance). One line per
// gradient; exit 1 if any is off.
//
//   braid-check-gradients loss.mlir [--wrt=weights|arguments] [--seed=N]
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"
#include "runtime/reference/ReferenceKernels.h"
#include "tools/common/ReferenceInterpreter.h"
#include "tools/common/ToolOptions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <optional>
#include <random>

using namespace mlir;
using namespace mlir::braid;
namespace rt = ::braid::rt;
namespace ref = ::braid::rt::ref;

namespace {
llvm::cl::OptionCategory &category = getBraidToolCategory();
llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                     llvm::cl::desc("<loss.mlir>"),
                                     llvm::cl::Required,
                                     llvm::cl::cat(category));
llvm::cl::opt<std::string>
    wrt("wrt", llvm::cl::desc("Differentiate with respect to 'weights' (the "
                              "trained ones) or 'arguments'"),
        llvm::cl::init("weights"), llvm::cl::cat(category));
llvm::cl::opt<std::string>
    trainable("trainable",
              llvm::cl::desc("Which weights are trained: auto or all"),
              llvm::cl::init("all"), llvm::cl::cat(category));
llvm::cl::opt<uint64_t> seed("seed", llvm::cl::desc("Random seed"),
                             llvm::cl::init(1), llvm::cl::cat(category));
llvm::cl::opt<double> epsilon("epsilon",
                              llvm::cl::desc("Finite-difference step"),
                              llvm::cl::init(1e-5), llvm::cl::cat(category));
llvm::cl::opt<double> tolerance(
    "tolerance",
    llvm::cl::desc("Largest relative difference between the directional "
                   "derivative and the finite difference"),
    llvm::cl::init(1e-5), llvm::cl::cat(category));
llvm::cl::opt<std::string> precision(
    "precision",
    llvm::cl::desc("f64: the interpreter keeps doubles (default); native: "
                   "values rounded to their element type"),
    llvm::cl::init("f64"), llvm::cl::cat(category));
llvm::cl::opt<double> low("low", llvm::cl::desc("Random floats from"),
                          llvm::cl::init(-1.0), llvm::cl::cat(category));
llvm::cl::opt<double> high("high", llvm::cl::desc("Random floats up to"),
                           llvm::cl::init(1.0), llvm::cl::cat(category));
llvm::cl::opt<int64_t>
    intBound("int-bound",
             llvm::cl::desc("Random integers (indices, labels) in [0, N)"),
             llvm::cl::init(2), llvm::cl::cat(category));

struct CheckError {
  std::string message;
};

ref::Tensor randomTensor(Type type, std::mt19937_64 &rng) {
  auto tensorType = cast<RankedTensorType>(type);
  rt::DType dtype = runtimeDType(tensorType.getElementType());
  std::vector<int64_t> shape = tensorShape(type);
  int64_t n = tensorType.getNumElements();
  if (isa<FloatType>(tensorType.getElementType())) {
    std::uniform_real_distribution<double> dist(low, high);
    std::vector<double> values(n);
    for (double &v : values)
      v = dist(rng);
    return ref::Tensor::ofFloats(dtype, shape, values);
  }
  std::uniform_int_distribution<int64_t> dist(
      0, tensorType.getElementType().isInteger(1) ? 1 : intBound - 1);
  std::vector<int64_t> values(n);
  for (int64_t &v : values)
    v = dist(rng);
  return ref::Tensor::ofInts(dtype, shape, values);
}

/// `base + step * direction`, in double precision.
ref::Tensor moved(const ref::Tensor &base, const ref::Tensor &direction,
                  double step) {
  ref::Tensor out = base;
  for (size_t k = 0; k < out.f.size(); ++k)
    out.f[k] = base.f[k] + step * direction.f[k];
  return out;
}

double dot(const ref::Tensor &a, const ref::Tensor &b) {
  double sum = 0;
  for (int64_t k = 0; k < a.numElements(); ++k)
    sum += a.at(k) * b.at(k);
  return sum;
}

int run(MLIRContext &context) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> original =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!original)
    return 1;
  OwningOpRef<ModuleOp> differentiated = original->clone();
  PassManager pm(&context);
  BraidAutodiffOptions options;
  options.wrt = wrt;
  options.trainable = trainable;
  pm.addPass(createBraidAutodiff(options));
  if (failed(pm.run(*differentiated)))
    return 1;

  auto forward = original->lookupSymbol<func::FuncOp>("main");
  auto backward = differentiated->lookupSymbol<func::FuncOp>("main");
  std::mt19937_64 rng(seed);
  std::vector<ref::Tensor> inputs;
  for (Type type : forward.getArgumentTypes())
    inputs.push_back(randomTensor(type, rng));
  llvm::StringMap<ref::Tensor> weights;
  for (auto weight : original->getOps<WeightOp>())
    weights[weight.getSymName()] = randomTensor(weight.getType(), rng);

  std::optional<ref::ExactArithmetic> exact;
  if (precision == "f64")
    exact.emplace();
  else if (precision != "native")
    throw CheckError{"--precision must be f64 or native"};

  std::vector<ref::Tensor> results =
      interpretFunction(backward, inputs, weights);
  unsigned first = forward.getNumResults();
  auto loss = [&](const std::vector<ref::Tensor> &in,
                  const llvm::StringMap<ref::Tensor> &w) {
    return interpretFunction(forward, in, w)[0].at(0);
  };
  llvm::outs() << "loss " << llvm::format("%.9g", results[0].at(0)) << "\n";
  int failures = 0;
  for (unsigned r = first; r < backward.getNumResults(); ++r) {
    Attribute of = backward.getResultAttr(r, "braid.gradient_of");
    const ref::Tensor &grad = results[r];
    std::string name;
    double plus, minus;
    ref::Tensor direction;
    if (auto symbol = dyn_cast_or_null<FlatSymbolRefAttr>(of)) {
      name = "@" + symbol.getValue().str();
      const ref::Tensor &base = weights[symbol.getValue()];
      direction = randomTensor(
          original->lookupSymbol<WeightOp>(symbol.getAttr()).getType(), rng);
      llvm::StringMap<ref::Tensor> shifted = weights;
      shifted[symbol.getValue()] = moved(base, direction, epsilon);
      plus = loss(inputs, shifted);
      shifted[symbol.getValue()] = moved(base, direction, -epsilon);
      minus = loss(inputs, shifted);
    } else if (auto index = dyn_cast_or_null<IntegerAttr>(of)) {
      int64_t arg = index.getInt();
      name = "argument #" + std::to_string(arg);
      direction = randomTensor(forward.getArgument(arg).getType(), rng);
      std::vector<ref::Tensor> shifted = inputs;
      shifted[arg] = moved(inputs[arg], direction, epsilon);
      plus = loss(shifted, weights);
      shifted[arg] = moved(inputs[arg], direction, -epsilon);
      minus = loss(shifted, weights);
    } else {
      throw CheckError{"result #" + std::to_string(r) +
                       " has no braid.gradient_of"};
    }
    double analytic = dot(grad, direction);
    double numeric = (plus - minus) / (2 * epsilon);
    double scale = std::max({std::fabs(analytic), std::fabs(numeric), 1e-3});
    double error = std::fabs(analytic - numeric) / scale;
    bool ok = error <= tolerance;
    failures += !ok;
    llvm::outs() << (ok ? "ok   " : "FAIL ") << name << ": directional "
                 << llvm::format("%.9g", analytic) << ", finite difference "
                 << llvm::format("%.9g", numeric) << ", relative error "
                 << llvm::format("%.2e", error) << "\n";
  }
  llvm::outs() << (failures ? "FAILED: " : "passed: ")
               << (backward.getNumResults() - first) << " gradients, "
               << failures << " off\n";
  return failures ? 1 : 0;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  setBraidVersionPrinter("braid-check-gradients");
  hideRegisteredOptions();
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "braid-check-gradients: braid-autodiff against finite differences\n");
  DialectRegistry registry;
  registry.insert<BraidDialect, func::FuncDialect, arith::ArithDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  try {
    return run(context);
  } catch (const CheckError &e) {
    llvm::errs() << "braid-check-gradients: " << e.message << "\n";
  } catch (const InterpreterError &e) {
    llvm::errs() << "braid-check-gradients: " << e.what() << "\n";
  } catch (const std::invalid_argument &e) {
    llvm::errs() << "braid-check-gradients: " << e.what() << "\n";
  }
  return 1;
}
