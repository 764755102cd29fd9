//===- Matmul.cu - matmul and grouped_matmul on cuBLAS --------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Tensors are row-major, cuBLAS is column-major: a row-major [m, n] result C
// is the column-major n x m matrix C^T = B^T A^T, so every GEMM is issued with
// the operands swapped and no data is moved. Batch dimensions broadcast like
// the CPU backend's; when one operand's batch is whole (or all ones, stride
// 0) one strided-batched call does the lot, otherwise one call per batch.
// f16 and bf16 accumulate in f32 on the tensor cores; f32 stays full f32
// (no TF32), so the CUDA and CPU backends agree to f32 tolerances. Integer
// matmuls (rare, shapes only) use a plain kernel.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CublasLibrary.h"
#include "runtime/cuda/kernels/CudaCommon.cuh"
#include "runtime/cuda/kernels/ElementwiseOps.cuh"
#include "runtime/cuda/kernels/KernelTables.h"
#include "runtime/kernels/FloatKernels.h"

#include <algorithm>
#include <limits>
#include <string>

namespace braid::rt::cuda {
namespace {

/// One row-major GEMM family: C[b] = op(A[b]) op(B[b]) for b < batch, with
/// element strides between batches (0: the same matrix for every b).
struct Gemm {
  int64_t m = 0, n = 0, k = 0;
  bool transposeA = false, transposeB = false;
  const void *a = nullptr;
  const void *b = nullptr;
  void *c = nullptr;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  int64_t batch = 1;
  DType dtype = DType::F32;
};

void runCublas(const Gemm &g, CudaContext &ctx) {
  cudaDataType_t type = cublasDataType(g.dtype);
  const float one = 1.f, zero = 0.f;
  // No cublasSetStream here: createContext bound the handle to ctx.stream
  // once, and cublasSetStream also resets the handle's workspace to
  // cuBLAS's own pool, which may allocate (fatal inside graph capture).
  // cuBLAS takes its sizes and leading dimensions as int.
  if (std::max({g.m, g.n, g.k}) > std::numeric_limits<int>::max())
    throw CudaError("matmul: a dimension of [" + std::to_string(g.m) + ", " +
                    std::to_string(g.k) + "] x [" + std::to_string(g.k) +
                    ", " + std::to_string(g.n) +
                    "] is above cuBLAS's limit of 2^31 - 1");
  // Column-major view: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
  cublasOperation_t opB = g.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opA = g.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldb = static_cast<int>(g.transposeB ? g.k : g.n);
  int lda = static_cast<int>(g.transposeA ? g.m : g.k);
  int ldc = static_cast<int>(g.n);
  // Batches in slices of at most 65535 (a grid dimension's limit), so no
  // cuBLAS kernel has to split a larger batch count itself.
  constexpr int64_t kMaxBatch = 65535;
  size_t element = byteSize(g.dtype);
  for (int64_t first = 0; first < g.batch; first += kMaxBatch) {
    int64_t count = std::min(kMaxBatch, g.batch - first);
    check(cublas().gemmStridedBatchedEx(
              ctx.cublas, opB, opA, static_cast<int>(g.n),
              static_cast<int>(g.m), static_cast<int>(g.k), &one,
              static_cast<const char *>(g.b) + first * g.strideB * element,
              type, ldb, g.strideB,
              static_cast<const char *>(g.a) + first * g.strideA * element,
              type, lda, g.strideA, &zero,
              static_cast<char *>(g.c) + first * g.strideC * element, type,
              ldc, g.strideC, static_cast<int>(count), CUBLAS_COMPUTE_32F,
              CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
  }
}

template <typename T> struct IntGemmOp {
  const T *a;
  const T *b;
  T *c;
  int64_t m, n, k, strideA, strideB, strideC;
  bool transposeA, transposeB;
  BRAID_HD void operator()(int64_t i) const {
    int64_t batch = i / (m * n), row = i / n % m, col = i % n;
    const T *pa = a + batch * strideA;
    const T *pb = b + batch * strideB;
    int64_t sum = 0;
    for (int64_t p = 0; p < k; ++p)
      sum += int64_t(pa[transposeA ? p * m + row : row * k + p]) *
             int64_t(pb[transposeB ? col * k + p : p * n + col]);
    c[batch * strideC + row * n + col] = static_cast<T>(sum);
  }
};

void runGemm(const Gemm &g, CudaContext &ctx) {
  if (g.m == 0 || g.n == 0 || g.batch == 0)
    return;
  if (g.k == 0) {
    check(cudaMemsetAsync(g.c, 0,
                          g.m * g.n * g.batch * byteSize(g.dtype), ctx.stream),
          "cudaMemsetAsync");
    return;
  }
  if (g.dtype == DType::F32 || g.dtype == DType::F16 ||
      g.dtype == DType::BF16) {
    runCublas(g, ctx);
    return;
  }
  auto launchInt = [&](auto zero) {
    using T = decltype(zero);
    IntGemmOp<T> op{static_cast<const T *>(g.a), static_cast<const T *>(g.b),
                    static_cast<T *>(g.c), g.m, g.n, g.k, g.strideA,
                    g.strideB, g.strideC, g.transposeA, g.transposeB};
    launchPointwise(op, g.batch * g.m * g.n, ctx, "integer matmul");
  };
  if (g.dtype == DType::I64)
    launchInt(int64_t{});
  else if (g.dtype == DType::I32)
    launchInt(int32_t{});
  else
    throw CudaError("matmul: no CUDA kernel for element type " +
                    std::string(toString(g.dtype)));
}

/// out[i] = activation(out[i] + bias[i % n]) + addend[i]: the epilogue
/// braid-to-exec fuses into a matmul, after cuBLAS wrote the product into
/// out (which overlaps none of the epilogue's inputs: checked before the
/// GEMM). In float, each stage rounded to T (f32, f16, bf16) as the unfused
/// kernels round their results.
template <typename T> struct EpilogueOp {
  T *out;
  const T *bias;
  const T *addend;
  int64_t n;
  int activation; // -1 none, else an ew::Unary
  BRAID_HD void operator()(int64_t i) const {
    float v = toFloat(out[i]);
    if (bias)
      v = toFloat(fromFloat<T>(v + toFloat(bias[i % n])));
    if (activation >= 0)
      v = toFloat(
          fromFloat<T>(ew::applyUnary(static_cast<ew::Unary>(activation), v)));
    if (addend)
      v += toFloat(addend[i]);
    out[i] = fromFloat<T>(v);
  }
};

void runMatmulProduct(const KernelArgs &args);

void runMatmul(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  bool hasBias = attrs.getBool("has_bias"),
       hasAddend = attrs.getBool("has_addend");
  bool hasActivation = attrs.has("activation");
  if (!hasBias && !hasAddend && !hasActivation)
    return runMatmulProduct(args);
  const TensorView &c = args.outputs[0];
  const TensorView *bias = hasBias ? &args.inputs[2] : nullptr;
  const TensorView *addend =
      hasAddend ? &args.inputs[hasBias ? 3 : 2] : nullptr;
  for (const TensorView *input : {&args.inputs[0], &args.inputs[1], bias,
                                  addend})
    if (input && c.overlaps(*input))
      throw CudaError("matmul: the output of a matmul with an epilogue "
                      "overlaps one of its inputs (braid-to-exec never "
                      "plans that)");
  // The CPU's check accepted the name; ew::Unary has ref::UnaryKind's
  // order (asserted in Elementwise.cu).
  int activation = -1;
  if (hasActivation)
    activation =
        static_cast<int>(*cpu::unaryKindNamed(attrs.getString("activation")));
  runMatmulProduct(args);
  int64_t n = c.shape.back();
  dispatchFloat(c.dtype, "matmul epilogue", [&](auto t) {
    using T = decltype(t);
    EpilogueOp<T> op{static_cast<T *>(c.data),
                     bias ? static_cast<const T *>(bias->data) : nullptr,
                     addend ? static_cast<const T *>(addend->data) : nullptr,
                     n, activation};
    launchPointwise(op, c.numElements(), contextOf(args), "matmul epilogue");
  });
}

void runMatmulProduct(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  KernelAttrs attrs = args.attrs();
  const TensorView &a = args.inputs[0], &b = args.inputs[1],
                   &c = args.outputs[0];
  Gemm g;
  g.dtype = a.dtype;
  g.transposeA = attrs.getBool("transpose_lhs");
  g.transposeB = attrs.getBool("transpose_rhs");
  size_t ra = a.shape.size(), rb = b.shape.size(), rc = c.shape.size();
  g.m = c.shape[rc - 2];
  g.n = c.shape[rc - 1];
  g.k = g.transposeA ? a.shape[ra - 2] : a.shape[ra - 1];
  std::vector<int64_t> batch(c.shape.begin(), c.shape.end() - 2);
  std::vector<int64_t> batchA(a.shape.begin(), a.shape.end() - 2);
  std::vector<int64_t> batchB(b.shape.begin(), b.shape.end() - 2);
  int64_t total = 1;
  for (int64_t d : batch)
    total *= d;
  auto count = [](const std::vector<int64_t> &dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  };
  int64_t countA = count(batchA), countB = count(batchB);
  int64_t matA = g.m * g.k, matB = g.k * g.n, matC = g.m * g.n;
  size_t element = byteSize(g.dtype);
  // A whole batch (same count as the output's, hence the same dims after
  // broadcasting) or a single matrix: one strided call.
  if ((countA == total || countA == 1) && (countB == total || countB == 1)) {
    g.a = a.data;
    g.b = b.data;
    g.c = c.data;
    g.strideA = countA == 1 ? 0 : matA;
    g.strideB = countB == 1 ? 0 : matB;
    g.strideC = matC;
    g.batch = total;
    runGemm(g, ctx);
    return;
  }
  // General broadcast: one GEMM per output batch element.
  Dims outBatch = contiguousDims(batch);
  Dims fromA = broadcastDims(batchA, batch);
  Dims fromB = broadcastDims(batchB, batch);
  for (int64_t i = 0; i < total; ++i) {
    Gemm one = g;
    one.a = static_cast<const char *>(a.data) +
            fromA.offsetOf(i) * matA * element;
    one.b = static_cast<const char *>(b.data) +
            fromB.offsetOf(i) * matB * element;
    one.c = static_cast<char *>(c.data) + outBatch.offsetOf(i) * matC * element;
    runGemm(one, ctx);
  }
}

void runGroupedMatmul(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  const TensorView &x = args.inputs[0], &w = args.inputs[1],
                   &y = args.outputs[0];
  // [E, C, K] x [E, K, N] (or [E, N, K]): one strided batch over experts.
  Gemm g;
  g.dtype = x.dtype;
  g.transposeB = args.attrs().getBool("transpose_rhs");
  g.batch = x.shape[0];
  g.m = x.shape[1];
  g.k = x.shape[2];
  g.n = y.shape[2];
  g.a = x.data;
  g.b = w.data;
  g.c = y.data;
  g.strideA = g.m * g.k;
  g.strideB = g.k * g.n;
  g.strideC = g.m * g.n;
  runGemm(g, ctx);
}

} // namespace

void addMatmulKernels(KernelTable &table) {
  table["matmul"] = runMatmul;
  table["grouped_matmul"] = runGroupedMatmul;
}

} // namespace braid::rt::cuda
