//===- FloatKernels.h - direct f32 kernels on arena memory ------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The kernels that dominate small transformer runs, written directly on
// float* instead of through the reference adapter: matrix products through
// OpenBLAS sgemm, elementwise arithmetic with broadcasting, softmax and the
// normalizations (accumulating in double), scatter_add (in f32). Shapes are checked when the plan
// is loaded (CpuKernels.cpp); these functions assume they are consistent.
// Outputs may alias inputs.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_KERNELS_FLOATKERNELS_H
#define BRAID_RUNTIME_KERNELS_FLOATKERNELS_H

#include "runtime/exec/KernelRegistry.h"
#include "runtime/reference/ReferenceKernels.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace braid::rt::cpu {

/// What a matmul does to its product before writing it (braid-to-exec's
/// epilogue fusion): out = activation(product + bias) + addend, each part
/// optional. `bias` holds N values (shape [N] or [1, ..., N]); `addend` has
/// out's shape; `activation` is Gelu, GeluTanh, Silu or Relu.
struct MatmulEpilogue {
  const TensorView *bias = nullptr;
  std::optional<ref::UnaryKind> activation;
  const TensorView *addend = nullptr;
  bool empty() const { return !bias && !activation && !addend; }
};

/// out[batch..., M, N] = a[batch..., M, K] * b[batch..., K, N], batch
/// dimensions broadcast, either operand optionally transposed, then the
/// epilogue in the same pass over each row of the product.
void matmulF32(const TensorView &a, const TensorView &b, bool transposeA,
               bool transposeB, const TensorView &out,
               const MatmulEpilogue &epilogue = {});

using ReleaseFn = std::function<void(const void *, uint64_t)>;
/// When the GEMM library can run this matmul from a weight repacked into its
/// own layout (oneDNN, `b` 2-D and constant, `a` not transposed, at least 4
/// MFLOP, BRAID_CPU_PACK not 0): the primitive with the packed copy of `b`, shared through `shared`
/// with the other instructions that read the same weight; else null. With
/// `release` (this is b's only reader), b's pages are given back slice by
/// slice as they are packed. The epilogue runs as the library's bias and
/// post-ops; null when out overlaps an input.
std::shared_ptr<const void>
prepareMatmulF32(const TensorView &a, const TensorView &b, bool transposeA,
                 bool transposeB, const TensorView &out,
                 const MatmulEpilogue &epilogue,
                 std::map<std::string, std::shared_ptr<void>> &shared,
                 const ReleaseFn *release);
/// Runs what prepareMatmulF32 made (on the tensors it was made for).
void runPreparedMatmulF32(const void *prepared);

/// out[E, C, N] = x[E, C, K] * w[E, K, N] (w[E, N, K] when transposed).
void groupedMatmulF32(const TensorView &x, const TensorView &w, bool transposeW,
                      const TensorView &out);

enum class ArithKind { Add, Sub, Mul, Div };
/// Elementwise arithmetic with numpy broadcasting.
void arithmeticF32(ArithKind kind, const TensorView &a, const TensorView &b,
                   const TensorView &out);

/// pow, max, min with numpy broadcasting, each element as the reference
/// computes it (in double, rounded once); pow by a scalar 2 or 3 multiplies.
void binaryF32(ref::BinaryKind kind, const TensorView &a, const TensorView &b,
               const TensorView &out);

/// An elementwise function, each element as the reference computes it,
/// except tanh, exp, sigmoid, silu and the GELUs (approximateF32 below).
void unaryF32(ref::UnaryKind kind, const TensorView &x, const TensorView &out);

/// reduce_sum / reduce_mean / reduce_max over `dims`, accumulating in double
/// as the reference does (max ignores NaN after the first element, as the
/// reference's std::max does).
void reduceF32(ref::ReduceKind kind, const TensorView &x,
               const std::vector<int64_t> &dims, const TensorView &out);

/// Scaled dot-product attention as ref::attention (q [B,H,Sq,D], k
/// [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv], optional mask broadcasting to the scores:
/// i1 keeps, f32 is added; causal with `offset`), the two products through
/// sgemm per head (direct loops for small heads; causal in 32-row blocks,
/// each with only the keys it sees), the softmax in float.
void attentionF32(const TensorView &q, const TensorView &k, const TensorView &v,
                  const TensorView *mask, bool causal, int64_t offset,
                  double scale, const TensorView &out);

/// Softmax along `dim`.
void softmaxF32(const TensorView &x, int64_t dim, const TensorView &out);

/// Layer normalization over dimensions [axis, rank); `beta` may be null.
/// Both normalizations compute in float (statistics in sixteen lanes:
/// normRowsHere in FloatMath.h), within 1e-5 of the reference.
void layerNormF32(const TensorView &x, const TensorView &gamma,
                  const TensorView *beta, int64_t axis, double epsilon,
                  const TensorView &out);

/// RMS normalization over dimensions [axis, rank).
void rmsNormF32(const TensorView &x, const TensorView &gamma, int64_t axis,
                double epsilon, const TensorView &out);

/// One step of a fused elementwise chain (the exec kernel `elementwise`):
/// a unary or an arithmetic op on registers `a` (and `b`), the chain's
/// inputs being registers 0..L-1 and step s's result register L + s.
struct ChainStep {
  std::optional<ref::UnaryKind> unary;
  ArithKind arith = ArithKind::Add;
  int64_t a = 0, b = -1;
};

/// Runs `steps` over every element of `out` (the last step's result), in
/// tiles of 1024 elements that stay in cache: one pass over memory for the
/// whole chain. Inputs are f32 and broadcast numpy-style to out's shape.
/// Each step computes what its own kernel computes (the same float
/// operations; the unary approximations by mapFloatUnary, the others in
/// double rounded once), so the chain gives the unfused ops' bits.
void elementwiseChainF32(const std::vector<ChainStep> &steps,
                         const std::vector<TensorView> &inputs,
                         const TensorView &out);

/// The steps an `elementwise` kernel's attributes (`ops`, `operands`) name,
/// as the CPU registry's check reads them (CpuKernels.cpp; the CUDA kernel
/// reads them the same way); throws PlanError naming the problem.
std::vector<ChainStep> chainSteps(const KernelArgs &args);

/// The unary kind a kernel attribute names (`activation`, a chain's `ops`:
/// the braid ops' names, gelu_tanh for the tanh-GELU), if any
/// (CpuKernels.cpp; the CUDA kernels read the names the same way).
std::optional<ref::UnaryKind> unaryKindNamed(const std::string &name);

/// rotary as ref::rotary (rotate-half pairs, or interleaved), in float, for
/// f32 x and tables with x's last dimension broadcasting to it; false
/// (nothing written) for tables of another last dimension.
bool rotaryF32(const TensorView &x, const TensorView &cos,
               const TensorView &sin, bool interleaved, const TensorView &out);

/// scatter_add along `axis` into `out` (zeroed first), accumulating in f32
/// in index order; `indices` are i64 or i32. Throws std::invalid_argument
/// naming scatter_add for an index out of range, before writing anything.
void scatterAddF32(const TensorView &updates, const TensorView &indices,
                   int64_t axis, const TensorView &out);

/// compare of f32, i64 or i32 operands (numpy broadcasting) into i1, as the
/// reference computes it; false (nothing written) for other types.
bool compareDirect(ref::CompareKind kind, const TensorView &a,
                   const TensorView &b, const TensorView &out);

/// cast to f32 from f32, i1, i32 or i64 (through double, as the reference),
/// or from f32 to i1; false (nothing written) for other pairs.
bool castDirect(const TensorView &x, const TensorView &out);

/// select with an i1 condition and f32 values (numpy broadcasting); false
/// (nothing written) for other types.
bool selectDirect(const TensorView &condition, const TensorView &whenTrue,
                  const TensorView &whenFalse, const TensorView &out);

/// What the f32 unary kernel computes for `kind` (tanh, exp, sigmoid, silu,
/// gelu, gelu_tanh; throws std::logic_error for the others) at x, in the
/// AVX-512 copy when `avx512` and hasAvx512(): vectorized float
/// approximations, tanh, exp, sigmoid and silu within 4 ulp of the correctly
/// rounded result where it is a normal float (not the reference's double,
/// rounded once, bit for bit); tanh-GELU, x sigmoid(2u), and exact GELU, x
/// erfc(-x / sqrt 2) / 2, within 2e-5 and 3e-5 relative where the result is
/// a normal float. Exposed for their accuracy tests.
float approximateF32(ref::UnaryKind kind, float x, bool avx512);

/// Whether this build has the AVX-512 copy of the float approximations and
/// the CPU can run it (AVX-512F and FMA).
bool hasAvx512();
/// tanh, exp, sigmoid, silu and both GELUs over `count` floats, with the
/// AVX-512 copy when `avx512` and hasAvx512(), else the baseline one;
/// false, nothing written, for the other kinds. The AVX-512 copy uses fused
/// multiply-adds: within a few ulp of the baseline's bits, and as accurate
/// (both tested).
bool mapFloatUnary(ref::UnaryKind kind, const float *x, float *y, int64_t count,
                   bool avx512);
/// The AVX-512 copy (FloatKernelsAvx512.cpp); call only where hasAvx512().
bool mapFloatUnaryAvx512(ref::UnaryKind kind, const float *x, float *y,
                         int64_t count);
/// Layer normalization (`centered`; `beta` may be null) or RMS
/// normalization of `rows` rows of `size` floats from x into y (which may be
/// x), over the kernel threads, with the AVX-512 copy when `avx512` and
/// hasAvx512(), else the baseline one.
void normRows(const float *x, const float *gamma, const float *beta, float *y,
              int64_t rows, int64_t size, double epsilon, bool centered,
              bool avx512);
/// softmaxScoresRowHere (FloatMath.h), attention's softmax of one row of
/// scores, in the AVX-512 copy; call only where hasAvx512().
void softmaxScoresRowAvx512(float *row, int64_t sk, int64_t limit, float scale,
                            const TensorView *mask, int64_t maskRow,
                            int64_t maskStep);
/// smallProductHere (FloatMath.h), c[m, n] = a[m, k] b[k, n] without a GEMM
/// library call, in the AVX-512 copy; call only where hasAvx512().
void smallProductAvx512(const float *a, const float *b, float *c, int64_t m,
                        int64_t n, int64_t k);
/// normRowsHere (FloatMath.h) in the AVX-512 copy; call only where
/// hasAvx512().
void normRowsAvx512(const float *x, const float *gamma, const float *beta,
                    float *y, int64_t rows, int64_t size, double epsilon,
                    bool centered);

} // namespace braid::rt::cpu

#endif // BRAID_RUNTIME_KERNELS_FLOATKERNELS_H
