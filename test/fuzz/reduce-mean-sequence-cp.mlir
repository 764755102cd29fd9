// Found by braid-fuzz-partition (case 2 of --mesh=cp=2 --features=reductions,mlp,
// minimized): mean pooling over the sequence, which cp=2 splits, is
// completed with an all-reduce sum of the per-rank means. Same cause as
// RUN: braid-fuzz-partition --reproduce=%s --mesh=cp=2 --data-seed=2 | FileCheck %s
// CHECK: pass on 2 ranks

func.func @main(%arg0: tensor<2x6x4xf32> {braid.name = "x"}) -> (tensor<2x4xf32> {braid.name = "pooled"}) {
  %0 = braid.reduce_mean %arg0 dims [1] : tensor<2x6x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
