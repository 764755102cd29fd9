// RUN: braid-opt %s --braid-partition -split-input-file | FileCheck %s

// A reduction over a split dimension is completed with the reduction's own
// combiner: the mean of equal blocks' means is their average, not their sum
// (RMSNorm's reduce_mean over a hidden dimension split by tp).
// CHECK-LABEL: func.func @main
// CHECK: %[[M:.*]] = braid.reduce_mean %{{.*}} dims [2] keep_dims : tensor<2x16x32xf32> -> tensor<2x16x1xf32>
// CHECK: braid.all_reduce %[[M]] on @world["tp"] avg
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<2x16x64xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["tp"]]>}) -> tensor<2x16x1xf32> {
  %0 = braid.reduce_mean %x dims [2] keep_dims : tensor<2x16x64xf32> -> tensor<2x16x1xf32>
  return %0 : tensor<2x16x1xf32>
}

// -----

// CHECK-LABEL: func.func @main
// CHECK: %[[M:.*]] = braid.reduce_max %{{.*}} dims [1] : tensor<4x4xf32> -> tensor<4xf32>
// CHECK: braid.all_reduce %[[M]] on @world["tp"] max
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>}) -> tensor<4xf32> {
  %0 = braid.reduce_max %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @main
// CHECK: %[[M:.*]] = braid.reduce_sum %{{.*}} dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
// CHECK: braid.all_reduce %[[M]] on @world["tp"] sum
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [["tp"], []]>}) -> tensor<f32> {
  %0 = braid.reduce_sum %x dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A mean cross entropy over split samples: the average of the blocks' means.
// CHECK-LABEL: func.func @main
// CHECK: %[[L:.*]] = braid.cross_entropy {{.*}} -> tensor<f32>
// CHECK: braid.all_reduce %[[L]] on @world["dp"] avg
braid.mesh @world(dp = 2)
func.func @main(%x: tensor<8x10xf32> {braid.sharding = #braid.sharding<@world, [["dp"], []]>}, %t: tensor<8xi64> {braid.sharding = #braid.sharding<@world, [["dp"]]>}) -> tensor<f32> {
  %0 = braid.cross_entropy %x, %t mean : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}


// -----

// scatter_add (an embedding's gradient) over tokens split by dp: each rank
// adds its tokens' rows into a whole-table partial sum, one all-reduce sum
// completes it.
// CHECK-LABEL: func.func @main
// CHECK: %[[G:.*]] = braid.scatter_add %{{.*}}[%{{.*}}] axis 0 : (tensor<2x6x8xf32>, tensor<2x6xi64>) -> tensor<10x8xf32>
// CHECK-NEXT: %[[S:.*]] = braid.all_reduce %[[G]] on @world["dp"] sum : tensor<10x8xf32>
// CHECK-NEXT: return %[[S]]
braid.mesh @world(dp = 2)
func.func @main(%g: tensor<4x6x8xf32> {braid.sharding = #braid.sharding<@world, [["dp"], [], []]>}, %ids: tensor<4x6xi64> {braid.sharding = #braid.sharding<@world, [["dp"], []]>}) -> tensor<10x8xf32> {
  %0 = braid.scatter_add %g[%ids] axis 0 : (tensor<4x6x8xf32>, tensor<4x6xi64>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}

// -----

// scatter_add with the hidden dimension split by tp: the table's columns are
// parallel with the updates' (no sum across ranks); each rank holds whole
// rows of its columns.
// CHECK-LABEL: func.func @main
// CHECK-NOT: braid.all_reduce
// CHECK: %[[G:.*]] = braid.scatter_add %{{.*}}[%{{.*}}] axis 0 : (tensor<4x6x4xf32>, tensor<4x6xi64>) -> tensor<10x4xf32>
// CHECK-NOT: braid.all_reduce
// CHECK: braid.all_gather %[[G]] on @world["tp"] dim 1 : tensor<10x4xf32> -> tensor<10x8xf32>
braid.mesh @world(tp = 2)
func.func @main(%g: tensor<4x6x8xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["tp"]]>}, %ids: tensor<4x6xi64>) -> tensor<10x8xf32> {
  %0 = braid.scatter_add %g[%ids] axis 0 : (tensor<4x6x8xf32>, tensor<4x6xi64>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}
