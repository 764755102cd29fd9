//===- RooflineTest.cpp - kernel times and contention factors -------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Roofline times of kernels against hand-computed values, and the contention
// factors of runtime/cost/Contention.h.
//
//===----------------------------------------------------------------------===//

#include "TestProfile.h"

#include "runtime/cost/Contention.h"
#include "runtime/cost/Roofline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace braid::rt;
using braid::rt::test::roundNumberProfile;

namespace {

/// A relative tolerance for values computed in a few floating-point steps.
void expectClose(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-12 * expected) << "expected " << expected;
}

} // namespace

// Ops map to their roof.
TEST(RooflineTest, ClassifiesOps) {
  EXPECT_EQ(classifyKernel("matmul"), KernelClass::Gemm);
  EXPECT_EQ(classifyKernel("grouped_matmul"), KernelClass::Gemm);
  EXPECT_EQ(classifyKernel("attention"), KernelClass::Attention);
  EXPECT_EQ(classifyKernel("attention_partial"), KernelClass::Attention);
  EXPECT_EQ(classifyKernel("add"), KernelClass::Memory);
  EXPECT_EQ(classifyKernel("layer_norm"), KernelClass::Memory);
  EXPECT_EQ(classifyKernel("some_future_op"), KernelClass::Memory);
  EXPECT_EQ(toString(KernelClass::Attention), "attention");
}

// A compute-bound GEMM: (F + F_half) / (peak * max) + overhead.
TEST(RooflineTest, ComputeBoundGemm) {
  HardwareProfile profile = roundNumberProfile();
  profile.gemm = {0.5, 1e9};
  profile.gpu.kernelOverheadSec = 3e-6;
  // bf16 peak 2 TFLOP/s at 0.5: (4e9 + 1e9) / 1e12 = 5 ms; memory 1e6 B at
  // 1 GB/s = 1 ms.
  KernelTime time =
      kernelTime(profile, KernelClass::Gemm, DType::BF16, 4e9, 1e6);
  expectClose(time.computeSec, 5e-3);
  expectClose(time.memorySec, 1e-3);
  EXPECT_TRUE(time.computeBound());
  expectClose(time.total(), 5e-3 + 3e-6);
  // The efficiency reached: 4e9 / (2e12 * 5e-3) = 0.4 = 0.5 * 4/(4+1).
  expectClose(4e9 / (2e12 * time.computeSec), profile.gemm.at(4e9));
}

// A memory-bound elementwise kernel: (B + B_half) / (bw * max).
TEST(RooflineTest, MemoryBoundKernel) {
  HardwareProfile profile = roundNumberProfile();
  profile.memory = {0.8, 2e5};
  profile.vectorEfficiency = 0.5;
  // 1e6 FLOPs at 1 TFLOP/s * 0.5 = 2 us; (1.4e6 + 2e5) / 0.8e9 = 2 ms.
  KernelTime time =
      kernelTime(profile, KernelClass::Memory, DType::F32, 1e6, 1.4e6);
  expectClose(time.computeSec, 2e-6);
  expectClose(time.memorySec, 2e-3);
  EXPECT_FALSE(time.computeBound());
  expectClose(time.total(), 2e-3);
}

// Attention uses the tensor peak with its own curve; integer types fall back
// to the vector peak.
TEST(RooflineTest, AttentionAndFallbackPeaks) {
  HardwareProfile profile = roundNumberProfile();
  profile.attention = {0.25, 0};
  expectClose(
      kernelTime(profile, KernelClass::Attention, DType::BF16, 1e9, 0).total(),
      1e9 / (2e12 * 0.25));
  profile.gpu.vectorFlops[DType::F32] = 0.5e12;
  expectClose(
      kernelTime(profile, KernelClass::Gemm, DType::I64, 1e9, 0).total(),
      1e9 / 0.5e12);
}

// A view (no FLOPs, no bytes) is free, even with a kernel overhead.
TEST(RooflineTest, EmptyKernelIsFree) {
  HardwareProfile profile = roundNumberProfile();
  profile.gpu.kernelOverheadSec = 5e-6;
  EXPECT_EQ(kernelTime(profile, KernelClass::Memory, DType::F32, 0, 0).total(),
            0);
  expectClose(
      kernelTime(profile, KernelClass::Memory, DType::F32, 0, 1).total(),
      5e-6 + 1e-9);
}

TEST(RooflineTest, RejectsNegativeWork) {
  HardwareProfile profile = roundNumberProfile();
  EXPECT_THROW(kernelTime(profile, KernelClass::Gemm, DType::F32, -1, 0),
               std::invalid_argument);
  EXPECT_THROW(kernelTime(profile, KernelClass::Gemm, DType::F32, 0, NAN),
               std::invalid_argument);
}

// Contention factors apply only while the other side runs.
TEST(ContentionTest, Factors) {
  ContentionSpec contention{20, 1.2, 1.3, 1.1};
  EXPECT_EQ(kernelSlowdown(contention, KernelClass::Gemm, false), 1);
  EXPECT_EQ(kernelSlowdown(contention, KernelClass::Gemm, true), 1.2);
  EXPECT_EQ(kernelSlowdown(contention, KernelClass::Attention, true), 1.2);
  EXPECT_EQ(kernelSlowdown(contention, KernelClass::Memory, true), 1.3);
  EXPECT_EQ(collectiveSlowdown(contention, false), 1);
  EXPECT_EQ(collectiveSlowdown(contention, true), 1.1);
  expectClose(smShareSlowdown(132, 20), 132.0 / 112);
  EXPECT_EQ(smShareSlowdown(100, 0), 1);
  EXPECT_THROW(smShareSlowdown(100, 100), std::invalid_argument);
  EXPECT_THROW(smShareSlowdown(100, -1), std::invalid_argument);
}

// A plan's communication SM share (braid-comet) replaces the profile's in
// the GEMM slowdown, and fewer SMs than NCCL's usual slow collectives in
// proportion; more do not speed them up.
TEST(ContentionTest, CommSmsShare) {
  HardwareProfile profile = roundNumberProfile();
  profile.gpu.smCount = 100;
  profile.contention = ContentionSpec{20, 1.25, 1.3, 1.1};
  CommShare same = applyCommSms(profile, 0);
  EXPECT_EQ(same.contention.matrixSlowdown, 1.25);
  EXPECT_EQ(same.collectiveTimeScale, 1);
  CommShare fewer = applyCommSms(profile, 10);
  expectClose(fewer.contention.matrixSlowdown, 100.0 / 90);
  expectClose(fewer.collectiveTimeScale, 2.0);
  EXPECT_EQ(fewer.contention.memorySlowdown, 1.3);
  CommShare more = applyCommSms(profile, 40);
  expectClose(more.contention.matrixSlowdown, 100.0 / 60);
  EXPECT_EQ(more.collectiveTimeScale, 1);
  EXPECT_THROW(applyCommSms(profile, 100), std::invalid_argument);
}
