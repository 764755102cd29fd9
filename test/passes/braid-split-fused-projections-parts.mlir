// RUN: braid-opt %s --braid-split-fused-projections=parts=true -split-input-file | FileCheck %s
// RUN: braid-opt %s --braid-split-fused-projections -split-input-file | FileCheck %s --check-prefix=BLOCKS

// A fused projection trained as one parameter per piece: the weight and the
// bias, read only in disjoint blocks after the split, become one weight per
// block, `part of` the stored tensor; every read is a whole read of its
// part. Without `parts` they stay blocks of the one weight.
// CHECK-DAG: braid.weight @"w#0" part of "w" [8, 12] at [0, 0] : tensor<8x4xf32>
// CHECK-DAG: braid.weight @"w#1" part of "w" [8, 12] at [0, 4] : tensor<8x4xf32>
// CHECK-DAG: braid.weight @"w#2" part of "w" [8, 12] at [0, 8] : tensor<8x4xf32>
// CHECK-DAG: braid.weight @"b#0" part of "b" [12] at [0] : tensor<4xf32>
// CHECK-DAG: braid.weight @"b#2" part of "b" [12] at [8] : tensor<4xf32>
// CHECK-NOT: braid.weight @w :
// CHECK-LABEL: func.func @main
// CHECK-DAG: braid.get_weight @"w#0" : tensor<8x4xf32>
// CHECK-DAG: braid.get_weight @"w#1" : tensor<8x4xf32>
// CHECK-DAG: braid.get_weight @"b#1" : tensor<4xf32>
// CHECK-NOT: block
// BLOCKS: braid.weight @w : tensor<8x12xf32>
// BLOCKS-NOT: part of
braid.weight @w : tensor<8x12xf32>
braid.weight @b : tensor<12xf32>
func.func @main(%x: tensor<6x8xf32>) -> (tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>) {
  %w = braid.get_weight @w : tensor<8x12xf32>
  %b = braid.get_weight @b : tensor<12xf32>
  %y = braid.matmul %x, %w : (tensor<6x8xf32>, tensor<8x12xf32>) -> tensor<6x12xf32>
  %z = braid.add %y, %b : (tensor<6x12xf32>, tensor<12xf32>) -> tensor<6x12xf32>
  %q, %k, %v = braid.split %z dim 1 : tensor<6x12xf32> -> tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>
  return %q, %k, %v : tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>
}

// -----

// Left as blocks: a weight also read whole, blocks that overlap, a sharded
// block, and a single block.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: part of
// CHECK-COUNT-2: braid.get_weight @whole block
// CHECK-COUNT-2: braid.get_weight @overlapping block
// CHECK: braid.get_weight @sharded block
// CHECK: braid.get_weight @single block
braid.mesh @world(tp = 2)
braid.weight @whole : tensor<4x8xf32>
braid.weight @overlapping : tensor<4x8xf32>
braid.weight @sharded : tensor<4x8xf32>
braid.weight @single : tensor<4x8xf32>
func.func @kept() -> (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x6xf32>, tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x2xf32>) {
  %0 = braid.get_weight @whole : tensor<4x8xf32>
  %1 = braid.get_weight @whole block [4, 4] at [0, 0] : tensor<4x4xf32>
  %2 = braid.get_weight @whole block [4, 4] at [0, 4] : tensor<4x4xf32>
  %3 = braid.get_weight @overlapping block [4, 4] at [0, 0] : tensor<4x4xf32>
  %4 = braid.get_weight @overlapping block [4, 6] at [0, 2] : tensor<4x6xf32>
  %5 = braid.get_weight @sharded block [4, 4] at [0, 0] sharded on @world [[], ["tp"]] : tensor<4x2xf32>
  %6 = braid.get_weight @sharded block [4, 4] at [0, 4] : tensor<4x4xf32>
  %7 = braid.get_weight @single block [4, 2] at [0, 0] : tensor<4x2xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x6xf32>, tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x2xf32>
}
