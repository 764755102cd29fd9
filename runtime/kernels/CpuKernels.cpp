//===- CpuKernels.cpp - the kernels of the CPU backend --------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Each op has a check, run when the plan is loaded, and a run function. The
// checks establish everything the direct f32 kernels rely on (they index the
// arena without further checks); for ops that go through the reference
// adapter they catch what can be known before running, and the reference
// kernel checks the rest (data-dependent indices) when it runs.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Shape.h"
#include "runtime/kernels/CpuKernels.h"

#include "runtime/kernels/ElementIO.h"
#include "runtime/kernels/FloatKernels.h"
#include "runtime/kernels/MoveKernels.h"
#include "runtime/plan/Plan.pb.h"
#include "runtime/plan/PlanError.h"
#include "runtime/reference/ReferenceKernels.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

namespace braid::rt {

namespace {
using ::braid::rt::Shape;
using ::braid::rt::broadcastShapes;
using ::braid::rt::broadcastsTo;

/// The marker of a dynamic slice offset (MLIR's ShapedType::kDynamic).
constexpr int64_t kDynamic = std::numeric_limits<int64_t>::min();

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

[[noreturn]] void fail(const std::string &problem) { throw PlanError(problem); }

std::string describe(const TensorView &t) {
  return std::string(toString(t.dtype)) + " " + shapeToString(t.shape);
}

bool isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}
bool isIndex(DType dtype) { return dtype == DType::I64 || dtype == DType::I32; }

void expectFloat(const TensorView &t, const std::string &what) {
  if (!isFloat(t.dtype))
    fail(what + " must be a floating tensor, got " + describe(t));
}
void expectIndex(const TensorView &t, const std::string &what) {
  if (!isIndex(t.dtype))
    fail(what + " must be an i64 or i32 tensor, got " + describe(t));
}
void expectDType(const TensorView &t, DType dtype, const std::string &what) {
  if (t.dtype != dtype)
    fail(what + " must be " + std::string(toString(dtype)) + ", got " +
         describe(t));
}
void expectSameDType(const TensorView &a, const std::string &whatA,
                     const TensorView &b, const std::string &whatB) {
  if (a.dtype != b.dtype)
    fail(whatA + " (" + describe(a) + ") and " + whatB + " (" + describe(b) +
         ") have different element types");
}
void expectShape(const TensorView &t, const Shape &shape,
                 const std::string &what) {
  if (t.shape != shape)
    fail(what + " must have shape " + shapeToString(shape) + ", got " +
         describe(t));
}
void expectRank(const TensorView &t, int64_t rank, const std::string &what) {
  if (t.rank() != rank)
    fail(what + " must have rank " + std::to_string(rank) + ", got " +
         describe(t));
}
void expectDim(int64_t dim, int64_t rank, const std::string &what) {
  if (dim < 0 || dim >= rank)
    fail(what + " " + std::to_string(dim) + " is out of range for rank " +
         std::to_string(rank));
}

/// Checks that the inputs broadcast together to exactly the output shape.
void expectBroadcastTo(const std::vector<const TensorView *> &inputs,
                       const TensorView &out) {
  Shape shape;
  std::string shapes;
  for (const TensorView *input : inputs) {
    shapes += (shapes.empty() ? "" : ", ") + shapeToString(input->shape);
    std::optional<Shape> next = broadcastShapes(shape, input->shape);
    if (!next)
      fail("operand shapes " + shapes + " do not broadcast");
    shape = *next;
  }
  if (shape != out.shape)
    fail("operand shapes " + shapes + " broadcast to " + shapeToString(shape) +
         ", but the output is " + describe(out));
}

void checkUnaryAny(const KernelArgs &args) {
  expectSameDType(args.inputs[0], "input", args.outputs[0], "output");
  expectShape(args.outputs[0], args.inputs[0].shape, "output");
}

void checkUnaryFloat(const KernelArgs &args) {
  expectFloat(args.inputs[0], "input");
  checkUnaryAny(args);
}

void checkBinary(const KernelArgs &args) {
  expectSameDType(args.inputs[0], "lhs", args.inputs[1], "rhs");
  expectSameDType(args.inputs[0], "lhs", args.outputs[0], "output");
  expectBroadcastTo({&args.inputs[0], &args.inputs[1]}, args.outputs[0]);
}

ref::CompareKind compareKind(const KernelArgs &args) {
  const std::string &kind = args.attrs().getString("kind");
  static const std::pair<const char *, ref::CompareKind> kinds[] = {
      {"eq", ref::CompareKind::EQ}, {"ne", ref::CompareKind::NE},
      {"lt", ref::CompareKind::LT}, {"le", ref::CompareKind::LE},
      {"gt", ref::CompareKind::GT}, {"ge", ref::CompareKind::GE}};
  for (const auto &[name, value] : kinds)
    if (kind == name)
      return value;
  fail("compare kind '" + kind + "' is not one of eq, ne, lt, le, gt, ge");
}

void checkCompare(const KernelArgs &args) {
  (void)compareKind(args);
  expectSameDType(args.inputs[0], "lhs", args.inputs[1], "rhs");
  expectDType(args.outputs[0], DType::I1, "output");
  expectBroadcastTo({&args.inputs[0], &args.inputs[1]}, args.outputs[0]);
}

void checkSelect(const KernelArgs &args) {
  expectDType(args.inputs[0], DType::I1, "condition");
  expectSameDType(args.inputs[1], "true value", args.inputs[2], "false value");
  expectSameDType(args.inputs[1], "true value", args.outputs[0], "output");
  expectBroadcastTo({&args.inputs[0], &args.inputs[1], &args.inputs[2]},
                    args.outputs[0]);
}

void checkCast(const KernelArgs &args) {
  expectShape(args.outputs[0], args.inputs[0].shape, "output");
}

/// The shapes of a matrix product; throws PlanError unless they agree.
struct MatmulShape {
  int64_t m, n, k;
  Shape batch;
};
MatmulShape matmulShape(const TensorView &a, const TensorView &b,
                        bool transposeA, bool transposeB) {
  if (a.rank() < 2 || b.rank() < 2)
    fail("operands must be at least 2-D, got " + describe(a) + " and " +
         describe(b));
  size_t ra = a.shape.size(), rb = b.shape.size();
  MatmulShape s;
  s.m = transposeA ? a.shape[ra - 1] : a.shape[ra - 2];
  s.k = transposeA ? a.shape[ra - 2] : a.shape[ra - 1];
  int64_t kB = transposeB ? b.shape[rb - 1] : b.shape[rb - 2];
  s.n = transposeB ? b.shape[rb - 2] : b.shape[rb - 1];
  if (s.k != kB)
    fail("contraction sizes differ: lhs " + describe(a) + " has " +
         std::to_string(s.k) + ", rhs " + describe(b) + " has " +
         std::to_string(kB));
  std::optional<Shape> batch =
      broadcastShapes(Shape(a.shape.begin(), a.shape.end() - 2),
                      Shape(b.shape.begin(), b.shape.end() - 2));
  if (!batch)
    fail("batch dimensions of " + describe(a) + " and " + describe(b) +
         " do not broadcast");
  s.batch = *batch;
  return s;
}

/// The unary ops kernel attributes name (an epilogue's activation, a
/// chain's steps): the braid ops' names, gelu_tanh for the tanh-GELU.
const std::pair<const char *, ref::UnaryKind> kUnaryNames[] = {
    {"neg", ref::UnaryKind::Neg},     {"exp", ref::UnaryKind::Exp},
    {"log", ref::UnaryKind::Log},     {"sqrt", ref::UnaryKind::Sqrt},
    {"rsqrt", ref::UnaryKind::Rsqrt}, {"tanh", ref::UnaryKind::Tanh},
    {"erf", ref::UnaryKind::Erf},     {"sigmoid", ref::UnaryKind::Sigmoid},
    {"silu", ref::UnaryKind::Silu},   {"relu", ref::UnaryKind::Relu},
    {"gelu", ref::UnaryKind::Gelu},   {"gelu_tanh", ref::UnaryKind::GeluTanh}};

std::optional<ref::UnaryKind> unaryNamed(const std::string &name) {
  for (const auto &[n, kind] : kUnaryNames)
    if (name == n)
      return kind;
  return std::nullopt;
}

/// A matmul's epilogue (braid-to-exec's fusion of the bias add, the
/// activation and the residual add that follow it): `has_bias` and
/// `has_addend` say which of inputs 2 and 3 are there, `activation` names
/// gelu, gelu_tanh, silu or relu. Throws PlanError for anything else.
cpu::MatmulEpilogue matmulEpilogue(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  bool hasBias = attrs.getBool("has_bias"),
       hasAddend = attrs.getBool("has_addend");
  size_t wanted = 2 + hasBias + hasAddend;
  if (args.inputs.size() != wanted)
    fail("has " + std::to_string(args.inputs.size()) +
         " inputs, but has_bias and has_addend call for " +
         std::to_string(wanted));
  cpu::MatmulEpilogue epilogue;
  if (hasBias)
    epilogue.bias = &args.inputs[2];
  if (hasAddend)
    epilogue.addend = &args.inputs[wanted - 1];
  if (attrs.has("activation")) {
    const std::string &name = attrs.getString("activation");
    using U = ref::UnaryKind;
    epilogue.activation = unaryNamed(name);
    if (epilogue.activation != U::Gelu && epilogue.activation != U::GeluTanh &&
        epilogue.activation != U::Silu && epilogue.activation != U::Relu)
      fail("activation '" + name +
           "' is not one of gelu, gelu_tanh, silu, relu");
  }
  return epilogue;
}

void checkMatmul(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  const TensorView &a = args.inputs[0], &b = args.inputs[1];
  expectSameDType(a, "lhs", b, "rhs");
  expectSameDType(a, "lhs", args.outputs[0], "output");
  MatmulShape s = matmulShape(a, b, attrs.getBool("transpose_lhs"),
                              attrs.getBool("transpose_rhs"));
  Shape shape = s.batch;
  shape.push_back(s.m);
  shape.push_back(s.n);
  expectShape(args.outputs[0], shape, "output");
  cpu::MatmulEpilogue epilogue = matmulEpilogue(args);
  if (epilogue.empty())
    return;
  expectFloat(a, "lhs of a matmul with an epilogue");
  if (epilogue.bias) {
    const TensorView &bias = *epilogue.bias;
    expectSameDType(a, "lhs", bias, "bias");
    bool row = bias.rank() >= 1 && bias.shape.back() == s.n &&
               bias.numElements() == s.n;
    if (!row)
      fail("bias " + describe(bias) + " must hold the " +
           std::to_string(s.n) + " columns of the product (shape [" +
           std::to_string(s.n) + "] or [1, ..., " + std::to_string(s.n) +
           "])");
  }
  if (epilogue.addend) {
    expectSameDType(a, "lhs", *epilogue.addend, "addend");
    expectShape(*epilogue.addend, shape, "addend");
  }
}

void checkGroupedMatmul(const KernelArgs &args) {
  const TensorView &x = args.inputs[0], &w = args.inputs[1];
  expectFloat(x, "input");
  expectSameDType(x, "input", w, "weight");
  expectSameDType(x, "input", args.outputs[0], "output");
  expectRank(x, 3, "input");
  expectRank(w, 3, "weight");
  bool transposed = args.attrs().getBool("transpose_rhs");
  int64_t k = transposed ? w.shape[2] : w.shape[1];
  int64_t n = transposed ? w.shape[1] : w.shape[2];
  if (w.shape[0] != x.shape[0] || k != x.shape[2])
    fail("input " + describe(x) + " and weight " + describe(w) +
         " do not form [E, C, K] x [E, K, N]");
  expectShape(args.outputs[0], {x.shape[0], x.shape[1], n}, "output");
}

void checkReduce(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  const TensorView &x = args.inputs[0];
  std::vector<int64_t> dims = attrs.getInts("dims");
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t dim : dims) {
    expectDim(dim, x.rank(), "reduced dimension");
    if (reduced[dim])
      fail("dimension " + std::to_string(dim) + " is reduced twice");
    reduced[dim] = true;
  }
  Shape shape;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (!reduced[d])
      shape.push_back(x.shape[d]);
    else if (attrs.getBool("keep_dims"))
      shape.push_back(1);
  expectSameDType(x, "input", args.outputs[0], "output");
  expectShape(args.outputs[0], shape, "output");
}

void checkSoftmax(const KernelArgs &args) {
  expectFloat(args.inputs[0], "input");
  expectDim(args.attrs().getInt("dim"), args.inputs[0].rank(), "dimension");
  checkUnaryAny(args);
}

void checkNorm(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  const TensorView &x = args.inputs[0];
  expectFloat(x, "input");
  int64_t axis = attrs.getInt("axis");
  expectDim(axis, x.rank(), "axis");
  double epsilon = attrs.getFloat("epsilon");
  if (!(epsilon >= 0) || epsilon == std::numeric_limits<double>::infinity())
    fail("epsilon " + std::to_string(epsilon) +
         " must be finite and non-negative");
  Shape normalized(x.shape.begin() + axis, x.shape.end());
  const char *names[] = {"input", "gamma", "beta"};
  for (size_t i = 1; i < args.inputs.size(); ++i) {
    expectSameDType(x, "input", args.inputs[i], names[i]);
    expectShape(args.inputs[i], normalized, names[i]);
  }
  checkUnaryAny(args);
}

void checkRotary(const KernelArgs &args) {
  const TensorView &x = args.inputs[0];
  expectFloat(x, "input");
  if (x.rank() < 1 || x.shape.back() % 2 != 0)
    fail("input " + describe(x) + " needs an even last dimension");
  for (int i = 1; i <= 2; ++i) {
    const char *what = i == 1 ? "cos" : "sin";
    expectSameDType(x, "input", args.inputs[i], what);
    if (!broadcastsTo(args.inputs[i].shape, x.shape))
      fail(std::string(what) + " " + describe(args.inputs[i]) +
           " does not broadcast to the input " + describe(x));
  }
  checkUnaryAny(args);
}

void checkGather(const KernelArgs &args) {
  const TensorView &x = args.inputs[0], &indices = args.inputs[1];
  int64_t axis = args.attrs().getInt("axis");
  expectDim(axis, x.rank(), "axis");
  expectIndex(indices, "indices");
  expectSameDType(x, "input", args.outputs[0], "output");
  expectShape(args.outputs[0], ref::gatheredShape(x.shape, indices.shape, axis),
              "output");
}

void checkScatterAdd(const KernelArgs &args) {
  const TensorView &updates = args.inputs[0], &indices = args.inputs[1];
  const TensorView &out = args.outputs[0];
  int64_t axis = args.attrs().getInt("axis");
  expectFloat(updates, "updates");
  expectIndex(indices, "indices");
  expectSameDType(updates, "updates", out, "output");
  expectDim(axis, out.rank(), "axis");
  expectShape(updates, ref::gatheredShape(out.shape, indices.shape, axis),
              "updates");
}

void checkReshape(const KernelArgs &args) {
  expectSameDType(args.inputs[0], "input", args.outputs[0], "output");
  if (args.inputs[0].numElements() != args.outputs[0].numElements())
    fail("input " + describe(args.inputs[0]) + " and output " +
         describe(args.outputs[0]) + " have different element counts");
}

void checkTranspose(const KernelArgs &args) {
  const TensorView &x = args.inputs[0];
  std::vector<int64_t> permutation = args.attrs().getInts("permutation");
  if (static_cast<int64_t>(permutation.size()) != x.rank())
    fail("permutation of " + std::to_string(permutation.size()) +
         " entries for an input of rank " + std::to_string(x.rank()));
  std::vector<bool> seen(permutation.size(), false);
  Shape shape;
  for (int64_t p : permutation) {
    expectDim(p, x.rank(), "permutation entry");
    if (seen[p])
      fail("permutation lists " + std::to_string(p) + " twice");
    seen[p] = true;
    shape.push_back(x.shape[p]);
  }
  expectSameDType(x, "input", args.outputs[0], "output");
  expectShape(args.outputs[0], shape, "output");
}

void checkSlice(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  const TensorView &x = args.inputs[0];
  std::vector<int64_t> offsets = attrs.getInts("static_offsets");
  std::vector<int64_t> sizes = attrs.getInts("static_sizes");
  std::vector<int64_t> strides = attrs.getInts("static_strides");
  if (static_cast<int64_t>(offsets.size()) != x.rank() ||
      sizes.size() != offsets.size() || strides.size() != offsets.size())
    fail("static_offsets, static_sizes and static_strides need one entry per "
         "input dimension (" +
         std::to_string(x.rank()) + "), got " + std::to_string(offsets.size()) +
         ", " + std::to_string(sizes.size()) + ", " +
         std::to_string(strides.size()));
  int dynamic = 0;
  for (size_t d = 0; d < offsets.size(); ++d) {
    if (strides[d] < 1)
      fail("stride " + std::to_string(strides[d]) + " of dimension " +
           std::to_string(d) + " must be positive");
    if (sizes[d] < 0)
      fail("size " + std::to_string(sizes[d]) + " of dimension " +
           std::to_string(d) + " is negative");
    if (offsets[d] == kDynamic) {
      ++dynamic;
      continue;
    }
    // The last element read, offset + (size - 1) * stride, must be inside.
    __int128 last = static_cast<__int128>(offsets[d]) +
                    static_cast<__int128>(sizes[d] - 1) * strides[d];
    if (offsets[d] < 0 || (sizes[d] > 0 && last >= x.shape[d]))
      fail("dimension " + std::to_string(d) + ": offset " +
           std::to_string(offsets[d]) + ", size " + std::to_string(sizes[d]) +
           ", stride " + std::to_string(strides[d]) +
           " reads outside the input " + describe(x));
  }
  if (dynamic != args.numIndices)
    fail(std::to_string(dynamic) + " dynamic offsets but " +
         std::to_string(args.numIndices) + " index operands");
  expectSameDType(x, "input", args.outputs[0], "output");
  expectShape(args.outputs[0], sizes, "output");
}

void checkConcat(const KernelArgs &args) {
  const TensorView &first = args.inputs[0];
  int64_t dim = args.attrs().getInt("dim");
  expectDim(dim, first.rank(), "dimension");
  Shape shape = first.shape;
  shape[dim] = 0;
  for (const TensorView &input : args.inputs) {
    expectSameDType(first, "input 0", input, "every input");
    Shape other = input.shape;
    if (input.rank() == first.rank())
      other[dim] = first.shape[dim];
    if (other != first.shape)
      fail("inputs " + describe(first) + " and " + describe(input) +
           " differ outside dimension " + std::to_string(dim));
    shape[dim] += input.shape[dim];
  }
  expectSameDType(first, "input", args.outputs[0], "output");
  expectShape(args.outputs[0], shape, "output");
}

void checkSplit(const KernelArgs &args) {
  const TensorView &x = args.inputs[0];
  int64_t dim = args.attrs().getInt("dim");
  expectDim(dim, x.rank(), "dimension");
  int64_t total = 0;
  for (const TensorView &out : args.outputs) {
    expectSameDType(x, "input", out, "every output");
    Shape expected = x.shape;
    if (out.rank() == x.rank())
      expected[dim] = out.shape[dim];
    if (expected != out.shape)
      fail("output " + describe(out) + " differs from the input " +
           describe(x) + " outside dimension " + std::to_string(dim));
    total += out.shape[dim];
  }
  if (total != x.shape[dim])
    fail("outputs add up to " + std::to_string(total) + " along dimension " +
         std::to_string(dim) + ", but the input " + describe(x) + " has " +
         std::to_string(x.shape[dim]));
}

void checkBroadcastTo(const KernelArgs &args) {
  expectSameDType(args.inputs[0], "input", args.outputs[0], "output");
  if (!broadcastsTo(args.inputs[0].shape, args.outputs[0].shape))
    fail("input " + describe(args.inputs[0]) + " does not broadcast to " +
         describe(args.outputs[0]));
}

bool hasMask(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  bool withMask = args.inputs.size() == 4;
  if (attrs.has("has_mask") && attrs.getBool("has_mask") != withMask)
    fail(std::string("has_mask is ") +
         (attrs.getBool("has_mask") ? "true" : "false") + " but there are " +
         std::to_string(args.inputs.size()) + " inputs");
  return withMask;
}

void checkAttention(const KernelArgs &args) {
  (void)args.attrs().getFloat("scale");
  const TensorView &q = args.inputs[0], &k = args.inputs[1],
                   &v = args.inputs[2];
  for (int i = 0; i < 3; ++i) {
    const char *what = i == 0 ? "query" : i == 1 ? "key" : "value";
    expectFloat(args.inputs[i], what);
    expectRank(args.inputs[i], 4, what);
    expectSameDType(q, "query", args.inputs[i], what);
  }
  int64_t b = q.shape[0], h = q.shape[1], sq = q.shape[2], d = q.shape[3];
  int64_t hkv = k.shape[1], sk = k.shape[2];
  if (k.shape[0] != b || v.shape[0] != b || k.shape[3] != d ||
      v.shape[1] != hkv || v.shape[2] != sk || hkv == 0 || h % hkv != 0)
    fail("query " + describe(q) + ", key " + describe(k) + " and value " +
         describe(v) +
         " do not form [B, H, Sq, D], [B, Hkv, Sk, D], "
         "[B, Hkv, Sk, Dv] with H a multiple of Hkv");
  if (hasMask(args)) {
    const TensorView &mask = args.inputs[3];
    if (!broadcastsTo(mask.shape, {b, h, sq, sk}))
      fail("mask " + describe(mask) + " does not broadcast to " +
           shapeToString({b, h, sq, sk}));
  }
  expectSameDType(q, "query", args.outputs[0], "output");
  expectShape(args.outputs[0], {b, h, sq, v.shape[3]}, "output");
  if (args.outputs.size() == 2) {
    expectDType(args.outputs[1], DType::F32, "lse");
    expectShape(args.outputs[1], {b, h, sq}, "lse");
  }
}

void checkAttentionMerge(const KernelArgs &args) {
  size_t n = args.inputs.size() / 2;
  if (args.inputs.size() % 2 != 0)
    fail("takes partial outputs then as many lses, got " +
         std::to_string(args.inputs.size()) + " inputs");
  const TensorView &first = args.inputs[0];
  expectFloat(first, "output 0");
  expectRank(first, 4, "output 0");
  Shape lseShape(first.shape.begin(), first.shape.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    expectSameDType(first, "output 0", args.inputs[i], "every output");
    expectShape(args.inputs[i], first.shape, "every partial output");
    expectDType(args.inputs[n + i], DType::F32, "every lse");
    expectShape(args.inputs[n + i], lseShape, "every lse");
  }
  expectSameDType(first, "partial output", args.outputs[0], "result");
  expectShape(args.outputs[0], first.shape, "result");
  expectDType(args.outputs[1], DType::F32, "lse result");
  expectShape(args.outputs[1], lseShape, "lse result");
}

void checkRouterTopK(const KernelArgs &args) {
  const TensorView &logits = args.inputs[0];
  expectFloat(logits, "logits");
  expectRank(logits, 2, "logits");
  int64_t k = args.attrs().getInt("k");
  if (k < 1 || k > logits.shape[1])
    fail("k " + std::to_string(k) + " is outside [1, " +
         std::to_string(logits.shape[1]) + "]");
  expectSameDType(logits, "logits", args.outputs[0], "weights");
  expectShape(args.outputs[0], {logits.shape[0], k}, "weights");
  expectDType(args.outputs[1], DType::I64, "experts");
  expectShape(args.outputs[1], {logits.shape[0], k}, "experts");
}

void checkMoeDispatch(const KernelArgs &args) {
  const TensorView &x = args.inputs[0], &experts = args.inputs[1];
  expectFloat(x, "input");
  expectRank(x, 2, "input");
  expectIndex(experts, "experts");
  expectRank(experts, 2, "experts");
  const TensorView &out = args.outputs[0];
  expectSameDType(x, "input", out, "output");
  expectRank(out, 3, "output");
  if (experts.shape[0] != x.shape[0] || out.shape[2] != x.shape[1] ||
      out.shape[0] < 1)
    fail("input " + describe(x) + ", experts " + describe(experts) +
         " and output " + describe(out) +
         " do not form [T, H], [T, k] -> [E, C, H]");
}

void checkMoeCombine(const KernelArgs &args) {
  const TensorView &y = args.inputs[0], &experts = args.inputs[1],
                   &weights = args.inputs[2];
  expectFloat(y, "input");
  expectRank(y, 3, "input");
  expectIndex(experts, "experts");
  expectRank(experts, 2, "experts");
  expectSameDType(y, "input", weights, "weights");
  expectShape(weights, experts.shape, "weights");
  expectSameDType(y, "input", args.outputs[0], "output");
  expectShape(args.outputs[0], {experts.shape[0], y.shape[2]}, "output");
}

ref::LossReduction lossReduction(const KernelArgs &args) {
  const std::string &name = args.attrs().getString("reduction");
  if (name == "none")
    return ref::LossReduction::None;
  if (name == "mean")
    return ref::LossReduction::Mean;
  if (name == "sum")
    return ref::LossReduction::Sum;
  fail("reduction '" + name + "' is not one of none, mean, sum");
}

void checkCrossEntropy(const KernelArgs &args) {
  const TensorView &logits = args.inputs[0], &labels = args.inputs[1];
  ref::LossReduction reduction = lossReduction(args);
  expectFloat(logits, "logits");
  if (logits.rank() < 1)
    fail("logits need a class dimension, got " + describe(logits));
  expectIndex(labels, "labels");
  Shape samples(logits.shape.begin(), logits.shape.end() - 1);
  expectShape(labels, samples, "labels");
  expectSameDType(logits, "logits", args.outputs[0], "output");
  expectShape(args.outputs[0],
              reduction == ref::LossReduction::None ? samples : Shape{},
              "output");
}

//===----------------------------------------------------------------------===//
// Runs
//===----------------------------------------------------------------------===//

ref::Tensor input(const KernelArgs &args, size_t i) {
  const TensorView &t = args.inputs[i];
  return readTensor(t.dtype, t.shape, t.data);
}

void output(const KernelArgs &args, size_t i, const ref::Tensor &tensor) {
  const TensorView &t = args.outputs[i];
  writeTensor(tensor, t.dtype, t.shape, t.data);
}

bool allF32(const KernelArgs &args) {
  for (const TensorView &t : args.inputs)
    if (t.dtype != DType::F32)
      return false;
  for (const TensorView &t : args.outputs)
    if (t.dtype != DType::F32)
      return false;
  return true;
}

template <ref::UnaryKind Kind> void runUnary(const KernelArgs &args) {
  if (allF32(args)) {
    cpu::unaryF32(Kind, args.inputs[0], args.outputs[0]);
    return;
  }
  output(args, 0, ref::unary(Kind, input(args, 0)));
}

void runGelu(const KernelArgs &args) {
  ref::UnaryKind kind = args.attrs().getBool("tanh") ? ref::UnaryKind::GeluTanh
                                                     : ref::UnaryKind::Gelu;
  if (allF32(args)) {
    cpu::unaryF32(kind, args.inputs[0], args.outputs[0]);
    return;
  }
  output(args, 0, ref::unary(kind, input(args, 0)));
}

template <ref::BinaryKind Kind> void runBinary(const KernelArgs &args) {
  if (allF32(args)) {
    cpu::binaryF32(Kind, args.inputs[0], args.inputs[1], args.outputs[0]);
    return;
  }
  output(args, 0, ref::binary(Kind, input(args, 0), input(args, 1)));
}

/// Whether any output shares bytes with any input: the byte-moving kernels
/// then go through the reference, which reads everything before it writes.
bool outputsOverlapInputs(const KernelArgs &args) {
  for (const TensorView &out : args.outputs)
    for (const TensorView &in : args.inputs)
      if (out.overlaps(in))
        return true;
  return false;
}

/// add, sub, mul, div: direct loops in f32, the reference otherwise.
template <ref::BinaryKind Kind, cpu::ArithKind Direct>
void runArithmetic(const KernelArgs &args) {
  if (allF32(args)) {
    cpu::arithmeticF32(Direct, args.inputs[0], args.inputs[1], args.outputs[0]);
    return;
  }
  runBinary<Kind>(args);
}

void runCompare(const KernelArgs &args) {
  if (cpu::compareDirect(compareKind(args), args.inputs[0], args.inputs[1],
                         args.outputs[0]))
    return;
  output(args, 0,
         ref::compare(compareKind(args), input(args, 0), input(args, 1)));
}

void runSelect(const KernelArgs &args) {
  if (cpu::selectDirect(args.inputs[0], args.inputs[1], args.inputs[2],
                        args.outputs[0]))
    return;
  output(args, 0, ref::select(input(args, 0), input(args, 1), input(args, 2)));
}

void runCast(const KernelArgs &args) {
  if (cpu::castDirect(args.inputs[0], args.outputs[0]))
    return;
  output(args, 0, ref::cast(input(args, 0), args.outputs[0].dtype));
}

/// A matmul whose right operand is a constant 2-D weight runs from a copy
/// the GEMM library repacked into its own layout (cpu::prepareMatmulF32).
PreparedKernel prepareMatmul(const KernelArgs &args,
                             const PrepareInputs &inputs) {
  PreparedKernel prepared;
  if (!allF32(args) || !inputs.constant[1] || !inputs.shared)
    return prepared;
  KernelAttrs attrs = args.attrs();
  prepared.state = cpu::prepareMatmulF32(
      args.inputs[0], args.inputs[1], attrs.getBool("transpose_lhs"),
      attrs.getBool("transpose_rhs"), args.outputs[0], matmulEpilogue(args),
      *inputs.shared,
      inputs.soleReader[1] && inputs.release ? &inputs.release : nullptr);
  if (prepared.state) {
    prepared.copied.assign(args.inputs.size(), false);
    prepared.copied[1] = true;
  }
  return prepared;
}

void runMatmul(const KernelArgs &args) {
  if (args.prepared) {
    cpu::runPreparedMatmulF32(args.prepared);
    return;
  }
  KernelAttrs attrs = args.attrs();
  bool transposeA = attrs.getBool("transpose_lhs");
  bool transposeB = attrs.getBool("transpose_rhs");
  cpu::MatmulEpilogue epilogue = matmulEpilogue(args);
  if (allF32(args)) {
    cpu::matmulF32(args.inputs[0], args.inputs[1], transposeA, transposeB,
                   args.outputs[0], epilogue);
    return;
  }
  // bf16, f16: each stage rounded to the type, as the unfused ops are.
  ref::Tensor y =
      ref::matmul(input(args, 0), input(args, 1), transposeA, transposeB);
  if (epilogue.bias)
    y = ref::binary(ref::BinaryKind::Add, y, input(args, 2));
  if (epilogue.activation)
    y = ref::unary(*epilogue.activation, y);
  if (epilogue.addend)
    y = ref::binary(ref::BinaryKind::Add, y,
                    input(args, args.inputs.size() - 1));
  output(args, 0, y);
}

void runGroupedMatmul(const KernelArgs &args) {
  bool transposed = args.attrs().getBool("transpose_rhs");
  if (allF32(args)) {
    cpu::groupedMatmulF32(args.inputs[0], args.inputs[1], transposed,
                          args.outputs[0]);
    return;
  }
  output(args, 0,
         ref::groupedMatmul(input(args, 0), input(args, 1), transposed));
}

template <ref::ReduceKind Kind> void runReduce(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  // (max over no element is the reference's error)
  if (allF32(args) && !(Kind == ref::ReduceKind::Max &&
                        args.inputs[0].numElements() == 0)) {
    cpu::reduceF32(Kind, args.inputs[0], attrs.getInts("dims"),
                   args.outputs[0]);
    return;
  }
  output(args, 0,
         ref::reduce(Kind, input(args, 0), attrs.getInts("dims"),
                     attrs.getBool("keep_dims")));
}

void runSoftmax(const KernelArgs &args) {
  int64_t dim = args.attrs().getInt("dim");
  if (allF32(args)) {
    cpu::softmaxF32(args.inputs[0], dim, args.outputs[0]);
    return;
  }
  output(args, 0, ref::softmax(input(args, 0), dim));
}

void runLayerNorm(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  int64_t axis = attrs.getInt("axis");
  double epsilon = attrs.getFloat("epsilon");
  bool withBeta = args.inputs.size() == 3;
  if (allF32(args)) {
    cpu::layerNormF32(args.inputs[0], args.inputs[1],
                      withBeta ? &args.inputs[2] : nullptr, axis, epsilon,
                      args.outputs[0]);
    return;
  }
  ref::Tensor beta = withBeta ? input(args, 2) : ref::Tensor();
  output(args, 0,
         ref::layerNorm(input(args, 0), input(args, 1),
                        withBeta ? &beta : nullptr, axis, epsilon));
}

void runRmsNorm(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  int64_t axis = attrs.getInt("axis");
  double epsilon = attrs.getFloat("epsilon");
  if (allF32(args)) {
    cpu::rmsNormF32(args.inputs[0], args.inputs[1], axis, epsilon,
                    args.outputs[0]);
    return;
  }
  output(args, 0, ref::rmsNorm(input(args, 0), input(args, 1), axis, epsilon));
}

/// The steps of an `elementwise` kernel (a chain braid-to-exec fused):
/// `ops` names one op per step, comma-separated; `operands` holds two
/// registers per step, the second -1 for a unary op. Registers 0..L-1 are
/// the kernel's inputs, L + s step s's result; a step reads only inputs and
/// earlier steps, and the last step's result is the output.
std::vector<cpu::ChainStep> parseChainSteps(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  const std::string &ops = attrs.getString("ops");
  std::vector<int64_t> operands = attrs.getInts("operands");
  using A = cpu::ArithKind;
  static const std::pair<const char *, A> ariths[] = {
      {"add", A::Add}, {"sub", A::Sub}, {"mul", A::Mul}, {"div", A::Div}};
  std::vector<cpu::ChainStep> steps;
  int64_t numInputs = static_cast<int64_t>(args.inputs.size());
  size_t from = 0;
  while (from <= ops.size()) {
    size_t comma = std::min(ops.find(',', from), ops.size());
    std::string name = ops.substr(from, comma - from);
    from = comma + 1;
    cpu::ChainStep step;
    step.unary = unaryNamed(name);
    bool known = step.unary.has_value();
    for (const auto &[n, kind] : ariths)
      if (name == n)
        step.arith = kind, known = true;
    if (!known)
      fail("ops: step " + std::to_string(steps.size()) + " is '" + name +
           "', not an elementwise op the chain runs (neg, exp, log, sqrt, "
           "rsqrt, tanh, erf, sigmoid, silu, relu, gelu, gelu_tanh, add, "
           "sub, mul, div)");
    size_t index = steps.size();
    if (operands.size() < 2 * index + 2)
      fail("operands: " + std::to_string(operands.size()) + " registers for " +
           std::to_string(index + 1) + "+ steps (two per step)");
    step.a = operands[2 * index];
    step.b = operands[2 * index + 1];
    int64_t limit = numInputs + static_cast<int64_t>(index);
    auto valid = [&](int64_t r) { return r >= 0 && r < limit; };
    if (!valid(step.a) || (step.unary ? step.b != -1 : !valid(step.b)))
      fail("operands of step " + std::to_string(index) + " (" + name +
           "): " + std::to_string(step.a) + ", " + std::to_string(step.b) +
           "; registers 0.." + std::to_string(limit - 1) +
           " are the inputs and earlier steps" +
           (step.unary ? ", and a unary op's second is -1" : ""));
    steps.push_back(step);
  }
  if (steps.size() > static_cast<size_t>(kMaxChainSteps))
    fail("ops: " + std::to_string(steps.size()) + " steps, more than the " +
         std::to_string(kMaxChainSteps) + " a chain may have");
  if (operands.size() != 2 * steps.size())
    fail("operands: " + std::to_string(operands.size()) + " registers for " +
         std::to_string(steps.size()) + " steps (two per step)");
  return steps;
}

void checkElementwiseChain(const KernelArgs &args) {
  parseChainSteps(args);
  expectFloat(args.outputs[0], "output");
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    std::string what = "input " + std::to_string(i);
    expectDType(args.inputs[i], args.outputs[0].dtype, what);
    if (!broadcastsTo(args.inputs[i].shape, args.outputs[0].shape))
      fail(what + " " + describe(args.inputs[i]) +
           " does not broadcast to the output " + describe(args.outputs[0]));
  }
}

void runElementwiseChain(const KernelArgs &args) {
  std::vector<cpu::ChainStep> steps = parseChainSteps(args);
  const TensorView &out = args.outputs[0];
  if (out.dtype == DType::F32) {
    cpu::elementwiseChainF32(steps, args.inputs, out);
    return;
  }
  // bf16, f16: step by step as the unfused kernels compute them (each
  // result rounded to the type), so the chain gives their values.
  static const ref::BinaryKind binaries[] = {
      ref::BinaryKind::Add, ref::BinaryKind::Sub, ref::BinaryKind::Mul,
      ref::BinaryKind::Div};
  std::vector<ref::Tensor> registers;
  for (size_t i = 0; i < args.inputs.size(); ++i)
    registers.push_back(input(args, i));
  for (const cpu::ChainStep &step : steps)
    registers.push_back(
        step.unary ? ref::unary(*step.unary, registers[step.a])
                   : ref::binary(binaries[static_cast<int>(step.arith)],
                                 registers[step.a], registers[step.b]));
  const ref::Tensor &last = registers.back();
  output(args, 0,
         last.shape == out.shape ? last : ref::broadcastTo(last, out.shape));
}

void runRotary(const KernelArgs &args) {
  bool interleaved = args.attrs().getBool("interleaved");
  if (allF32(args) &&
      cpu::rotaryF32(args.inputs[0], args.inputs[1], args.inputs[2],
                     interleaved, args.outputs[0]))
    return;
  output(args, 0,
         ref::rotary(input(args, 0), input(args, 1), input(args, 2),
                     args.attrs().getBool("interleaved")));
}

void runGather(const KernelArgs &args) {
  if (!outputsOverlapInputs(args)) {
    cpu::gatherBytes(args.inputs[0], args.inputs[1],
                     args.attrs().getInt("axis"), args.outputs[0]);
    return;
  }
  output(
      args, 0,
      ref::gather(input(args, 0), input(args, 1), args.attrs().getInt("axis")));
}

void runScatterAdd(const KernelArgs &args) {
  int64_t axis = args.attrs().getInt("axis");
  if (args.inputs[0].dtype == DType::F32) {
    cpu::scatterAddF32(args.inputs[0], args.inputs[1], axis, args.outputs[0]);
    return;
  }
  output(args, 0,
         ref::scatterAdd(input(args, 0), input(args, 1), axis,
                         args.outputs[0].shape));
}

/// reshape and copy: the bytes stay as they are.
void runCopyBytes(const KernelArgs &args) {
  if (args.outputs[0].data != args.inputs[0].data)
    std::memmove(args.outputs[0].data, args.inputs[0].data,
                 args.inputs[0].numBytes());
}

void runTranspose(const KernelArgs &args) {
  std::vector<int64_t> permutation = args.attrs().getInts("permutation");
  if (!outputsOverlapInputs(args)) {
    cpu::transposeBytes(args.inputs[0], permutation, args.outputs[0]);
    return;
  }
  output(args, 0, ref::transpose(input(args, 0), permutation));
}

void runSlice(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  std::vector<int64_t> offsets = attrs.getInts("static_offsets");
  size_t next = 0;
  for (int64_t &offset : offsets)
    if (offset == kDynamic)
      offset = args.indices.at(next++);
  std::vector<int64_t> sizes = attrs.getInts("static_sizes");
  std::vector<int64_t> strides = attrs.getInts("static_strides");
  // Offsets computed at run time are checked here; out of range, the
  // reference reports them.
  const TensorView &x = args.inputs[0];
  bool inside = offsets.size() == x.shape.size() &&
                sizes.size() == x.shape.size() &&
                strides.size() == x.shape.size();
  for (size_t d = 0; inside && d < offsets.size(); ++d)
    inside = sizes[d] == 0 ||
             (offsets[d] >= 0 && strides[d] >= 1 &&
              offsets[d] + (sizes[d] - 1) * strides[d] < x.shape[d]);
  if (inside && !outputsOverlapInputs(args)) {
    cpu::sliceBytes(x, offsets, strides, args.outputs[0]);
    return;
  }
  output(args, 0, ref::slice(input(args, 0), offsets, sizes, strides));
}

void runConcat(const KernelArgs &args) {
  if (!outputsOverlapInputs(args)) {
    cpu::concatBytes(args.inputs, args.attrs().getInt("dim"), args.outputs[0]);
    return;
  }
  std::vector<ref::Tensor> inputs;
  for (size_t i = 0; i < args.inputs.size(); ++i)
    inputs.push_back(input(args, i));
  output(args, 0, ref::concat(inputs, args.attrs().getInt("dim")));
}

void runSplit(const KernelArgs &args) {
  int64_t dim = args.attrs().getInt("dim");
  if (!outputsOverlapInputs(args)) {
    cpu::splitBytes(args.inputs[0], dim, args.outputs);
    return;
  }
  std::vector<int64_t> sizes;
  for (const TensorView &out : args.outputs)
    sizes.push_back(out.shape[dim]);
  std::vector<ref::Tensor> pieces = ref::split(input(args, 0), dim, sizes);
  for (size_t i = 0; i < pieces.size(); ++i)
    output(args, i, pieces[i]);
}

void runBroadcastTo(const KernelArgs &args) {
  if (!outputsOverlapInputs(args)) {
    cpu::broadcastBytes(args.inputs[0], args.outputs[0]);
    return;
  }
  output(args, 0, ref::broadcastTo(input(args, 0), args.outputs[0].shape));
}

ref::AttentionResult attention(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  std::optional<int64_t> offset;
  if (!args.indices.empty())
    offset = args.indices[0];
  ref::Tensor mask = args.inputs.size() == 4 ? input(args, 3) : ref::Tensor();
  return ref::attention(input(args, 0), input(args, 1), input(args, 2),
                        args.inputs.size() == 4 ? &mask : nullptr,
                        attrs.getBool("causal"), offset,
                        attrs.getFloat("scale"));
}

void runAttention(const KernelArgs &args) {
  const std::vector<TensorView> &in = args.inputs;
  bool direct = in[0].dtype == DType::F32 && in[1].dtype == DType::F32 &&
                in[2].dtype == DType::F32 &&
                args.outputs[0].dtype == DType::F32 &&
                (in.size() < 4 || in[3].dtype == DType::F32 ||
                 in[3].dtype == DType::I1);
  if (direct) {
    KernelAttrs attrs = args.attrs();
    int64_t offset = args.indices.empty()
                         ? in[1].shape[2] - in[0].shape[2]
                         : args.indices[0];
    cpu::attentionF32(in[0], in[1], in[2], in.size() == 4 ? &in[3] : nullptr,
                      attrs.getBool("causal"), offset, attrs.getFloat("scale"),
                      args.outputs[0]);
    return;
  }
  output(args, 0, attention(args).out);
}

/// Whether a partial attention's boolean mask hides every key from every
/// query: Ring Attention's blocks in a query block's future. Such a block
/// is skipped: zero output, log-sum-exp -inf (what the merge ignores).
bool maskHidesAll(const KernelArgs &args) {
  if (!args.attrs().getBool("has_mask") || args.inputs.size() < 4 ||
      args.inputs[3].dtype != DType::I1)
    return false;
  const TensorView &mask = args.inputs[3];
  const auto *bits = mask.as<const uint8_t>();
  return std::all_of(bits, bits + mask.numElements(),
                     [](uint8_t b) { return b == 0; });
}

void runAttentionPartial(const KernelArgs &args) {
  if (maskHidesAll(args) && args.outputs[1].dtype == DType::F32) {
    std::memset(args.outputs[0].data, 0, args.outputs[0].numBytes());
    float *lse = args.outputs[1].as<float>();
    std::fill(lse, lse + args.outputs[1].numElements(),
              -std::numeric_limits<float>::infinity());
    return;
  }
  ref::AttentionResult result = attention(args);
  output(args, 0, result.out);
  output(args, 1, result.lse);
}

void runAttentionMerge(const KernelArgs &args) {
  size_t n = args.inputs.size() / 2;
  std::vector<ref::Tensor> outs, lses;
  for (size_t i = 0; i < n; ++i) {
    outs.push_back(input(args, i));
    lses.push_back(input(args, n + i));
  }
  ref::AttentionResult result = ref::attentionMerge(outs, lses);
  output(args, 0, result.out);
  output(args, 1, result.lse);
}

void runRouterTopK(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  ref::RouterResult result = ref::routerTopK(input(args, 0), attrs.getInt("k"),
                                             attrs.getBool("normalize"));
  output(args, 0, result.weights);
  output(args, 1, result.experts);
}

void runMoeDispatch(const KernelArgs &args) {
  const Shape &shape = args.outputs[0].shape;
  output(args, 0,
         ref::moeDispatch(input(args, 0), input(args, 1), shape[0], shape[1]));
}

void runMoeCombine(const KernelArgs &args) {
  output(args, 0,
         ref::moeCombine(input(args, 0), input(args, 1), input(args, 2)));
}

void runCrossEntropy(const KernelArgs &args) {
  output(
      args, 0,
      ref::crossEntropy(input(args, 0), input(args, 1), lossReduction(args)));
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

KernelRegistry buildCpuKernels() {
  KernelRegistry registry;
  auto add = [&](std::string op, int minIn, int maxIn, int minOut, int maxOut,
                 std::vector<AttrSpec> attrs, KernelCheckFn check,
                 KernelRunFn run, int maxIndices = 0) {
    KernelInfo info;
    info.op = std::move(op);
    info.minInputs = minIn;
    info.maxInputs = maxIn;
    info.minOutputs = minOut;
    info.maxOutputs = maxOut;
    info.maxIndices = maxIndices;
    info.attrs = std::move(attrs);
    info.check = check;
    info.run = run;
    registry.add(std::move(info));
  };
  using K = AttrKind;
  using U = ref::UnaryKind;
  using B = ref::BinaryKind;

  add("neg", 1, 1, 1, 1, {}, checkUnaryAny, runUnary<U::Neg>);
  add("exp", 1, 1, 1, 1, {}, checkUnaryFloat, runUnary<U::Exp>);
  add("log", 1, 1, 1, 1, {}, checkUnaryFloat, runUnary<U::Log>);
  add("sqrt", 1, 1, 1, 1, {}, checkUnaryFloat, runUnary<U::Sqrt>);
  add("rsqrt", 1, 1, 1, 1, {}, checkUnaryFloat, runUnary<U::Rsqrt>);
  add("tanh", 1, 1, 1, 1, {}, checkUnaryFloat, runUnary<U::Tanh>);
  add("erf", 1, 1, 1, 1, {}, checkUnaryFloat, runUnary<U::Erf>);
  add("sigmoid", 1, 1, 1, 1, {}, checkUnaryFloat, runUnary<U::Sigmoid>);
  add("silu", 1, 1, 1, 1, {}, checkUnaryFloat, runUnary<U::Silu>);
  add("relu", 1, 1, 1, 1, {}, checkUnaryAny, runUnary<U::Relu>);
  add("gelu", 1, 1, 1, 1, {{"tanh", K::Bool}}, checkUnaryFloat, runGelu);

  add("add", 2, 2, 1, 1, {}, checkBinary,
      runArithmetic<B::Add, cpu::ArithKind::Add>);
  add("sub", 2, 2, 1, 1, {}, checkBinary,
      runArithmetic<B::Sub, cpu::ArithKind::Sub>);
  add("mul", 2, 2, 1, 1, {}, checkBinary,
      runArithmetic<B::Mul, cpu::ArithKind::Mul>);
  add("div", 2, 2, 1, 1, {}, checkBinary,
      runArithmetic<B::Div, cpu::ArithKind::Div>);
  add("pow", 2, 2, 1, 1, {}, checkBinary, runBinary<B::Pow>);
  add("max", 2, 2, 1, 1, {}, checkBinary, runBinary<B::Max>);
  add("min", 2, 2, 1, 1, {}, checkBinary, runBinary<B::Min>);
  add("compare", 2, 2, 1, 1, {{"kind", K::String, true}}, checkCompare,
      runCompare);
  add("select", 3, 3, 1, 1, {}, checkSelect, runSelect);
  add("cast", 1, 1, 1, 1, {}, checkCast, runCast);

  add("matmul", 2, 4, 1, 1,
      {{"transpose_lhs", K::Bool},
       {"transpose_rhs", K::Bool},
       {"has_bias", K::Bool},
       {"has_addend", K::Bool},
       {"activation", K::String}},
      checkMatmul, runMatmul);
  registry.setPrepare("matmul", prepareMatmul);
  add("grouped_matmul", 2, 2, 1, 1, {{"transpose_rhs", K::Bool}},
      checkGroupedMatmul, runGroupedMatmul);
  std::vector<AttrSpec> reduceAttrs = {{"dims", K::Ints, true},
                                       {"keep_dims", K::Bool}};
  add("reduce_sum", 1, 1, 1, 1, reduceAttrs, checkReduce,
      runReduce<ref::ReduceKind::Sum>);
  add("reduce_mean", 1, 1, 1, 1, reduceAttrs, checkReduce,
      runReduce<ref::ReduceKind::Mean>);
  add("reduce_max", 1, 1, 1, 1, reduceAttrs, checkReduce,
      runReduce<ref::ReduceKind::Max>);
  add("softmax", 1, 1, 1, 1, {{"dim", K::Int, true}}, checkSoftmax, runSoftmax);
  std::vector<AttrSpec> normAttrs = {{"axis", K::Int, true},
                                     {"epsilon", K::Float, true}};
  add("layer_norm", 2, 3, 1, 1, normAttrs, checkNorm, runLayerNorm);
  add("rms_norm", 2, 2, 1, 1, normAttrs, checkNorm, runRmsNorm);
  add("rotary", 3, 3, 1, 1, {{"interleaved", K::Bool}}, checkRotary, runRotary);
  add("elementwise", 1, kMaxChainInputs, 1, 1,
      {{"ops", K::String, true}, {"operands", K::Ints, true}},
      checkElementwiseChain, runElementwiseChain);

  add("gather", 2, 2, 1, 1, {{"axis", K::Int, true}}, checkGather, runGather);
  add("scatter_add", 2, 2, 1, 1, {{"axis", K::Int, true}}, checkScatterAdd,
      runScatterAdd);
  add("reshape", 1, 1, 1, 1, {}, checkReshape, runCopyBytes);
  // Not a braid op: a buffer-to-buffer copy that bufferization may need.
  add("copy", 1, 1, 1, 1, {}, checkReshape, runCopyBytes);
  add("transpose", 1, 1, 1, 1, {{"permutation", K::Ints, true}}, checkTranspose,
      runTranspose);
  add("slice", 1, 1, 1, 1,
      {{"static_offsets", K::Ints, true},
       {"static_sizes", K::Ints, true},
       {"static_strides", K::Ints, true}},
      checkSlice, runSlice, /*maxIndices=*/-1);
  add("concat", 1, -1, 1, 1, {{"dim", K::Int, true}}, checkConcat, runConcat);
  add("split", 1, 1, 1, -1, {{"dim", K::Int, true}}, checkSplit, runSplit);
  add("broadcast_to", 1, 1, 1, 1, {}, checkBroadcastTo, runBroadcastTo);

  std::vector<AttrSpec> attentionAttrs = {
      {"causal", K::Bool}, {"scale", K::Float, true}, {"has_mask", K::Bool}};
  add("attention", 3, 4, 1, 1, attentionAttrs, checkAttention, runAttention,
      /*maxIndices=*/1);
  add("attention_partial", 3, 4, 2, 2, attentionAttrs, checkAttention,
      runAttentionPartial, /*maxIndices=*/1);
  add("attention_merge", 2, -1, 2, 2, {}, checkAttentionMerge,
      runAttentionMerge);

  add("router_topk", 1, 1, 2, 2, {{"k", K::Int, true}, {"normalize", K::Bool}},
      checkRouterTopK, runRouterTopK);
  add("moe_dispatch", 2, 2, 1, 1, {}, checkMoeDispatch, runMoeDispatch);
  add("moe_combine", 3, 3, 1, 1, {}, checkMoeCombine, runMoeCombine);
  add("cross_entropy", 2, 2, 1, 1, {{"reduction", K::String, true}},
      checkCrossEntropy, runCrossEntropy);
  return registry;
}
} // namespace

const KernelRegistry &cpuKernels() {
  static const KernelRegistry registry = buildCpuKernels();
  return registry;
}

std::vector<cpu::ChainStep> cpu::chainSteps(const KernelArgs &args) {
  return parseChainSteps(args);
}

std::optional<ref::UnaryKind> cpu::unaryKindNamed(const std::string &name) {
  return unaryNamed(name);
}

} // namespace braid::rt
