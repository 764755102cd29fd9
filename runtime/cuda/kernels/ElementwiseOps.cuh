//===- ElementwiseOps.cuh - functors of the elementwise kernels -*- CUDA
//-*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The elementwise ops (unary math, binary arithmetic with numpy
// broadcasting, compare, select, cast) as one generic map functor plus one
// small value functor per op. Everything that decides how a map runs (which
// operand is broadcast, how dimensions merge, whether 16-byte packs are
// safe) is host code here too, parameterized by a launcher: Elementwise.cu
// passes one that calls launchPointwise, the unit tests one that calls
// runOnHost, so the tests run exactly the code the GPU runs.
//
// Semantics are those of the reference kernels: floating types compute in
// float and round once to the element type; integers compute in int64 and
// are stored as the element type holds them (i32 wraps, i1 is `!= 0`).
// Where the reference throws on a value (integer division by zero, a float
// out of an integer's range in a cast) a GPU kernel cannot; the value
// functors document what they produce instead.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_KERNELS_ELEMENTWISEOPS_CUH
#define BRAID_RUNTIME_CUDA_KERNELS_ELEMENTWISEOPS_CUH

#include "runtime/cuda/kernels/CudaCommon.cuh"
#include "runtime/exec/KernelRegistry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

/// `#pragma unroll` for device code only (the host compiler warns about it).
#ifdef __CUDA_ARCH__
#define BRAID_EW_UNROLL _Pragma("unroll")
#else
#define BRAID_EW_UNROLL
#endif

namespace braid::rt::cuda::ew {

//===----------------------------------------------------------------------===//
// Element helpers
//===----------------------------------------------------------------------===//

template <typename T>
constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, f16> ||
                          std::is_same_v<T, bf16>;

/// An integer or i1 element as int64 (i1 reads as 0 / 1).
template <typename T> BRAID_HD int64_t toInt(T value) {
  return static_cast<int64_t>(value);
}

/// Stores an int64 result as `T` holds it: i32 keeps the low 32 bits, i1 is
/// `!= 0` (the reference's storeInt).
template <typename T> BRAID_HD T storeInt(int64_t value) {
  if constexpr (std::is_same_v<T, bool>)
    return value != 0;
  else if constexpr (std::is_same_v<T, int32_t>)
    return static_cast<int32_t>(
        static_cast<uint32_t>(static_cast<uint64_t>(value)));
  else
    return value;
}

/// Rounds a double once to a floating element type (no double rounding
/// through float: the reference rounds the double directly).
template <typename T> BRAID_HD T fromDouble(double value) {
  if constexpr (std::is_same_v<T, f16>)
    return __double2half(value);
  else if constexpr (std::is_same_v<T, bf16>)
    return __double2bfloat16(value);
  else
    return static_cast<float>(value);
}

/// Two's-complement wrapping arithmetic on int64 (signed overflow is
/// undefined in C++, unsigned arithmetic wraps).
BRAID_HD int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
BRAID_HD int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
BRAID_HD int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}

//===----------------------------------------------------------------------===//
// Packs and index math shared with the data-movement kernels
//===----------------------------------------------------------------------===//

/// `V` consecutive elements loaded or stored as one access (at most 16
/// bytes, aligned to its size, so the GPU issues a single vector load).
template <typename T, int V> struct alignas(sizeof(T) * V) Pack { T v[V]; };

template <typename T, int V> BRAID_HD Pack<T, V> loadPack(const T *p) {
  return *reinterpret_cast<const Pack<T, V> *>(p);
}
template <typename T, int V>
BRAID_HD void storePack(T *p, const Pack<T, V> &pack) {
  *reinterpret_cast<Pack<T, V> *>(p) = pack;
}

/// a / b for non-negative a and positive b; 32-bit division (far cheaper on
/// the GPU) whenever both fit.
BRAID_HD int64_t divIndex(int64_t a, int64_t b) {
  if (((a | b) >> 31) == 0)
    return static_cast<int64_t>(static_cast<uint32_t>(a) /
                                static_cast<uint32_t>(b));
  return a / b;
}

/// The element offset of linear index `i` (i < the product of the sizes) in
/// `dims`. Like Dims::offsetOf, with cheaper divisions, a fully unrolled loop
/// (the sizes stay in kernel parameters, never in local memory) and no
/// division for the outermost dimension.
BRAID_HD int64_t offsetOf(const Dims &dims, int64_t i) {
  int64_t offset = 0;
  BRAID_EW_UNROLL
  for (int d = kMaxRank - 1; d > 0; --d) {
    if (d >= dims.rank)
      continue;
    int64_t q = divIndex(i, dims.size[d]);
    offset += (i - q * dims.size[d]) * dims.stride[d];
    i = q;
  }
  if (dims.rank > 0)
    offset += i * dims.stride[0];
  return offset;
}

/// Rewrites `count` Dims that share their sizes (views of several operands
/// indexed by the same contiguous output) to the fewest dimensions: drops
/// size-1 dimensions and merges a dimension into the next inner one when
/// every operand steps over the inner one contiguously. Row-major order of
/// the output is kept, so linear output indices mean the same.
inline void coalesce(Dims *dims, int count) {
  int rank = dims[0].rank;
  int merged = 0;
  for (int d = 0; d < rank; ++d) {
    int64_t size = dims[0].size[d];
    if (size == 1)
      continue;
    bool joins = merged > 0;
    for (int k = 0; k < count && joins; ++k)
      joins = dims[k].stride[merged - 1] == dims[k].stride[d] * size;
    if (joins) {
      for (int k = 0; k < count; ++k) {
        dims[k].size[merged - 1] *= size;
        dims[k].stride[merged - 1] = dims[k].stride[d];
      }
      continue;
    }
    for (int k = 0; k < count; ++k) {
      dims[k].size[merged] = size;
      dims[k].stride[merged] = dims[k].stride[d];
    }
    ++merged;
  }
  for (int k = 0; k < count; ++k) {
    for (int d = merged; d < kMaxRank; ++d) {
      dims[k].size[d] = 0;
      dims[k].stride[d] = 0;
    }
    dims[k].rank = merged;
  }
}

inline bool isAligned(const void *p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

//===----------------------------------------------------------------------===//
// The map functor
//===----------------------------------------------------------------------===//

/// One operand of a map.
template <typename T> struct Operand {
  const T *data = nullptr;
  /// Broadcast maps: the operand's element offsets by output index.
  Dims dims;
  /// Broadcast vector maps: the innermost stride is 0, so a whole pack
  /// reads one element.
  bool splat = false;
};

/// out[e] = fn(a[e], b[e], c[e]) for the first `Arity` operands. Index i <
/// `chunks` handles elements [i*V, i*V+V) with packs; the indices after it
/// handle one element each, up to `n` (the tail that fills no pack). With
/// `Broadcast`, operands read through their Dims; a broadcast map with V > 1
/// needs (the planner checks) an innermost dimension size divisible by V and
/// innermost strides 0 (splat) or 1 (packed, every other stride divisible by
/// V), so that a pack never crosses a row and stays aligned.
template <int Arity, int V, bool Broadcast, typename Fn, typename Out,
          typename A, typename B, typename C>
struct MapFunctor {
  Fn fn;
  Out *out = nullptr;
  Operand<A> a;
  Operand<B> b;
  Operand<C> c;
  int64_t chunks = 0;
  int64_t n = 0;

  template <typename T>
  BRAID_HD Pack<T, V> loadChunk(const Operand<T> &in, int64_t first) const {
    if constexpr (!Broadcast) {
      return loadPack<T, V>(in.data + first);
    } else {
      const T *p = in.data + offsetOf(in.dims, first);
      if (!in.splat)
        return loadPack<T, V>(p);
      Pack<T, V> pack;
      T value = *p;
      BRAID_EW_UNROLL
      for (int j = 0; j < V; ++j)
        pack.v[j] = value;
      return pack;
    }
  }

  template <typename T>
  BRAID_HD T loadOne(const Operand<T> &in, int64_t e) const {
    if constexpr (Broadcast)
      return in.data[offsetOf(in.dims, e)];
    else
      return in.data[e];
  }

  BRAID_HD void operator()(int64_t i) const {
    if (i < chunks) {
      int64_t first = i * V;
      Pack<Out, V> result;
      Pack<A, V> x = loadChunk(a, first);
      if constexpr (Arity == 1) {
        BRAID_EW_UNROLL
        for (int j = 0; j < V; ++j)
          result.v[j] = fn(x.v[j]);
      } else if constexpr (Arity == 2) {
        Pack<B, V> y = loadChunk(b, first);
        BRAID_EW_UNROLL
        for (int j = 0; j < V; ++j)
          result.v[j] = fn(x.v[j], y.v[j]);
      } else {
        Pack<B, V> y = loadChunk(b, first);
        Pack<C, V> z = loadChunk(c, first);
        BRAID_EW_UNROLL
        for (int j = 0; j < V; ++j)
          result.v[j] = fn(x.v[j], y.v[j], z.v[j]);
      }
      storePack<Out, V>(out + first, result);
      return;
    }
    int64_t e = chunks * V + (i - chunks);
    if constexpr (Arity == 1)
      out[e] = fn(loadOne(a, e));
    else if constexpr (Arity == 2)
      out[e] = fn(loadOne(a, e), loadOne(b, e));
    else
      out[e] = fn(loadOne(a, e), loadOne(b, e), loadOne(c, e));
  }
};

/// Runs `fn` over the elements of `out`, reading the `Arity` tensors `ins`
/// (types A, B, C; they broadcast to `out` as the CPU checks ensured).
/// `launch(functor, count)` runs functor(i) for i < count. Picks:
///  - no broadcast: contiguous packs of 16 bytes (of the widest operand)
///    when every pointer is aligned, else one element per index;
///  - broadcast: coalesced Dims, with packs when the innermost dimension
///    allows (a bias or residual add), else one element per index.
template <int Arity, typename Out, typename A, typename B, typename C,
          typename Fn, typename Launch>
void runMap(const Fn &fn, const TensorView &out, const TensorView *const *ins,
            Launch &&launch) {
  constexpr size_t kSizes[] = {sizeof(Out), sizeof(A),
                               Arity >= 2 ? sizeof(B) : 1,
                               Arity >= 3 ? sizeof(C) : 1};
  constexpr size_t kWidest =
      std::max(std::max(kSizes[0], kSizes[1]), std::max(kSizes[2], kSizes[3]));
  constexpr int V = static_cast<int>(16 / kWidest);
  const size_t sizes[3] = {sizeof(A), sizeof(B), sizeof(C)};

  int64_t n = out.numElements();
  if (n <= 0)
    return;
  bool broadcast = false;
  for (int k = 0; k < Arity; ++k)
    broadcast = broadcast || ins[k]->shape != out.shape;

  auto operands = [&](auto &map) {
    map.fn = fn;
    map.out = static_cast<Out *>(out.data);
    map.a.data = static_cast<const A *>(ins[0]->data);
    if constexpr (Arity >= 2)
      map.b.data = static_cast<const B *>(ins[1]->data);
    if constexpr (Arity >= 3)
      map.c.data = static_cast<const C *>(ins[2]->data);
    map.n = n;
  };

  if (!broadcast) {
    bool packs = isAligned(out.data, V * sizeof(Out));
    for (int k = 0; k < Arity; ++k)
      packs = packs && isAligned(ins[k]->data, V * sizes[k]);
    if (packs) {
      MapFunctor<Arity, V, false, Fn, Out, A, B, C> map;
      operands(map);
      map.chunks = n / V;
      launch(map, map.chunks + n % V);
    } else {
      MapFunctor<Arity, 1, false, Fn, Out, A, B, C> map;
      operands(map);
      map.chunks = n;
      launch(map, n);
    }
    return;
  }

  if constexpr (Arity >= 2) {
    Dims dims[Arity];
    for (int k = 0; k < Arity; ++k)
      dims[k] = broadcastDims(ins[k]->shape, out.shape);
    coalesce(dims, Arity);
    int rank = dims[0].rank;
    bool packs = V > 1 && rank >= 1 && dims[0].size[rank - 1] % V == 0 &&
                 isAligned(out.data, V * sizeof(Out));
    for (int k = 0; k < Arity && packs; ++k) {
      int64_t inner = dims[k].stride[rank - 1];
      packs =
          inner == 0 || (inner == 1 && isAligned(ins[k]->data, V * sizes[k]));
      // A splatted operand reads one element per pack, anywhere; a packed
      // one must start every row on a pack boundary.
      for (int d = 0; d + 1 < rank && inner == 1; ++d)
        packs = packs && dims[k].stride[d] % V == 0;
    }
    auto setDims = [&](auto &map) {
      operands(map);
      map.a.dims = dims[0];
      map.b.dims = dims[1];
      if constexpr (Arity >= 3)
        map.c.dims = dims[2];
      map.a.splat = rank >= 1 && dims[0].stride[rank - 1] == 0;
      map.b.splat = rank >= 1 && dims[1].stride[rank - 1] == 0;
      if constexpr (Arity >= 3)
        map.c.splat = rank >= 1 && dims[2].stride[rank - 1] == 0;
    };
    if (packs) {
      MapFunctor<Arity, V, true, Fn, Out, A, B, C> map;
      setDims(map);
      map.chunks = n / V;
      launch(map, map.chunks);
    } else {
      MapFunctor<Arity, 1, true, Fn, Out, A, B, C> map;
      setDims(map);
      map.chunks = n;
      launch(map, n);
    }
  } else {
    throw CudaError("elementwise: a unary op's output shape " +
                    shapeToString(out.shape) + " differs from its input's " +
                    shapeToString(ins[0]->shape));
  }
}

//===----------------------------------------------------------------------===//
// Value functors
//===----------------------------------------------------------------------===//

enum class Unary {
  Neg,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Erf,
  Sigmoid,
  Silu,
  Relu,
  Gelu,
  GeluTanh
};

/// The unary ops in float; only Neg and Relu also take integers and i1.
template <Unary K> struct UnaryFn {
  static BRAID_HD float apply(float x) {
    switch (K) {
    case Unary::Neg:
      return -x;
    case Unary::Exp:
      return expf(x);
    case Unary::Log:
      return logf(x);
    case Unary::Sqrt:
      return sqrtf(x);
    case Unary::Rsqrt:
      // Not rsqrtf: the host has none, and host and device must agree.
      return 1.f / sqrtf(x);
    case Unary::Tanh:
      return tanhf(x);
    case Unary::Erf:
      return erff(x);
    case Unary::Sigmoid:
      return 1.f / (1.f + expf(-x));
    case Unary::Silu:
      return x / (1.f + expf(-x));
    case Unary::Relu:
      return x < 0.f ? 0.f : x; // NaN stays NaN.
    case Unary::Gelu:
      return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case Unary::GeluTanh:
      return 0.5f * x *
             (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    }
    return x;
  }

  template <typename T> BRAID_HD T operator()(T x) const {
    if constexpr (kIsFloat<T>) {
      return fromFloat<T>(apply(toFloat(x)));
    } else {
      static_assert(K == Unary::Neg || K == Unary::Relu,
                    "only neg and relu take integers");
      int64_t v = toInt(x);
      return storeInt<T>(K == Unary::Neg ? wrapSub(0, v) : (v < 0 ? 0 : v));
    }
  }
};

enum class Binary { Add, Sub, Mul, Div, Pow, Max, Min };

/// Integer `base ^ exponent`, wrapping; a negative exponent truncates
/// 1 / base^-exponent toward zero. 0 to a negative power (the reference
/// throws) gives 0.
BRAID_HD int64_t intPow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
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

/// Binary arithmetic. Floats compute in float: for + - * / this is exactly
/// the reference's rounding (float has more than 2p+2 bits for f16 and
/// bf16). Integers compute in int64 and wrap; integer division by zero (the
/// reference throws) gives 0.
template <Binary K> struct BinaryFn {
  static BRAID_HD float apply(float a, float b) {
    switch (K) {
    case Binary::Add:
      return a + b;
    case Binary::Sub:
      return a - b;
    case Binary::Mul:
      return a * b;
    case Binary::Div:
      return a / b;
    case Binary::Pow:
      return powf(a, b);
    case Binary::Max:
      // NaN in, NaN out (fmaxf would drop it); otherwise std::max's choice
      // between +0 and -0.
      if (a != a || b != b)
        return a + b;
      return a < b ? b : a;
    case Binary::Min:
      if (a != a || b != b)
        return a + b;
      return b < a ? b : a;
    }
    return a;
  }

  static BRAID_HD int64_t applyInt(int64_t a, int64_t b) {
    switch (K) {
    case Binary::Add:
      return wrapAdd(a, b);
    case Binary::Sub:
      return wrapSub(a, b);
    case Binary::Mul:
      return wrapMul(a, b);
    case Binary::Div:
      if (b == 0)
        return 0;
      if (b == -1)
        return wrapSub(0, a); // INT64_MIN / -1 wraps.
      return a / b;
    case Binary::Pow:
      return intPow(a, b);
    case Binary::Max:
      return a < b ? b : a;
    case Binary::Min:
      return b < a ? b : a;
    }
    return a;
  }

  template <typename T> BRAID_HD T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>)
      return fromFloat<T>(apply(toFloat(a), toFloat(b)));
    else
      return storeInt<T>(applyInt(toInt(a), toInt(b)));
  }
};

enum class Compare { EQ, NE, LT, LE, GT, GE };

/// Comparison to i1. Floats compare exactly in float (every element type
/// converts to float exactly), integers in int64.
struct CompareFn {
  Compare kind = Compare::EQ;

  template <typename V> BRAID_HD bool test(V a, V b) const {
    switch (kind) {
    case Compare::EQ:
      return a == b;
    case Compare::NE:
      return a != b;
    case Compare::LT:
      return a < b;
    case Compare::LE:
      return a <= b;
    case Compare::GT:
      return a > b;
    case Compare::GE:
      return a >= b;
    }
    return false;
  }

  template <typename T> BRAID_HD bool operator()(T a, T b) const {
    if constexpr (kIsFloat<T>)
      return test(toFloat(a), toFloat(b));
    else
      return test(toInt(a), toInt(b));
  }
};

struct SelectFn {
  template <typename T>
  BRAID_HD T operator()(bool condition, T whenTrue, T whenFalse) const {
    return condition ? whenTrue : whenFalse;
  }
};

/// Element type conversion with the reference's rules:
///  - float to float: one rounding (via float, which holds f16 and bf16
///    exactly);
///  - integer or i1 to float: through double, then one rounding to the
///    element type, as the reference does (int64 -> double may round);
///  - anything to i1: `!= 0` (NaN is true);
///  - float to integer: truncation toward zero. The reference throws for
///    NaN and values outside the integer's range; here NaN gives 0 and
///    other values saturate to the type's minimum / maximum;
///  - integer to integer: i32 keeps the low 32 bits, i1 reads as 0 / 1.
template <typename To> struct CastFn {
  template <typename From> BRAID_HD To operator()(From x) const {
    if constexpr (kIsFloat<To>) {
      if constexpr (kIsFloat<From>)
        return fromFloat<To>(toFloat(x));
      else
        return fromDouble<To>(static_cast<double>(toInt(x)));
    } else if constexpr (kIsFloat<From>) {
      float value = toFloat(x);
      if constexpr (std::is_same_v<To, bool>) {
        return value != 0.f;
      } else {
        float truncated = truncf(value);
        constexpr float kHigh =
            std::is_same_v<To, int32_t> ? 2147483648.f : 9223372036854775808.f;
        constexpr To kMax = std::is_same_v<To, int32_t>
                                ? To(2147483647)
                                : To(9223372036854775807LL);
        if (truncated != truncated)
          return To(0);
        if (truncated >= kHigh)
          return kMax;
        if (truncated < -kHigh)
          return To(-kMax - 1);
        return static_cast<To>(static_cast<int64_t>(truncated));
      }
    } else {
      return storeInt<To>(toInt(x));
    }
  }
};

//===----------------------------------------------------------------------===//
// Op drivers (shared by Elementwise.cu and the unit tests)
//===----------------------------------------------------------------------===//

/// A float-only unary op (exp ... gelu): f32, f16, bf16.
template <Unary K, typename Launch>
void runUnaryFloat(const TensorView &x, const TensorView &out, const char *name,
                   Launch &&launch) {
  const TensorView *ins[] = {&x};
  dispatchFloat(x.dtype, name, [&](auto t) {
    using T = decltype(t);
    runMap<1, T, T, T, T>(UnaryFn<K>{}, out, ins, launch);
  });
}

/// neg and relu: every element type.
template <Unary K, typename Launch>
void runUnaryAny(const TensorView &x, const TensorView &out, const char *name,
                 Launch &&launch) {
  const TensorView *ins[] = {&x};
  dispatchAny(x.dtype, name, [&](auto t) {
    using T = decltype(t);
    runMap<1, T, T, T, T>(UnaryFn<K>{}, out, ins, launch);
  });
}

template <Binary K, typename Launch>
void runBinary(const TensorView &a, const TensorView &b, const TensorView &out,
               const char *name, Launch &&launch) {
  const TensorView *ins[] = {&a, &b};
  dispatchAny(a.dtype, name, [&](auto t) {
    using T = decltype(t);
    runMap<2, T, T, T, T>(BinaryFn<K>{}, out, ins, launch);
  });
}

template <typename Launch>
void runCompare(Compare kind, const TensorView &a, const TensorView &b,
                const TensorView &out, Launch &&launch) {
  const TensorView *ins[] = {&a, &b};
  dispatchAny(a.dtype, "compare", [&](auto t) {
    using T = decltype(t);
    runMap<2, bool, T, T, T>(CompareFn{kind}, out, ins, launch);
  });
}

template <typename Launch>
void runSelect(const TensorView &condition, const TensorView &whenTrue,
               const TensorView &whenFalse, const TensorView &out,
               Launch &&launch) {
  const TensorView *ins[] = {&condition, &whenTrue, &whenFalse};
  dispatchAny(whenTrue.dtype, "select", [&](auto t) {
    using T = decltype(t);
    runMap<3, T, bool, T, T>(SelectFn{}, out, ins, launch);
  });
}

template <typename Launch>
void runCast(const TensorView &x, const TensorView &out, Launch &&launch) {
  const TensorView *ins[] = {&x};
  dispatchAny(x.dtype, "cast", [&](auto from) {
    using From = decltype(from);
    dispatchAny(out.dtype, "cast", [&](auto to) {
      using To = decltype(to);
      runMap<1, To, From, From, From>(CastFn<To>{}, out, ins, launch);
    });
  });
}

//===----------------------------------------------------------------------===//
// Fused chains
//===----------------------------------------------------------------------===//

/// One step of a fused chain (the `elementwise` kernel): a unary op
/// (`unary`, `b` = -1) or + - * / (`binary`) on registers `a` and `b`
/// (inputs first, then earlier steps' results).
struct ChainOp {
  bool isUnary = true;
  Unary unary = Unary::Neg;
  Binary binary = Binary::Add;
  int a = 0, b = -1;
};

/// A unary op's float function, chosen at run time.
BRAID_HD float applyUnary(Unary kind, float x) {
  switch (kind) {
  case Unary::Neg:
    return UnaryFn<Unary::Neg>::apply(x);
  case Unary::Exp:
    return UnaryFn<Unary::Exp>::apply(x);
  case Unary::Log:
    return UnaryFn<Unary::Log>::apply(x);
  case Unary::Sqrt:
    return UnaryFn<Unary::Sqrt>::apply(x);
  case Unary::Rsqrt:
    return UnaryFn<Unary::Rsqrt>::apply(x);
  case Unary::Tanh:
    return UnaryFn<Unary::Tanh>::apply(x);
  case Unary::Erf:
    return UnaryFn<Unary::Erf>::apply(x);
  case Unary::Sigmoid:
    return UnaryFn<Unary::Sigmoid>::apply(x);
  case Unary::Silu:
    return UnaryFn<Unary::Silu>::apply(x);
  case Unary::Relu:
    return UnaryFn<Unary::Relu>::apply(x);
  case Unary::Gelu:
    return UnaryFn<Unary::Gelu>::apply(x);
  case Unary::GeluTanh:
    return UnaryFn<Unary::GeluTanh>::apply(x);
  }
  return x;
}

/// out[e] = the chain's last step at element e, one thread per element:
/// the inputs read through their Dims (broadcast) or at e, the steps
/// evaluated in registers, each exactly as its own kernel computes it
/// (UnaryFn, BinaryFn, in float, the result rounded to T), so the chain
/// gives the unfused ops' bits. T is float, f16 or bf16.
template <typename T> struct ChainFunctor {
  const T *in[kMaxChainInputs] = {};
  Dims dims[kMaxChainInputs];
  bool whole[kMaxChainInputs] = {};
  ChainOp ops[kMaxChainSteps];
  int numInputs = 0, numSteps = 0;
  T *out = nullptr;

  BRAID_HD void operator()(int64_t e) const {
    float r[kMaxChainInputs + kMaxChainSteps];
    for (int l = 0; l < numInputs; ++l)
      r[l] = toFloat(in[l][whole[l] ? e : offsetOf(dims[l], e)]);
    for (int s = 0; s < numSteps; ++s) {
      const ChainOp &op = ops[s];
      float x = r[op.a];
      float y = op.isUnary ? 0.f : r[op.b];
      float v;
      if (op.isUnary) {
        v = applyUnary(op.unary, x);
      } else {
        switch (op.binary) {
        case Binary::Add:
          v = BinaryFn<Binary::Add>::apply(x, y);
          break;
        case Binary::Sub:
          v = BinaryFn<Binary::Sub>::apply(x, y);
          break;
        case Binary::Mul:
          v = BinaryFn<Binary::Mul>::apply(x, y);
          break;
        default:
          v = BinaryFn<Binary::Div>::apply(x, y);
          break;
        }
      }
      r[numInputs + s] = toFloat(fromFloat<T>(v));
    }
    out[e] = fromFloat<T>(r[numInputs + numSteps - 1]);
  }
};

/// Runs the chain `ops` over every element of `out` (f32, f16 or bf16; the
/// inputs of its type and broadcasting to it, as the CPU check ensured). An
/// output may be an input of its shape (each element is read before it is
/// written) but not overlap one otherwise (one thread's output would be
/// another's input).
template <typename Launch>
void runChain(const std::vector<ChainOp> &ops,
              const std::vector<TensorView> &inputs, const TensorView &out,
              Launch &&launch) {
  if (ops.empty() || ops.size() > static_cast<size_t>(kMaxChainSteps) ||
      inputs.size() > static_cast<size_t>(kMaxChainInputs))
    throw CudaError("elementwise: " + std::to_string(ops.size()) +
                    " steps and " + std::to_string(inputs.size()) +
                    " inputs; a chain has 1 to " +
                    std::to_string(kMaxChainSteps) + " steps and at most " +
                    std::to_string(kMaxChainInputs) + " inputs");
  dispatchFloat(out.dtype, "elementwise", [&](auto t) {
    using T = decltype(t);
    ChainFunctor<T> chain;
    chain.numInputs = static_cast<int>(inputs.size());
    chain.numSteps = static_cast<int>(ops.size());
    for (size_t s = 0; s < ops.size(); ++s)
      chain.ops[s] = ops[s];
    const char *outBytes = static_cast<const char *>(out.data);
    uint64_t outSize = out.numElements() * sizeof(T);
    for (size_t l = 0; l < inputs.size(); ++l) {
      const TensorView &input = inputs[l];
      if (input.dtype != out.dtype)
        throw CudaError("elementwise: input " + std::to_string(l) + " is " +
                        std::string(toString(input.dtype)) +
                        ", the output " + std::string(toString(out.dtype)));
      chain.in[l] = static_cast<const T *>(input.data);
      chain.whole[l] = input.shape == out.shape;
      if (!chain.whole[l])
        chain.dims[l] = broadcastDims(input.shape, out.shape);
      const char *inBytes = static_cast<const char *>(input.data);
      uint64_t inSize = input.numElements() * sizeof(T);
      bool overlaps =
          inBytes < outBytes + outSize && outBytes < inBytes + inSize;
      if (overlaps && !(chain.whole[l] && inBytes == outBytes))
        throw CudaError("elementwise: the output overlaps input " +
                        std::to_string(l) + " other than element for element");
    }
    chain.out = static_cast<T *>(out.data);
    int64_t n = out.numElements();
    if (n > 0)
      launch(chain, n);
  });
}

} // namespace braid::rt::cuda::ew

#endif // BRAID_RUNTIME_CUDA_KERNELS_ELEMENTWISEOPS_CUH
