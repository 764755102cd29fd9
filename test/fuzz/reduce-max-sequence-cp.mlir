// Found by braid-fuzz-partition (case 110 of --mesh=cp=2 --features=reductions,
// minimized): max pooling over the sequence, which cp=2 splits, is completed
// with an all-reduce sum of the per-rank maxima. Same cause as
// RUN: braid-fuzz-partition --reproduce=%s --mesh=cp=2 --data-seed=110 | FileCheck %s
// CHECK: pass on 2 ranks

func.func @main(%arg0: tensor<2x8x12xf32> {braid.name = "x"}) -> (tensor<2x8x12xf32> {braid.name = "hidden"}) {
  %0 = braid.reduce_max %arg0 dims [1] keep_dims : tensor<2x8x12xf32> -> tensor<2x1x12xf32>
  %1 = braid.sub %arg0, %0 : (tensor<2x8x12xf32>, tensor<2x1x12xf32>) -> tensor<2x8x12xf32>
  return %1 : tensor<2x8x12xf32>
}
