//===- CudaBackendTest.cpp - the CUDA backend against the CPU backend -----===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Without a GPU: the registry covers every op and checks like the CPU's,
// and braid-run --backend cuda fails with one line. With a GPU: every op in
// f32, f16 and bf16 against the CPU backend, and whole plans (two streams,
// events, collectives, CUDA graph replay) against the CPU executor. GPU
// tests skip with the reason when there is none.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CublasLibrary.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaExecutor.h"
#include "runtime/cuda/CudaKernels.h"

#include "runtime/comm/LocalCommunicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/kernels/ElementIO.h"
#include "runtime/plan/Plan.pb.h"
#include "runtime/plan/PlanError.h"
#include "runtime/reference/ReferenceKernels.h"

#include "../exec/BraidRunProcess.h"
#include "../kernels/RandomTensors.h"
#include "../plan/PlanBuilder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

using namespace braid::rt;
namespace plan = braid::plan;
using namespace braid::rt::test;
using ::testing::HasSubstr;
using Shape = std::vector<int64_t>;
using ref::Tensor;

namespace {

#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    std::string reason = cuda::cudaUnavailableReason();                        \
    if (!reason.empty())                                                       \
      GTEST_SKIP() << "needs a CUDA GPU: " << reason;                          \
  } while (0)

void setAttr(plan::Kernel &kernel, const std::string &name, int64_t value) {
  (*kernel.mutable_attrs())[name].set_i(value);
}
void setFloat(plan::Kernel &kernel, const std::string &name, double value) {
  (*kernel.mutable_attrs())[name].set_f(value);
}
void setBool(plan::Kernel &kernel, const std::string &name, bool value) {
  (*kernel.mutable_attrs())[name].set_b(value);
}
void setString(plan::Kernel &kernel, const std::string &name,
               const std::string &value) {
  (*kernel.mutable_attrs())[name].set_s(value);
}
void setInts(plan::Kernel &kernel, const std::string &name,
             const std::vector<int64_t> &values) {
  for (int64_t value : values)
    (*kernel.mutable_attrs())[name].mutable_ints()->add_values(value);
}

/// One kernel call, run on the CPU backend and on the GPU.
struct Call {
  explicit Call(const std::string &op) { kernel.set_op(op); }
  Call &in(Tensor tensor) {
    inputs.push_back(std::move(tensor));
    return *this;
  }
  Call &out(DType dtype, Shape shape) {
    outputs.emplace_back(dtype, std::move(shape));
    return *this;
  }
  Call &index(int64_t value) {
    indices.push_back(value);
    kernel.add_indices()->set_constant(value);
    return *this;
  }

  KernelArgs args(std::vector<void *> data) const {
    KernelArgs args;
    args.kernel = &kernel;
    args.indices = indices;
    args.numIndices = static_cast<int>(indices.size());
    size_t k = 0;
    for (const Tensor &tensor : inputs)
      args.inputs.push_back({tensor.dtype, tensor.shape, data[k++]});
    for (const auto &[dtype, shape] : outputs)
      args.outputs.push_back({dtype, shape, data[k++]});
    return args;
  }

  std::vector<Tensor> runCpu() const {
    std::vector<std::vector<uint8_t>> storage;
    std::vector<void *> data;
    for (const Tensor &tensor : inputs) {
      storage.emplace_back(count(tensor.shape) * byteSize(tensor.dtype) + 1);
      writeTensor(tensor, tensor.dtype, tensor.shape, storage.back().data());
    }
    for (const auto &[dtype, shape] : outputs)
      storage.emplace_back(count(shape) * byteSize(dtype) + 1, 0);
    for (auto &bytes : storage)
      data.push_back(bytes.data());
    KernelArgs a = args(data);
    const KernelInfo *info = cpuKernels().lookup(kernel.op());
    cpuKernels().verify(*info, a);
    info->run(a);
    std::vector<Tensor> results;
    for (const TensorView &view : a.outputs)
      results.push_back(readTensor(view.dtype, view.shape, view.data));
    return results;
  }

  std::vector<Tensor> runCuda(cuda::CudaContext &ctx) const {
    std::vector<void *> device;
    std::vector<size_t> bytes;
    for (const Tensor &tensor : inputs) {
      std::vector<uint8_t> host(count(tensor.shape) * byteSize(tensor.dtype) +
                                1);
      writeTensor(tensor, tensor.dtype, tensor.shape, host.data());
      void *pointer = nullptr;
      cuda::check(cudaMalloc(&pointer, host.size()), "cudaMalloc");
      cuda::check(cudaMemcpy(pointer, host.data(), host.size(),
                             cudaMemcpyHostToDevice),
                  "cudaMemcpy");
      device.push_back(pointer);
    }
    for (const auto &[dtype, shape] : outputs) {
      void *pointer = nullptr;
      size_t size = count(shape) * byteSize(dtype) + 1;
      cuda::check(cudaMalloc(&pointer, size), "cudaMalloc");
      // Garbage, so that an element the kernel forgets shows.
      cuda::check(cudaMemset(pointer, 0x7f, size), "cudaMemset");
      device.push_back(pointer);
      bytes.push_back(size);
    }
    KernelArgs a = args(device);
    a.context = &ctx;
    const KernelInfo *info = cuda::cudaKernels().lookup(kernel.op());
    cuda::cudaKernels().verify(*info, a);
    info->run(a);
    cuda::check(cudaStreamSynchronize(ctx.stream), kernel.op().c_str());
    std::vector<Tensor> results;
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::vector<uint8_t> host(bytes[i]);
      cuda::check(cudaMemcpy(host.data(), device[inputs.size() + i], bytes[i],
                             cudaMemcpyDeviceToHost),
                  "cudaMemcpy");
      results.push_back(
          readTensor(outputs[i].first, outputs[i].second, host.data()));
    }
    for (void *pointer : device)
      cudaFree(pointer);
    return results;
  }

  plan::Kernel kernel;
  std::vector<Tensor> inputs;
  std::vector<std::pair<DType, Shape>> outputs;
  std::vector<int64_t> indices;
};

/// The tolerance of a GPU result against the CPU backend, relative to the
/// largest reference magnitude: the GPU accumulates in f32, the CPU in
/// double, and both round to the element type.
double tolerance(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 2e-5;
  case DType::F16:
    return 4e-3;
  case DType::BF16:
    return 3e-2;
  default:
    return 0;
  }
}

void expectClose(const Tensor &actual, const Tensor &expected,
                 const std::string &what) {
  ASSERT_EQ(actual.shape, expected.shape) << what;
  if (!expected.isFloat()) {
    EXPECT_EQ(actual.i, expected.i) << what;
    return;
  }
  double scale = 1e-30, worst = 0;
  int64_t worstAt = -1;
  for (double value : expected.f)
    if (std::isfinite(value))
      scale = std::max(scale, std::fabs(value));
  for (size_t k = 0; k < expected.f.size(); ++k) {
    double a = actual.f[k], e = expected.f[k];
    if (!std::isfinite(e)) {
      EXPECT_TRUE(std::isnan(e) ? std::isnan(a) : a == e)
          << what << " element " << k << ": " << a << " vs " << e;
      continue;
    }
    double error = std::isfinite(a) ? std::fabs(a - e) : INFINITY;
    if (error > worst) {
      worst = error;
      worstAt = static_cast<int64_t>(k);
    }
  }
  EXPECT_LE(worst, tolerance(expected.dtype) * scale)
      << what << ": worst at element " << worstAt << " ("
      << (worstAt >= 0 ? actual.f[worstAt] : 0) << " vs "
      << (worstAt >= 0 ? expected.f[worstAt] : 0) << ")";
}

/// A plan file holding one softmax, for the command-line tests.
std::string writeSoftmaxPlan(const std::string &path) {
  PlanBuilder p;
  uint32_t x = p.buffer(DType::F32, {2, 8});
  uint32_t y = p.buffer(DType::F32, {2, 8});
  p.input("x", x);
  p.output("y", y);
  setAttr(p.kernel("compute", "softmax", {x}, {y}), "dim", 1);
  std::ofstream(path, std::ios::binary) << p.serialize();
  return path;
}

//===----------------------------------------------------------------------===//
// Without a GPU
//===----------------------------------------------------------------------===//

TEST(CudaKernelsTest, EveryCpuOpHasACudaKernel) {
  EXPECT_THAT(cuda::opsWithoutCudaKernel(), ::testing::IsEmpty());
  EXPECT_EQ(cuda::cudaKernels().ops(), cpuKernels().ops());
}

TEST(CudaKernelsTest, ChecksAreTheCpuChecksPlusTheRankLimit) {
  // A shape the CPU rejects is rejected for CUDA with the same message.
  Call bad("matmul");
  bad.in(randomFloats(DType::F32, {2, 3}))
      .in(randomFloats(DType::F32, {4, 5}))
      .out(DType::F32, {2, 5});
  std::vector<void *> none(3, nullptr);
  KernelArgs args = bad.args(none);
  const KernelInfo *info = cuda::cudaKernels().lookup("matmul");
  ASSERT_NE(info, nullptr);
  EXPECT_THROW(
      {
        try {
          cuda::cudaKernels().verify(*info, args);
        } catch (const PlanError &error) {
          EXPECT_THAT(error.what(), HasSubstr("contraction sizes differ"));
          throw;
        }
      },
      PlanError);
  // Rank 9 passes the CPU check of neg but not the CUDA kernels' limit.
  Call deep("neg");
  Shape nine(9, 1);
  deep.in(randomFloats(DType::F32, nine)).out(DType::F32, nine);
  KernelArgs deepArgs = deep.args({nullptr, nullptr});
  cpuKernels().verify(*cpuKernels().lookup("neg"), deepArgs);
  try {
    cuda::cudaKernels().verify(*cuda::cudaKernels().lookup("neg"), deepArgs);
    ADD_FAILURE() << "rank 9 passed the CUDA check";
  } catch (const PlanError &error) {
    EXPECT_THAT(error.what(), HasSubstr("above the CUDA kernels' limit of 8"));
  }
}

TEST(CudaBraidRunTest, WithoutAGpuTheCudaBackendFailsInOneLine) {
  std::string reason = cuda::cudaUnavailableReason();
  if (reason.empty())
    GTEST_SKIP() << "this machine has a GPU";
  std::string plan = writeSoftmaxPlan(::testing::TempDir() + "softmax.bplan");
  BraidRunResult result = braidRun(plan + " --backend cuda");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_EQ(result.output, "braid-run: error: --backend cuda: " + reason + "\n");
  EXPECT_THAT(result.output, HasSubstr("no CUDA GPU"));
}

TEST(CudaBraidRunTest, CudaGraphNeedsTheCudaBackend) {
  std::string plan = writeSoftmaxPlan(::testing::TempDir() + "softmax2.bplan");
  BraidRunResult result = braidRun(plan + " --cuda-graph");
  EXPECT_EQ(result.status, 2);
  EXPECT_THAT(result.output, HasSubstr("--cuda-graph needs --backend cuda"));
}

//===----------------------------------------------------------------------===//
// On a GPU: every op against the CPU backend
//===----------------------------------------------------------------------===//

class CudaOpsTest : public ::testing::Test {
protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    cuda::check(cudaSetDevice(0), "cudaSetDevice");
    cuda::createContext(ctx, 64u << 20);
  }
  void TearDown() override { cuda::destroyContext(ctx); }

  /// Runs `call` on both backends and compares every output.
  void compare(const Call &call) {
    std::string what = call.kernel.op();
    for (const Tensor &input : call.inputs)
      what += " " + std::string(toString(input.dtype)) +
              shapeToString(input.shape);
    std::vector<Tensor> expected = call.runCpu();
    std::vector<Tensor> actual;
    try {
      actual = call.runCuda(ctx);
    } catch (const std::exception &error) {
      ADD_FAILURE() << what << ": " << error.what();
      return;
    }
    ASSERT_EQ(actual.size(), expected.size()) << what;
    for (size_t i = 0; i < actual.size(); ++i)
      expectClose(actual[i], expected[i],
                  what + " output " + std::to_string(i));
  }

  cuda::CudaContext ctx;
};

const DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

TEST_F(CudaOpsTest, Elementwise) {
  for (DType t : kFloatTypes) {
    for (const char *op : {"neg", "exp", "tanh", "erf", "sigmoid", "silu",
                           "relu"})
      compare(Call(op).in(randomFloats(t, {3, 257})).out(t, {3, 257}));
    for (const char *op : {"log", "sqrt", "rsqrt"})
      compare(Call(op).in(randomFloats(t, {1000}, 0.1, 4)).out(t, {1000}));
    for (bool tanh : {false, true}) {
      Call gelu("gelu");
      setBool(gelu.kernel, "tanh", tanh);
      compare(gelu.in(randomFloats(t, {4, 64})).out(t, {4, 64}));
    }
    for (const char *op : {"add", "sub", "mul", "max", "min"}) {
      compare(Call(op)
                  .in(randomFloats(t, {4096}))
                  .in(randomFloats(t, {4096}))
                  .out(t, {4096}));
      compare(Call(op)
                  .in(randomFloats(t, {2, 1, 5}))
                  .in(randomFloats(t, {3, 1}))
                  .out(t, {2, 3, 5}));
    }
    compare(Call("div")
                .in(randomFloats(t, {7, 9}))
                .in(randomFloats(t, {9}, 0.5, 2))
                .out(t, {7, 9}));
    compare(Call("pow")
                .in(randomFloats(t, {33}, 0.1, 2))
                .in(randomFloats(t, {33}, -2, 2))
                .out(t, {33}));
    for (const char *kind : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      Call compareOp("compare");
      setString(compareOp.kernel, "kind", kind);
      Tensor a = randomInts(DType::I64, {5, 6}, -2, 2);
      compare(compareOp.in(ref::cast(a, t))
                  .in(ref::cast(randomInts(DType::I64, {6}, -2, 2), t))
                  .out(DType::I1, {5, 6}));
    }
    compare(Call("select")
                .in(randomInts(DType::I1, {4, 1}, 0, 1))
                .in(randomFloats(t, {4, 8}))
                .in(randomFloats(t, {8}))
                .out(t, {4, 8}));
    for (DType to : {DType::F32, DType::F16, DType::BF16, DType::I64,
                     DType::I32, DType::I1})
      compare(Call("cast").in(randomFloats(t, {50}, -9, 9)).out(to, {50}));
  }
  compare(Call("neg").in(randomInts(DType::I64, {10}, -5, 5)).out(DType::I64,
                                                                    {10}));
  compare(Call("add")
              .in(randomInts(DType::I32, {3, 4}, -5, 5))
              .in(randomInts(DType::I32, {4}, -5, 5))
              .out(DType::I32, {3, 4}));
}

TEST_F(CudaOpsTest, Matmul) {
  for (DType t : kFloatTypes) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Call call("matmul");
        setBool(call.kernel, "transpose_lhs", ta);
        setBool(call.kernel, "transpose_rhs", tb);
        Shape a = ta ? Shape{2, 48, 33} : Shape{2, 33, 48};
        Shape b = tb ? Shape{40, 48} : Shape{48, 40};
        compare(call.in(randomFloats(t, a))
                    .in(randomFloats(t, b))
                    .out(t, {2, 33, 40}));
      }
    // Broadcast batch dimensions on both sides.
    compare(Call("matmul")
                .in(randomFloats(t, {2, 1, 5, 7}))
                .in(randomFloats(t, {1, 3, 7, 4}))
                .out(t, {2, 3, 5, 4}));
    for (bool transposed : {false, true}) {
      Call grouped("grouped_matmul");
      setBool(grouped.kernel, "transpose_rhs", transposed);
      compare(grouped.in(randomFloats(t, {4, 6, 32}))
                  .in(randomFloats(t, transposed ? Shape{4, 24, 32}
                                                 : Shape{4, 32, 24}))
                  .out(t, {4, 6, 24}));
    }
  }
}

TEST_F(CudaOpsTest, ReductionsSoftmaxNorms) {
  for (DType t : kFloatTypes) {
    for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max"})
      for (const auto &dims : {Shape{2}, Shape{0, 2}, Shape{1}})
        for (bool keep : {false, true}) {
          Call call(op);
          setInts(call.kernel, "dims", dims);
          setBool(call.kernel, "keep_dims", keep);
          Tensor x = randomFloats(t, {3, 5, 300});
          Tensor expected =
              ref::reduce(std::string(op) == "reduce_sum"
                              ? ref::ReduceKind::Sum
                          : std::string(op) == "reduce_mean"
                              ? ref::ReduceKind::Mean
                              : ref::ReduceKind::Max,
                          x, dims, keep);
          compare(call.in(x).out(t, expected.shape));
        }
    for (int64_t dim : {1, 0})
      for (int64_t width : {64, 3000}) {
        Call softmax("softmax");
        setAttr(softmax.kernel, "dim", dim);
        compare(softmax.in(randomFloats(t, {3, width}, -4, 4))
                    .out(t, {3, width}));
      }
    for (int64_t width : {768, 5000}) {
      Call layerNorm("layer_norm");
      setAttr(layerNorm.kernel, "axis", 1);
      setFloat(layerNorm.kernel, "epsilon", 1e-5);
      compare(layerNorm.in(randomFloats(t, {6, width}))
                  .in(randomFloats(t, {width}))
                  .in(randomFloats(t, {width}))
                  .out(t, {6, width}));
      Call rms("rms_norm");
      setAttr(rms.kernel, "axis", 1);
      setFloat(rms.kernel, "epsilon", 1e-6);
      compare(rms.in(randomFloats(t, {6, width}))
                  .in(randomFloats(t, {width}))
                  .out(t, {6, width}));
    }
    for (bool interleaved : {false, true}) {
      Call rotary("rotary");
      setBool(rotary.kernel, "interleaved", interleaved);
      compare(rotary.in(randomFloats(t, {2, 3, 5, 8}))
                  .in(randomFloats(t, {5, 4}))
                  .in(randomFloats(t, {5, 4}))
                  .out(t, {2, 3, 5, 8}));
    }
  }
}

TEST_F(CudaOpsTest, DataMovement) {
  for (DType t : {DType::F32, DType::BF16, DType::I64}) {
    auto random = [&](Shape shape) {
      return t == DType::I64 ? randomInts(t, shape, -100, 100)
                             : randomFloats(t, shape);
    };
    compare(Call("reshape").in(random({4, 6})).out(t, {2, 12}));
    compare(Call("copy").in(random({4, 6})).out(t, {4, 6}));
    Call transpose("transpose");
    setInts(transpose.kernel, "permutation", {2, 0, 1});
    compare(transpose.in(random({3, 4, 5})).out(t, {5, 3, 4}));
    Call slice("slice");
    setInts(slice.kernel, "static_offsets",
            {1, std::numeric_limits<int64_t>::min()});
    setInts(slice.kernel, "static_sizes", {2, 3});
    setInts(slice.kernel, "static_strides", {1, 2});
    compare(slice.in(random({4, 9})).index(2).out(t, {2, 3}));
    Call concat("concat");
    setAttr(concat.kernel, "dim", 1);
    compare(concat.in(random({2, 3, 4}))
                .in(random({2, 5, 4}))
                .in(random({2, 1, 4}))
                .out(t, {2, 9, 4}));
    Call split("split");
    setAttr(split.kernel, "dim", 0);
    compare(split.in(random({6, 5})).out(t, {2, 5}).out(t, {4, 5}));
    compare(Call("broadcast_to").in(random({3, 1})).out(t, {2, 3, 7}));
    Call gather("gather");
    setAttr(gather.kernel, "axis", 0);
    compare(gather.in(random({10, 6}))
                .in(randomInts(DType::I64, {3, 4}, 0, 9))
                .out(t, {3, 4, 6}));
  }
  // scatter_add sums (atomically): 600 tokens into 7 rows, every row many
  // times, by positive and negative ids.
  for (DType t : kFloatTypes) {
    Call rows("scatter_add");
    setAttr(rows.kernel, "axis", 0);
    compare(rows.in(randomFloats(t, {3, 200, 40}))
                .in(randomInts(DType::I64, {3, 200}, -7, 6))
                .out(t, {7, 40}));
    Call columns("scatter_add");
    setAttr(columns.kernel, "axis", 1);
    compare(columns.in(randomFloats(t, {5, 33, 2}))
                .in(randomInts(DType::I32, {33}, -4, 3))
                .out(t, {5, 4, 2}));
  }
}

TEST_F(CudaOpsTest, Attention) {
  for (DType t : kFloatTypes)
    for (int64_t headDim : {64, 128}) {
      Tensor q = randomFloats(t, {2, 4, 37, headDim});
      Tensor k = randomFloats(t, {2, 2, 70, headDim});
      Tensor v = randomFloats(t, {2, 2, 70, headDim});
      for (bool causal : {false, true}) {
        Call call("attention");
        setBool(call.kernel, "causal", causal);
        setFloat(call.kernel, "scale", 1.0 / std::sqrt(double(headDim)));
        compare(call.in(q).in(k).in(v).out(t, {2, 4, 37, headDim}));
      }
      // Partial attention with a causal offset and a mask: output and LSE.
      Call partial("attention_partial");
      setBool(partial.kernel, "causal", true);
      setFloat(partial.kernel, "scale", 0.1);
      setBool(partial.kernel, "has_mask", true);
      compare(partial.in(q)
                  .in(k)
                  .in(v)
                  .in(randomInts(DType::I1, {37, 70}, 0, 1))
                  .index(20)
                  .out(t, {2, 4, 37, headDim})
                  .out(DType::F32, {2, 4, 37}));
    }
  for (DType t : kFloatTypes) {
    Call merge("attention_merge");
    merge.in(randomFloats(t, {2, 3, 5, 8}))
        .in(randomFloats(t, {2, 3, 5, 8}))
        .in(randomFloats(DType::F32, {2, 3, 5}, -2, 2))
        .in(randomFloats(DType::F32, {2, 3, 5}, -2, 2));
    merge.out(t, {2, 3, 5, 8}).out(DType::F32, {2, 3, 5});
    compare(merge);
  }
}

TEST_F(CudaOpsTest, MixtureOfExpertsAndLoss) {
  for (DType t : kFloatTypes) {
    Tensor logits = randomFloats(t, {64, 8}, -3, 3);
    for (bool normalize : {false, true}) {
      Call router("router_topk");
      setAttr(router.kernel, "k", 2);
      setBool(router.kernel, "normalize", normalize);
      compare(router.in(logits).out(t, {64, 2}).out(DType::I64, {64, 2}));
    }
    ref::RouterResult routed = ref::routerTopK(logits, 2, true);
    compare(Call("moe_dispatch")
                .in(randomFloats(t, {64, 32}))
                .in(routed.experts)
                .out(t, {8, 20, 32}));
    compare(Call("moe_combine")
                .in(randomFloats(t, {8, 20, 32}))
                .in(routed.experts)
                .in(routed.weights)
                .out(t, {64, 32}));
    for (const char *reduction : {"none", "mean", "sum"}) {
      Call loss("cross_entropy");
      setString(loss.kernel, "reduction", reduction);
      Tensor labels = randomInts(DType::I64, {4, 9}, 0, 99);
      compare(loss.in(randomFloats(t, {4, 9, 100}, -3, 3))
                  .in(labels)
                  .out(t, std::string(reduction) == "none"
                                       ? Shape{4, 9}
                                       : Shape{}));
    }
  }
}

//===----------------------------------------------------------------------===//
// On a GPU: whole plans against the CPU executor
//===----------------------------------------------------------------------===//

/// Two streams: compute makes x*w, comm all-reduces it (a group of one) and
/// all-gathers along dim 1, compute waits and adds; run plain and as a
/// graph.
std::string twoStreamPlan() {
  PlanBuilder p;
  uint32_t x = p.buffer(DType::F32, {64, 96});
  uint32_t w = p.buffer(DType::F32, {96, 128});
  uint32_t y = p.buffer(DType::F32, {64, 128});
  uint32_t r = p.buffer(DType::F32, {64, 128});
  uint32_t g = p.buffer(DType::F32, {64, 128});
  uint32_t out = p.buffer(DType::F32, {64, 128});
  p.input("x", x);
  p.input("w", w);
  p.output("out", out);
  p.kernel("compute", "matmul", {x, w}, {y});
  uint32_t ready = p.event(), reduced = p.event();
  p.record("compute", ready);
  p.wait("comm", ready);
  p.collective("comm", "all_reduce", {"x"}, y, r).set_reduction("sum");
  p.collective("comm", "all_gather", {"x"}, r, g).set_dim(1);
  p.record("comm", reduced);
  p.wait("compute", reduced);
  p.kernel("compute", "add", {g, y}, {out});
  return p.serialize();
}

TEST(CudaExecutorTest, TwoStreamsEventsCollectivesAndGraphsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  std::string bytes = twoStreamPlan();
  LoadOptions cpuLoad;
  cpuLoad.kernels = &cpuKernels();
  LoadedPlan cpuPlan = parsePlan(bytes.data(), bytes.size(), cpuLoad);
  LoadOptions cudaLoad;
  cudaLoad.kernels = &cuda::cudaKernels();
  LoadedPlan cudaPlan = parsePlan(bytes.data(), bytes.size(), cudaLoad);

  Tensor x = randomFloats(DType::F32, {64, 96});
  Tensor w = randomFloats(DType::F32, {96, 128});
  auto bytesOf = [](const Tensor &t) {
    std::vector<uint8_t> data(count(t.shape) * byteSize(t.dtype));
    writeTensor(t, t.dtype, t.shape, data.data());
    return data;
  };
  LocalCommunicator local(cpuPlan.mesh);
  Executor cpu(cpuPlan, local, nullptr);
  std::memcpy(cpu.input("x").data, bytesOf(x).data(), bytesOf(x).size());
  std::memcpy(cpu.input("w").data, bytesOf(w).data(), bytesOf(w).size());
  cpu.run();
  TensorView cpuOut = cpu.output("out");
  Tensor expected = readTensor(DType::F32, cpuOut.shape, cpuOut.data);

  cuda::check(cudaSetDevice(0), "cudaSetDevice");
  for (bool graph : {false, true}) {
    auto comm = cuda::makeCudaCommunicator(cudaPlan.mesh, 1, nullptr, nullptr);
    cuda::CudaExecutorOptions options;
    options.graph = graph;
    cuda::CudaExecutor gpu(cudaPlan, *comm, nullptr, options);
    for (int run = 0; run < 3; ++run) {
      gpu.setInput("x", bytesOf(x).data(), bytesOf(x).size());
      gpu.setInput("w", bytesOf(w).data(), bytesOf(w).size());
      gpu.run();
      std::vector<uint8_t> out = gpu.readOutput("out");
      expectClose(readTensor(DType::F32, {64, 128}, out.data()), expected,
                  graph ? "graph run " + std::to_string(run)
                        : "run " + std::to_string(run));
    }
    EXPECT_GT(gpu.profile().totalNs, 0);
  }
}

TEST(CudaExecutorTest, AnOutOfMemoryArenaNamesTheRankAndSize) {
  SKIP_WITHOUT_GPU();
  PlanBuilder p;
  uint32_t x = p.buffer(DType::F32, {4});
  uint32_t y = p.buffer(DType::F32, {4});
  p.input("x", x);
  p.output("y", y);
  p.kernel("compute", "neg", {x}, {y});
  plan::Plan proto;
  ASSERT_TRUE(proto.ParseFromString(p.serialize()));
  proto.set_arena_bytes(uint64_t(1) << 50);
  LoadOptions load;
  load.kernels = &cuda::cudaKernels();
  std::string bytes = proto.SerializeAsString();
  LoadedPlan loaded = parsePlan(bytes.data(), bytes.size(), load);
  auto comm = cuda::makeCudaCommunicator(loaded.mesh, 1, nullptr, nullptr);
  try {
    cuda::CudaExecutor gpu(loaded, *comm, nullptr);
    ADD_FAILURE() << "a 1 PiB arena was allocated";
  } catch (const ExecutionError &error) {
    EXPECT_THAT(error.what(), HasSubstr("rank 0: cannot allocate the arena"));
  }
}

} // namespace

// cuBLAS is loaded on demand (CublasLibrary.h), not linked: it loads and
// resolves every function the backend calls without a GPU too, and
// braid-run does not map it (linked, it cost every CPU run ~210 MiB).
TEST(CublasLibraryTest, LoadsOnDemandAndResolvesEveryFunction) {
  const cuda::CublasLibrary &api = cuda::cublas();
  EXPECT_NE(api.create, nullptr);
  EXPECT_NE(api.destroy, nullptr);
  EXPECT_NE(api.setStream, nullptr);
  EXPECT_NE(api.setWorkspace, nullptr);
  EXPECT_NE(api.gemmStridedBatchedEx, nullptr);
  ASSERT_NE(api.statusName, nullptr);
  EXPECT_STREQ(api.statusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  std::FILE *ldd = popen("ldd " BRAID_RUN_PATH " 2>&1", "r");
  ASSERT_NE(ldd, nullptr);
  std::string libraries;
  char line[512];
  while (std::fgets(line, sizeof line, ldd))
    libraries += line;
  pclose(ldd);
  EXPECT_THAT(libraries, testing::HasSubstr("libcudart"));
  EXPECT_THAT(libraries, testing::Not(testing::HasSubstr("libcublas")));
}

