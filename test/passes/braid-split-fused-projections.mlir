// RUN: braid-opt %s --braid-split-fused-projections -split-input-file | FileCheck %s

// GPT-2's fused q/k/v projection: the split moves through the reshape, the
// bias add and the matmul, down to blocks of the weight and the bias.
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[WQ:.*]] = braid.get_weight @w block [8, 4] at [0, 0] : tensor<8x4xf32>
// CHECK-DAG: %[[WK:.*]] = braid.get_weight @w block [8, 4] at [0, 4] : tensor<8x4xf32>
// CHECK-DAG: %[[WV:.*]] = braid.get_weight @w block [8, 4] at [0, 8] : tensor<8x4xf32>
// CHECK-DAG: %[[BQ:.*]] = braid.get_weight @b block [4] at [0] : tensor<4xf32>
// CHECK-DAG: %[[BV:.*]] = braid.get_weight @b block [4] at [8] : tensor<4xf32>
// CHECK-DAG: %[[Q:.*]] = braid.matmul %arg0, %[[WQ]] : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
// CHECK-DAG: %[[V:.*]] = braid.matmul %arg0, %[[WV]] : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
// CHECK-DAG: %[[QB:.*]] = braid.add %[[Q]], %[[BQ]] : (tensor<6x4xf32>, tensor<4xf32>) -> tensor<6x4xf32>
// CHECK-DAG: %[[VB:.*]] = braid.add %[[V]], %[[BV]]
// CHECK-DAG: %[[RQ:.*]] = braid.reshape %[[QB]] : tensor<6x4xf32> -> tensor<2x3x4xf32>
// CHECK-DAG: %[[RV:.*]] = braid.reshape %[[VB]] : tensor<6x4xf32> -> tensor<2x3x4xf32>
// CHECK: return %[[RQ]], %{{.*}}, %[[RV]]
// CHECK-NOT: braid.split
braid.weight @w : tensor<8x12xf32>
braid.weight @b : tensor<12xf32>
func.func @main(%x: tensor<6x8xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %w = braid.get_weight @w : tensor<8x12xf32>
  %b = braid.get_weight @b : tensor<12xf32>
  %y = braid.matmul %x, %w : (tensor<6x8xf32>, tensor<8x12xf32>) -> tensor<6x12xf32>
  %z = braid.add %y, %b : (tensor<6x12xf32>, tensor<12xf32>) -> tensor<6x12xf32>
  %r = braid.reshape %z : tensor<6x12xf32> -> tensor<2x3x12xf32>
  %q, %k, %v = braid.split %r dim 2 : tensor<2x3x12xf32> -> tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
  return %q, %k, %v : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// A transposed weight is split along its rows; uneven pieces keep their
// sizes.
// CHECK-LABEL: func.func @main
// CHECK-DAG: braid.get_weight @w block [2, 8] at [0, 0] : tensor<2x8xf32>
// CHECK-DAG: braid.get_weight @w block [4, 8] at [2, 0] : tensor<4x8xf32>
// CHECK-DAG: braid.matmul %arg0, %{{.*}} transpose_rhs : (tensor<6x8xf32>, tensor<4x8xf32>) -> tensor<6x4xf32>
braid.weight @w : tensor<6x8xf32>
func.func @main(%x: tensor<6x8xf32>) -> (tensor<6x2xf32>, tensor<6x4xf32>) {
  %w = braid.get_weight @w : tensor<6x8xf32>
  %y = braid.matmul %x, %w transpose_rhs : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x6xf32>
  %a, %b = braid.split %y dim 1 : tensor<6x6xf32> -> tensor<6x2xf32>, tensor<6x4xf32>
  return %a, %b : tensor<6x2xf32>, tensor<6x4xf32>
}

// -----

// Nothing moves when an intermediate value has another user, or the split
// is not along the last dimension.
// CHECK-LABEL: func.func @main
// CHECK: braid.split %{{.*}} dim 1
// CHECK: braid.split %{{.*}} dim 0
braid.weight @w : tensor<8x12xf32>
func.func @main(%x: tensor<6x8xf32>) -> (tensor<6x6xf32>, tensor<6x12xf32>, tensor<3x12xf32>) {
  %w = braid.get_weight @w : tensor<8x12xf32>
  %y = braid.matmul %x, %w : (tensor<6x8xf32>, tensor<8x12xf32>) -> tensor<6x12xf32>
  %a, %b = braid.split %y dim 1 : tensor<6x12xf32> -> tensor<6x6xf32>, tensor<6x6xf32>
  %c, %d = braid.split %y dim 0 : tensor<6x12xf32> -> tensor<3x12xf32>, tensor<3x12xf32>
  return %a, %y, %c : tensor<6x6xf32>, tensor<6x12xf32>, tensor<3x12xf32>
}
