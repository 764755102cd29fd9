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
#include "tools/common/ReferenceInterpreter.h"
#include "tools/common/ToolOptions.h"

#include "onnx/onnx_pb.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"
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
llvm::cl::opt<std::string> expectedGradients(
    "expected-gradients",
    llvm::cl::desc("Safetensors file with the expected gradient of each "
                   "weight: results marked braid.gradient_of = @w are "
                   "compared with tensor w (relative L2 error)"),
    llvm::cl::value_desc("file"), llvm::cl::cat(category));
llvm::cl::opt<double> gradientRtol(
    "gradient-rtol",
    llvm::cl::desc("Largest relative L2 error of a gradient"),
    llvm::cl::init(1e-4), llvm::cl::cat(category));
llvm::cl::opt<double> gradientAtol(
    "gradient-atol",
    llvm::cl::desc("Per-element RMS below which a gradient counts as zero "
                   "(its error is measured against this instead)"),
    llvm::cl::init(1e-7), llvm::cl::cat(category));
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
      inputs.push_back(
          readPb(testData + "/input_" + std::to_string(i) + ".pb",
                 runtimeDType(
                     cast<RankedTensorType>(arg.getType()).getElementType())));
    std::vector<ref::Tensor> outputs =
        interpretFunction(function, std::move(inputs), weights);
    bool ok = true;
    llvm::StringMap<ref::Tensor> gradients;
    if (!expectedGradients.empty())
      gradients = readSafetensors(expectedGradients);
    double worstGradient = 0;
    int numGradients = 0;
    llvm::StringSet<> compared;
    for (auto [i, output] : llvm::enumerate(outputs)) {
      if (auto of = function.getResultAttrOfType<FlatSymbolRefAttr>(
              i, "braid.gradient_of")) {
        if (expectedGradients.empty())
          continue;
        auto it = gradients.find(of.getValue());
        ref::Tensor stacked;
        if (it == gradients.end()) {
          // A weight stacked from initializers (MoE experts): the stack of
          // their gradients.
          auto decl = module->lookupSymbol<WeightOp>(of.getAttr());
          auto parts = decl ? decl->getAttrOfType<ArrayAttr>("braid.stacked_from")
                            : ArrayAttr();
          if (!parts)
            failWith("'" + expectedGradients.getValue() +
                     "' has no gradient of '" + of.getValue() + "'");
          for (Attribute part : parts) {
            StringRef name = cast<StringAttr>(part).getValue();
            auto found = gradients.find(name);
            if (found == gradients.end())
              failWith("'" + expectedGradients.getValue() +
                       "' has no gradient of '" + name + "' (part of '" +
                       of.getValue() + "')");
            if (stacked.shape.empty()) {
              stacked = found->second;
              stacked.shape.insert(stacked.shape.begin(), 0);
            } else {
              stacked.f.insert(stacked.f.end(), found->second.f.begin(),
                               found->second.f.end());
            }
            ++stacked.shape[0];
            compared.insert(name);
          }
        }
        const ref::Tensor &expected =
            it == gradients.end() ? stacked : it->second;
        if (expected.shape != output.shape)
          failWith("the gradient of '" + of.getValue() +
                   "' has another shape in '" + expectedGradients.getValue() +
                   "'");
        // Relative L2 error: of the difference to the expected norm, or to
        // --gradient-atol per element where the gradient is zero up to
        // rounding (a key bias under softmax: its exact gradient is 0).
        double diff = 0, norm = 0, computed = 0;
        for (int64_t k = 0; k < output.numElements(); ++k) {
          double d = output.at(k) - expected.at(k);
          diff += d * d;
          norm += expected.at(k) * expected.at(k);
          computed += output.at(k) * output.at(k);
        }
        double floor = gradientAtol * gradientAtol * output.numElements();
        double rel = std::sqrt(diff / std::max(norm, floor));
        bool pass = rel <= gradientRtol;
        ok &= pass;
        worstGradient = std::max(worstGradient, rel);
        ++numGradients;
        compared.insert(of.getValue());
        if (!pass)
          llvm::outs() << "gradient of " << of.getValue()
                       << ": relative L2 error " << llvm::format("%.3e", rel)
                       << " (norm " << llvm::format("%.3e", std::sqrt(computed))
                       << ", expected " << llvm::format("%.3e", std::sqrt(norm))
                       << "; FAIL, rtol "
                       << llvm::format("%.0e", gradientRtol.getValue())
                       << ")\n";
        continue;
      }
      std::string path = testData + "/output_" + std::to_string(i) + ".pb";
      ref::Tensor expected = readPb(path, output.dtype);
      if (expected.shape != output.shape)
        failWith("output " + llvm::Twine(i) + " has another shape than " +
                 path);
      auto [maxAbs, rel] = compareTensors(output, expected);
      bool pass = rel <= rtol;
      ok &= pass;
      llvm::outs() << "output " << i << ": " << output.numElements()
                   << " elements, max abs error "
                   << llvm::format("%.3e", maxAbs) << ", relative "
                   << llvm::format("%.3e", rel) << " ("
                   << (pass ? "PASS" : "FAIL") << ", rtol "
                   << llvm::format("%.0e", rtol.getValue()) << ")\n";
    }
    for (const auto &entry : gradients)
      if (!compared.contains(entry.getKey())) {
        llvm::outs() << "gradient of " << entry.getKey()
                     << ": expected, but the program computes none (FAIL)\n";
        ok = false;
      }
    if (!expectedGradients.empty())
      llvm::outs() << "gradients: " << numGradients
                   << " compared, largest relative L2 error "
                   << llvm::format("%.3e", worstGradient) << " ("
                   << (ok ? "PASS" : "FAIL") << ")\n";
    return ok ? 0 : 1;
  } catch (const EvalError &error) {
    llvm::errs() << "error: " << error.message << "\n";
    return 1;
  } catch (const InterpreterError &error) {
    llvm::errs() << "error: " << error.what() << "\n";
    return 1;
  } catch (const std::invalid_argument &error) {
    llvm::errs() << "error: " << error.what() << "\n";
    return 1;
  }
}
