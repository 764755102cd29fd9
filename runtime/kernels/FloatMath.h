//===- FloatMath.h - float approximations and the kernels' parallel loop -===//
//
// Part of the Braid project.
//
// Included by FloatKernels.cpp (built for baseline x86-64) and by
// FloatKernelsAvx512.cpp (built with -mavx512f): everything here has
// internal linkage, so each file gets its own copy for its instruction set
// and the linker never picks one for the other.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_KERNELS_FLOATMATH_H
#define BRAID_RUNTIME_KERNELS_FLOATMATH_H

#include "runtime/kernels/CpuKernels.h"
#include "runtime/reference/ReferenceKernels.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>

namespace braid::rt::cpu {
namespace {

/// Below this many (element-sized) steps of work a kernel loop runs on the
/// calling thread alone: waking an OpenMP team whose threads have gone to
/// sleep costs tens of microseconds (measured: 32k-element adds took 85 us
/// on two threads against 14 on one).
constexpr int64_t kParallelGrain = 1 << 18;

/// body(begin, end) over [0, count), split into contiguous ranges over the
/// kernel threads when `work` (steps, about a nanosecond each) is worth it.
/// Inside a parallel region it runs whole on the calling thread. An
/// exception from any range is rethrown on the caller.
template <typename F> void parallelFor(int64_t count, int64_t work, F body) {
#ifdef _OPENMP
  int64_t threads = std::min<int64_t>(cpuKernelThreads(), count);
  if (threads > 1 && work >= kParallelGrain && !omp_in_parallel()) {
    std::exception_ptr failure;
#pragma omp parallel num_threads(static_cast <int>(threads))
    {
      int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
      try {
        body(count * t / n, count * (t + 1) / n);
      } catch (...) {
#pragma omp critical(braid_parallel_for)
        failure = std::current_exception();
      }
    }
    if (failure)
      std::rethrow_exception(failure);
    return;
  }
#endif
  (void)work;
  body(int64_t{0}, count);
}

// The float approximations below: every choice is a select on integer
// masks of the bits (a float compare or a ternary on floats leaves control
// flow GCC does not vectorize).
inline int32_t bitsOf(float f) {
  int32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}
inline float floatOf(int32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// exp(c) = p 2^k: k = round(c / ln 2) (`bias` makes the truncation a floor
/// for c >= -bias ln 2), p = exp(r) on r = c - k ln 2 (Cody-Waite: ln 2
/// split as cephes' expf does) by its degree-7 Taylor polynomial, |r| <=
/// ln(2)/2, error below 1e-8.
inline float expOfReduced(float c, int32_t bias, int32_t &k) {
  k = static_cast<int32_t>(c * 1.44269504f + (static_cast<float>(bias) + 0.5f)) -
      bias;
  float kf = static_cast<float>(k);
  float r = (c - kf * 0.693359375f) - kf * -2.12194440e-4f;
  return 1.0f +
         r * (1.0f +
              r * (0.5f +
                   r * (1.0f / 6 +
                        r * (1.0f / 24 +
                             r * (1.0f / 120 +
                                  r * (1.0f / 720 + r * (1.0f / 5040)))))));
}

/// exp(x) 2^shift in float (shift in [0, 30], the power of two applied
/// exactly; fastExp is shift 0), within 1 ulp where the result is a normal
/// float (tested): x clamped to [-104, 89] (0 and infinity in float beyond;
/// NaN is clamped too, so no conversion is undefined, and passed on at the
/// end; below -104 the result is set to 0), expOfReduced, and 2^k applied
/// as two factors 2^(k/2) so that results in the denormal range come out
/// (twice rounded) rather than as 0.
inline float fastExpShifted(float x, int32_t shift) {
  int32_t xi = bitsOf(x);
  int32_t low = -static_cast<int32_t>(x < -104.0f);
  int32_t high = -static_cast<int32_t>(!(x <= 89.0f)); // NaN too
  // Below -104 the result is 0: compute at 0 meanwhile (the clamped
  // value's scaling would make denormals, and arithmetic on them takes
  // microcode assists) and set 0 at the end.
  float c = floatOf((xi & ~(low | high)) | (bitsOf(89.0f) & high));
  // Biased so that the truncation is a floor down to c = -104.
  int32_t k;
  float p = expOfReduced(c, 151, k);
  int32_t half = k >> 1;
  float result = p * floatOf((half + 127) << 23) *
                 floatOf((k - half + shift + 127) << 23);
  int32_t nan = -static_cast<int32_t>((xi & 0x7fffffff) > 0x7f800000);
  return floatOf((xi & nan) | (bitsOf(result) & ~nan & ~low));
}

inline float fastExp(float x) { return fastExpShifted(x, 0); }

/// tanh in float, within 4 ulp of the correctly rounded result (tested
/// against double on a dense sweep), branch-free so that the loop
/// vectorizes (2.0 ns an element with SSE2 against 9.8 for the reference's
/// double tanh, which took a third of the example GPT-2's inference time).
///  - |x| < 0.55: x + x^3 P(x^2), P of degree 4 fitted by least squares to
///    (tanh(x) - x) / x^3 on Chebyshev nodes (relative error 4e-9);
///  - otherwise 1 - 2 / (exp(2|x|) + 1) with the sign of x
///    (expOfReduced); NaN and zeros are passed on.
inline float fastTanh(float x) {
  constexpr int32_t kBelow055 = 0x3f0ccccd; // bits of 0.55f
  constexpr int32_t kBelow44 = 0x42300000;  // bits of 44.0f
  constexpr int32_t kInfinity = 0x7f800000;
  int32_t xi = bitsOf(x);
  int32_t ai = xi & 0x7fffffff;
  float a = floatOf(ai);
  float s = x * x;
  float poly =
      x + x * s *
              (-0.33333331f +
               s * (0.13333118f +
                    s * (-0.053910065f + s * (0.021312743f - s * 0.0066157528f))));
  // exp(2|x|) for 2|x| capped at 88 (where tanh is +-1 in float; NaN is
  // capped too): k in [0, 127], one exponent factor, cheaper than fastExp.
  int32_t inRange = -static_cast<int32_t>(ai < kBelow44);
  float y = floatOf((bitsOf(2.0f * a) & inRange) | (bitsOf(88.0f) & ~inRange));
  int32_t k;
  float e = expOfReduced(y, 0, k) * floatOf((k + 127) << 23);
  int32_t big = bitsOf(1.0f - 2.0f / (e + 1.0f)) | (xi & INT32_MIN);
  int32_t small = -static_cast<int32_t>(ai < kBelow055);
  int32_t result = (bitsOf(poly) & small) | (big & ~small);
  // NaN passes on; so does a zero, with its sign (poly's sum loses -0's).
  int32_t keep = -static_cast<int32_t>((ai > kInfinity) | (ai == 0));
  return floatOf((xi & keep) | (result & ~keep));
}

inline float fastSigmoid(float x) { return 1.0f / (1.0f + fastExp(-x)); }

/// v sigmoid(t) with e = exp(-|t|), which cannot overflow: v / (1 + e) for
/// t >= 0, v e / (1 + e) below (v / (1 + exp(-t)) would divide by infinity
/// for t < -88.7, where x sigmoid(x) is still a normal float). e is computed
/// times 2^24, so that v e keeps its precision where e alone is a denormal,
/// and scaled back once at the end.
inline float timesSigmoid(float v, float t) {
  constexpr float kUnscale = 5.9604644775390625e-8f; // 2^-24
  float scaled = fastExpShifted(-std::fabs(t), 24);
  float e = scaled * kUnscale;
  int32_t negative = bitsOf(t) >> 31; // all ones for -0 and below
  float numerator = floatOf((bitsOf((v * scaled) * kUnscale) & negative) |
                            (bitsOf(v) & ~negative));
  return numerator / (1.0f + e);
}

inline float fastSilu(float v) { return timesSigmoid(v, v); }

/// tanh-GELU, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3),
/// as x sigmoid(2u): the same function without 1 + tanh's cancellation for
/// negative x. 2u = x (c1 + c2 x^2) is within a few ulp; sigmoid multiplies
/// that relative error by about |2u| where the result is tiny (tested:
/// within 2e-5 relative where the result is a normal float).
inline float fastGeluTanh(float x) {
  constexpr float c1 = 1.59576912160573f;   // 2 sqrt(2/pi)
  constexpr float c2 = 0.0713548162726009f; // 2 sqrt(2/pi) 0.044715
  return timesSigmoid(x, x * (c1 + c2 * (x * x)));
}

/// Exact GELU, x Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2, in float and
/// branch-free. h = erfc(z) / 2 for z = |x| / sqrt 2 comes from the
/// Chebyshev fit erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), of
/// fractional error below 1.2e-7 for every z >= 0 (Numerical Recipes'
/// erfcc); then Phi = 1 - h for x >= 0 (h <= 1/2: no cancellation) and h
/// below, where x h is computed with h times 2^24 so that it keeps its
/// precision where h alone is a denormal (as timesSigmoid does). The
/// exponent's rounding at large |x| bounds the error (tested: within 3e-5
/// relative where the result is a normal float).
inline float fastGeluErf(float x) {
  constexpr float kUnscale = 5.9604644775390625e-8f; // 2^-24
  float z = std::fabs(x) * 0.707106781186547524f;
  float t = 1.0f / (1.0f + 0.5f * z);
  float p = -1.26551223f +
            t * (1.00002368f +
                 t * (0.37409196f +
                      t * (0.09678418f +
                           t * (-0.18628806f +
                                t * (0.27886807f +
                                     t * (-1.13520398f +
                                          t * (1.48851587f +
                                               t * (-0.82215223f +
                                                    t * 0.17087277f))))))));
  float halfScaled = 0.5f * t * fastExpShifted(p - z * z, 24); // h 2^24
  int32_t negative = bitsOf(x) >> 31; // all ones for -0 and below
  float below = (x * halfScaled) * kUnscale;
  float above = x * (1.0f - halfScaled * kUnscale);
  return floatOf((bitsOf(below) & negative) | (bitsOf(above) & ~negative));
}

/// y[i] = f(x[i]); with f inlined the loop vectorizes, so f must be a
/// lambda: a function pointer is not inlined into the threads' outlined
/// loop (measured: tanh-GELU at 13 ns an element instead of 2.7).
template <typename F>
void mapLoop(const float *x, float *y, int64_t count, F f) {
  parallelFor(count, count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = f(x[i]);
  });
}

/// The unary kinds computed by the approximations above, mapped over `x`
/// into `y`; false (nothing written) for the others.
bool mapFloatUnaryHere(ref::UnaryKind kind, const float *x, float *y,
                       int64_t count) {
  using U = ref::UnaryKind;
  switch (kind) {
  case U::Tanh:
    mapLoop(x, y, count, [](float v) { return fastTanh(v); });
    return true;
  case U::Exp:
    mapLoop(x, y, count, [](float v) { return fastExp(v); });
    return true;
  case U::Sigmoid:
    mapLoop(x, y, count, [](float v) { return fastSigmoid(v); });
    return true;
  case U::Silu:
    mapLoop(x, y, count, [](float v) { return fastSilu(v); });
    return true;
  case U::Gelu:
    mapLoop(x, y, count, [](float v) { return fastGeluErf(v); });
    return true;
  case U::GeluTanh:
    mapLoop(x, y, count, [](float v) { return fastGeluTanh(v); });
    return true;
  default:
    return false;
  }
}

/// combine(...combine(identity, f(x[0]))..., f(x[size - 1])) in sixteen
/// running lanes, lane i % 16 taking element i, the lanes then combined
/// pairwise: sixteen independent chains let the loop vectorize, which one
/// (ordered float adds, say) does not, and the order does not depend on
/// the vector width.
template <typename F, typename C>
float laneReduce(const float *x, int64_t size, float identity, F f, C combine) {
  constexpr int64_t kLanes = 16;
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, identity);
  int64_t i = 0;
  for (; i + kLanes <= size; i += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      lanes[l] = combine(lanes[l], f(x[i + l]));
  for (int64_t l = 0; i + l < size; ++l)
    lanes[l] = combine(lanes[l], f(x[i + l]));
  for (int64_t width = kLanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l)
      lanes[l] = combine(lanes[l], lanes[l + width]);
  return lanes[0];
}

/// The float sum of f(x[i]) over a row, by laneReduce (pairwise in float:
/// sixteen dependent double adds cost more than a whole 64-element row).
template <typename F> float laneSum(const float *x, int64_t size, F f) {
  return laneReduce(x, size, 0.0f, f,
                    [](float acc, float v) { return acc + v; });
}

/// Layer normalization (`centered`: mean and variance, then gamma and the
/// optional beta) or RMS normalization (mean square, then gamma) of `rows`
/// rows of `size` floats from x into y (which may be x), in float: the
/// statistics by laneSum (two passes for the variance, about the mean), the
/// scale 1 / sqrt(. + epsilon) in double, the output (x - mean) scale
/// gamma + beta in one vectorized pass.
void normRowsHere(const float *x, const float *gamma, const float *beta,
                  float *y, int64_t rows, int64_t size, double epsilon,
                  bool centered) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *in = x + r * size;
    float *out = y + r * size;
    float mean = 0;
    float moment;
    if (centered) {
      mean = static_cast<float>(
          static_cast<double>(laneSum(in, size, [](float v) { return v; })) /
          static_cast<double>(size));
      moment = laneSum(in, size, [mean](float v) {
        float d = v - mean;
        return d * d;
      });
    } else {
      moment = laneSum(in, size, [](float v) { return v * v; });
    }
    auto scale = static_cast<float>(
        1.0 / std::sqrt(moment / static_cast<double>(size) + epsilon));
    if (beta) {
#pragma omp simd
      for (int64_t j = 0; j < size; ++j)
        out[j] = (in[j] - mean) * scale * gamma[j] + beta[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < size; ++j)
        out[j] = (in[j] - mean) * scale * gamma[j];
    }
  }
}

/// The largest of x[0, size) (-inf for none), by laneReduce (a NaN is
/// passed over, as a compare-and-select passes it).
inline float laneMax(const float *x, int64_t size) {
  return laneReduce(
      x, size, -INFINITY, [](float v) { return v; },
      [](float acc, float v) { return v > acc ? v : acc; });
}

/// One query row of scaled, masked scores -> softmax weights, in place, in
/// float: the weights past `limit` (the causal bound) are 0; a row with
/// nothing kept is all 0, as the reference gives. The mask's row is at
/// `maskRow`, walked with `maskStep` (1, or 0 for one broadcast element).
void softmaxScoresRowHere(float *row, int64_t sk, int64_t limit, float scale,
                          const TensorView *mask, int64_t maskRow,
                          int64_t maskStep) {
  if (!mask) {
#pragma omp simd
    for (int64_t j = 0; j < limit; ++j)
      row[j] *= scale;
  } else if (mask->dtype == DType::I1) {
    const uint8_t *keep = mask->as<uint8_t>() + maskRow;
    for (int64_t j = 0; j < limit; ++j)
      row[j] = keep[j * maskStep] ? row[j] * scale : -INFINITY;
  } else {
    // An additive mask less its row maximum (softmax is the same for any
    // shift of a row): a row padded out with -1e9 everywhere would lose the
    // scores to float rounding at 1e9, where the reference, in double,
    // keeps them.
    const float *add = mask->as<float>() + maskRow;
    float top = maskStep || limit == 0 ? -INFINITY : add[0];
    if (maskStep)
      top = laneMax(add, limit);
    if (top == -INFINITY) {
      std::fill(row, row + limit, -INFINITY);
    } else if (maskStep == 1) {
#pragma omp simd
      for (int64_t j = 0; j < limit; ++j)
        row[j] = row[j] * scale + (add[j] - top);
    } else {
      float shift = add[0] - top; // 0, or NaN for a NaN mask
#pragma omp simd
      for (int64_t j = 0; j < limit; ++j)
        row[j] = row[j] * scale + shift;
    }
  }
  float best = laneMax(row, limit);
  float sum = 0;
  if (best != -INFINITY) {
#pragma omp simd
    for (int64_t j = 0; j < limit; ++j)
      row[j] = fastExp(row[j] - best);
    sum = laneSum(row, limit, [](float v) { return v; });
  }
  float inverse = sum > 0 ? 1.0f / sum : 0.0f;
#pragma omp simd
  for (int64_t j = 0; j < limit; ++j)
    row[j] *= inverse;
  std::fill(row + limit, row + sk, 0.0f);
}

/// c[m, n] = a[m, k] b[k, n], all row-major, each row of c a sum of k rows
/// of b, vectorized along n: attention's products for small heads, where a
/// GEMM library call costs more than the arithmetic.
void smallProductHere(const float *a, const float *b, float *c, int64_t m,
                      int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    float *row = c + i * n;
    std::fill(row, row + n, 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      float factor = a[i * k + p];
      const float *from = b + p * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j)
        row[j] += factor * from[j];
    }
  }
}

} // namespace
} // namespace braid::rt::cpu

#endif // BRAID_RUNTIME_KERNELS_FLOATMATH_H
