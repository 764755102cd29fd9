//===- Elementwise.cu - the elementwise CUDA kernels ----------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Run functions of the unary, binary, compare, select and cast ops. The
// index math and the choice of kernel variant live in ElementwiseOps.cuh
// (shared with the host unit tests); here each op reads its attributes as
// CpuKernels.cpp does and hands a launcher to the drivers there. Unbroadcast
// operands take the 16-byte-pack path, which is what keeps these kernels at
// memory bandwidth.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/ElementwiseOps.cuh"
#include "runtime/cuda/kernels/KernelTables.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/kernels/FloatKernels.h"

#include <string>

namespace braid::rt::cuda {

namespace {

using ew::Binary;
using ew::Compare;
using ew::Unary;

template <Unary K> void runUnaryFloat(const KernelArgs &args) {
  const std::string &op = args.op();
  ew::runUnaryFloat<K>(args.inputs[0], args.outputs[0], op.c_str(),
                       DeviceLaunch{contextOf(args), op.c_str()});
}

template <Unary K> void runUnaryAny(const KernelArgs &args) {
  const std::string &op = args.op();
  ew::runUnaryAny<K>(args.inputs[0], args.outputs[0], op.c_str(),
                     DeviceLaunch{contextOf(args), op.c_str()});
}

void runGelu(const KernelArgs &args) {
  if (args.attrs().getBool("tanh"))
    runUnaryFloat<Unary::GeluTanh>(args);
  else
    runUnaryFloat<Unary::Gelu>(args);
}

template <Binary K> void runBinary(const KernelArgs &args) {
  const std::string &op = args.op();
  ew::runBinary<K>(args.inputs[0], args.inputs[1], args.outputs[0], op.c_str(),
                   DeviceLaunch{contextOf(args), op.c_str()});
}

/// The attribute `kind` as CpuKernels.cpp reads it (the check already
/// rejected other spellings).
Compare compareKind(const KernelArgs &args) {
  const std::string &kind = args.attrs().getString("kind");
  static const std::pair<const char *, Compare> kinds[] = {
      {"eq", Compare::EQ}, {"ne", Compare::NE}, {"lt", Compare::LT},
      {"le", Compare::LE}, {"gt", Compare::GT}, {"ge", Compare::GE}};
  for (const auto &[name, value] : kinds)
    if (kind == name)
      return value;
  throw CudaError("compare: kind '" + kind +
                  "' is not one of eq, ne, lt, le, gt, ge");
}

void runCompare(const KernelArgs &args) {
  ew::runCompare(compareKind(args), args.inputs[0], args.inputs[1],
                 args.outputs[0], DeviceLaunch{contextOf(args), "compare"});
}

void runSelect(const KernelArgs &args) {
  ew::runSelect(args.inputs[0], args.inputs[1], args.inputs[2], args.outputs[0],
                DeviceLaunch{contextOf(args), "select"});
}

// The chain's unary kinds are the reference's, in the same order.
static_assert(static_cast<int>(Unary::Neg) ==
                  static_cast<int>(ref::UnaryKind::Neg) &&
              static_cast<int>(Unary::Relu) ==
                  static_cast<int>(ref::UnaryKind::Relu) &&
              static_cast<int>(Unary::GeluTanh) ==
                  static_cast<int>(ref::UnaryKind::GeluTanh));

/// The `elementwise` kernel: the steps as the CPU registry reads them
/// (cpu::chainSteps, which the check already ran), as device ops.
void runChain(const KernelArgs &args) {
  std::vector<ew::ChainOp> ops;
  for (const cpu::ChainStep &step : cpu::chainSteps(args)) {
    ew::ChainOp op;
    op.a = static_cast<int>(step.a);
    op.b = static_cast<int>(step.b);
    op.isUnary = step.unary.has_value();
    if (step.unary)
      op.unary = static_cast<Unary>(static_cast<int>(*step.unary));
    else
      op.binary = step.arith == cpu::ArithKind::Add   ? Binary::Add
                  : step.arith == cpu::ArithKind::Sub ? Binary::Sub
                  : step.arith == cpu::ArithKind::Mul ? Binary::Mul
                                                      : Binary::Div;
    ops.push_back(op);
  }
  ew::runChain(ops, args.inputs, args.outputs[0],
               DeviceLaunch{contextOf(args), "elementwise"});
}

void runCast(const KernelArgs &args) {
  ew::runCast(args.inputs[0], args.outputs[0],
              DeviceLaunch{contextOf(args), "cast"});
}

} // namespace

void addElementwiseKernels(KernelTable &table) {
  table["neg"] = runUnaryAny<Unary::Neg>;
  table["exp"] = runUnaryFloat<Unary::Exp>;
  table["log"] = runUnaryFloat<Unary::Log>;
  table["sqrt"] = runUnaryFloat<Unary::Sqrt>;
  table["rsqrt"] = runUnaryFloat<Unary::Rsqrt>;
  table["tanh"] = runUnaryFloat<Unary::Tanh>;
  table["erf"] = runUnaryFloat<Unary::Erf>;
  table["sigmoid"] = runUnaryFloat<Unary::Sigmoid>;
  table["silu"] = runUnaryFloat<Unary::Silu>;
  table["relu"] = runUnaryAny<Unary::Relu>;
  table["gelu"] = runGelu;

  table["add"] = runBinary<Binary::Add>;
  table["sub"] = runBinary<Binary::Sub>;
  table["mul"] = runBinary<Binary::Mul>;
  table["div"] = runBinary<Binary::Div>;
  table["pow"] = runBinary<Binary::Pow>;
  table["max"] = runBinary<Binary::Max>;
  table["min"] = runBinary<Binary::Min>;
  table["compare"] = runCompare;
  table["select"] = runSelect;
  table["cast"] = runCast;
  table["elementwise"] = runChain;
}

} // namespace braid::rt::cuda
