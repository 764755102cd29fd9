// Found by braid-fuzz-partition (case 22 of --mesh=tp=2 --features=reductions,mlp,
// minimized): a reduce_max over the columns of a column-parallel projection
// is completed with an all-reduce *sum* of the per-rank maxima, because
// braid-partition completes every partial result with Sum, whatever the
// RUN: braid-fuzz-partition --reproduce=%s --mesh=tp=2 --data-seed=22 | FileCheck %s
// CHECK: pass on 2 ranks

braid.weight @l2.reduce.up.weight : tensor<16x22xf32>
func.func @main(%arg0: tensor<1x5x16xf32> {braid.name = "x"}) -> (tensor<1x5x16xf32> {braid.name = "hidden"}) {
  %0 = braid.get_weight @l2.reduce.up.weight : tensor<16x22xf32>
  %1 = braid.matmul %arg0, %0 : (tensor<1x5x16xf32>, tensor<16x22xf32>) -> tensor<1x5x22xf32>
  %2 = braid.reduce_max %1 dims [2] keep_dims : tensor<1x5x22xf32> -> tensor<1x5x1xf32>
  %3 = braid.mul %arg0, %2 : (tensor<1x5x16xf32>, tensor<1x5x1xf32>) -> tensor<1x5x16xf32>
  return %3 : tensor<1x5x16xf32>
}
