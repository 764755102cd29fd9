// RUN: braid-opt %s --braid-next-token-loss="vocab-parallel=true" --braid-autodiff --braid-training-step --braid-partition="tp=2" | FileCheck %s
// Megatron's vocabulary-parallel embedding on a training step: the trained
// table a gather of the token ids reads first is loaded split by rows
// (8 of 16 per rank) and stored split; each rank clamps the ids into its
// block [first, first + 8), looks them up, zeroes the rows it does not
// hold, and the partial sum is all-reduced once. The tied LM head reads
// the same split table (transposed), so it is column-parallel and the
// loss vocabulary-parallel. The table's gradient is Megatron's masked local
// scatter: the same clamped ids, the rows of other blocks zeroed, added
// into this rank's [8, 8] block (no rank builds the whole [16, 8]).

// CHECK-LABEL: func.func @main
// CHECK: %[[T:.*]] = braid.get_weight @table sharded on @world {{\[\[}}"tp"], []] : tensor<8x8xf32>
// CHECK: %[[STARTS:.*]] = braid.constant dense<[0, 8]> : tensor<2xi64>
// CHECK: %[[FIRST:.*]] = braid.slice %[[STARTS]]
// CHECK: %[[LOCAL:.*]] = braid.sub %arg0, %[[FIRST]] : (tensor<2x4xi64>, tensor<1xi64>) -> tensor<2x4xi64>
// CHECK: braid.min %[[LOCAL]]
// CHECK: %[[CLAMPED:.*]] = braid.max
// CHECK: %[[MINE:.*]] = braid.compare  eq, %[[LOCAL]], %[[CLAMPED]]
// CHECK: %[[ROWS:.*]] = braid.gather %[[T]][%[[CLAMPED]]] axis 0 : (tensor<8x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
// CHECK: %[[MASK:.*]] = braid.reshape %[[MINE]] : tensor<2x4xi1> -> tensor<2x4x1xi1>
// CHECK: %[[H:.*]] = braid.select %[[MASK]], %[[ROWS]]
// CHECK: braid.all_reduce %[[H]] on @world["tp"] sum : tensor<2x4x8xf32>
// CHECK: braid.transpose %[[T]]
// CHECK: braid.all_reduce %{{.*}} on @world["tp"] max : tensor<2x4x1xf32>
// CHECK: %[[BLOCAL:.*]] = braid.sub %arg0, %{{.*}} : (tensor<2x4xi64>, tensor<1xi64>) -> tensor<2x4xi64>
// CHECK: braid.min %[[BLOCAL]]
// CHECK: %[[BCLAMPED:.*]] = braid.max
// CHECK: %[[BMINE:.*]] = braid.compare  eq, %[[BLOCAL]], %[[BCLAMPED]]
// CHECK: %[[BMASK:.*]] = braid.reshape %[[BMINE]] : tensor<2x4xi1> -> tensor<2x4x1xi1>
// CHECK: %[[DH:.*]] = braid.select %[[BMASK]], %{{.*}}, %{{.*}} : (tensor<2x4x1xi1>, tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
// CHECK: braid.scatter_add %[[DH]][%[[BCLAMPED]]] axis 0 : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<8x8xf32>
// CHECK-NOT: tensor<16x8xf32>
// CHECK: braid.set_weight @table, %{{.*}} sharded on @world {{\[\[}}"tp"], []] : tensor<8x8xf32>
module {
  braid.weight @table : tensor<16x8xf32>
  func.func @main(%tokens: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
    %t = braid.get_weight @table : tensor<16x8xf32>
    %h = braid.gather %t[%tokens] axis 0 : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    %n = braid.tanh %h : tensor<2x4x8xf32>
    %w = braid.transpose %t [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
    %logits = braid.matmul %n, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    return %logits : tensor<2x4x16xf32>
  }
}
