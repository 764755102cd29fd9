//===- ReferenceInterpreter.h - braid IR on the reference kernels -*- C++
//-*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Interprets a single-rank braid function op by op with the runtime's
// reference kernels (runtime/reference): slow and obviously correct, the
// oracle for the importer, raising and every transformation. braid-eval runs
// it on ONNX test data; braid-fuzz-partition on random programs.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_COMMON_REFERENCEINTERPRETER_H
#define BRAID_TOOLS_COMMON_REFERENCEINTERPRETER_H

#include "runtime/reference/ReferenceKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <stdexcept>
#include <vector>

namespace mlir {
namespace braid {

/// The program cannot be interpreted (an unsupported op, a missing weight, a
/// collective over more than one rank, ...); the message says what.
/// Kernels report bad operands with std::invalid_argument.
class InterpreterError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The runtime element type of an MLIR element type; throws
/// InterpreterError for one the runtime has not.
::braid::rt::DType runtimeDType(Type type);

/// The static shape of a ranked tensor type.
std::vector<int64_t> tensorShape(Type type);

/// Runs `function` (one rank: collectives over groups of one rank and
/// `braid.rank` are the identity and 0) on `inputs`, reading weights by
/// symbol name from `weights`; returns the values of its `func.return`.
std::vector<::braid::rt::ref::Tensor>
interpretFunction(func::FuncOp function,
                  std::vector<::braid::rt::ref::Tensor> inputs,
                  const llvm::StringMap<::braid::rt::ref::Tensor> &weights);

/// How far `actual` is from `expected` (same shape): the largest absolute
/// difference, and that divided by the largest expected magnitude (the
/// difference itself when every expected value is 0). A NaN against a
/// number counts as an infinite difference.
struct TensorError {
  double maxAbs = 0;
  double relative = 0;
};
TensorError compareTensors(const ::braid::rt::ref::Tensor &actual,
                           const ::braid::rt::ref::Tensor &expected);

} // namespace braid
} // namespace mlir

#endif // BRAID_TOOLS_COMMON_REFERENCEINTERPRETER_H
