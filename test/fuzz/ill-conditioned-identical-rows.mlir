// An ill-conditioned program is not a partitioning bug. Found by
// scripts/fuzz-partition.sh (case 75957386140919019), minimized: two MoE
// layers (the hidden state divided by its mean between them), then the
// hidden state minus its mean over the batch, then an RMS norm. Where
// both batch rows hold the same token at a position, the two rows are equal,
// so their difference is exactly 0 in the f32 reference (identical rows are
// rounded identically) and in double precision; under ep=3 the rows pass
// through the experts at other positions and round differently, and the
// norm (eps 1e-6) blows a difference of 1e-6 up to 6e-3. The runner measures
// this: that element of the reference moves by up to ~4e-2 when every
// stored value is perturbed by one ulp, so it is allowed 8 times that and
// the case passes; with the allowance off it fails, at the element that is 0
// in both references. The rounding that shows it depends on OpenBLAS's
// kernels: its SkylakeX (AVX-512) kernels happen to round the two rows alike
// (relative error 5e-6, so even the strict run passes), so the test pins the
// Haswell (AVX2) kernels, which every x86-64 CI machine runs. oneDNN, the
// runtime's default GEMM, rounds the rows alike too (no case in 30,000
// random ones needed the allowance with it), so the test selects OpenBLAS.
// REQUIRES: cpu-gemm-openblas
// RUN: env BRAID_CPU_GEMM=openblas OPENBLAS_CORETYPE=Haswell braid-fuzz-partition --reproduce=%s --mesh=ep=3 --data-seed=75957386140919019 | FileCheck %s --check-prefix=PASS
// RUN: env BRAID_CPU_GEMM=openblas OPENBLAS_CORETYPE=Haswell not braid-fuzz-partition --reproduce=%s --mesh=ep=3 --data-seed=75957386140919019 --conditioning-factor=0 | FileCheck %s --check-prefix=STRICT

// PASS: pass on 3 ranks
// PASS: output 'hidden': max abs error {{.*}}, relative {{[0-9.]+}}e-03 (worst rank {{[0-2]}}); the f32 reference moves {{[0-9.]+}}e-02 under other roundings
// PASS-NEXT: worst element of 'hidden' [{{.*}}]: {{.*}} on rank {{[0-2]}}, {{.*}} in the f32 reference, {{.*}} in double precision; allowed error {{.*}} (relative)

// STRICT: MISMATCH on 3 ranks
// STRICT: worst element of 'hidden' [1, 7, 6]: {{.*}} on rank {{[0-2]}}, 0 in the f32 reference, 0 in double precision

  braid.weight @embed.weight : tensor<12x8xf32>
  braid.weight @l1.moe.router.weight : tensor<8x3xf32>
  braid.weight @l1.moe.w1 : tensor<3x8x12xf32>
  braid.weight @l1.moe.w2 : tensor<3x12x8xf32>
  braid.weight @l2.moe.router.weight : tensor<3x8xf32>
  braid.weight @l2.moe.w1 : tensor<3x8x12xf32>
  braid.weight @l2.moe.w2 : tensor<3x8x12xf32>
  braid.weight @l4.rms.weight : tensor<8xf32>
  func.func @main(%arg0: tensor<2x10xi64> {braid.name = "input_ids"}) -> (tensor<2x10x8xf32> {braid.name = "hidden"}) {
    %0 = braid.get_weight @embed.weight : tensor<12x8xf32>
    %1 = braid.gather %0[%arg0] axis 0 : (tensor<12x8xf32>, tensor<2x10xi64>) -> tensor<2x10x8xf32>
    %2 = braid.reshape %1 : tensor<2x10x8xf32> -> tensor<20x8xf32>
    %3 = braid.get_weight @l1.moe.router.weight : tensor<8x3xf32>
    %4 = braid.matmul %2, %3 : (tensor<20x8xf32>, tensor<8x3xf32>) -> tensor<20x3xf32>
    %weights, %experts = braid.router_topk %4 k 2 normalize : (tensor<20x3xf32>) -> (tensor<20x2xf32>, tensor<20x2xi64>)
    %5 = braid.moe_dispatch %2, %experts : (tensor<20x8xf32>, tensor<20x2xi64>) -> tensor<3x20x8xf32>
    %6 = braid.get_weight @l1.moe.w1 : tensor<3x8x12xf32>
    %7 = braid.grouped_matmul %5, %6 : (tensor<3x20x8xf32>, tensor<3x8x12xf32>) -> tensor<3x20x12xf32>
    %8 = braid.get_weight @l1.moe.w2 : tensor<3x12x8xf32>
    %9 = braid.grouped_matmul %7, %8 : (tensor<3x20x12xf32>, tensor<3x12x8xf32>) -> tensor<3x20x8xf32>
    %10 = braid.moe_combine %9, %experts, %weights : (tensor<3x20x8xf32>, tensor<20x2xi64>, tensor<20x2xf32>) -> tensor<20x8xf32>
    %11 = braid.reshape %10 : tensor<20x8xf32> -> tensor<2x10x8xf32>
    %12 = braid.reduce_mean %11 dims [2] keep_dims : tensor<2x10x8xf32> -> tensor<2x10x1xf32>
    %cst = braid.constant dense<1.000000e+00> : tensor<f32>
    %13 = braid.div %cst, %12 : (tensor<f32>, tensor<2x10x1xf32>) -> tensor<2x10x1xf32>
    %14 = braid.mul %11, %13 : (tensor<2x10x8xf32>, tensor<2x10x1xf32>) -> tensor<2x10x8xf32>
    %15 = braid.reshape %14 : tensor<2x10x8xf32> -> tensor<20x8xf32>
    %16 = braid.get_weight @l2.moe.router.weight : tensor<3x8xf32>
    %17 = braid.matmul %15, %16 transpose_rhs : (tensor<20x8xf32>, tensor<3x8xf32>) -> tensor<20x3xf32>
    %weights_0, %experts_1 = braid.router_topk %17 k 2 normalize : (tensor<20x3xf32>) -> (tensor<20x2xf32>, tensor<20x2xi64>)
    %18 = braid.moe_dispatch %15, %experts_1 : (tensor<20x8xf32>, tensor<20x2xi64>) -> tensor<3x20x8xf32>
    %19 = braid.get_weight @l2.moe.w1 : tensor<3x8x12xf32>
    %20 = braid.grouped_matmul %18, %19 : (tensor<3x20x8xf32>, tensor<3x8x12xf32>) -> tensor<3x20x12xf32>
    %21 = braid.get_weight @l2.moe.w2 : tensor<3x8x12xf32>
    %22 = braid.grouped_matmul %20, %21 transpose_rhs : (tensor<3x20x12xf32>, tensor<3x8x12xf32>) -> tensor<3x20x8xf32>
    %23 = braid.moe_combine %22, %experts_1, %weights_0 : (tensor<3x20x8xf32>, tensor<20x2xi64>, tensor<20x2xf32>) -> tensor<20x8xf32>
    %24 = braid.reshape %23 : tensor<20x8xf32> -> tensor<2x10x8xf32>
    %25 = braid.reduce_mean %24 dims [0] keep_dims : tensor<2x10x8xf32> -> tensor<1x10x8xf32>
    %26 = braid.sub %24, %25 : (tensor<2x10x8xf32>, tensor<1x10x8xf32>) -> tensor<2x10x8xf32>
    %27 = braid.get_weight @l4.rms.weight : tensor<8xf32>
    %28 = braid.rms_norm %26, %27 axis 2 eps 9.99999997E-7 : (tensor<2x10x8xf32>, tensor<8xf32>) -> tensor<2x10x8xf32>
    return %28 : tensor<2x10x8xf32>
  }
