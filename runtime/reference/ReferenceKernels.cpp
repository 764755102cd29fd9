//===- ReferenceKernels.cpp - straightforward kernels for every braid op --===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Each kernel validates its operands as the op's verifier does, computes in
// double (or int64) with one plain loop nest, and rounds once at the end.
// Dimensions are never negative here: as in the dialect, a dimension or axis
// attribute lies in [0, rank).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Shape.h"
#include "runtime/reference/ReferenceKernels.h"

#include <utility>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace braid::rt::ref {

namespace {

using ::braid::rt::Shape;
using ::braid::rt::broadcastShapes;
using ::braid::rt::broadcastsTo;

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Formats a shape as `[2, 8, 768]` for messages.
std::string shapeString(const Shape &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d)
      text += ", ";
    text += std::to_string(shape[d]);
  }
  return text + "]";
}

std::string dtypeName(DType dtype) { return std::string(toString(dtype)); }

[[noreturn]] void fail(const std::string &kernel, const std::string &problem) {
  throw std::invalid_argument(kernel + ": " + problem);
}

bool isFloatType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

bool isIndexType(DType dtype) {
  return dtype == DType::I64 || dtype == DType::I32;
}

/// Number of elements of `shape`; throws for a negative size.
int64_t productOf(const std::string &kernel, const Shape &shape) {
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0)
      fail(kernel, "negative dimension in shape " + shapeString(shape));
    count *= size;
  }
  return count;
}

/// Checks that `t` is well formed: non-negative shape and storage of the
/// right kind and size.
void checkTensor(const std::string &kernel, const std::string &name,
                 const Tensor &t) {
  int64_t count = productOf(kernel, t.shape);
  size_t held = t.isFloat() ? t.f.size() : t.i.size();
  if ((int64_t)held != count)
    fail(kernel, name + " of shape " + shapeString(t.shape) + " holds " +
                     std::to_string(held) + " values, expected " +
                     std::to_string(count));
}

void checkFloat(const std::string &kernel, const std::string &name,
                const Tensor &t) {
  if (!t.isFloat())
    fail(kernel,
         name + " must be a floating tensor, got " + dtypeName(t.dtype));
}

/// Checks that `t` is a well-formed i64 or i32 tensor.
void checkIndexTensor(const std::string &kernel, const std::string &name,
                      const Tensor &t) {
  checkTensor(kernel, name, t);
  if (!isIndexType(t.dtype))
    fail(kernel, name + " must be i64 or i32, got " + dtypeName(t.dtype));
}

void checkSameDType(const std::string &kernel, const std::string &nameA,
                    const Tensor &a, const std::string &nameB,
                    const Tensor &b) {
  if (a.dtype != b.dtype)
    fail(kernel, nameA + " and " + nameB + " have different element types: " +
                     dtypeName(a.dtype) + " and " + dtypeName(b.dtype));
}

void checkDim(const std::string &kernel, const std::string &what, int64_t dim,
              int64_t rank) {
  if (dim < 0 || dim >= rank)
    fail(kernel, what + " " + std::to_string(dim) +
                     " is out of range for rank " + std::to_string(rank));
}

/// Row-major strides of `shape`.
Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Multi-index of the row-major position `linear` in `shape`.
Shape unravel(int64_t linear, const Shape &shape) {
  Shape index(shape.size());
  for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
    index[d] = linear % shape[d];
    linear /= shape[d];
  }
  return index;
}

/// For every element of `target` (row-major), the position of the element of
/// a `source`-shaped tensor that numpy broadcasting reads there. `source`
/// must broadcast to `target`.
Shape broadcastSources(const Shape &source, const Shape &target) {
  int64_t count = 1;
  for (int64_t size : target)
    count *= size;
  Shape sourceStrides = stridesOf(source);
  size_t offset = target.size() - source.size();
  Shape positions(count);
  for (int64_t k = 0; k < count; ++k) {
    Shape index = unravel(k, target);
    int64_t position = 0;
    for (size_t d = 0; d < source.size(); ++d)
      if (source[d] != 1)
        position += index[d + offset] * sourceStrides[d];
    positions[k] = position;
  }
  return positions;
}

/// Stores an int64 as a `dtype` element would hold it: i32 wraps, i1 is
/// `!= 0`.
int64_t storeInt(DType dtype, int64_t value) {
  if (dtype == DType::I32)
    return (int64_t)(int32_t)(uint32_t)(uint64_t)value;
  if (dtype == DType::I1)
    return value != 0;
  return value;
}

/// Two's-complement wrapping arithmetic on int64.
int64_t wrapAdd(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
int64_t wrapSub(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}
int64_t wrapMul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

/// Set by PerturbedArithmetic: the state of its random generator.
thread_local uint64_t *perturbation = nullptr;

/// A tensor of `dtype` and `shape` from unrounded doubles (floating dtype) or
/// int64 values (integer dtype, stored as the element type holds them).
Tensor makeFloat(DType dtype, Shape shape, std::vector<double> values) {
  for (double &value : values)
    value = roundTo(dtype, value);
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.f = std::move(values);
  return t;
}

Tensor makeInt(DType dtype, Shape shape, std::vector<int64_t> values) {
  for (int64_t &value : values)
    value = storeInt(dtype, value);
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.i = std::move(values);
  return t;
}

/// Copies element `si` of `src` to element `di` of `dst` (same dtype).
void copyElement(Tensor &dst, int64_t di, const Tensor &src, int64_t si) {
  if (src.isFloat())
    dst.f[di] = src.f[si];
  else
    dst.i[di] = src.i[si];
}

/// The row max, log-sum-exp and exp(x - max) weights of `scores`, counting
/// only entries with `kept` true. When nothing is kept or every kept entry is
/// -inf, lse is -inf and all weights are zero.
struct LogSumExp {
  double lse = -kInf;
  std::vector<double> weights;
  double denominator = 0;
};
LogSumExp logSumExp(const std::vector<double> &scores,
                    const std::vector<char> &kept) {
  LogSumExp result;
  result.weights.assign(scores.size(), 0.0);
  double maximum = -kInf;
  for (size_t j = 0; j < scores.size(); ++j)
    if (kept[j])
      maximum = std::max(maximum, scores[j]);
  if (maximum == -kInf)
    return result;
  for (size_t j = 0; j < scores.size(); ++j)
    if (kept[j]) {
      result.weights[j] = std::exp(scores[j] - maximum);
      result.denominator += result.weights[j];
    }
  result.lse = maximum + std::log(result.denominator);
  return result;
}

/// Rounds `value` to a binary floating format with `precision` significand
/// bits (the implicit one included) and exponents in [minExp, maxExp], ties
/// to even. Works on the double directly, so there is no double rounding
/// through float.
double roundToFormat(double value, int precision, int minExp, int maxExp) {
  if (!std::isfinite(value) || value == 0)
    return value;
  // Below minExp the spacing stays that of the smallest normal binade
  // (subnormals).
  int exponent = std::max(std::ilogb(value), minExp);
  double quantum = std::ldexp(1.0, exponent - (precision - 1));
  // Exact: dividing by a power of two only moves the exponent.
  double scaled = value / quantum;
  double floorScaled = std::floor(scaled);
  double fraction = scaled - floorScaled;
  double rounded = floorScaled;
  if (fraction > 0.5 || (fraction == 0.5 && std::fmod(floorScaled, 2.0) != 0))
    rounded += 1;
  double result = rounded * quantum;
  if (std::fabs(result) >= std::ldexp(1.0, maxExp + 1))
    return std::copysign(kInf, value);
  // Keep the sign of a result that rounds to zero.
  return result == 0 ? std::copysign(0.0, value) : result;
}

} // namespace

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

bool Tensor::isFloat() const { return isFloatType(dtype); }

int64_t Tensor::numElements() const {
  return productOf("Tensor::numElements", shape);
}

double Tensor::at(int64_t k) const {
  int64_t size = isFloat() ? (int64_t)f.size() : (int64_t)i.size();
  if (k < 0 || k >= size)
    fail("Tensor::at", "element " + std::to_string(k) +
                           " is out of range for " + std::to_string(size) +
                           " elements");
  return isFloat() ? f[k] : (double)i[k];
}

int64_t Tensor::intAt(int64_t k) const {
  if (isFloat())
    fail("Tensor::intAt",
         "a " + dtypeName(dtype) + " tensor holds floats; use at()");
  if (k < 0 || k >= (int64_t)i.size())
    fail("Tensor::intAt", "element " + std::to_string(k) +
                              " is out of range for " +
                              std::to_string(i.size()) + " elements");
  return i[k];
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  int64_t count = productOf("Tensor::zeros", shape);
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (isFloatType(dtype))
    t.f.assign(count, 0.0);
  else
    t.i.assign(count, 0);
  return t;
}

Tensor Tensor::ofFloats(DType dtype, std::vector<int64_t> shape,
                        std::vector<double> values) {
  if (!isFloatType(dtype))
    fail("Tensor::ofFloats", dtypeName(dtype) + " is not a floating type");
  int64_t count = productOf("Tensor::ofFloats", shape);
  if ((int64_t)values.size() != count)
    fail("Tensor::ofFloats", std::to_string(values.size()) +
                                 " values for shape " + shapeString(shape));
  // Values given (constants, inputs) are data, not a kernel's arithmetic:
  // PerturbedArithmetic leaves them alone (a pow's exponent 2 stays 2).
  uint64_t *saved = std::exchange(perturbation, nullptr);
  Tensor result = makeFloat(dtype, std::move(shape), std::move(values));
  perturbation = saved;
  return result;
}

Tensor Tensor::ofInts(DType dtype, std::vector<int64_t> shape,
                      std::vector<int64_t> values) {
  if (isFloatType(dtype))
    fail("Tensor::ofInts", dtypeName(dtype) + " is not an integer type");
  int64_t count = productOf("Tensor::ofInts", shape);
  if ((int64_t)values.size() != count)
    fail("Tensor::ofInts", std::to_string(values.size()) +
                               " values for shape " + shapeString(shape));
  for (int64_t value : values) {
    if (dtype == DType::I1 && value != 0 && value != 1)
      fail("Tensor::ofInts",
           "i1 value " + std::to_string(value) + " is not 0 or 1");
    if (dtype == DType::I32 && (value < std::numeric_limits<int32_t>::min() ||
                                value > std::numeric_limits<int32_t>::max()))
      fail("Tensor::ofInts",
           "value " + std::to_string(value) + " does not fit in i32");
  }
  return makeInt(dtype, std::move(shape), std::move(values));
}

namespace {
/// Set by ExactArithmetic: floats are not rounded to their element type.
thread_local bool exactArithmetic = false;

/// A uniform value in [-1, 1) from the splitmix64 sequence at `state`.
double nextUnit(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-52 - 1.0;
}
} // namespace

ExactArithmetic::ExactArithmetic() : previous(exactArithmetic) {
  exactArithmetic = true;
}
ExactArithmetic::~ExactArithmetic() { exactArithmetic = previous; }

PerturbedArithmetic::PerturbedArithmetic(uint64_t seed)
    : state(seed), previous(perturbation) {
  perturbation = &state;
}
PerturbedArithmetic::~PerturbedArithmetic() { perturbation = previous; }

double roundTo(DType dtype, double value) {
  if (exactArithmetic && isFloatType(dtype))
    return value;
  if (perturbation && isFloatType(dtype)) {
    // One unit in the last place, relative: 2^-23 for f32, 2^-10 for f16,
    // 2^-7 for bf16. Not past the largest finite value (a mask's -FLT_MAX
    // stays finite).
    int bits = dtype == DType::F32 ? 23 : dtype == DType::F16 ? 10 : 7;
    double moved = value * (1.0 + std::ldexp(nextUnit(*perturbation), -bits));
    uint64_t *saved = std::exchange(perturbation, nullptr);
    double rounded = roundTo(dtype, moved);
    perturbation = saved;
    if (std::isfinite(rounded) || !std::isfinite(value))
      return rounded;
  }
  switch (dtype) {
  case DType::F32:
    return static_cast<float>(value);
  case DType::F16:
    return roundToFormat(value, /*precision=*/11, /*minExp=*/-14,
                         /*maxExp=*/15);
  case DType::BF16:
    return roundToFormat(value, /*precision=*/8, /*minExp=*/-126,
                         /*maxExp=*/127);
  default:
    fail("roundTo", dtypeName(dtype) + " is not a floating type");
  }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

namespace {
const char *unaryName(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Neg:
    return "neg";
  case UnaryKind::Exp:
    return "exp";
  case UnaryKind::Log:
    return "log";
  case UnaryKind::Sqrt:
    return "sqrt";
  case UnaryKind::Rsqrt:
    return "rsqrt";
  case UnaryKind::Tanh:
    return "tanh";
  case UnaryKind::Erf:
    return "erf";
  case UnaryKind::Sigmoid:
    return "sigmoid";
  case UnaryKind::Silu:
    return "silu";
  case UnaryKind::Relu:
    return "relu";
  case UnaryKind::Gelu:
    return "gelu";
  case UnaryKind::GeluTanh:
    return "gelu(tanh)";
  }
  return "unary";
}

} // namespace

Tensor unary(UnaryKind kind, const Tensor &x) {
  std::string kernel = std::string("unary ") + unaryName(kind);
  checkTensor(kernel, "input", x);
  if (x.isFloat()) {
    std::vector<double> values(x.f.size());
    for (size_t k = 0; k < values.size(); ++k)
      values[k] = applyUnary(kind, x.f[k]);
    return makeFloat(x.dtype, x.shape, std::move(values));
  }
  // Only neg and relu accept integers (and i1, where both are the identity
  // once stored as `!= 0`).
  if (kind != UnaryKind::Neg && kind != UnaryKind::Relu)
    fail(kernel, "needs a floating tensor, got " + dtypeName(x.dtype));
  std::vector<int64_t> values(x.i.size());
  for (size_t k = 0; k < values.size(); ++k)
    values[k] = kind == UnaryKind::Neg ? wrapSub(0, x.i[k])
                                       : std::max<int64_t>(x.i[k], 0);
  return makeInt(x.dtype, x.shape, std::move(values));
}

namespace {
const char *binaryName(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Add:
    return "add";
  case BinaryKind::Sub:
    return "sub";
  case BinaryKind::Mul:
    return "mul";
  case BinaryKind::Div:
    return "div";
  case BinaryKind::Pow:
    return "pow";
  case BinaryKind::Max:
    return "max";
  case BinaryKind::Min:
    return "min";
  }
  return "binary";
}

/// Integer `base ^ exponent`, wrapping; a negative exponent truncates
/// 1 / base^-exponent toward zero.
int64_t intPow(const std::string &kernel, int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 0)
      fail(kernel, "0 raised to a negative power");
    if (base == 1)
      return 1;
    if (base == -1)
      return exponent % 2 == 0 ? 1 : -1;
    return 0;
  }
  int64_t result = 1;
  for (; exponent > 0; exponent >>= 1) {
    if (exponent & 1)
      result = wrapMul(result, base);
    base = wrapMul(base, base);
  }
  return result;
}

int64_t applyIntBinary(const std::string &kernel, BinaryKind kind, int64_t a,
                       int64_t b) {
  switch (kind) {
  case BinaryKind::Add:
    return wrapAdd(a, b);
  case BinaryKind::Sub:
    return wrapSub(a, b);
  case BinaryKind::Mul:
    return wrapMul(a, b);
  case BinaryKind::Div:
    if (b == 0)
      fail(kernel, "integer division by zero");
    // Truncates toward zero; the one overflowing quotient wraps.
    if (a == std::numeric_limits<int64_t>::min() && b == -1)
      return a;
    return a / b;
  case BinaryKind::Pow:
    return intPow(kernel, a, b);
  case BinaryKind::Max:
    return std::max(a, b);
  case BinaryKind::Min:
    return std::min(a, b);
  }
  return a;
}

/// Broadcast shape of `a` and `b`, or an error naming `kernel`.
Shape broadcastOrFail(const std::string &kernel, const Tensor &a,
                      const Tensor &b) {
  std::optional<Shape> shape = broadcastShapes(a.shape, b.shape);
  if (!shape)
    fail(kernel, "shapes " + shapeString(a.shape) + " and " +
                     shapeString(b.shape) + " do not broadcast");
  return *shape;
}
} // namespace

Tensor binary(BinaryKind kind, const Tensor &a, const Tensor &b) {
  std::string kernel = std::string("binary ") + binaryName(kind);
  checkTensor(kernel, "lhs", a);
  checkTensor(kernel, "rhs", b);
  checkSameDType(kernel, "lhs", a, "rhs", b);
  Shape shape = broadcastOrFail(kernel, a, b);
  Shape fromA = broadcastSources(a.shape, shape);
  Shape fromB = broadcastSources(b.shape, shape);
  if (a.isFloat()) {
    std::vector<double> values(fromA.size());
    for (size_t k = 0; k < values.size(); ++k)
      values[k] = applyBinary(kind, a.f[fromA[k]], b.f[fromB[k]]);
    return makeFloat(a.dtype, shape, std::move(values));
  }
  // Integers compute in int64 and are stored as the element type holds
  // them (i32 wraps, i1 is `!= 0`).
  std::vector<int64_t> values(fromA.size());
  for (size_t k = 0; k < values.size(); ++k)
    values[k] = applyIntBinary(kernel, kind, a.i[fromA[k]], b.i[fromB[k]]);
  return makeInt(a.dtype, shape, std::move(values));
}

Tensor compare(CompareKind kind, const Tensor &a, const Tensor &b) {
  const std::string kernel = "compare";
  checkTensor(kernel, "lhs", a);
  checkTensor(kernel, "rhs", b);
  checkSameDType(kernel, "lhs", a, "rhs", b);
  Shape shape = broadcastOrFail(kernel, a, b);
  Shape fromA = broadcastSources(a.shape, shape);
  Shape fromB = broadcastSources(b.shape, shape);
  auto test = [kind](auto x, auto y) -> int64_t {
    switch (kind) {
    case CompareKind::EQ:
      return x == y;
    case CompareKind::NE:
      return x != y;
    case CompareKind::LT:
      return x < y;
    case CompareKind::LE:
      return x <= y;
    case CompareKind::GT:
      return x > y;
    case CompareKind::GE:
      return x >= y;
    }
    return 0;
  };
  std::vector<int64_t> values(fromA.size());
  for (size_t k = 0; k < values.size(); ++k)
    values[k] = a.isFloat() ? test(a.f[fromA[k]], b.f[fromB[k]])
                            : test(a.i[fromA[k]], b.i[fromB[k]]);
  return makeInt(DType::I1, shape, std::move(values));
}

Tensor select(const Tensor &condition, const Tensor &whenTrue,
              const Tensor &whenFalse) {
  const std::string kernel = "select";
  checkTensor(kernel, "condition", condition);
  checkTensor(kernel, "true value", whenTrue);
  checkTensor(kernel, "false value", whenFalse);
  if (condition.dtype != DType::I1)
    fail(kernel, "condition must be i1, got " + dtypeName(condition.dtype));
  checkSameDType(kernel, "true value", whenTrue, "false value", whenFalse);
  Shape valueShape = broadcastOrFail(kernel, whenTrue, whenFalse);
  std::optional<Shape> shape = broadcastShapes(condition.shape, valueShape);
  if (!shape)
    fail(kernel, "condition shape " + shapeString(condition.shape) +
                     " does not broadcast with value shape " +
                     shapeString(valueShape));
  Shape fromC = broadcastSources(condition.shape, *shape);
  Shape fromT = broadcastSources(whenTrue.shape, *shape);
  Shape fromF = broadcastSources(whenFalse.shape, *shape);
  Tensor result = Tensor::zeros(whenTrue.dtype, *shape);
  for (size_t k = 0; k < fromC.size(); ++k) {
    if (condition.i[fromC[k]])
      copyElement(result, k, whenTrue, fromT[k]);
    else
      copyElement(result, k, whenFalse, fromF[k]);
  }
  return result;
}

Tensor cast(const Tensor &x, DType to) {
  const std::string kernel = "cast";
  checkTensor(kernel, "input", x);
  int64_t count = x.numElements();
  if (isFloatType(to)) {
    std::vector<double> values(count);
    for (int64_t k = 0; k < count; ++k)
      values[k] = x.at(k);
    return makeFloat(to, x.shape, std::move(values));
  }
  std::vector<int64_t> values(count);
  for (int64_t k = 0; k < count; ++k) {
    if (!x.isFloat()) {
      // Integer to integer: i1 reads as 0/1, i32 keeps the low 32 bits.
      values[k] = x.i[k];
      continue;
    }
    double value = x.f[k];
    if (to == DType::I1) {
      values[k] = value != 0;
      continue;
    }
    double truncated = std::trunc(value);
    double low = to == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
    double high = to == DType::I32 ? 2147483648.0 : 9223372036854775808.0;
    if (!(truncated >= low && truncated < high))
      fail(kernel, "value " + std::to_string(value) + " is out of range for " +
                       dtypeName(to));
    values[k] = (int64_t)truncated;
  }
  return makeInt(to, x.shape, std::move(values));
}

//===----------------------------------------------------------------------===//
// Contractions, reductions, normalizations
//===----------------------------------------------------------------------===//

Tensor matmul(const Tensor &a, const Tensor &b, bool transposeA,
              bool transposeB) {
  const std::string kernel = "matmul";
  checkTensor(kernel, "lhs", a);
  checkTensor(kernel, "rhs", b);
  if (a.shape.size() < 2 || b.shape.size() < 2)
    fail(kernel, "operands must be at least 2-D, got " + shapeString(a.shape) +
                     " and " + shapeString(b.shape));
  checkSameDType(kernel, "lhs", a, "rhs", b);
  size_t rankA = a.shape.size(), rankB = b.shape.size();
  int64_t m = transposeA ? a.shape[rankA - 1] : a.shape[rankA - 2];
  int64_t kA = transposeA ? a.shape[rankA - 2] : a.shape[rankA - 1];
  int64_t kB = transposeB ? b.shape[rankB - 1] : b.shape[rankB - 2];
  int64_t n = transposeB ? b.shape[rankB - 2] : b.shape[rankB - 1];
  if (kA != kB)
    fail(kernel, "contraction sizes differ: lhs " + shapeString(a.shape) +
                     " has " + std::to_string(kA) + ", rhs " +
                     shapeString(b.shape) + " has " + std::to_string(kB));
  Shape batchA(a.shape.begin(), a.shape.end() - 2);
  Shape batchB(b.shape.begin(), b.shape.end() - 2);
  std::optional<Shape> batch = broadcastShapes(batchA, batchB);
  if (!batch)
    fail(kernel, "batch dimensions " + shapeString(batchA) + " and " +
                     shapeString(batchB) + " do not broadcast");
  Shape fromA = broadcastSources(batchA, *batch);
  Shape fromB = broadcastSources(batchB, *batch);
  int64_t k = kA;
  // a[p, q] of the stored (untransposed) matrix is at p * cols + q.
  auto aAt = [&](int64_t batchIndex, int64_t row, int64_t inner) {
    int64_t base = fromA[batchIndex] * m * k;
    return transposeA ? base + inner * m + row : base + row * k + inner;
  };
  auto bAt = [&](int64_t batchIndex, int64_t inner, int64_t col) {
    int64_t base = fromB[batchIndex] * k * n;
    return transposeB ? base + col * k + inner : base + inner * n + col;
  };
  Shape shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  int64_t batches = (int64_t)fromA.size();
  if (a.isFloat()) {
    std::vector<double> values(batches * m * n);
    for (int64_t bi = 0; bi < batches; ++bi)
      for (int64_t row = 0; row < m; ++row)
        for (int64_t col = 0; col < n; ++col) {
          double sum = 0;
          for (int64_t inner = 0; inner < k; ++inner)
            sum += a.f[aAt(bi, row, inner)] * b.f[bAt(bi, inner, col)];
          values[(bi * m + row) * n + col] = sum;
        }
    return makeFloat(a.dtype, shape, std::move(values));
  }
  std::vector<int64_t> values(batches * m * n);
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t row = 0; row < m; ++row)
      for (int64_t col = 0; col < n; ++col) {
        int64_t sum = 0;
        for (int64_t inner = 0; inner < k; ++inner)
          sum = wrapAdd(
              sum, wrapMul(a.i[aAt(bi, row, inner)], b.i[bAt(bi, inner, col)]));
        values[(bi * m + row) * n + col] = sum;
      }
  return makeInt(a.dtype, shape, std::move(values));
}

Tensor groupedMatmul(const Tensor &x, const Tensor &w, bool transposeW) {
  const std::string kernel = "grouped_matmul";
  checkTensor(kernel, "input", x);
  checkTensor(kernel, "weight", w);
  checkFloat(kernel, "input", x);
  checkSameDType(kernel, "input", x, "weight", w);
  if (x.shape.size() != 3 || w.shape.size() != 3)
    fail(kernel, "expects input [E, C, K] and weight [E, K, N], got " +
                     shapeString(x.shape) + " and " + shapeString(w.shape));
  int64_t experts = x.shape[0], rows = x.shape[1], k = x.shape[2];
  int64_t kW = transposeW ? w.shape[2] : w.shape[1];
  int64_t n = transposeW ? w.shape[1] : w.shape[2];
  if (w.shape[0] != experts)
    fail(kernel, "input has " + std::to_string(experts) +
                     " experts but weight has " + std::to_string(w.shape[0]));
  if (kW != k)
    fail(kernel, "contraction sizes differ: input " + shapeString(x.shape) +
                     " has " + std::to_string(k) + ", weight " +
                     shapeString(w.shape) + " has " + std::to_string(kW));
  std::vector<double> values(experts * rows * n);
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t c = 0; c < rows; ++c)
      for (int64_t col = 0; col < n; ++col) {
        double sum = 0;
        for (int64_t inner = 0; inner < k; ++inner) {
          int64_t wi = transposeW ? (e * n + col) * k + inner
                                  : (e * k + inner) * n + col;
          sum += x.f[(e * rows + c) * k + inner] * w.f[wi];
        }
        values[(e * rows + c) * n + col] = sum;
      }
  return makeFloat(x.dtype, {experts, rows, n}, std::move(values));
}

Tensor reduce(ReduceKind kind, const Tensor &x,
              const std::vector<int64_t> &dims, bool keepDims) {
  const std::string kernel = kind == ReduceKind::Sum    ? "reduce_sum"
                             : kind == ReduceKind::Mean ? "reduce_mean"
                                                        : "reduce_max";
  checkTensor(kernel, "input", x);
  int64_t rank = (int64_t)x.shape.size();
  std::vector<char> reduced(rank, 0);
  for (int64_t dim : dims) {
    checkDim(kernel, "reduced dimension", dim, rank);
    if (reduced[dim])
      fail(kernel, "dimension " + std::to_string(dim) + " is reduced twice");
    reduced[dim] = 1;
  }
  // The kept shape (reduced dimensions as 1) indexes the groups.
  Shape kept(x.shape);
  int64_t groupSize = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) {
      groupSize *= x.shape[d];
      kept[d] = 1;
    }
  Shape shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d] || keepDims)
      shape.push_back(kept[d]);
  int64_t groups = productOf(kernel, kept);
  if (kind == ReduceKind::Max && groupSize == 0 && groups > 0)
    fail(kernel, "max over an empty set of elements");
  Shape keptStrides = stridesOf(kept);
  // Group of every input element: its index with reduced dimensions at 0.
  auto groupOf = [&](int64_t linear) {
    Shape index = unravel(linear, x.shape);
    int64_t group = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d])
        group += index[d] * keptStrides[d];
    return group;
  };
  int64_t count = x.numElements();
  if (x.isFloat()) {
    std::vector<double> values(groups, kind == ReduceKind::Max ? -kInf : 0.0);
    for (int64_t k = 0; k < count; ++k) {
      double &target = values[groupOf(k)];
      target =
          kind == ReduceKind::Max ? std::max(target, x.f[k]) : target + x.f[k];
    }
    if (kind == ReduceKind::Mean)
      for (double &value : values)
        value /= (double)groupSize;
    return makeFloat(x.dtype, shape, std::move(values));
  }
  if (kind == ReduceKind::Mean && groupSize == 0 && groups > 0)
    fail(kernel, "integer mean over an empty set of elements");
  std::vector<int64_t> values(groups, kind == ReduceKind::Max
                                          ? std::numeric_limits<int64_t>::min()
                                          : 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t &target = values[groupOf(k)];
    target = kind == ReduceKind::Max ? std::max(target, x.i[k])
                                     : wrapAdd(target, x.i[k]);
  }
  // An integer mean truncates toward zero.
  if (kind == ReduceKind::Mean)
    for (int64_t &value : values)
      value /= groupSize;
  return makeInt(x.dtype, shape, std::move(values));
}

namespace {
/// Calls `fn(base, stride)` for every line of `shape` along `dim`: the line
/// holds elements base + j * stride for j in [0, shape[dim]).
template <typename Fn>
void forEachLine(const Shape &shape, int64_t dim, Fn fn) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < inner; ++r)
      fn(o * shape[dim] * inner + r, inner);
}
} // namespace

Tensor softmax(const Tensor &x, int64_t dim) {
  const std::string kernel = "softmax";
  checkTensor(kernel, "input", x);
  checkFloat(kernel, "input", x);
  checkDim(kernel, "dimension", dim, (int64_t)x.shape.size());
  int64_t size = x.shape[dim];
  std::vector<double> values(x.f.size());
  forEachLine(x.shape, dim, [&](int64_t base, int64_t stride) {
    double maximum = -kInf;
    for (int64_t j = 0; j < size; ++j)
      maximum = std::max(maximum, x.f[base + j * stride]);
    // exp(x - max) / sum(exp(x - max)), literally: a row of -inf gives NaN.
    double sum = 0;
    for (int64_t j = 0; j < size; ++j)
      sum += std::exp(x.f[base + j * stride] - maximum);
    for (int64_t j = 0; j < size; ++j)
      values[base + j * stride] =
          std::exp(x.f[base + j * stride] - maximum) / sum;
  });
  return makeFloat(x.dtype, x.shape, std::move(values));
}

namespace {
/// Checks a normalization's parameter: shaped like x's dims [axis, rank)
/// and of x's element type.
void checkNormParam(const std::string &kernel, const std::string &name,
                    const Tensor &x, const Tensor &param, int64_t axis) {
  checkTensor(kernel, name, param);
  Shape normalized(x.shape.begin() + axis, x.shape.end());
  if (param.shape != normalized)
    fail(kernel, name + " shape " + shapeString(param.shape) +
                     " must equal the normalized dimensions " +
                     shapeString(normalized));
  checkSameDType(kernel, "input", x, name, param);
}
} // namespace

Tensor layerNorm(const Tensor &x, const Tensor &gamma, const Tensor *beta,
                 int64_t axis, double epsilon) {
  const std::string kernel = "layer_norm";
  checkTensor(kernel, "input", x);
  checkFloat(kernel, "input", x);
  checkDim(kernel, "axis", axis, (int64_t)x.shape.size());
  checkNormParam(kernel, "gamma", x, gamma, axis);
  if (beta)
    checkNormParam(kernel, "beta", x, *beta, axis);
  int64_t size = gamma.numElements();
  int64_t rows = size == 0 ? 0 : x.numElements() / size;
  std::vector<double> values(x.f.size());
  for (int64_t row = 0; row < rows; ++row) {
    const double *in = x.f.data() + row * size;
    double mean = 0;
    for (int64_t j = 0; j < size; ++j)
      mean += in[j];
    mean /= (double)size;
    // Biased variance: divide by the count, not count - 1.
    double variance = 0;
    for (int64_t j = 0; j < size; ++j)
      variance += (in[j] - mean) * (in[j] - mean);
    variance /= (double)size;
    double inverse = 1.0 / std::sqrt(variance + epsilon);
    for (int64_t j = 0; j < size; ++j)
      values[row * size + j] =
          (in[j] - mean) * inverse * gamma.f[j] + (beta ? beta->f[j] : 0.0);
  }
  return makeFloat(x.dtype, x.shape, std::move(values));
}

Tensor rmsNorm(const Tensor &x, const Tensor &gamma, int64_t axis,
               double epsilon) {
  const std::string kernel = "rms_norm";
  checkTensor(kernel, "input", x);
  checkFloat(kernel, "input", x);
  checkDim(kernel, "axis", axis, (int64_t)x.shape.size());
  checkNormParam(kernel, "gamma", x, gamma, axis);
  int64_t size = gamma.numElements();
  int64_t rows = size == 0 ? 0 : x.numElements() / size;
  std::vector<double> values(x.f.size());
  for (int64_t row = 0; row < rows; ++row) {
    const double *in = x.f.data() + row * size;
    double meanSquare = 0;
    for (int64_t j = 0; j < size; ++j)
      meanSquare += in[j] * in[j];
    meanSquare /= (double)size;
    double inverse = 1.0 / std::sqrt(meanSquare + epsilon);
    for (int64_t j = 0; j < size; ++j)
      values[row * size + j] = in[j] * inverse * gamma.f[j];
  }
  return makeFloat(x.dtype, x.shape, std::move(values));
}

Tensor rotary(const Tensor &x, const Tensor &cos, const Tensor &sin,
              bool interleaved) {
  const std::string kernel = "rotary";
  checkTensor(kernel, "input", x);
  checkTensor(kernel, "cos", cos);
  checkTensor(kernel, "sin", sin);
  checkFloat(kernel, "input", x);
  if (x.shape.empty() || x.shape.back() % 2 != 0)
    fail(kernel, "last dimension must be even to rotate pairs, got " +
                     shapeString(x.shape));
  for (const auto *table : {&cos, &sin}) {
    std::string name = table == &cos ? "cos" : "sin";
    checkSameDType(kernel, "input", x, name, *table);
    if (!broadcastsTo(table->shape, x.shape) || table->shape.empty() ||
        table->shape.back() != x.shape.back())
      fail(kernel, name + " shape " + shapeString(table->shape) +
                       " must broadcast to the input shape " +
                       shapeString(x.shape) + " with the same last dimension");
  }
  Shape fromCos = broadcastSources(cos.shape, x.shape);
  Shape fromSin = broadcastSources(sin.shape, x.shape);
  int64_t width = x.shape.back(), half = width / 2;
  std::vector<double> values(x.f.size());
  for (int64_t k = 0; k < (int64_t)values.size(); ++k) {
    int64_t j = k % width, rowStart = k - j;
    // rotate(x) pairs element a with b as (a, b) -> (-b, a).
    double rotated;
    if (interleaved)
      rotated = j % 2 == 0 ? -x.f[k + 1] : x.f[k - 1];
    else
      rotated = j < half ? -x.f[rowStart + j + half] : x.f[rowStart + j - half];
    values[k] = x.f[k] * cos.f[fromCos[k]] + rotated * sin.f[fromSin[k]];
  }
  return makeFloat(x.dtype, x.shape, std::move(values));
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

namespace {
/// A table viewed as [outer, size, inner] around dimension `axis`.
struct RowView {
  int64_t outer = 1, size = 0, inner = 1;
  RowView(const Shape &shape, int64_t axis) : size(shape[axis]) {
    for (int64_t d = 0; d < axis; ++d)
      outer *= shape[d];
    for (size_t d = axis + 1; d < shape.size(); ++d)
      inner *= shape[d];
  }
};
} // namespace

std::vector<int64_t> gatheredShape(const std::vector<int64_t> &table,
                                   const std::vector<int64_t> &indices,
                                   int64_t axis) {
  std::vector<int64_t> shape(table.begin(), table.begin() + axis);
  shape.insert(shape.end(), indices.begin(), indices.end());
  shape.insert(shape.end(), table.begin() + axis + 1, table.end());
  return shape;
}

int64_t indexedRow(const std::string &kernel, int64_t index, int64_t axis,
                   int64_t size) {
  if (index < -size || index >= size)
    fail(kernel, "index " + std::to_string(index) +
                     " is out of range for dimension " + std::to_string(axis) +
                     " of size " + std::to_string(size));
  return index < 0 ? index + size : index;
}

Tensor gather(const Tensor &x, const Tensor &indices, int64_t axis) {
  const std::string kernel = "gather";
  checkTensor(kernel, "input", x);
  checkIndexTensor(kernel, "indices", indices);
  checkDim(kernel, "axis", axis, (int64_t)x.shape.size());
  RowView rows(x.shape, axis);
  int64_t count = indices.numElements();
  Tensor result =
      Tensor::zeros(x.dtype, gatheredShape(x.shape, indices.shape, axis));
  for (int64_t t = 0; t < count; ++t) {
    int64_t index = indexedRow(kernel, indices.i[t], axis, rows.size);
    for (int64_t o = 0; o < rows.outer; ++o)
      for (int64_t r = 0; r < rows.inner; ++r)
        copyElement(result, (o * count + t) * rows.inner + r, x,
                    (o * rows.size + index) * rows.inner + r);
  }
  return result;
}

Tensor scatterAdd(const Tensor &updates, const Tensor &indices, int64_t axis,
                  const std::vector<int64_t> &shape) {
  const std::string kernel = "scatter_add";
  checkTensor(kernel, "updates", updates);
  checkIndexTensor(kernel, "indices", indices);
  checkFloat(kernel, "updates", updates);
  checkDim(kernel, "axis", axis, (int64_t)shape.size());
  productOf(kernel, shape);
  Shape expected = gatheredShape(shape, indices.shape, axis);
  if (updates.shape != expected)
    fail(kernel, "updates shape " + shapeString(updates.shape) + " must be " +
                     shapeString(expected) + " for result shape " +
                     shapeString(shape) + " and indices shape " +
                     shapeString(indices.shape));
  RowView rows(shape, axis);
  int64_t count = indices.numElements();
  std::vector<double> sums(rows.outer * rows.size * rows.inner, 0.0);
  for (int64_t t = 0; t < count; ++t) {
    int64_t index = indexedRow(kernel, indices.i[t], axis, rows.size);
    for (int64_t o = 0; o < rows.outer; ++o)
      for (int64_t r = 0; r < rows.inner; ++r)
        sums[(o * rows.size + index) * rows.inner + r] +=
            updates.f[(o * count + t) * rows.inner + r];
  }
  return makeFloat(updates.dtype, shape, std::move(sums));
}

Tensor reshape(const Tensor &x, const std::vector<int64_t> &shape) {
  const std::string kernel = "reshape";
  checkTensor(kernel, "input", x);
  if (productOf(kernel, shape) != x.numElements())
    fail(kernel, "cannot reshape " + shapeString(x.shape) + " (" +
                     std::to_string(x.numElements()) + " elements) to " +
                     shapeString(shape));
  Tensor result = x;
  result.shape = shape;
  return result;
}

Tensor transpose(const Tensor &x, const std::vector<int64_t> &permutation) {
  const std::string kernel = "transpose";
  checkTensor(kernel, "input", x);
  int64_t rank = (int64_t)x.shape.size();
  if ((int64_t)permutation.size() != rank)
    fail(kernel, "permutation " + shapeString(permutation) +
                     " does not match rank " + std::to_string(rank));
  std::vector<char> seen(rank, 0);
  for (int64_t p : permutation) {
    if (p < 0 || p >= rank || seen[p])
      fail(kernel, shapeString(permutation) + " is not a permutation of [0, " +
                       std::to_string(rank) + ")");
    seen[p] = 1;
  }
  Shape shape(rank);
  for (int64_t d = 0; d < rank; ++d)
    shape[d] = x.shape[permutation[d]];
  Shape inStrides = stridesOf(x.shape);
  Tensor result = Tensor::zeros(x.dtype, shape);
  for (int64_t k = 0; k < result.numElements(); ++k) {
    Shape index = unravel(k, shape);
    int64_t source = 0;
    for (int64_t d = 0; d < rank; ++d)
      source += index[d] * inStrides[permutation[d]];
    copyElement(result, k, x, source);
  }
  return result;
}

Tensor slice(const Tensor &x, const std::vector<int64_t> &offsets,
             const std::vector<int64_t> &sizes,
             const std::vector<int64_t> &strides) {
  const std::string kernel = "slice";
  checkTensor(kernel, "input", x);
  size_t rank = x.shape.size();
  if (offsets.size() != rank || sizes.size() != rank || strides.size() != rank)
    fail(kernel, "expects " + std::to_string(rank) +
                     " offsets, sizes and strides, got " +
                     std::to_string(offsets.size()) + ", " +
                     std::to_string(sizes.size()) + " and " +
                     std::to_string(strides.size()));
  for (size_t d = 0; d < rank; ++d) {
    if (strides[d] < 1)
      fail(kernel, "stride " + std::to_string(strides[d]) + " of dimension " +
                       std::to_string(d) + " is not positive");
    if (sizes[d] < 0)
      fail(kernel, "size " + std::to_string(sizes[d]) + " of dimension " +
                       std::to_string(d) + " is negative");
    int64_t extent = sizes[d] == 0 ? 0 : (sizes[d] - 1) * strides[d] + 1;
    if (offsets[d] < 0 || offsets[d] + extent > x.shape[d])
      fail(kernel, "slice of dimension " + std::to_string(d) + " (offset " +
                       std::to_string(offsets[d]) + ", size " +
                       std::to_string(sizes[d]) + ", stride " +
                       std::to_string(strides[d]) + ") exceeds its size " +
                       std::to_string(x.shape[d]));
  }
  Shape inStrides = stridesOf(x.shape);
  Tensor result = Tensor::zeros(x.dtype, sizes);
  for (int64_t k = 0; k < result.numElements(); ++k) {
    Shape index = unravel(k, sizes);
    int64_t source = 0;
    for (size_t d = 0; d < rank; ++d)
      source += (offsets[d] + index[d] * strides[d]) * inStrides[d];
    copyElement(result, k, x, source);
  }
  return result;
}

Tensor concat(const std::vector<Tensor> &inputs, int64_t dim) {
  const std::string kernel = "concat";
  if (inputs.empty())
    fail(kernel, "expects at least one input");
  const Tensor &first = inputs.front();
  int64_t rank = (int64_t)first.shape.size();
  checkDim(kernel, "dimension", dim, rank);
  Shape shape = first.shape;
  shape[dim] = 0;
  for (size_t n = 0; n < inputs.size(); ++n) {
    const Tensor &input = inputs[n];
    std::string name = "input #" + std::to_string(n);
    checkTensor(kernel, name, input);
    if (input.dtype != first.dtype || (int64_t)input.shape.size() != rank)
      fail(kernel,
           name + " (" + dtypeName(input.dtype) + " " +
               shapeString(input.shape) + ") is incompatible with input #0 (" +
               dtypeName(first.dtype) + " " + shapeString(first.shape) + ")");
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && input.shape[d] != first.shape[d])
        fail(kernel, name + " has size " + std::to_string(input.shape[d]) +
                         " in dimension " + std::to_string(d) +
                         " where input #0 has " +
                         std::to_string(first.shape[d]));
    shape[dim] += input.shape[dim];
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (int64_t d = dim + 1; d < rank; ++d)
    inner *= shape[d];
  Tensor result = Tensor::zeros(first.dtype, shape);
  int64_t position = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor &input : inputs) {
      int64_t chunk = input.shape[dim] * inner;
      for (int64_t j = 0; j < chunk; ++j)
        copyElement(result, position++, input, o * chunk + j);
    }
  return result;
}

std::vector<Tensor> split(const Tensor &x, int64_t dim,
                          const std::vector<int64_t> &sizes) {
  const std::string kernel = "split";
  checkTensor(kernel, "input", x);
  int64_t rank = (int64_t)x.shape.size();
  checkDim(kernel, "dimension", dim, rank);
  if (sizes.empty())
    fail(kernel, "expects at least one piece");
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      fail(kernel, "piece size " + std::to_string(size) + " is negative");
    total += size;
  }
  if (total != x.shape[dim])
    fail(kernel, "pieces " + shapeString(sizes) + " add up to " +
                     std::to_string(total) + " along dimension " +
                     std::to_string(dim) + " but the input " +
                     shapeString(x.shape) + " has " +
                     std::to_string(x.shape[dim]));
  std::vector<Tensor> pieces;
  int64_t start = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> offsets(rank, 0), boxSizes(x.shape), strides(rank, 1);
    offsets[dim] = start;
    boxSizes[dim] = size;
    pieces.push_back(slice(x, offsets, boxSizes, strides));
    start += size;
  }
  return pieces;
}

Tensor broadcastTo(const Tensor &x, const std::vector<int64_t> &shape) {
  const std::string kernel = "broadcast_to";
  checkTensor(kernel, "input", x);
  productOf(kernel, shape);
  if (!broadcastsTo(x.shape, shape))
    fail(kernel, "input shape " + shapeString(x.shape) +
                     " does not broadcast to " + shapeString(shape));
  Shape from = broadcastSources(x.shape, shape);
  Tensor result = Tensor::zeros(x.dtype, shape);
  for (size_t k = 0; k < from.size(); ++k)
    copyElement(result, k, x, from[k]);
  return result;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

AttentionResult attention(const Tensor &q, const Tensor &k, const Tensor &v,
                          const Tensor *mask, bool causal,
                          std::optional<int64_t> offset, double scale) {
  const std::string kernel = "attention";
  checkTensor(kernel, "query", q);
  checkTensor(kernel, "key", k);
  checkTensor(kernel, "value", v);
  checkFloat(kernel, "query", q);
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4)
    fail(kernel, "expects 4-D query [B, H, Sq, D], key [B, Hkv, Sk, D] and "
                 "value [B, Hkv, Sk, Dv], got " +
                     shapeString(q.shape) + ", " + shapeString(k.shape) +
                     " and " + shapeString(v.shape));
  checkSameDType(kernel, "query", q, "key", k);
  checkSameDType(kernel, "query", q, "value", v);
  int64_t batch = q.shape[0], heads = q.shape[1], sq = q.shape[2],
          d = q.shape[3];
  int64_t kvHeads = k.shape[1], sk = k.shape[2], dv = v.shape[3];
  if (k.shape[0] != batch || v.shape[0] != batch)
    fail(kernel, "batch sizes differ: query " + shapeString(q.shape) +
                     ", key " + shapeString(k.shape) + ", value " +
                     shapeString(v.shape));
  if (v.shape[1] != kvHeads || v.shape[2] != sk)
    fail(kernel, "key " + shapeString(k.shape) + " and value " +
                     shapeString(v.shape) +
                     " differ in heads or sequence length");
  if (kvHeads < 1 || heads % kvHeads != 0)
    fail(kernel, "query heads (" + std::to_string(heads) +
                     ") are not a multiple of key/value heads (" +
                     std::to_string(kvHeads) + ")");
  if (k.shape[3] != d)
    fail(kernel, "query head size " + std::to_string(d) +
                     " differs from key head size " +
                     std::to_string(k.shape[3]));
  Shape scoresShape{batch, heads, sq, sk};
  Shape fromMask;
  if (mask) {
    checkTensor(kernel, "mask", *mask);
    if (mask->dtype != DType::I1 && mask->dtype != q.dtype)
      fail(kernel, "mask must be i1 or " + dtypeName(q.dtype) + ", got " +
                       dtypeName(mask->dtype));
    if (!broadcastsTo(mask->shape, scoresShape))
      fail(kernel, "mask shape " + shapeString(mask->shape) +
                       " does not broadcast to the scores " +
                       shapeString(scoresShape));
    fromMask = broadcastSources(mask->shape, scoresShape);
  }
  if (offset && !causal)
    fail(kernel, "an offset needs causal");
  int64_t causalOffset = offset.value_or(sk - sq);
  int64_t group = heads / kvHeads;

  std::vector<double> out(batch * heads * sq * dv, 0.0);
  std::vector<double> lse(batch * heads * sq, -kInf);
  std::vector<double> scores(sk);
  std::vector<char> kept(sk);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t kvh = h / group;
      for (int64_t i = 0; i < sq; ++i) {
        int64_t row = (b * heads + h) * sq + i;
        const double *query = q.f.data() + row * d;
        for (int64_t j = 0; j < sk; ++j) {
          const double *key = k.f.data() + ((b * kvHeads + kvh) * sk + j) * d;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += query[c] * key[c];
          scores[j] = scale * dot;
          kept[j] = !causal || j <= i + causalOffset;
          if (mask) {
            int64_t m = fromMask[row * sk + j];
            if (mask->dtype == DType::I1)
              kept[j] = kept[j] && mask->i[m] != 0;
            else
              scores[j] += mask->f[m];
          }
        }
        LogSumExp stats = logSumExp(scores, kept);
        lse[row] = stats.lse;
        if (stats.lse == -kInf)
          continue; // No key seen: zero row.
        for (int64_t j = 0; j < sk; ++j) {
          if (!kept[j])
            continue;
          double p = stats.weights[j] / stats.denominator;
          const double *value =
              v.f.data() + ((b * kvHeads + kvh) * sk + j) * dv;
          for (int64_t c = 0; c < dv; ++c)
            out[row * dv + c] += p * value[c];
        }
      }
    }
  return {makeFloat(q.dtype, {batch, heads, sq, dv}, std::move(out)),
          makeFloat(DType::F32, {batch, heads, sq}, std::move(lse))};
}

AttentionResult attentionMerge(const std::vector<Tensor> &outs,
                               const std::vector<Tensor> &lses) {
  const std::string kernel = "attention_merge";
  if (outs.empty() || outs.size() != lses.size())
    fail(kernel, "expects as many partial outputs as log-sum-exps, at least "
                 "one; got " +
                     std::to_string(outs.size()) + " and " +
                     std::to_string(lses.size()));
  const Tensor &firstOut = outs.front();
  for (size_t n = 0; n < outs.size(); ++n) {
    std::string index = " #" + std::to_string(n);
    checkTensor(kernel, "output" + index, outs[n]);
    checkTensor(kernel, "lse" + index, lses[n]);
    checkFloat(kernel, "output" + index, outs[n]);
    if (outs[n].dtype != firstOut.dtype || outs[n].shape != firstOut.shape)
      fail(
          kernel,
          "partial outputs have different types: " + dtypeName(firstOut.dtype) +
              " " + shapeString(firstOut.shape) + " and " +
              dtypeName(outs[n].dtype) + " " + shapeString(outs[n].shape));
    if (lses[n].dtype != DType::F32)
      fail(kernel,
           "lse" + index + " must be f32, got " + dtypeName(lses[n].dtype));
  }
  if (firstOut.shape.size() != 4)
    fail(kernel,
         "expects outputs [B, H, S, Dv], got " + shapeString(firstOut.shape));
  Shape lseShape(firstOut.shape.begin(), firstOut.shape.end() - 1);
  for (const Tensor &lse : lses)
    if (lse.shape != lseShape)
      fail(kernel, "log-sum-exp shape " + shapeString(lse.shape) + " must be " +
                       shapeString(lseShape) + " for outputs " +
                       shapeString(firstOut.shape));
  int64_t rows = productOf(kernel, lseShape), dv = firstOut.shape.back();
  std::vector<double> out(rows * dv, 0.0), lse(rows, -kInf);
  for (int64_t row = 0; row < rows; ++row) {
    double maximum = -kInf;
    for (const Tensor &part : lses)
      maximum = std::max(maximum, part.f[row]);
    if (maximum == -kInf)
      continue; // No block saw a key: zero row, lse -inf.
    double sum = 0;
    for (const Tensor &part : lses)
      sum += std::exp(part.f[row] - maximum);
    double total = maximum + std::log(sum);
    lse[row] = total;
    for (size_t n = 0; n < outs.size(); ++n) {
      // A block that saw no key contributes nothing (its row may be anything).
      if (lses[n].f[row] == -kInf)
        continue;
      double weight = std::exp(lses[n].f[row] - total);
      for (int64_t c = 0; c < dv; ++c)
        out[row * dv + c] += weight * outs[n].f[row * dv + c];
    }
  }
  return {makeFloat(firstOut.dtype, firstOut.shape, std::move(out)),
          makeFloat(DType::F32, lseShape, std::move(lse))};
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

RouterResult routerTopK(const Tensor &logits, int64_t k, bool normalize) {
  const std::string kernel = "router_topk";
  checkTensor(kernel, "logits", logits);
  checkFloat(kernel, "logits", logits);
  if (logits.shape.size() != 2)
    fail(kernel,
         "expects logits [tokens, experts], got " + shapeString(logits.shape));
  int64_t tokens = logits.shape[0], experts = logits.shape[1];
  if (k < 1 || k > experts)
    fail(kernel, "k = " + std::to_string(k) + " must be in [1, " +
                     std::to_string(experts) + "]");
  std::vector<double> weights(tokens * k);
  std::vector<int64_t> chosen(tokens * k);
  std::vector<double> probabilities(experts);
  std::vector<int64_t> order(experts);
  for (double logit : logits.f)
    if (std::isnan(logit))
      fail(kernel, "logits contain NaN; the top k is undefined");
  for (int64_t t = 0; t < tokens; ++t) {
    const double *row = logits.f.data() + t * experts;
    double maximum = *std::max_element(row, row + experts);
    double sum = 0;
    for (int64_t e = 0; e < experts; ++e)
      sum += probabilities[e] = std::exp(row[e] - maximum);
    for (int64_t e = 0; e < experts; ++e)
      probabilities[e] /= sum;
    // Ranked by logit (softmax is monotone, and the logits are exact where
    // tiny probabilities could underflow to equal values); equal logits
    // rank by the lower expert index.
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    double chosenSum = 0;
    for (int64_t j = 0; j < k; ++j)
      chosenSum += probabilities[order[j]];
    for (int64_t j = 0; j < k; ++j) {
      chosen[t * k + j] = order[j];
      weights[t * k + j] = normalize ? probabilities[order[j]] / chosenSum
                                     : probabilities[order[j]];
    }
  }
  return {makeFloat(logits.dtype, {tokens, k}, std::move(weights)),
          makeInt(DType::I64, {tokens, k}, std::move(chosen))};
}

namespace {
/// Slot of every (token, choice) pair in its expert's buffer, in token-then-
/// choice order; -1 for a pair dropped past `capacity`. Checks the indices.
std::vector<int64_t> assignSlots(const std::string &kernel,
                                 const Tensor &experts, int64_t numExperts,
                                 int64_t capacity) {
  std::vector<int64_t> used(numExperts, 0);
  std::vector<int64_t> slots(experts.i.size());
  for (size_t pair = 0; pair < slots.size(); ++pair) {
    int64_t e = experts.i[pair];
    if (e < 0 || e >= numExperts)
      fail(kernel, "expert index " + std::to_string(e) +
                       " is out of range for " + std::to_string(numExperts) +
                       " experts");
    slots[pair] = used[e] < capacity ? used[e]++ : -1;
  }
  return slots;
}

void checkExperts(const std::string &kernel, const Tensor &experts) {
  checkIndexTensor(kernel, "experts", experts);
  if (experts.shape.size() != 2)
    fail(kernel, "expects experts [T, k], got " + shapeString(experts.shape));
}
} // namespace

Tensor moeDispatch(const Tensor &x, const Tensor &experts, int64_t numExperts,
                   int64_t capacity) {
  const std::string kernel = "moe_dispatch";
  checkTensor(kernel, "input", x);
  checkFloat(kernel, "input", x);
  checkExperts(kernel, experts);
  if (x.shape.size() != 2)
    fail(kernel, "expects input [T, H], got " + shapeString(x.shape));
  if (experts.shape[0] != x.shape[0])
    fail(kernel, "input has " + std::to_string(x.shape[0]) +
                     " tokens but experts has " +
                     std::to_string(experts.shape[0]));
  if (numExperts < 1 || capacity < 0)
    fail(kernel, "needs at least one expert and a non-negative capacity, got " +
                     std::to_string(numExperts) + " experts of capacity " +
                     std::to_string(capacity));
  int64_t hidden = x.shape[1], choices = experts.shape[1];
  std::vector<int64_t> slots =
      assignSlots(kernel, experts, numExperts, capacity);
  std::vector<double> values(numExperts * capacity * hidden, 0.0);
  for (size_t pair = 0; pair < slots.size(); ++pair) {
    if (slots[pair] < 0)
      continue;
    int64_t token = (int64_t)pair / choices;
    int64_t target = (experts.i[pair] * capacity + slots[pair]) * hidden;
    for (int64_t c = 0; c < hidden; ++c)
      values[target + c] = x.f[token * hidden + c];
  }
  return makeFloat(x.dtype, {numExperts, capacity, hidden}, std::move(values));
}

Tensor moeCombine(const Tensor &y, const Tensor &experts,
                  const Tensor &weights) {
  const std::string kernel = "moe_combine";
  checkTensor(kernel, "input", y);
  checkFloat(kernel, "input", y);
  checkExperts(kernel, experts);
  checkTensor(kernel, "weights", weights);
  if (y.shape.size() != 3)
    fail(kernel, "expects input [E, C, H], got " + shapeString(y.shape));
  if (weights.shape != experts.shape)
    fail(kernel, "weights shape " + shapeString(weights.shape) +
                     " differs from experts shape " +
                     shapeString(experts.shape));
  checkSameDType(kernel, "input", y, "weights", weights);
  int64_t numExperts = y.shape[0], capacity = y.shape[1], hidden = y.shape[2];
  int64_t tokens = experts.shape[0], choices = experts.shape[1];
  std::vector<int64_t> slots =
      assignSlots(kernel, experts, numExperts, capacity);
  std::vector<double> values(tokens * hidden, 0.0);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < choices; ++j) {
      int64_t pair = t * choices + j;
      if (slots[pair] < 0)
        continue; // Dropped for capacity: contributes zero.
      int64_t source = (experts.i[pair] * capacity + slots[pair]) * hidden;
      for (int64_t c = 0; c < hidden; ++c)
        values[t * hidden + c] += weights.f[pair] * y.f[source + c];
    }
  return makeFloat(y.dtype, {tokens, hidden}, std::move(values));
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

Tensor crossEntropy(const Tensor &logits, const Tensor &labels,
                    LossReduction reduction) {
  const std::string kernel = "cross_entropy";
  checkTensor(kernel, "logits", logits);
  checkIndexTensor(kernel, "labels", labels);
  checkFloat(kernel, "logits", logits);
  if (logits.shape.empty())
    fail(kernel, "logits need a class dimension, got a scalar");
  Shape samplesShape(logits.shape.begin(), logits.shape.end() - 1);
  if (labels.shape != samplesShape)
    fail(kernel, "labels shape " + shapeString(labels.shape) +
                     " must be the logits shape " + shapeString(logits.shape) +
                     " without its class dimension");
  int64_t classes = logits.shape.back(), samples = labels.numElements();
  std::vector<double> losses(samples);
  std::vector<char> all(classes, 1);
  for (int64_t s = 0; s < samples; ++s) {
    int64_t label = labels.i[s];
    if (label < 0 || label >= classes)
      fail(kernel, "label " + std::to_string(label) + " is out of range for " +
                       std::to_string(classes) + " classes");
    std::vector<double> row(logits.f.begin() + s * classes,
                            logits.f.begin() + (s + 1) * classes);
    losses[s] = logSumExp(row, all).lse - row[label];
  }
  if (reduction == LossReduction::None)
    return makeFloat(logits.dtype, samplesShape, std::move(losses));
  double total = 0;
  for (double loss : losses)
    total += loss;
  if (reduction == LossReduction::Mean)
    total /= (double)samples;
  return makeFloat(logits.dtype, {}, {total});
}

} // namespace braid::rt::ref
