//===- NormOps.cuh - index math of the row-wise kernels --------*- CUDA -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// reduce_sum / reduce_mean / reduce_max, softmax, layer_norm, rms_norm and
// rotary as __host__ __device__ pieces that Norm.cu launches and the unit
// tests run on the host.
//
// Every row-wise op is a "Rows" struct: row r is `size` contiguous elements;
// W workers (the lanes of a warp, or the threads of a block) each take the
// chunks of VEC elements c = w, w + W, ... of the row:
//   Stats partial(row, worker, W)          - one worker's statistics
//   static Stats combine(a, b), identity() - merging them (commutative)
//   void write(row, worker, W, total)      - the worker's outputs
// The kernels combine the partials with an xor butterfly over the warp's
// lanes (and, in a block, a second butterfly over the warps' results);
// runRowsOnHost does exactly the same on the host. So the formulas, the
// indexing and the combination are what the tests check; only the shuffles
// and the shared memory are device-only.
//
// Operations whose rows are strided (softmax over a non-last dim, a
// reduction over leading or interleaved dims) and rotary are pointwise
// functors: one thread per line, output or pair.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_KERNELS_NORMOPS_CUH
#define BRAID_RUNTIME_CUDA_KERNELS_NORMOPS_CUH

#include "runtime/cuda/kernels/CudaCommon.cuh"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace braid::rt::cuda {

/// `#pragma unroll` for the device pass only (the host compiler warns about
/// it in __host__ __device__ code).
#ifdef __CUDA_ARCH__
#define BRAID_NORM_UNROLL _Pragma("unroll")
#else
#define BRAID_NORM_UNROLL
#endif

constexpr int kWarpSize = 32;
/// Rows of up to this many elements get one warp each, longer ones a block.
constexpr int64_t kWarpRowLimit = 1024;
/// Softmax rows and trailing reductions shorter than this get one thread per
/// row (the pointwise functor): a warp would leave most lanes idle.
constexpr int64_t kThreadRowLimit = 32;
/// Bytes of one vectorized load or store.
constexpr int kVectorBytes = 16;

//===----------------------------------------------------------------------===//
// Vector access
//===----------------------------------------------------------------------===//

template <typename T, int Vec> struct alignas(sizeof(T) * Vec) Pack {
  T v[Vec];
};

/// Loads Vec elements from `p` (aligned to Vec elements) in one access.
template <int Vec, typename T>
BRAID_HD void loadPack(const T *p, T (&out)[Vec]) {
#ifdef __CUDA_ARCH__
  Pack<T, Vec> pack = *reinterpret_cast<const Pack<T, Vec> *>(p);
  BRAID_NORM_UNROLL
  for (int k = 0; k < Vec; ++k)
    out[k] = pack.v[k];
#else
  std::memcpy(static_cast<void *>(out), static_cast<const void *>(p),
              sizeof(T) * Vec);
#endif
}

template <int Vec, typename T>
BRAID_HD void loadFloats(const T *p, float (&out)[Vec]) {
  T raw[Vec];
  loadPack<Vec>(p, raw);
  BRAID_NORM_UNROLL
  for (int k = 0; k < Vec; ++k)
    out[k] = toFloat(raw[k]);
}

template <int Vec, typename T>
BRAID_HD void storeFloats(T *p, const float (&in)[Vec]) {
  Pack<T, Vec> pack;
  BRAID_NORM_UNROLL
  for (int k = 0; k < Vec; ++k)
    pack.v[k] = fromFloat<T>(in[k]);
#ifdef __CUDA_ARCH__
  *reinterpret_cast<Pack<T, Vec> *>(p) = pack;
#else
  std::memcpy(static_cast<void *>(p), static_cast<const void *>(pack.v),
              sizeof(T) * Vec);
#endif
}

/// Elements per vectorized access of a T.
template <typename T> constexpr int vectorWidth() {
  return kVectorBytes / static_cast<int>(sizeof(T)) > 0
             ? kVectorBytes / static_cast<int>(sizeof(T))
             : 1;
}

/// Whether rows of `size` elements of T at these pointers (null: absent) can
/// be read and written `vec` elements at a time.
template <typename T>
bool canVectorize(int vec, int64_t size,
                  std::initializer_list<const void *> pointers) {
  if (size % vec != 0)
    return false;
  for (const void *p : pointers)
    if (p && reinterpret_cast<uintptr_t>(p) % (sizeof(T) * vec) != 0)
      return false;
  return true;
}

/// A product that nvcc does not contract into an FMA: combine() must be
/// exactly commutative, so that every lane of a butterfly ends with the same
/// bits.
BRAID_HD float mulExact(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

/// The statistics of a row: N accumulators.
template <typename Acc, int N> struct RowStats {
  static constexpr int kSize = N;
  Acc v[N];
};

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

// Online softmax: (m, s) with m the running maximum (NaN ignored, as the
// reference's std::max does) and s the sum of exp(x - m). A NaN element
// makes s NaN and so the whole line NaN, as in the reference; a line of
// -inf keeps m = -inf, s = 0 and gives exp(-inf - -inf) = NaN on write, as
// the reference does.
using SoftmaxStats = RowStats<float, 2>;

/// exp(from - to) for from <= to, exactly 1 when they are equal (also both
/// infinite, where the difference would be NaN).
BRAID_HD float softmaxRescale(float from, float to) {
  return from == to ? 1.f : expf(from - to);
}

BRAID_HD SoftmaxStats softmaxIdentity() { return {{-INFINITY, 0.f}}; }

template <int Vec>
BRAID_HD void softmaxAdd(SoftmaxStats &s, const float (&v)[Vec]) {
  float m = s.v[0];
  BRAID_NORM_UNROLL
  for (int k = 0; k < Vec; ++k)
    m = fmaxf(m, v[k]);
  float sum = s.v[1] * softmaxRescale(s.v[0], m);
  BRAID_NORM_UNROLL
  for (int k = 0; k < Vec; ++k)
    // -inf adds nothing (and must not add exp(-inf - -inf) = NaN).
    sum += v[k] == -INFINITY ? 0.f : expf(v[k] - m);
  s.v[0] = m;
  s.v[1] = sum;
}

BRAID_HD SoftmaxStats softmaxCombine(const SoftmaxStats &a,
                                     const SoftmaxStats &b) {
  float m = fmaxf(a.v[0], b.v[0]);
  return {{m, mulExact(a.v[1], softmaxRescale(a.v[0], m)) +
                  mulExact(b.v[1], softmaxRescale(b.v[0], m))}};
}

/// Softmax over the last dimension: rows of `size` contiguous elements.
template <typename T, int Vec> struct SoftmaxRows {
  using Stats = SoftmaxStats;
  const T *x;
  T *y;
  int64_t size;

  BRAID_HD static Stats identity() { return softmaxIdentity(); }
  BRAID_HD static Stats combine(const Stats &a, const Stats &b) {
    return softmaxCombine(a, b);
  }
  BRAID_HD Stats partial(int64_t row, int worker, int workers) const {
    const T *in = x + row * size;
    Stats s = identity();
    for (int64_t c = int64_t(worker) * Vec; c < size;
         c += int64_t(workers) * Vec) {
      float v[Vec];
      loadFloats<Vec>(in + c, v);
      softmaxAdd(s, v);
    }
    return s;
  }
  BRAID_HD void write(int64_t row, int worker, int workers,
                      const Stats &total) const {
    const T *in = x + row * size;
    T *out = y + row * size;
    float inverse = 1.f / total.v[1];
    for (int64_t c = int64_t(worker) * Vec; c < size;
         c += int64_t(workers) * Vec) {
      float v[Vec];
      loadFloats<Vec>(in + c, v);
      BRAID_NORM_UNROLL
      for (int k = 0; k < Vec; ++k)
        v[k] = expf(v[k] - total.v[0]) * inverse;
      storeFloats<Vec>(out + c, v);
    }
  }
};

/// Softmax along a dimension with `inner` elements after it: thread i does
/// the line (i / inner, i % inner) of `size` elements `inner` apart.
/// Neighbouring threads read neighbouring elements, so the loads coalesce.
template <typename T> struct SoftmaxLines {
  const T *x;
  T *y;
  int64_t size, inner;

  BRAID_HD void operator()(int64_t i) const {
    int64_t outer = i / inner;
    int64_t base = outer * size * inner + (i - outer * inner);
    SoftmaxStats s = softmaxIdentity();
    for (int64_t j = 0; j < size; ++j) {
      float v[1] = {toFloat(x[base + j * inner])};
      softmaxAdd(s, v);
    }
    float inverse = 1.f / s.v[1];
    for (int64_t j = 0; j < size; ++j)
      y[base + j * inner] =
          fromFloat<T>(expf(toFloat(x[base + j * inner]) - s.v[0]) * inverse);
  }
};

//===----------------------------------------------------------------------===//
// Layer norm and RMS norm
//===----------------------------------------------------------------------===//

// Layer norm statistics are (count, mean, M2), merged with Chan et al.'s
// pairwise formula: no cancellation, unlike sum and sum of squares, when
// the mean is large next to the spread. The merge is written symmetrically
// so that it is exactly commutative.
using MomentStats = RowStats<float, 3>;

BRAID_HD MomentStats momentIdentity() { return {{0.f, 0.f, 0.f}}; }

BRAID_HD MomentStats momentCombine(const MomentStats &a, const MomentStats &b) {
  if (a.v[0] == 0.f)
    return b;
  if (b.v[0] == 0.f)
    return a;
  float n = a.v[0] + b.v[0];
  float inverse = 1.f / n;
  float delta = b.v[1] - a.v[1];
  float mean =
      mulExact(mulExact(a.v[0], a.v[1]) + mulExact(b.v[0], b.v[1]), inverse);
  float m2 =
      (a.v[2] + b.v[2]) + mulExact(mulExact(delta, delta),
                                   mulExact(mulExact(a.v[0], b.v[0]), inverse));
  return {{n, mean, m2}};
}

/// The moments of one chunk: mean first, then squared deviations from it.
template <int Vec> BRAID_HD MomentStats chunkMoments(const float (&v)[Vec]) {
  float sum = 0.f;
  BRAID_NORM_UNROLL
  for (int k = 0; k < Vec; ++k)
    sum += v[k];
  float mean = sum * (1.f / Vec);
  float m2 = 0.f;
  BRAID_NORM_UNROLL
  for (int k = 0; k < Vec; ++k)
    m2 += (v[k] - mean) * (v[k] - mean);
  return {{float(Vec), mean, m2}};
}

/// layer_norm over the trailing `size` elements: (x - mean) / sqrt(biased
/// variance + epsilon) * gamma + beta, gamma and beta (beta may be null)
/// shaped like the normalized dims, so indexed by the column.
template <typename T, int Vec> struct LayerNormRows {
  using Stats = MomentStats;
  const T *x;
  const T *gamma;
  const T *beta;
  T *y;
  int64_t size;
  float epsilon;

  BRAID_HD static Stats identity() { return momentIdentity(); }
  BRAID_HD static Stats combine(const Stats &a, const Stats &b) {
    return momentCombine(a, b);
  }
  BRAID_HD Stats partial(int64_t row, int worker, int workers) const {
    const T *in = x + row * size;
    Stats s = identity();
    for (int64_t c = int64_t(worker) * Vec; c < size;
         c += int64_t(workers) * Vec) {
      float v[Vec];
      loadFloats<Vec>(in + c, v);
      s = combine(s, chunkMoments(v));
    }
    return s;
  }
  BRAID_HD void write(int64_t row, int worker, int workers,
                      const Stats &total) const {
    const T *in = x + row * size;
    T *out = y + row * size;
    float mean = total.v[1];
    float inverse = 1.f / sqrtf(total.v[2] / total.v[0] + epsilon);
    for (int64_t c = int64_t(worker) * Vec; c < size;
         c += int64_t(workers) * Vec) {
      float v[Vec], g[Vec], b[Vec];
      loadFloats<Vec>(in + c, v);
      loadFloats<Vec>(gamma + c, g);
      if (beta) {
        loadFloats<Vec>(beta + c, b);
      } else {
        BRAID_NORM_UNROLL
        for (int k = 0; k < Vec; ++k)
          b[k] = 0.f;
      }
      BRAID_NORM_UNROLL
      for (int k = 0; k < Vec; ++k)
        v[k] = (v[k] - mean) * inverse * g[k] + b[k];
      storeFloats<Vec>(out + c, v);
    }
  }
};

/// rms_norm over the trailing `size` elements: x / sqrt(mean(x^2) +
/// epsilon) * gamma.
template <typename T, int Vec> struct RmsNormRows {
  using Stats = RowStats<float, 1>;
  const T *x;
  const T *gamma;
  T *y;
  int64_t size;
  float epsilon;

  BRAID_HD static Stats identity() { return {{0.f}}; }
  BRAID_HD static Stats combine(const Stats &a, const Stats &b) {
    return {{a.v[0] + b.v[0]}};
  }
  BRAID_HD Stats partial(int64_t row, int worker, int workers) const {
    const T *in = x + row * size;
    float sum = 0.f;
    for (int64_t c = int64_t(worker) * Vec; c < size;
         c += int64_t(workers) * Vec) {
      float v[Vec];
      loadFloats<Vec>(in + c, v);
      BRAID_NORM_UNROLL
      for (int k = 0; k < Vec; ++k)
        sum += v[k] * v[k];
    }
    return {{sum}};
  }
  BRAID_HD void write(int64_t row, int worker, int workers,
                      const Stats &total) const {
    const T *in = x + row * size;
    T *out = y + row * size;
    float inverse = 1.f / sqrtf(total.v[0] / float(size) + epsilon);
    for (int64_t c = int64_t(worker) * Vec; c < size;
         c += int64_t(workers) * Vec) {
      float v[Vec], g[Vec];
      loadFloats<Vec>(in + c, v);
      loadFloats<Vec>(gamma + c, g);
      BRAID_NORM_UNROLL
      for (int k = 0; k < Vec; ++k)
        v[k] = v[k] * inverse * g[k];
      storeFloats<Vec>(out + c, v);
    }
  }
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class ReduceOp { Sum, Mean, Max };

/// Accumulators: float for floating types, int64 for integers and i1 (the
/// reference computes integers in int64 and stores the result wrapped to
/// i32, or as `!= 0` for i1).
template <typename T> struct AccumulatorOf { using type = float; };
template <> struct AccumulatorOf<int64_t> { using type = int64_t; };
template <> struct AccumulatorOf<int32_t> { using type = int64_t; };
template <> struct AccumulatorOf<bool> { using type = int64_t; };

template <typename T> BRAID_HD float toAccumulator(T value, float) {
  return toFloat(value);
}
template <typename T> BRAID_HD int64_t toAccumulator(T value, int64_t) {
  return static_cast<int64_t>(value);
}

template <typename T> BRAID_HD T fromAccumulator(float value) {
  return fromFloat<T>(value);
}
template <typename T> BRAID_HD T fromAccumulator(int64_t value) {
  if constexpr (std::is_same_v<T, bool>)
    return value != 0;
  else
    // i32 wraps, as the reference stores it.
    return static_cast<T>(static_cast<uint64_t>(value));
}

template <ReduceOp Op, typename Acc> BRAID_HD Acc reduceIdentity() {
  if constexpr (Op == ReduceOp::Max) {
    if constexpr (std::is_same_v<Acc, float>)
      return -INFINITY;
    else
      return INT64_MIN;
  } else {
    return Acc(0);
  }
}

template <ReduceOp Op, typename Acc> BRAID_HD Acc reduceStep(Acc a, Acc b) {
  if constexpr (Op == ReduceOp::Max) {
    // std::max(a, b) as the reference writes it: a NaN b is skipped.
    return a < b ? b : a;
  } else if constexpr (std::is_same_v<Acc, float>) {
    return a + b;
  } else {
    // Integer sums wrap.
    return static_cast<int64_t>(static_cast<uint64_t>(a) +
                                static_cast<uint64_t>(b));
  }
}

/// The result of a group of `count` elements (the mean: float division, or
/// integer division truncating toward zero).
template <ReduceOp Op, typename Acc>
BRAID_HD Acc reduceFinish(Acc acc, int64_t count) {
  if constexpr (Op == ReduceOp::Mean) {
    if constexpr (std::is_same_v<Acc, float>)
      return acc / static_cast<float>(count);
    else
      return acc / count;
  } else {
    return acc;
  }
}

/// A reduction over trailing dims: row r of `size` elements gives output r.
template <typename T, int Vec, ReduceOp Op> struct ReduceRows {
  using Acc = typename AccumulatorOf<T>::type;
  using Stats = RowStats<Acc, 1>;
  const T *x;
  T *y;
  int64_t size;

  BRAID_HD static Stats identity() { return {{reduceIdentity<Op, Acc>()}}; }
  BRAID_HD static Stats combine(const Stats &a, const Stats &b) {
    return {{reduceStep<Op>(a.v[0], b.v[0])}};
  }
  BRAID_HD Stats partial(int64_t row, int worker, int workers) const {
    const T *in = x + row * size;
    Acc acc = reduceIdentity<Op, Acc>();
    for (int64_t c = int64_t(worker) * Vec; c < size;
         c += int64_t(workers) * Vec) {
      T v[Vec];
      loadPack<Vec>(in + c, v);
      BRAID_NORM_UNROLL
      for (int k = 0; k < Vec; ++k)
        acc = reduceStep<Op>(acc, toAccumulator(v[k], Acc()));
    }
    return {{acc}};
  }
  BRAID_HD void write(int64_t row, int worker, int, const Stats &total) const {
    if (worker == 0)
      y[row] = fromAccumulator<T>(reduceFinish<Op>(total.v[0], size));
  }
};

/// The general reduction: output i (row-major over the kept dims) reads the
/// input at kept.offsetOf(i) plus every offset of the reduced dims, walked
/// with an odometer (no division per element).
template <typename T, ReduceOp Op> struct ReduceLines {
  using Acc = typename AccumulatorOf<T>::type;
  const T *x;
  T *y;
  /// Kept dims: sizes and input strides, in output order.
  Dims kept;
  /// Reduced dims: sizes and input strides.
  Dims reduced;
  int64_t count;

  BRAID_HD void operator()(int64_t i) const {
    const T *in = x + kept.offsetOf(i);
    int64_t index[kMaxRank] = {};
    int64_t offset = 0;
    Acc acc = reduceIdentity<Op, Acc>();
    for (int64_t k = 0; k < count; ++k) {
      acc = reduceStep<Op>(acc, toAccumulator(in[offset], Acc()));
      for (int d = reduced.rank - 1; d >= 0; --d) {
        offset += reduced.stride[d];
        if (++index[d] < reduced.size[d])
          break;
        offset -= reduced.stride[d] * reduced.size[d];
        index[d] = 0;
      }
    }
    y[i] = fromAccumulator<T>(reduceFinish<Op>(acc, count));
  }
};

/// How a reduction runs: dims of size 1 dropped and neighbouring dims of
/// the same kind (kept or reduced) merged.
struct ReducePlan {
  /// Number of outputs and of elements per output.
  int64_t outputs = 1;
  int64_t count = 1;
  Dims kept;
  Dims reduced;
  /// The reduced elements of output i are the contiguous row i (reduced
  /// dims are one trailing block): the row kernels apply.
  bool rows = false;
};

/// Plans the reduction of a contiguous tensor of `shape` over `dims`
/// (checked by the CPU backend's check: in range, no repeats).
inline ReducePlan planReduce(const std::vector<int64_t> &shape,
                             const std::vector<int64_t> &dims) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    throw CudaError("a tensor of rank " + std::to_string(shape.size()) +
                    " is above the CUDA kernels' limit of " +
                    std::to_string(kMaxRank));
  int rank = static_cast<int>(shape.size());
  std::vector<bool> isReduced(rank, false);
  for (int64_t d : dims)
    isReduced[d] = true;
  std::vector<int64_t> strides(rank, 1);
  for (int d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  // Runs of one kind, outermost first: (reduced?, size, innermost stride).
  struct Run {
    bool reduced;
    int64_t size, stride;
  };
  std::vector<Run> runs;
  ReducePlan plan;
  for (int d = 0; d < rank; ++d) {
    (isReduced[d] ? plan.count : plan.outputs) *= shape[d];
    if (shape[d] == 1)
      continue;
    // A contiguous tensor: a dim directly outside another of the same kind
    // has stride = inner size * inner stride, so the two are one dim.
    if (!runs.empty() && runs.back().reduced == isReduced[d]) {
      runs.back().size *= shape[d];
      runs.back().stride = strides[d];
    } else {
      runs.push_back({isReduced[d], shape[d], strides[d]});
    }
  }
  for (const Run &run : runs) {
    Dims &target = run.reduced ? plan.reduced : plan.kept;
    target.size[target.rank] = run.size;
    target.stride[target.rank] = run.stride;
    ++target.rank;
  }
  // [kept] reduced: one trailing block of reduced elements.
  plan.rows = plan.reduced.rank == 1 && runs.back().reduced &&
              plan.kept.rank <= 1 && plan.count >= kThreadRowLimit;
  return plan;
}

//===----------------------------------------------------------------------===//
// Rotary
//===----------------------------------------------------------------------===//

/// rotary: out = x * cos + rotate(x) * sin, where rotate pairs element a
/// with b (b = a + D/2, or a + 1 when interleaved) as (a, b) -> (-b, a).
/// Thread p does the whole pair p, reading both elements before writing
/// either, so out may be x itself. cos and sin broadcast to x: the row
/// (every dim but the last) is unravelled once for both.
template <typename T> struct RotaryPairs {
  const T *x;
  const T *cos;
  const T *sin;
  T *y;
  /// Row dims (x's dims but the last, merged where both tables allow):
  /// sizes, and strides into cos and sin.
  int rank = 0;
  int64_t rowSize[kMaxRank] = {};
  int64_t cosStride[kMaxRank] = {};
  int64_t sinStride[kMaxRank] = {};
  /// The last dim: its size D and its strides in cos and sin.
  int64_t width = 0, cosLast = 0, sinLast = 0;
  bool interleaved = false;

  BRAID_HD void operator()(int64_t p) const {
    int64_t half = width / 2;
    int64_t row = p / half, q = p - row * half;
    int64_t cosRow = 0, sinRow = 0, rest = row;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t next = rest / rowSize[d];
      int64_t index = rest - next * rowSize[d];
      cosRow += index * cosStride[d];
      sinRow += index * sinStride[d];
      rest = next;
    }
    int64_t a = interleaved ? 2 * q : q;
    int64_t b = interleaved ? a + 1 : q + half;
    const T *in = x + row * width;
    float xa = toFloat(in[a]), xb = toFloat(in[b]);
    float cosA = toFloat(cos[cosRow + a * cosLast]);
    float cosB = toFloat(cos[cosRow + b * cosLast]);
    float sinA = toFloat(sin[sinRow + a * sinLast]);
    float sinB = toFloat(sin[sinRow + b * sinLast]);
    T *out = y + row * width;
    out[a] = fromFloat<T>(xa * cosA - xb * sinA);
    out[b] = fromFloat<T>(xb * cosB + xa * sinB);
  }
};

/// The functor of rotary(x, cos, sin) -> y for contiguous tensors; x has an
/// even last dim and cos, sin broadcast to x (the CPU backend's check).
/// Runs over numElements(x) / 2 pairs.
template <typename T>
RotaryPairs<T> makeRotaryPairs(const std::vector<int64_t> &shape,
                               const std::vector<int64_t> &cosShape,
                               const std::vector<int64_t> &sinShape, const T *x,
                               const T *cos, const T *sin, T *y,
                               bool interleaved) {
  Dims cosDims = broadcastDims(cosShape, shape);
  Dims sinDims = broadcastDims(sinShape, shape);
  RotaryPairs<T> f{x, cos, sin, y};
  int last = static_cast<int>(shape.size()) - 1;
  f.width = shape[last];
  f.cosLast = cosDims.stride[last];
  f.sinLast = sinDims.stride[last];
  f.interleaved = interleaved;
  for (int d = 0; d < last; ++d) {
    if (shape[d] == 1)
      continue;
    // Merge into the dim outside when both tables step through the two as
    // through one (e.g. both broadcast along them).
    if (f.rank > 0 && f.cosStride[f.rank - 1] == cosDims.stride[d] * shape[d] &&
        f.sinStride[f.rank - 1] == sinDims.stride[d] * shape[d]) {
      f.rowSize[f.rank - 1] *= shape[d];
      f.cosStride[f.rank - 1] = cosDims.stride[d];
      f.sinStride[f.rank - 1] = sinDims.stride[d];
      continue;
    }
    f.rowSize[f.rank] = shape[d];
    f.cosStride[f.rank] = cosDims.stride[d];
    f.sinStride[f.rank] = sinDims.stride[d];
    ++f.rank;
  }
  return f;
}

//===----------------------------------------------------------------------===//
// The host's mirror of the row kernels
//===----------------------------------------------------------------------===//

/// What the warp shuffles do: xor butterfly over 32 lanes, each lane
/// combining its own value with its partner's, in that order.
template <typename Rows>
void butterflyOnHost(std::vector<typename Rows::Stats> &lanes, size_t first) {
  for (int mask = kWarpSize / 2; mask > 0; mask >>= 1) {
    std::vector<typename Rows::Stats> before(lanes.begin() + first,
                                             lanes.begin() + first + kWarpSize);
    for (int lane = 0; lane < kWarpSize; ++lane)
      lanes[first + lane] = Rows::combine(before[lane], before[lane ^ mask]);
  }
}

/// Runs rows [0, count) as the warp kernel (workers == 32) or the block
/// kernel (workers a multiple of 32, at most 1024) does: every partial,
/// the butterfly within each warp, then one over the warps' results padded
/// with the identity, then every write.
template <typename Rows>
void runRowsOnHost(const Rows &rows, int64_t count, int workers) {
  using Stats = typename Rows::Stats;
  int warps = workers / kWarpSize;
  for (int64_t row = 0; row < count; ++row) {
    std::vector<Stats> partials(workers);
    for (int w = 0; w < workers; ++w)
      partials[w] = rows.partial(row, w, workers);
    for (int warp = 0; warp < warps; ++warp)
      butterflyOnHost<Rows>(partials, static_cast<size_t>(warp) * kWarpSize);
    Stats total = partials[0];
    if (warps > 1) {
      std::vector<Stats> results(kWarpSize, Rows::identity());
      for (int warp = 0; warp < warps; ++warp)
        results[warp] = partials[static_cast<size_t>(warp) * kWarpSize];
      butterflyOnHost<Rows>(results, 0);
      total = results[0];
    }
    for (int w = 0; w < workers; ++w)
      rows.write(row, w, workers, total);
  }
}

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_KERNELS_NORMOPS_CUH
