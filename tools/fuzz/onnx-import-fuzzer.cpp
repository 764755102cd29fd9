//===- onnx-import-fuzzer.cpp - libFuzzer target for the ONNX importer ----===//
//
// Feeds arbitrary bytes to the ONNX frontend: parseModel (binary protobuf, or
// ONNX text when the input starts with '<'), then importModel on a fresh
// MLIRContext whose diagnostics are swallowed. Rejecting an input is fine;
// the only failures are crashes, hangs, sanitizer reports and uncaught
// exceptions.
//
// Built only with -DBRAID_ENABLE_FUZZERS=ON (clang); see tools/fuzz/README.md
// and scripts/fuzz-onnx.sh.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImporter.h"
#include "frontend/onnx/OnnxModel.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;
using namespace mlir::braid::onnx_import;

namespace {
/// Larger inputs are skipped: they only slow the fuzzer down.
constexpr size_t kMaxInputBytes = 1 << 20;
/// Keeps the host tensors of constant folding small: larger ones are an
/// error, not an out-of-memory report.
constexpr int64_t kMaxHostElements = 1 << 16;
/// Model path given to the importer. Its folder does not exist, so external
/// data never resolves to a real file (the importer itself rejects absolute
/// locations and '..').
constexpr const char *kModelPath = "/nonexistent-braid-fuzz/fuzz-input.onnx";
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > kMaxInputBytes)
    return -1; // do not add to the corpus

  llvm::StringRef buffer(reinterpret_cast<const char *>(data), size);
  // The name has no extension, so text is recognised by a leading '<'.
  llvm::Expected<std::unique_ptr<onnx::ModelProto>> model =
      parseModel(buffer, "fuzz-input");
  if (!model) {
    llvm::consumeError(model.takeError());
    return 0;
  }

  MLIRContext context(MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler swallow(&context,
                                  [](Diagnostic &) { return success(); });

  ImportOptions options;
  options.maxHostElements = kMaxHostElements;
  options.showProgress = false;
  FailureOr<ImportedModel> imported =
      importModel(**model, kModelPath, &context, options);
  (void)imported; // discarded; destroyed before the context
  return 0;
}
