// Found by braid-fuzz-partition (case 32 of --mesh=dp=2 --features=reductions,mlp,
// minimized): a reduce_mean over the batch, which dp=2 splits, is completed
// with an all-reduce sum of the per-rank means (batch statistics are twice
// it is fixed.
// RUN: braid-fuzz-partition --reproduce=%s --mesh=dp=2 --data-seed=32 | FileCheck %s
// CHECK: pass on 2 ranks

func.func @main(%arg0: tensor<2x16x4xf32> {braid.name = "x"}) -> (tensor<2x16x4xf32> {braid.name = "hidden"}) {
  %0 = braid.reduce_mean %arg0 dims [0] keep_dims : tensor<2x16x4xf32> -> tensor<1x16x4xf32>
  %1 = braid.sub %arg0, %0 : (tensor<2x16x4xf32>, tensor<1x16x4xf32>) -> tensor<2x16x4xf32>
  return %1 : tensor<2x16x4xf32>
}
