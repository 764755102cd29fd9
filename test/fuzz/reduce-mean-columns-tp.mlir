// Found by braid-fuzz-partition (case 21 of --mesh=tp=2 --features=reductions,mlp,
// minimized): a reduce_mean over the columns of a column-parallel projection
// is completed with an all-reduce *sum* of the per-rank means, twice the mean
// on 2 ranks. braid-partition completes every partial result with Sum,
// fixed: the test then checks that the case passes.
// RUN: braid-fuzz-partition --reproduce=%s --mesh=tp=2 --data-seed=21 | FileCheck %s
// CHECK: pass on 2 ranks

braid.weight @l2.reduce.up.weight : tensor<8x8xf32>
func.func @main(%arg0: tensor<2x12x8xf32> {braid.name = "x"}) -> (tensor<2x12x8xf32> {braid.name = "hidden"}) {
  %0 = braid.get_weight @l2.reduce.up.weight : tensor<8x8xf32>
  %1 = braid.matmul %arg0, %0 : (tensor<2x12x8xf32>, tensor<8x8xf32>) -> tensor<2x12x8xf32>
  %2 = braid.reduce_mean %1 dims [2] keep_dims : tensor<2x12x8xf32> -> tensor<2x12x1xf32>
  %3 = braid.sub %1, %2 : (tensor<2x12x8xf32>, tensor<2x12x1xf32>) -> tensor<2x12x8xf32>
  return %3 : tensor<2x12x8xf32>
}
