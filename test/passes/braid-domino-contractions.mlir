// RUN: braid-opt %s --braid-domino="chunks=2 force=true" 2>/dev/null | FileCheck %s

// A backward pass's weight and bias gradients contract over every row
// (dW = X^T dY, db = sum of dY's rows). Under Domino's row chunks, X and dY
// exist per chunk; the gradients are computed per chunk and added (each
// chunk's product can run while the other chunk's all-reduce is in flight,
// Domino's backward overlap), not over the chunks joined again: no concat
// feeds them.
// CHECK-LABEL: func.func @main
// CHECK-COUNT-2: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<2x16xf32>
// CHECK-NOT: braid.concat {{.*}} -> tensor<4x8xf32>
// CHECK-DAG: %[[W0:.*]] = braid.matmul %{{.*}}, %{{.*}} transpose_lhs : (tensor<2x8xf32>, tensor<2x16xf32>) -> tensor<8x16xf32>
// CHECK-DAG: %[[W1:.*]] = braid.matmul %{{.*}}, %{{.*}} transpose_lhs : (tensor<2x8xf32>, tensor<2x16xf32>) -> tensor<8x16xf32>
// CHECK-DAG: braid.add %[[W0]], %[[W1]] : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-DAG: %[[B0:.*]] = braid.reduce_sum %{{.*}} dims [0] : tensor<2x16xf32> -> tensor<16xf32>
// CHECK-DAG: %[[B1:.*]] = braid.reduce_sum %{{.*}} dims [0] : tensor<2x16xf32> -> tensor<16xf32>
// CHECK-DAG: braid.add %[[B0]], %[[B1]] : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
braid.mesh @world(tp = 2)
braid.weight @w : tensor<8x16xf32>
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<8x16xf32>, tensor<16xf32>) {
  %g = braid.exp %x : tensor<4x8xf32>
  %w = braid.get_weight @w sharded on @world [["tp"], []] : tensor<4x16xf32>
  %xs = braid.slice %x offsets [0, 0] sizes [4, 4] strides [1, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  %p = braid.matmul %xs, %w : (tensor<4x4xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = braid.all_reduce %p on @world["tp"] sum : tensor<4x16xf32>
  %dy = braid.tanh %y : tensor<4x16xf32>
  %dw = braid.matmul %g, %dy transpose_lhs : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %db = braid.reduce_sum %dy dims [0] : tensor<4x16xf32> -> tensor<16xf32>
  return %y, %dw, %db : tensor<4x16xf32>, tensor<8x16xf32>, tensor<16xf32>
}
