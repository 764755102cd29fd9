//===- FloatKernels.cpp - direct f32 kernels on arena memory --------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/FloatKernels.h"
#include "runtime/kernels/CpuKernels.h"

#include "runtime/kernels/ElementIO.h"
#include "runtime/kernels/FloatMath.h"
#include "runtime/reference/ReferenceKernels.h"

// oneDNN when the build found it; OpenBLAS when it is the build's library,
// or linked beside oneDNN (BRAID_CPU_GEMM=openblas selects it then).
#ifdef BRAID_GEMM_ONEDNN
#include <dnnl.h>
#include <dnnl.hpp>
#endif
#if !defined(BRAID_GEMM_ONEDNN) || defined(BRAID_GEMM_OPENBLAS)
#define BRAID_HAS_OPENBLAS 1
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace braid::rt::cpu {

namespace {
using Shape = std::vector<int64_t>;

int64_t product(const Shape &shape, size_t begin, size_t end) {
  int64_t count = 1;
  for (size_t d = begin; d < end; ++d)
    count *= shape[d];
  return count;
}

/// For every row-major position of `target`, the position of the element of
/// `source` that numpy broadcasting reads there.
std::vector<int64_t> broadcastPositions(const Shape &source,
                                        const Shape &target) {
  size_t rank = target.size(), offset = rank - source.size();
  Shape strides(rank, 0);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(source.size()) - 1; d >= 0; --d) {
    if (source[d] != 1)
      strides[d + offset] = stride;
    stride *= source[d];
  }
  int64_t count = product(target, 0, rank);
  std::vector<int64_t> positions(count, 0);
  Shape index(rank, 0);
  int64_t position = 0;
  for (int64_t k = 0; k < count; ++k) {
    positions[k] = position;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      position += strides[d];
      if (++index[d] < target[d])
        break;
      position -= strides[d] * target[d];
      index[d] = 0;
    }
  }
  return positions;
}

/// Where a kernel writes: straight into `out`, or into a scratch vector that
/// is copied to `out` at the end when `out` overlaps an input in a way the
/// kernel cannot handle.
class OutputBuffer {
public:
  OutputBuffer(const TensorView &out, bool needsScratch) : out_(out) {
    if (needsScratch) {
      scratch_.resize(out.numElements());
      data_ = scratch_.data();
    } else {
      data_ = out.as<float>();
    }
  }
  ~OutputBuffer() {
    if (!scratch_.empty())
      std::memcpy(out_.data, scratch_.data(), scratch_.size() * sizeof(float));
  }
  float *data() const { return data_; }

private:
  const TensorView &out_;
  std::vector<float> scratch_;
  float *data_;
};

/// Whether `out` overlaps `in` other than by being exactly the same tensor
/// (which elementwise and row-wise kernels handle in place).
bool partlyOverlaps(const TensorView &out, const TensorView &in) {
  return out.overlaps(in) && !(out.data == in.data && out.shape == in.shape);
}

/// The threads the CPU kernels may use (setCpuKernelThreads).
std::atomic<int> kernelThreads{1};

/// Sets the calling thread's OpenMP thread count to the kernels' (OpenMP's
/// count is per thread, and each stream runs on its own). Always the same
/// count, whatever the GEMM's size: oneDNN picks fewer threads for small
/// products itself, and changing the count between calls cost about 0.8 ms
/// a GEMM (measured: the example GPT-2 took 8 ms a run at two threads
/// instead of 0.3 when products below 4 MFLOP were set to one thread).
[[maybe_unused]] void useKernelThreads() {
#ifdef _OPENMP
  // Inside a kernel's parallel loop the GEMM runs on its thread (nested
  // parallelism is off), whatever is set.
  int threads = kernelThreads.load();
  if (!omp_in_parallel() && omp_get_max_threads() != threads)
    omp_set_num_threads(threads);
#endif
}

[[maybe_unused]] int blasSize(int64_t value, const char *what) {
  if (value > INT_MAX)
    throw std::invalid_argument(std::string("matrix ") + what + " " +
                                std::to_string(value) +
                                " exceeds what BLAS can index");
  return static_cast<int>(value);
}

enum class GemmLibrary { OneDnn, OpenBlas };

/// The libraries this build links, for messages.
constexpr const char *kGemmLibraries =
#if defined(BRAID_GEMM_ONEDNN) && defined(BRAID_HAS_OPENBLAS)
    "onednn, openblas";
#elif defined(BRAID_GEMM_ONEDNN)
    "onednn";
#else
    "openblas";
#endif

/// The GEMM library in use: oneDNN when linked, or what the environment's
/// BRAID_CPU_GEMM (onednn, openblas) names; read once.
GemmLibrary selectedGemm() {
  static const GemmLibrary selected = [] {
    const char *name = std::getenv("BRAID_CPU_GEMM");
    std::string value = name ? name : "";
#ifdef BRAID_GEMM_ONEDNN
    if (value.empty() || value == "onednn")
      return GemmLibrary::OneDnn;
#endif
#ifdef BRAID_HAS_OPENBLAS
    if (value.empty() || value == "openblas")
      return GemmLibrary::OpenBlas;
#endif
    throw std::invalid_argument("BRAID_CPU_GEMM=" + value +
                                ": this build's CPU GEMM libraries are " +
                                kGemmLibraries);
  }();
  return selected;
}

/// One row-major sgemm: c[m, n] = a[m, k] * b[k, n] with optional transposes
/// of the stored a ([k, m]) and b ([n, k]).
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const float *a, const float *b, float *c) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    std::memset(c, 0, static_cast<size_t>(m * n) * sizeof(float));
    return;
  }
  GemmLibrary library = selectedGemm();
#ifdef BRAID_GEMM_ONEDNN
  if (library == GemmLibrary::OneDnn) {
    useKernelThreads();
    dnnl_status_t status = dnnl_sgemm(
        transposeA ? 'T' : 'N', transposeB ? 'T' : 'N', m, n, k, 1.0f, a,
        transposeA ? m : k, b, transposeB ? k : n, 0.0f, c, n);
    if (status != dnnl_success)
      throw std::runtime_error("oneDNN sgemm of " + std::to_string(m) + "x" +
                               std::to_string(n) + "x" + std::to_string(k) +
                               " failed (dnnl status " +
                               std::to_string(status) + ")");
    return;
  }
#endif
#ifdef BRAID_HAS_OPENBLAS
  (void)library;
  int mi = blasSize(m, "rows"), ni = blasSize(n, "columns"),
      ki = blasSize(k, "inner size");
  cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, mi, ni, ki, 1.0f, a,
              transposeA ? mi : ki, b, transposeB ? ki : ni, 0.0f, c, ni);
#endif
}
} // namespace

namespace {
void unaryRow(ref::UnaryKind kind, const float *in, float *y, int64_t count);

/// rows x n products at `product` through the (non-empty) epilogue into
/// `out` (which may be `product`), row by row: bias, activation, addend in
/// one pass.
void applyEpilogue(const float *product, float *out, int64_t rows, int64_t n,
                   const MatmulEpilogue &epilogue) {
  const float *bias = epilogue.bias ? epilogue.bias->as<float>() : nullptr;
  const float *addend =
      epilogue.addend ? epilogue.addend->as<float>() : nullptr;
  parallelFor(rows, rows * n * 8, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *from = product + r * n;
      float *to = out + r * n;
      if (bias) {
        for (int64_t j = 0; j < n; ++j)
          to[j] = from[j] + bias[j];
        from = to;
      }
      if (epilogue.activation) {
        // As the activation's own kernel computes it.
        unaryRow(*epilogue.activation, from, to, n);
        from = to;
      }
      if (addend) {
        const float *add = addend + r * n;
        for (int64_t j = 0; j < n; ++j)
          to[j] = from[j] + add[j];
      }
    }
  });
}
} // namespace

void matmulF32(const TensorView &a, const TensorView &b, bool transposeA,
               bool transposeB, const TensorView &out,
               const MatmulEpilogue &epilogue) {
  if (!epilogue.empty()) {
    // The product in `out` when the epilogue's operands are elsewhere, so
    // the epilogue works in place; else in scratch.
    bool overlaps = (epilogue.bias && out.overlaps(*epilogue.bias)) ||
                    (epilogue.addend && out.overlaps(*epilogue.addend));
    std::vector<float> scratch;
    TensorView product = out;
    if (overlaps) {
      scratch.resize(out.numElements());
      product.data = scratch.data();
    }
    matmulF32(a, b, transposeA, transposeB, product);
    int64_t n = out.shape.back();
    applyEpilogue(product.as<float>(), out.as<float>(),
                  n ? out.numElements() / n : 0, n, epilogue);
    return;
  }
  size_t rankA = a.shape.size(), rankB = b.shape.size();
  int64_t m = transposeA ? a.shape[rankA - 1] : a.shape[rankA - 2];
  int64_t k = transposeA ? a.shape[rankA - 2] : a.shape[rankA - 1];
  int64_t n = transposeB ? b.shape[rankB - 2] : b.shape[rankB - 1];
  Shape batchA(a.shape.begin(), a.shape.end() - 2);
  Shape batchB(b.shape.begin(), b.shape.end() - 2);
  Shape batch(out.shape.begin(), out.shape.end() - 2);
  int64_t batches = product(batch, 0, batch.size());
  OutputBuffer result(out, out.overlaps(a) || out.overlaps(b));
  const float *dataA = a.as<float>(), *dataB = b.as<float>();

  int64_t batchesA = product(batchA, 0, batchA.size());
  int64_t batchesB = product(batchB, 0, batchB.size());
  if (!transposeA && batchesB == 1 && batchesA == batches) {
    // One weight for every batch: a is one [batches * m, k] matrix.
    gemm(false, transposeB, batches * m, n, k, dataA, dataB, result.data());
    return;
  }
  std::vector<int64_t> fromA = broadcastPositions(batchA, batch);
  std::vector<int64_t> fromB = broadcastPositions(batchB, batch);
  for (int64_t i = 0; i < batches; ++i)
    gemm(transposeA, transposeB, m, n, k, dataA + fromA[i] * m * k,
         dataB + fromB[i] * k * n, result.data() + i * m * n);
}

#ifdef BRAID_GEMM_ONEDNN
namespace {
/// oneDNN's CPU engine, made once.
const dnnl::engine &cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// A weight repacked into the blocked layout oneDNN's matmul chose for it.
struct PackedWeight {
  dnnl::memory::desc desc;
  dnnl::memory memory;
};

/// A matmul primitive made for one instruction's shapes and its arguments:
/// the instruction's arena tensors, fixed at load, and the packed weight
/// (the memory handles keep it alive).
struct PackedMatmul {
  dnnl::matmul primitive;
  std::unordered_map<int, dnnl::memory> args;
};

/// Products below this many FLOPs stay on sgemm: on the example models'
/// shapes (below 1 MFLOP) the primitive's call costs more than packing
/// saves (measured: the example GPT-2 0.171 ms a run on sgemm, 0.186 with
/// every product packed).
constexpr double kMinPackedFlops = 4e6;

/// `bias` may be a zero desc (none).
dnnl::matmul::primitive_desc matmulDesc(const dnnl::memory::desc &src,
                                        const dnnl::memory::desc &weights,
                                        const dnnl::memory::desc &bias,
                                        const dnnl::memory::desc &dst,
                                        const dnnl::primitive_attr &attr) {
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::matmul::primitive_desc(cpuEngine(), src, weights, bias, dst,
                                      attr);
#else
  return dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(src, weights, bias, dst), attr, cpuEngine());
#endif
}

/// The epilogue's activation and addend as oneDNN post-ops, in that order
/// (the bias is the primitive's own argument, added first).
dnnl::primitive_attr epilogueAttr(const MatmulEpilogue &epilogue,
                                  const dnnl::memory::desc &dst) {
  dnnl::post_ops ops;
  if (epilogue.activation) {
    dnnl::algorithm algorithm;
    switch (*epilogue.activation) {
    case ref::UnaryKind::Gelu:
      algorithm = dnnl::algorithm::eltwise_gelu_erf;
      break;
    case ref::UnaryKind::GeluTanh:
      algorithm = dnnl::algorithm::eltwise_gelu_tanh;
      break;
    case ref::UnaryKind::Silu:
      algorithm = dnnl::algorithm::eltwise_swish; // x sigmoid(alpha x)
      break;
    case ref::UnaryKind::Relu:
      algorithm = dnnl::algorithm::eltwise_relu;
      break;
    default:
      throw std::logic_error("matmul epilogue: no oneDNN activation");
    }
    float alpha =
        *epilogue.activation == ref::UnaryKind::Silu ? 1.0f : 0.0f;
#if DNNL_VERSION_MAJOR >= 3
    ops.append_eltwise(algorithm, alpha, 0.0f);
#else
    ops.append_eltwise(1.0f, algorithm, alpha, 0.0f);
#endif
  }
  if (epilogue.addend)
    ops.append_binary(dnnl::algorithm::binary_add, dst);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  return attr;
}

/// Reorders the plain weight `b` (stored [k, n], or [n, k] when
/// transposed) into `packed`. With `release`, in slices along the stored
/// rows of about 8 MiB, each slice's pages given back once it is copied.
void packWeight(const dnnl::memory::desc &stored, const TensorView &b,
                bool transposeB, PackedWeight &packed,
                const ReleaseFn *release) {
  using dnnl::memory;
  dnnl::stream stream(cpuEngine());
  memory::dims dims = stored.dims();
  int outer = transposeB ? 1 : 0; // the dims index of the stored rows
  int64_t rows = dims[outer], rowBytes = dims[1 - outer] * sizeof(float);
  int64_t step = std::max<int64_t>(
      64, (int64_t{8} << 20) / std::max<int64_t>(rowBytes, 1) / 64 * 64);
  // Every slice's descriptors first: a layout that cannot be cut falls
  // back to one reorder before anything is released.
  std::vector<std::pair<memory, memory>> slices;
  if (release && rows > step) {
    try {
      for (int64_t begin = 0; begin < rows; begin += step) {
        memory::dims size = dims, offset = {0, 0};
        size[outer] = std::min(step, rows - begin);
        offset[outer] = begin;
        slices.emplace_back(
            memory(stored.submemory_desc(size, offset), cpuEngine(), b.data),
            memory(packed.desc.submemory_desc(size, offset), cpuEngine(),
                   packed.memory.get_data_handle()));
      }
    } catch (const dnnl::error &) {
      slices.clear();
    }
  }
  if (slices.empty()) {
    memory plain(stored, cpuEngine(), b.data);
    dnnl::reorder(plain, packed.memory).execute(stream, plain, packed.memory);
    stream.wait();
    return;
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    auto &[from, to] = slices[i];
    try {
      dnnl::reorder(from, to).execute(stream, from, to);
      stream.wait();
    } catch (const dnnl::error &error) {
      if (i == 0)
        throw;
      throw std::runtime_error(
          std::string("repacking a weight failed after part of it was "
                      "released: ") +
          error.what());
    }
    int64_t begin = static_cast<int64_t>(i) * step;
    int64_t count = std::min(step, rows - begin);
    (*release)(static_cast<const char *>(b.data) + begin * rowBytes,
               static_cast<uint64_t>(count * rowBytes));
  }
}

/// Whether BRAID_CPU_PACK (default 1) allows repacking weights.
bool packingAllowed() {
  static const bool allowed = [] {
    const char *value = std::getenv("BRAID_CPU_PACK");
    return !value || std::string(value) != "0";
  }();
  return allowed;
}
} // namespace
#endif

std::shared_ptr<const void>
prepareMatmulF32(const TensorView &a, const TensorView &b, bool transposeA,
                 bool transposeB, const TensorView &out,
                 const MatmulEpilogue &epilogue,
                 std::map<std::string, std::shared_ptr<void>> &shared,
                 const ReleaseFn *release) {
#ifdef BRAID_GEMM_ONEDNN
  if (selectedGemm() != GemmLibrary::OneDnn || !packingAllowed() ||
      transposeA || b.shape.size() != 2 || a.shape.size() < 2 ||
      out.overlaps(a) || out.overlaps(b) ||
      (epilogue.bias && out.overlaps(*epilogue.bias)) ||
      (epilogue.addend && out.overlaps(*epilogue.addend)))
    return nullptr;
  using dnnl::memory;
  int64_t k = b.shape[transposeB ? 1 : 0], n = b.shape[transposeB ? 0 : 1];
  int64_t rows = a.numElements() / std::max<int64_t>(k, 1);
  if (2.0 * static_cast<double>(rows) * static_cast<double>(n) *
          static_cast<double>(k) <
      kMinPackedFlops)
    return nullptr;
  memory::desc src({rows, k}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc dst({rows, n}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc stored({k, n}, memory::data_type::f32,
                      transposeB ? memory::format_tag::ba
                                 : memory::format_tag::ab);
  // One packed copy per weight: the first instruction that reads it lets
  // oneDNN choose the layout, the others must take that one.
  std::string key = "onednn-matmul-weight:" +
                    std::to_string(reinterpret_cast<uintptr_t>(b.data)) +
                    (transposeB ? ":t" : ":n");
  auto found = shared.find(key);
  std::shared_ptr<PackedWeight> weight =
      found == shared.end()
          ? nullptr
          : std::static_pointer_cast<PackedWeight>(found->second);
  try {
    useKernelThreads();
    memory::desc wanted =
        weight ? weight->desc
               : memory::desc({k, n}, memory::data_type::f32,
                              memory::format_tag::any);
    memory::desc biasDesc;
    if (epilogue.bias)
      biasDesc = memory::desc({1, n}, memory::data_type::f32,
                              memory::format_tag::ab);
    dnnl::primitive_attr attr = epilogueAttr(epilogue, dst);
    dnnl::matmul::primitive_desc desc =
        matmulDesc(src, wanted, biasDesc, dst, attr);
    bool pack = !weight;
    if (pack) {
      weight = std::make_shared<PackedWeight>();
      weight->desc = desc.weights_desc();
      weight->memory = memory(weight->desc, cpuEngine());
    }
    // Everything that can fail is made before the weight is packed: packing
    // may release the arena's copy, after which sgemm has nothing to read.
    auto prepared = std::make_shared<PackedMatmul>();
    prepared->primitive = dnnl::matmul(desc);
    prepared->args = {{DNNL_ARG_SRC, memory(src, cpuEngine(), a.data)},
                      {DNNL_ARG_WEIGHTS, weight->memory},
                      {DNNL_ARG_DST, memory(dst, cpuEngine(), out.data)}};
    if (epilogue.bias)
      prepared->args[DNNL_ARG_BIAS] =
          memory(biasDesc, cpuEngine(), epilogue.bias->data);
    if (epilogue.addend)
      prepared->args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(epilogue.activation ? 1
                                                                        : 0) |
                     DNNL_ARG_SRC_1] =
          memory(dst, cpuEngine(), epilogue.addend->data);
    if (pack) {
      packWeight(stored, b, transposeB, *weight, release);
      shared[key] = weight;
    }
    return prepared;
  } catch (const dnnl::error &) {
    // No primitive for these shapes or this layout: sgemm on the arena's
    // copy, as without packing.
    return nullptr;
  }
#else
  (void)a, (void)b, (void)transposeA, (void)transposeB, (void)out,
      (void)epilogue, (void)shared, (void)release;
  return nullptr;
#endif
}

void runPreparedMatmulF32(const void *prepared) {
#ifdef BRAID_GEMM_ONEDNN
  const auto &matmul = *static_cast<const PackedMatmul *>(prepared);
  useKernelThreads();
  thread_local dnnl::stream stream(cpuEngine());
  matmul.primitive.execute(stream, matmul.args);
  stream.wait();
#else
  (void)prepared;
  throw std::logic_error("a prepared matmul in a build without oneDNN");
#endif
}

void groupedMatmulF32(const TensorView &x, const TensorView &w, bool transposeW,
                      const TensorView &out) {
  int64_t experts = x.shape[0], rows = x.shape[1], k = x.shape[2];
  int64_t n = transposeW ? w.shape[1] : w.shape[2];
  OutputBuffer result(out, out.overlaps(x) || out.overlaps(w));
  for (int64_t e = 0; e < experts; ++e)
    gemm(false, transposeW, rows, n, k, x.as<float>() + e * rows * k,
         w.as<float>() + e * k * n, result.data() + e * rows * n);
}

namespace {
/// The position of each output row's first element in an operand of
/// `shape` broadcast to `outShape` (rows along the last dimension), and in
/// `step` whether the operand walks the row (1) or repeats one element (0).
std::vector<int64_t> rowStarts(const Shape &shape, const Shape &outShape,
                               int64_t &step) {
  Shape source = shape;
  step = (!source.empty() && source.back() != 1) ? 1 : 0;
  if (!source.empty())
    source.back() = 1;
  Shape target = outShape;
  if (!target.empty())
    target.back() = 1;
  std::vector<int64_t> positions = broadcastPositions(source, target);
  if (!shape.empty() && shape.back() != 1)
    for (int64_t &p : positions)
      p *= shape.back();
  return positions;
}

/// out = op(x, y) elementwise with numpy broadcasting, any element types.
template <typename TA, typename TB, typename TO, typename Op>
void broadcastBinary(Op op, const TA *x, const Shape &shapeA, const TB *y,
                     const Shape &shapeB, TO *out, const Shape &outShape) {
  int64_t count = product(outShape, 0, outShape.size());
  if (shapeA == outShape && shapeB == outShape) {
    parallelFor(count, count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = op(x[i], y[i]);
    });
    return;
  }
  if (shapeA == outShape && product(shapeB, 0, shapeB.size()) == 1) {
    TB scalar = y[0];
    parallelFor(count, count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = op(x[i], scalar);
    });
    return;
  }
  if (count == 0)
    return;
  int64_t row = outShape.empty() ? 1 : outShape.back();
  int64_t stepA, stepB;
  std::vector<int64_t> startA = rowStarts(shapeA, outShape, stepA);
  std::vector<int64_t> startB = rowStarts(shapeB, outShape, stepB);
  int64_t rows = static_cast<int64_t>(startA.size());
  parallelFor(rows, count, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const TA *rowA = x + startA[r];
      const TB *rowB = y + startB[r];
      TO *rowOut = out + r * row;
      if (stepA == 1 && stepB == 0) {
        TB scalar = rowB[0];
        for (int64_t j = 0; j < row; ++j)
          rowOut[j] = op(rowA[j], scalar);
        continue;
      }
      if (stepA == 0 && stepB == 1) {
        TA scalar = rowA[0];
        for (int64_t j = 0; j < row; ++j)
          rowOut[j] = op(scalar, rowB[j]);
        continue;
      }
      for (int64_t j = 0; j < row; ++j)
        rowOut[j] = op(rowA[j * stepA], rowB[j * stepB]);
    }
  });
}

template <typename Op>
void arithmetic(Op op, const TensorView &a, const TensorView &b, float *out,
                const Shape &outShape) {
  broadcastBinary(op, a.as<float>(), a.shape, b.as<float>(), b.shape, out,
                  outShape);
}
} // namespace

void arithmeticF32(ArithKind kind, const TensorView &a, const TensorView &b,
                   const TensorView &out) {
  OutputBuffer result(out, partlyOverlaps(out, a) || partlyOverlaps(out, b));
  switch (kind) {
  case ArithKind::Add:
    arithmetic([](float x, float y) { return x + y; }, a, b, result.data(),
               out.shape);
    return;
  case ArithKind::Sub:
    arithmetic([](float x, float y) { return x - y; }, a, b, result.data(),
               out.shape);
    return;
  case ArithKind::Mul:
    arithmetic([](float x, float y) { return x * y; }, a, b, result.data(),
               out.shape);
    return;
  case ArithKind::Div:
    arithmetic([](float x, float y) { return x / y; }, a, b, result.data(),
               out.shape);
    return;
  }
}

void binaryF32(ref::BinaryKind kind, const TensorView &a, const TensorView &b,
               const TensorView &out) {
  OutputBuffer result(out, partlyOverlaps(out, a) || partlyOverlaps(out, b));
  // x^2 and x^3 (the tanh-GELU's cube) exactly as pow computes them: the
  // product of floats in double is exact up to x^3 rounded once.
  if (kind == ref::BinaryKind::Pow && b.numElements() == 1 &&
      a.shape == out.shape) {
    float e = b.as<float>()[0];
    const float *x = a.as<float>();
    float *y = result.data();
    int64_t count = a.numElements();
    if (e == 2.0f) {
      for (int64_t i = 0; i < count; ++i)
        y[i] = static_cast<float>(static_cast<double>(x[i]) * x[i]);
      return;
    }
    if (e == 3.0f) {
      for (int64_t i = 0; i < count; ++i) {
        double v = x[i];
        y[i] = static_cast<float>(v * v * v);
      }
      return;
    }
  }
  auto run = [&](auto op) {
    arithmetic(op, a, b, result.data(), out.shape);
  };
  switch (kind) {
  case ref::BinaryKind::Pow:
    return run([](float x, float y) {
      return static_cast<float>(std::pow(static_cast<double>(x), y));
    });
  case ref::BinaryKind::Max:
    return run([](float x, float y) {
      return static_cast<float>(ref::applyBinary(ref::BinaryKind::Max, x, y));
    });
  case ref::BinaryKind::Min:
    return run([](float x, float y) {
      return static_cast<float>(ref::applyBinary(ref::BinaryKind::Min, x, y));
    });
  default:
    return run([kind](float x, float y) {
      return static_cast<float>(ref::applyBinary(kind, x, y));
    });
  }
}

namespace {
template <ref::UnaryKind Kind>
void unaryLoop(const float *x, float *y, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    y[i] = static_cast<float>(ref::applyUnary(Kind, x[i]));
}

} // namespace

float approximateF32(ref::UnaryKind kind, float x, bool avx512) {
  float y = 0;
  if (!mapFloatUnary(kind, &x, &y, 1, avx512))
    throw std::logic_error("approximateF32: no float approximation of this "
                           "unary kind");
  return y;
}

bool hasAvx512() {
#if defined(BRAID_KERNELS_AVX512)
  static const bool has =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

bool mapFloatUnary(ref::UnaryKind kind, const float *x, float *y, int64_t count,
                   bool avx512) {
#if defined(BRAID_KERNELS_AVX512)
  if (avx512 && hasAvx512())
    return mapFloatUnaryAvx512(kind, x, y, count);
#endif
  (void)avx512;
  return mapFloatUnaryHere(kind, x, y, count);
}

namespace {
/// y[i] = kind(x[i]) for i < count: the float approximations (the AVX-512
/// copy where the CPU has it), else the reference's formula in double,
/// rounded once; the kind chosen once, outside the loop.
void unaryRow(ref::UnaryKind kind, const float *in, float *y, int64_t count) {
  if (mapFloatUnary(kind, in, y, count, /*avx512=*/true))
    return;
  using U = ref::UnaryKind;
  switch (kind) {
#define BRAID_UNARY(K)                                                         \
  case U::K:                                                                   \
    return unaryLoop<U::K>(in, y, count);
    BRAID_UNARY(Neg)
    BRAID_UNARY(Log)
    BRAID_UNARY(Sqrt)
    BRAID_UNARY(Rsqrt)
    BRAID_UNARY(Erf)
    BRAID_UNARY(Relu)
  default:
    break;
#undef BRAID_UNARY
  }
  throw std::logic_error("unaryF32: no loop for this kind");
}
} // namespace

void unaryF32(ref::UnaryKind kind, const TensorView &x, const TensorView &out) {
  // Elementwise: an output that is the input is fine, element by element.
  OutputBuffer result(out, partlyOverlaps(out, x));
  unaryRow(kind, x.as<float>(), result.data(), x.numElements());
}

void reduceF32(ref::ReduceKind kind, const TensorView &x,
               const std::vector<int64_t> &dims, const TensorView &out) {
  size_t rank = x.shape.size();
  std::vector<char> reduced(rank, 0);
  for (int64_t d : dims)
    reduced[d] = 1;
  // Group strides: where each input dimension moves in the output (0 along
  // reduced dimensions).
  std::vector<int64_t> groupStride(rank, 0);
  int64_t groups = 1, groupSize = 1;
  for (size_t d = rank; d-- > 0;) {
    if (reduced[d]) {
      groupSize *= x.shape[d];
    } else {
      groupStride[d] = groups;
      groups *= x.shape[d];
    }
  }
  bool max = kind == ref::ReduceKind::Max;
  std::vector<double> acc(groups, max ? -std::numeric_limits<double>::infinity()
                                      : 0.0);
  const float *in = x.as<float>();
  int64_t count = x.numElements();
  // Trailing reduced dimensions: contiguous runs of groupSize elements.
  size_t firstReduced = rank;
  while (firstReduced > 0 && reduced[firstReduced - 1])
    --firstReduced;
  bool trailing = true;
  for (size_t d = 0; d < firstReduced; ++d)
    trailing = trailing && !reduced[d];
  if (trailing) {
    for (int64_t g = 0; g < groups; ++g) {
      const float *row = in + g * groupSize;
      double value = acc[g];
      for (int64_t j = 0; j < groupSize; ++j)
        value = max ? std::max(value, static_cast<double>(row[j]))
                    : value + row[j];
      acc[g] = value;
    }
  } else if (count > 0) {
    std::vector<int64_t> index(rank, 0);
    int64_t group = 0;
    for (int64_t k = 0; k < count; ++k) {
      double &target = acc[group];
      target = max ? std::max(target, static_cast<double>(in[k]))
                   : target + in[k];
      for (size_t d = rank; d-- > 0;) {
        group += groupStride[d];
        if (++index[d] < x.shape[d])
          break;
        group -= groupStride[d] * x.shape[d];
        index[d] = 0;
      }
    }
  }
  float *y = out.as<float>();
  for (int64_t g = 0; g < groups; ++g)
    y[g] = static_cast<float>(kind == ref::ReduceKind::Mean
                                  ? acc[g] / static_cast<double>(groupSize)
                                  : acc[g]);
}

void attentionF32(const TensorView &q, const TensorView &k, const TensorView &v,
                  const TensorView *mask, bool causal, int64_t offset,
                  double scale, const TensorView &out) {
  int64_t batch = q.shape[0], heads = q.shape[1], sq = q.shape[2],
          d = q.shape[3];
  int64_t kvHeads = k.shape[1], sk = k.shape[2], dv = v.shape[3];
  int64_t group = heads / kvHeads;
  OutputBuffer result(out, out.overlaps(q) || out.overlaps(k) ||
                               out.overlaps(v) ||
                               (mask && out.overlaps(*mask)));
  // Where each (batch, head, query) row of the mask starts.
  std::vector<int64_t> maskRows;
  int64_t maskStep = 0;
  if (mask)
    maskRows = rowStarts(mask->shape, {batch, heads, sq, sk}, maskStep);
  // The steps on float rows, in the AVX-512 copy where the CPU has it.
  auto softmaxRow = softmaxScoresRowHere;
  auto smallProduct = smallProductHere;
#if defined(BRAID_KERNELS_AVX512)
  if (hasAvx512()) {
    softmaxRow = softmaxScoresRowAvx512;
    smallProduct = smallProductAvx512;
  }
#endif
  // Small heads take the direct products (measured: a 16x16 head of 16 in
  // 0.6 us against 1.5 through two sgemm calls). Causal attention over
  // long rows goes in blocks of kCausalBlock query rows, each with the keys
  // it can see: about half the products' work at 128 rows.
  constexpr int64_t kDirectWork = int64_t{1} << 15;
  constexpr int64_t kCausalBlock = 32;
  bool direct = sq * sk * (d + dv) <= kDirectWork;
  int64_t block =
      causal && !direct && sq >= 2 * kCausalBlock ? kCausalBlock : sq;
  auto rowScale = static_cast<float>(scale);
  // (batch, head) pairs in parallel, each with its own scores.
  int64_t pairs = batch * heads;
  parallelFor(
      pairs, pairs * sq * sk * (d + dv), [&](int64_t begin, int64_t end) {
        std::vector<float> scores(static_cast<size_t>(block * sk));
        std::vector<float> scratch(direct ? static_cast<size_t>(d * sk) : 0);
        for (int64_t pair = begin; pair < end; ++pair) {
          int64_t b = pair / heads, h = pair % heads, kvh = h / group;
          const float *key = k.as<float>() + (b * kvHeads + kvh) * sk * d;
          const float *value = v.as<float>() + (b * kvHeads + kvh) * sk * dv;
          for (int64_t first = 0; first < sq; first += block) {
            int64_t rows = std::min(block, sq - first);
            // The keys any of these rows sees (row i: up to i + offset).
            int64_t keys =
                causal ? std::clamp<int64_t>(first + rows + offset, 0, sk) : sk;
            const float *query = q.as<float>() + (pair * sq + first) * d;
            float *o = result.data() + (pair * sq + first) * dv;
            if (direct) {
              // The keys transposed, [d, keys], so that the product runs
              // along them.
              for (int64_t j = 0; j < keys; ++j)
                for (int64_t c = 0; c < d; ++c)
                  scratch[c * keys + j] = key[j * d + c];
              smallProduct(query, scratch.data(), scores.data(), rows, keys, d);
            } else
              gemm(false, true, rows, keys, d, query, key, scores.data());
            for (int64_t i = 0; i < rows; ++i) {
              int64_t limit =
                  causal ? std::clamp<int64_t>(first + i + offset + 1, 0, keys)
                         : keys;
              softmaxRow(scores.data() + i * keys, keys, limit, rowScale, mask,
                         mask ? maskRows[pair * sq + first + i] : 0, maskStep);
            }
            if (direct)
              smallProduct(scores.data(), value, o, rows, dv, keys);
            else
              gemm(false, false, rows, dv, keys, scores.data(), value, o);
          }
        }
      });
}

void softmaxF32(const TensorView &x, int64_t dim, const TensorView &out) {
  OutputBuffer result(out, partlyOverlaps(out, x));
  int64_t size = x.shape[dim];
  int64_t outer = product(x.shape, 0, dim);
  int64_t inner = product(x.shape, dim + 1, x.shape.size());
  const float *in = x.as<float>();
  float *dst = result.data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * size * inner + i;
      float maximum = -INFINITY;
      for (int64_t j = 0; j < size; ++j)
        maximum = std::fmax(maximum, in[base + j * inner]);
      // A row of -inf gives NaN, as the reference does (exp(-inf - -inf)).
      if (maximum == -INFINITY)
        maximum = NAN;
      double sum = 0;
      for (int64_t j = 0; j < size; ++j) {
        float e = std::exp(in[base + j * inner] - maximum);
        dst[base + j * inner] = e;
        sum += e;
      }
      double inverse = 1.0 / sum;
      for (int64_t j = 0; j < size; ++j)
        dst[base + j * inner] =
            static_cast<float>(dst[base + j * inner] * inverse);
    }
}

void normRows(const float *x, const float *gamma, const float *beta, float *y,
              int64_t rows, int64_t size, double epsilon, bool centered,
              bool avx512) {
  parallelFor(rows, 3 * rows * size, [&](int64_t begin, int64_t end) {
    const float *from = x + begin * size;
    float *to = y + begin * size;
#if defined(BRAID_KERNELS_AVX512)
    if (avx512 && hasAvx512())
      return normRowsAvx512(from, gamma, beta, to, end - begin, size, epsilon,
                            centered);
#endif
    (void)avx512;
    normRowsHere(from, gamma, beta, to, end - begin, size, epsilon, centered);
  });
}

void layerNormF32(const TensorView &x, const TensorView &gamma,
                  const TensorView *beta, int64_t axis, double epsilon,
                  const TensorView &out) {
  bool scratch = partlyOverlaps(out, x) || out.overlaps(gamma) ||
                 (beta && out.overlaps(*beta));
  OutputBuffer result(out, scratch);
  normRows(x.as<float>(), gamma.as<float>(), beta ? beta->as<float>() : nullptr,
           result.data(), product(x.shape, 0, axis),
           product(x.shape, axis, x.shape.size()), epsilon, /*centered=*/true,
           /*avx512=*/true);
}

void rmsNormF32(const TensorView &x, const TensorView &gamma, int64_t axis,
                double epsilon, const TensorView &out) {
  OutputBuffer result(out, partlyOverlaps(out, x) || out.overlaps(gamma));
  normRows(x.as<float>(), gamma.as<float>(), nullptr, result.data(),
           product(x.shape, 0, axis), product(x.shape, axis, x.shape.size()),
           epsilon, /*centered=*/false, /*avx512=*/true);
}

namespace {
/// to[i] = op(x[i], y[i]) for i < n, where a `scalar` operand repeats its
/// one element (the unfused kernels' scalar path: no tile of copies).
template <typename Op>
void chainBinary(Op op, const float *x, bool xScalar, const float *y,
                 bool yScalar, float *to, int64_t n) {
  if (xScalar && yScalar) {
    float v = op(x[0], y[0]);
    std::fill(to, to + n, v);
  } else if (yScalar) {
    float c = y[0];
    for (int64_t i = 0; i < n; ++i)
      to[i] = op(x[i], c);
  } else if (xScalar) {
    float c = x[0];
    for (int64_t i = 0; i < n; ++i)
      to[i] = op(c, y[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      to[i] = op(x[i], y[i]);
  }
}
} // namespace

void elementwiseChainF32(const std::vector<ChainStep> &steps,
                         const std::vector<TensorView> &inputs,
                         const TensorView &out) {
  constexpr int64_t kTile = 1024;
  int64_t count = out.numElements();
  int64_t numInputs = static_cast<int64_t>(inputs.size());
  int64_t numSteps = static_cast<int64_t>(steps.size());
  if (numInputs > kMaxChainInputs || numSteps > kMaxChainSteps || numSteps == 0)
    throw std::invalid_argument(
        "elementwise: a chain has 1 to " + std::to_string(kMaxChainSteps) +
        " steps and at most " + std::to_string(kMaxChainInputs) + " inputs");
  int64_t width = out.shape.empty() ? 1 : out.shape.back();
  // Each input read in place where it has out's shape, as one repeated
  // element where it has one, else by rows of the last dimension (a row of
  // the input, or one element repeated) into a register.
  enum class Read { Whole, Scalar, Rows };
  Read reads[kMaxChainInputs];
  std::vector<int64_t> starts[kMaxChainInputs];
  int64_t stepOf[kMaxChainInputs] = {};
  bool scratch = false;
  for (int64_t l = 0; l < numInputs; ++l) {
    const TensorView &in = inputs[l];
    reads[l] = in.shape == out.shape   ? Read::Whole
               : in.numElements() == 1 ? Read::Scalar
                                       : Read::Rows;
    if (reads[l] == Read::Rows)
      starts[l] = rowStarts(in.shape, out.shape, stepOf[l]);
    // A tile is read before it is written, so only an output that is the
    // very input (same shape, same place) can share its bytes.
    scratch |=
        reads[l] == Read::Whole ? partlyOverlaps(out, in) : out.overlaps(in);
  }
  OutputBuffer result(out, scratch);
  // Registers for the row-broadcast inputs and every step but the last
  // (which writes the output), one tile each, uninitialized; on the stack
  // when small (a training step's chains are mostly a few hundred
  // elements).
  int64_t tile = std::min(kTile, count);
  int64_t numSlots = numSteps - 1;
  int64_t slotOf[kMaxChainInputs] = {};
  for (int64_t l = 0; l < numInputs; ++l)
    if (reads[l] == Read::Rows)
      slotOf[l] = numSlots++;
  int64_t tiles = tile ? (count + tile - 1) / tile : 0;
  parallelFor(tiles, count * numSteps, [&](int64_t begin, int64_t end) {
    constexpr int64_t kStackFloats = 4096;
    float stack[kStackFloats];
    std::unique_ptr<float[]> heap;
    float *registers = stack;
    if (numSlots * tile > kStackFloats) {
      heap.reset(new float[static_cast<size_t>(numSlots * tile)]);
      registers = heap.get();
    }
    const float *at[kMaxChainInputs + kMaxChainSteps];
    bool scalar[kMaxChainInputs + kMaxChainSteps] = {};
    for (int64_t l = 0; l < numInputs; ++l)
      scalar[l] = reads[l] == Read::Scalar;
    for (int64_t t = begin; t < end; ++t) {
      int64_t first = t * tile, n = std::min(tile, count - first);
      for (int64_t l = 0; l < numInputs; ++l) {
        const float *data = inputs[l].as<float>();
        if (reads[l] != Read::Rows) {
          at[l] = reads[l] == Read::Whole ? data + first : data;
          continue;
        }
        float *to = registers + slotOf[l] * tile;
        int64_t row = first / width, column = first % width;
        for (int64_t done = 0; done < n; ++row, column = 0) {
          int64_t run = std::min(width - column, n - done);
          const float *from = data + starts[l][row];
          if (stepOf[l])
            std::copy(from + column, from + column + run, to + done);
          else
            std::fill(to + done, to + done + run, from[0]);
          done += run;
        }
        at[l] = to;
      }
      for (int64_t s = 0; s < numSteps; ++s) {
        const ChainStep &step = steps[s];
        float *to =
            s + 1 == numSteps ? result.data() + first : registers + s * tile;
        const float *x = at[step.a];
        bool xs = scalar[step.a];
        if (step.unary) {
          // A scalar operand is rare (a chain on a constant): the whole
          // tile of it, then the unary op as its kernel computes it.
          if (xs) {
            std::fill(to, to + n, x[0]);
            x = to;
          }
          unaryRow(*step.unary, x, to, n);
        } else {
          const float *y = at[step.b];
          bool ys = scalar[step.b];
          switch (step.arith) {
          case ArithKind::Add:
            chainBinary([](float p, float q) { return p + q; }, x, xs, y, ys,
                        to, n);
            break;
          case ArithKind::Sub:
            chainBinary([](float p, float q) { return p - q; }, x, xs, y, ys,
                        to, n);
            break;
          case ArithKind::Mul:
            chainBinary([](float p, float q) { return p * q; }, x, xs, y, ys,
                        to, n);
            break;
          case ArithKind::Div:
            chainBinary([](float p, float q) { return p / q; }, x, xs, y, ys,
                        to, n);
            break;
          }
        }
        at[numInputs + s] = to;
      }
    }
  });
}

bool rotaryF32(const TensorView &x, const TensorView &cos,
               const TensorView &sin, bool interleaved, const TensorView &out) {
  if (x.shape.empty() || x.shape.back() % 2 != 0)
    return false;
  int64_t width = x.shape.back(), half = width / 2;
  int64_t stepCos = 0, stepSin = 0;
  std::vector<int64_t> fromCos = rowStarts(cos.shape, x.shape, stepCos);
  std::vector<int64_t> fromSin = rowStarts(sin.shape, x.shape, stepSin);
  // Tables with x's last dimension only (what the op's verifier asks).
  if (stepCos != 1 || stepSin != 1 || cos.shape.back() != width ||
      sin.shape.back() != width)
    return false;
  // Each output element reads two input elements: in place only through
  // scratch.
  OutputBuffer result(out, out.overlaps(x) || out.overlaps(cos) ||
                               out.overlaps(sin));
  int64_t rows = static_cast<int64_t>(fromCos.size());
  const float *in = x.as<float>();
  const float *c0 = cos.as<float>(), *s0 = sin.as<float>();
  float *dst = result.data();
  parallelFor(rows, 3 * rows * width, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *a = in + r * width;
      const float *c = c0 + fromCos[r], *s = s0 + fromSin[r];
      float *o = dst + r * width;
      if (interleaved) {
        for (int64_t p = 0; p < half; ++p) {
          float even = a[2 * p], odd = a[2 * p + 1];
          o[2 * p] = even * c[2 * p] - odd * s[2 * p];
          o[2 * p + 1] = odd * c[2 * p + 1] + even * s[2 * p + 1];
        }
        continue;
      }
      // rotate_half pairs (j, j + D/2): (a, b) -> (-b, a).
#pragma omp simd
      for (int64_t j = 0; j < half; ++j)
        o[j] = a[j] * c[j] - a[j + half] * s[j];
#pragma omp simd
      for (int64_t j = half; j < width; ++j)
        o[j] = a[j] * c[j] + a[j - half] * s[j];
    }
  });
  return true;
}

void scatterAddF32(const TensorView &updates, const TensorView &indices,
                   int64_t axis, const TensorView &out) {
  int64_t outer = product(out.shape, 0, axis), size = out.shape[axis];
  int64_t inner = product(out.shape, axis + 1, out.shape.size());
  int64_t count = indices.numElements();
  // Every row first: a bad index leaves the output untouched.
  std::vector<int64_t> rows(count);
  for (int64_t t = 0; t < count; ++t)
    rows[t] = ref::indexedRow("scatter_add", loadInt(indices.dtype, indices.data, t),
                              axis, size);
  OutputBuffer result(out, out.overlaps(updates) || out.overlaps(indices));
  float *dst = result.data();
  std::fill(dst, dst + out.numElements(), 0.0f);
  const float *src = updates.as<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t t = 0; t < count; ++t) {
      float *row = dst + (o * size + rows[t]) * inner;
      const float *update = src + (o * count + t) * inner;
      for (int64_t r = 0; r < inner; ++r)
        row[r] += update[r];
    }
}

namespace {
template <typename T>
void compareTyped(ref::CompareKind kind, const TensorView &a,
                  const TensorView &b, uint8_t *out, const Shape &outShape) {
  const T *x = a.as<T>(), *y = b.as<T>();
  auto run = [&](auto test) {
    broadcastBinary([test](T p, T q) -> uint8_t { return test(p, q) ? 1 : 0; },
                    x, a.shape, y, b.shape, out, outShape);
  };
  switch (kind) {
  case ref::CompareKind::EQ:
    return run([](T p, T q) { return p == q; });
  case ref::CompareKind::NE:
    return run([](T p, T q) { return p != q; });
  case ref::CompareKind::LT:
    return run([](T p, T q) { return p < q; });
  case ref::CompareKind::LE:
    return run([](T p, T q) { return p <= q; });
  case ref::CompareKind::GT:
    return run([](T p, T q) { return p > q; });
  case ref::CompareKind::GE:
    return run([](T p, T q) { return p >= q; });
  }
}
} // namespace

bool compareDirect(ref::CompareKind kind, const TensorView &a,
                   const TensorView &b, const TensorView &out) {
  if (a.dtype != b.dtype || out.dtype != DType::I1 ||
      (a.dtype != DType::F32 && a.dtype != DType::I64 &&
       a.dtype != DType::I32))
    return false;
  bool scratch = out.overlaps(a) || out.overlaps(b);
  std::vector<uint8_t> buffer(scratch ? out.numElements() : 0);
  uint8_t *result = scratch ? buffer.data() : out.as<uint8_t>();
  switch (a.dtype) {
  case DType::F32:
    compareTyped<float>(kind, a, b, result, out.shape);
    break;
  case DType::I64:
    compareTyped<int64_t>(kind, a, b, result, out.shape);
    break;
  default:
    compareTyped<int32_t>(kind, a, b, result, out.shape);
    break;
  }
  if (scratch)
    std::memcpy(out.data, buffer.data(), buffer.size());
  return true;
}

bool castDirect(const TensorView &x, const TensorView &out) {
  int64_t count = x.numElements();
  if (out.dtype == DType::F32) {
    // Through double, as the reference reads every element (i64 beyond
    // 2^53 rounds twice there too).
    std::vector<float> buffer(out.overlaps(x) ? count : 0);
    float *result = buffer.empty() ? out.as<float>() : buffer.data();
    switch (x.dtype) {
    case DType::F32:
      std::memmove(result, x.data, count * sizeof(float));
      break;
    case DType::I1:
      for (int64_t i = 0; i < count; ++i)
        result[i] = x.as<uint8_t>()[i] ? 1.0f : 0.0f;
      break;
    case DType::I32:
      for (int64_t i = 0; i < count; ++i)
        result[i] = static_cast<float>(static_cast<double>(x.as<int32_t>()[i]));
      break;
    case DType::I64:
      for (int64_t i = 0; i < count; ++i)
        result[i] = static_cast<float>(static_cast<double>(x.as<int64_t>()[i]));
      break;
    default:
      return false;
    }
    if (!buffer.empty())
      std::memcpy(out.data, buffer.data(), count * sizeof(float));
    return true;
  }
  if (out.dtype == DType::I1 && x.dtype == DType::F32 && !out.overlaps(x)) {
    for (int64_t i = 0; i < count; ++i)
      out.as<uint8_t>()[i] = x.as<float>()[i] != 0.0f ? 1 : 0;
    return true;
  }
  return false;
}

bool selectDirect(const TensorView &condition, const TensorView &whenTrue,
                  const TensorView &whenFalse, const TensorView &out) {
  if (condition.dtype != DType::I1 || whenTrue.dtype != DType::F32 ||
      whenFalse.dtype != DType::F32 || out.dtype != DType::F32)
    return false;
  OutputBuffer result(out, partlyOverlaps(out, condition) ||
                               partlyOverlaps(out, whenTrue) ||
                               partlyOverlaps(out, whenFalse));
  int64_t count = out.numElements();
  if (count == 0)
    return true;
  const uint8_t *c = condition.as<uint8_t>();
  const float *t = whenTrue.as<float>(), *f = whenFalse.as<float>();
  float *y = result.data();
  int64_t row = out.shape.empty() ? 1 : out.shape.back();
  int64_t stepC, stepT, stepF;
  std::vector<int64_t> startC = rowStarts(condition.shape, out.shape, stepC);
  std::vector<int64_t> startT = rowStarts(whenTrue.shape, out.shape, stepT);
  std::vector<int64_t> startF = rowStarts(whenFalse.shape, out.shape, stepF);
  for (size_t r = 0; r < startC.size(); ++r) {
    const uint8_t *rowC = c + startC[r];
    const float *rowT = t + startT[r], *rowF = f + startF[r];
    float *rowOut = y + static_cast<int64_t>(r) * row;
    for (int64_t j = 0; j < row; ++j)
      rowOut[j] = rowC[j * stepC] ? rowT[j * stepT] : rowF[j * stepF];
  }
  return true;
}

} // namespace braid::rt::cpu

namespace braid::rt {

void setCpuKernelThreads(int threads) {
  cpu::kernelThreads = std::max(1, threads);
#ifdef BRAID_HAS_OPENBLAS
  // OpenBLAS's own pool only when OpenBLAS does the GEMMs: idle, its
  // threads still spin beside the OpenMP ones.
  openblas_set_num_threads(cpu::selectedGemm() == cpu::GemmLibrary::OpenBlas
                               ? cpu::kernelThreads.load()
                               : 1);
#endif
}

int cpuKernelThreads() { return cpu::kernelThreads; }

std::string cpuGemmLibrary() {
#ifdef BRAID_GEMM_ONEDNN
  if (cpu::selectedGemm() == cpu::GemmLibrary::OneDnn) {
    const dnnl_version_t *version = dnnl_version();
    return "oneDNN " + std::to_string(version->major) + "." +
           std::to_string(version->minor) + "." +
           std::to_string(version->patch) + " (sgemm)";
  }
#endif
#ifdef BRAID_HAS_OPENBLAS
  (void)cpu::selectedGemm(); // an unknown BRAID_CPU_GEMM is an error here
  return std::string("OpenBLAS (") + openblas_get_config() + ")";
#endif
}

int defaultCpuKernelThreads() {
  int cores = 1;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    cores = std::max(1, CPU_COUNT(&set));
  long local = 1;
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *value = std::getenv(name)) {
      local = std::max(1L, std::atol(value));
      break;
    }
  return std::max(1, static_cast<int>(cores / local));
}

} // namespace braid::rt
