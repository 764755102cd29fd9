//===- ReferenceKernels.h - straightforward kernels for every braid op -*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The oracle: one plain, obviously correct loop nest per braid op, computing
// in double (int64 for integers and booleans) and rounding every result to its
// element type (f32, f16, bf16) as storage would. Optimized CPU and CUDA
// kernels are tested against these; braid-eval runs whole programs with them.
// Semantics are those of the op descriptions in dialects/braid/*.td.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_REFERENCE_REFERENCEKERNELS_H
#define BRAID_RUNTIME_REFERENCE_REFERENCEKERNELS_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <optional>
#include <string>
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace braid::rt::ref {

/// A dense row-major tensor. Floating types keep their values in `f`
/// (already rounded to the element type), integer types and i1 in `i`.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  bool isFloat() const;
  int64_t numElements() const;
  /// Element `k` (row-major) as double / int64.
  double at(int64_t k) const;
  int64_t intAt(int64_t k) const;

  /// A tensor of `dtype` and `shape` holding zeros.
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  /// A floating tensor from values (rounded to `dtype`).
  static Tensor ofFloats(DType dtype, std::vector<int64_t> shape,
                         std::vector<double> values);
  /// An integer or i1 tensor from values.
  static Tensor ofInts(DType dtype, std::vector<int64_t> shape,
                       std::vector<int64_t> values);
};

/// While one exists, on this thread, floating values are kept in double
/// precision instead of being rounded to their element type: the f64
/// reference of gradient checks (finite differences need more digits than
/// f32 keeps).
class ExactArithmetic {
public:
  ExactArithmetic();
  ~ExactArithmetic();
  ExactArithmetic(const ExactArithmetic &) = delete;
  ExactArithmetic &operator=(const ExactArithmetic &) = delete;

private:
  bool previous;
};

/// While one exists, on this thread, every floating value a kernel stores is
/// perturbed by a random relative amount of up to one unit in the last place
/// of its element type before being rounded (reproducibly, from `seed`): a
/// model of rounding in another order. Running a program this way tells
/// how much it amplifies rounding errors, including where the exact and the
/// f32 results agree only because identical rows are rounded identically
/// (the difference of two equal rows, normalized). Nests with nothing:
/// ExactArithmetic wins while both exist.
class PerturbedArithmetic {
public:
  explicit PerturbedArithmetic(uint64_t seed);
  ~PerturbedArithmetic();
  PerturbedArithmetic(const PerturbedArithmetic &) = delete;
  PerturbedArithmetic &operator=(const PerturbedArithmetic &) = delete;

private:
  uint64_t state;
  uint64_t *previous;
};

/// Rounds `value` to what a `dtype` element stores (f16, bf16: round to
/// nearest even; f32: to float).
double roundTo(DType dtype, double value);

/// Every kernel throws std::invalid_argument with a clear message when its
/// inputs violate the op's contract (shapes, index ranges).

enum class UnaryKind {
  Neg, Exp, Log, Sqrt, Rsqrt, Tanh, Erf, Sigmoid, Silu, Relu, Gelu, GeluTanh
};
Tensor unary(UnaryKind kind, const Tensor &x);
/// One element of `unary` on a floating tensor (the direct f32 kernels use
/// it too, so both round the same double once).
inline double applyUnary(UnaryKind kind, double x) {
  switch (kind) {
  case UnaryKind::Neg:
    return -x;
  case UnaryKind::Exp:
    return std::exp(x);
  case UnaryKind::Log:
    return std::log(x);
  case UnaryKind::Sqrt:
    return std::sqrt(x);
  case UnaryKind::Rsqrt:
    return 1.0 / std::sqrt(x);
  case UnaryKind::Tanh:
    return std::tanh(x);
  case UnaryKind::Erf:
    return std::erf(x);
  case UnaryKind::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case UnaryKind::Silu:
    return x / (1.0 + std::exp(-x));
  case UnaryKind::Relu:
    return x < 0 ? 0.0 : x; // NaN stays NaN.
  case UnaryKind::Gelu:
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case UnaryKind::GeluTanh: {
    const double pi = std::acos(-1.0);
    return 0.5 * x *
           (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
  }
  }
  return x;
}

enum class BinaryKind { Add, Sub, Mul, Div, Pow, Max, Min };
/// numpy broadcasting; both operands share the element type.
Tensor binary(BinaryKind kind, const Tensor &a, const Tensor &b);
/// One element of `binary` on floating tensors.
inline double applyBinary(BinaryKind kind, double a, double b) {
  switch (kind) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    return a / b;
  case BinaryKind::Pow:
    return std::pow(a, b);
  case BinaryKind::Max:
  case BinaryKind::Min:
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<double>::quiet_NaN();
    return kind == BinaryKind::Max ? std::max(a, b) : std::min(a, b);
  }
  return a;
}

enum class CompareKind { EQ, NE, LT, LE, GT, GE };
Tensor compare(CompareKind kind, const Tensor &a, const Tensor &b);
Tensor select(const Tensor &condition, const Tensor &whenTrue,
              const Tensor &whenFalse);
/// float->int truncates toward zero; anything->i1 is `!= 0`.
Tensor cast(const Tensor &x, DType to);

Tensor matmul(const Tensor &a, const Tensor &b, bool transposeA,
              bool transposeB);
/// [E, C, K] x [E, K, N] (or [E, N, K] when transposed) -> [E, C, N].
Tensor groupedMatmul(const Tensor &x, const Tensor &w, bool transposeW);

enum class ReduceKind { Sum, Mean, Max };
Tensor reduce(ReduceKind kind, const Tensor &x, const std::vector<int64_t> &dims,
              bool keepDims);

Tensor softmax(const Tensor &x, int64_t dim);
/// Normalizes over dimensions [axis, rank); gamma/beta shaped like those.
Tensor layerNorm(const Tensor &x, const Tensor &gamma, const Tensor *beta,
                 int64_t axis, double epsilon);
Tensor rmsNorm(const Tensor &x, const Tensor &gamma, int64_t axis,
               double epsilon);
/// cos/sin broadcast to x; pairs (i, i + D/2), or (2i, 2i+1) if interleaved.
Tensor rotary(const Tensor &x, const Tensor &cos, const Tensor &sin,
              bool interleaved);

/// ONNX Gather; negative indices count from the end.
Tensor gather(const Tensor &x, const Tensor &indices, int64_t axis);
/// The transpose of gather: a zero tensor of `shape` (the updates' dtype)
/// with every slice of `updates` added into the row along `axis` that its
/// index names; repeated indices accumulate, negative ones count from the
/// end. `updates` must be shaped `shape[:axis] + indices.shape +
/// shape[axis+1:]`.
Tensor scatterAdd(const Tensor &updates, const Tensor &indices, int64_t axis,
                  const std::vector<int64_t> &shape);
/// The shape of gathering `indices` along `axis` (in range) from a
/// `table`-shaped tensor, `table[:axis] + indices + table[axis+1:]`: gather's
/// result, scatter_add's updates.
std::vector<int64_t> gatheredShape(const std::vector<int64_t> &table,
                                   const std::vector<int64_t> &indices,
                                   int64_t axis);
/// The row that `index` names in dimension `axis` of size `size` (negative
/// counts from the end), as gather and scatter_add read it; throws naming
/// `kernel` for an index outside [-size, size).
int64_t indexedRow(const std::string &kernel, int64_t index, int64_t axis,
                   int64_t size);
Tensor reshape(const Tensor &x, const std::vector<int64_t> &shape);
Tensor transpose(const Tensor &x, const std::vector<int64_t> &permutation);
Tensor slice(const Tensor &x, const std::vector<int64_t> &offsets,
             const std::vector<int64_t> &sizes,
             const std::vector<int64_t> &strides);
Tensor concat(const std::vector<Tensor> &inputs, int64_t dim);
std::vector<Tensor> split(const Tensor &x, int64_t dim,
                          const std::vector<int64_t> &sizes);
Tensor broadcastTo(const Tensor &x, const std::vector<int64_t> &shape);

/// Scaled dot-product attention: q [B,H,Sq,D], k [B,Hkv,Sk,D],
/// v [B,Hkv,Sk,Dv]; query head h uses key/value head h / (H / Hkv). `mask`
/// broadcasts to [B,H,Sq,Sk]: i1 keeps where true, float is added. With
/// `causal`, query i sees key j iff j <= i + offset, offset defaulting to
/// Sk - Sq. A query that sees no key gives a zero row and lse = -inf.
struct AttentionResult {
  Tensor out;
  /// [B, H, Sq] natural log of the softmax denominator (f32).
  Tensor lse;
};
AttentionResult attention(const Tensor &q, const Tensor &k, const Tensor &v,
                          const Tensor *mask, bool causal,
                          std::optional<int64_t> offset, double scale);
/// Exact merge of partial results over disjoint key blocks.
AttentionResult attentionMerge(const std::vector<Tensor> &outs,
                               const std::vector<Tensor> &lses);

/// softmax over experts, top-k (descending, ties to the lower index), and
/// with `normalize` the k weights rescaled to sum to 1.
struct RouterResult {
  Tensor weights; // [T, k], logits' dtype
  Tensor experts; // [T, k], i64
};
RouterResult routerTopK(const Tensor &logits, int64_t k, bool normalize);
/// x [T, H], experts [T, k] -> [E, C, H]: slot c of expert e holds the c-th
/// (token, choice) pair routed to e in token-then-choice order; pairs past
/// capacity are dropped; unused slots are zero.
Tensor moeDispatch(const Tensor &x, const Tensor &experts, int64_t numExperts,
                   int64_t capacity);
/// y [E, C, H], experts [T, k], weights [T, k] -> [T, H] with the same slots.
Tensor moeCombine(const Tensor &y, const Tensor &experts,
                  const Tensor &weights);

enum class LossReduction { None, Mean, Sum };
/// logits [..., C], labels [...] -> per-sample loss, or its mean / sum.
Tensor crossEntropy(const Tensor &logits, const Tensor &labels,
                    LossReduction reduction);

} // namespace braid::rt::ref

#endif // BRAID_RUNTIME_REFERENCE_REFERENCEKERNELS_H
