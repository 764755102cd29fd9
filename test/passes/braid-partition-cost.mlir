// RUN: braid-opt %s --braid-partition -split-input-file | FileCheck %s

// Where the sharded operands of an op carry different splits, the op takes
// the one that moves the fewest elements (AxisPartitioner::cheapestCarried).

// A gradient split by tokens times a weight split by output features, the
// weight the larger: the gradient is gathered and the product comes out
// split by features (Megatron-SP's backward), not the weight gathered.
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[G:.*]] = braid.slice %arg0 {{.*}} -> tensor<2x4x16xf32>
// CHECK-DAG: %[[W:.*]] = braid.slice %arg1 {{.*}} -> tensor<16x16xf32>
// CHECK: %[[WHOLE:.*]] = braid.all_gather %[[G]] on @world["tp"] dim 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
// CHECK: braid.matmul %[[WHOLE]], %[[W]] transpose_rhs : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NOT: braid.all_gather %[[W]]
braid.mesh @world(tp = 2)
func.func @main(%g: tensor<2x8x16xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"], []]>}, %w: tensor<32x16xf32> {braid.sharding = #braid.sharding<@world, [["tp"], []]>}) -> tensor<2x8x32xf32> {
  %y = braid.matmul %g, %w transpose_rhs : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// The same with many tokens and a small weight: the weight is gathered and
// the product stays split by tokens.
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[G:.*]] = braid.slice %arg0 {{.*}} -> tensor<2x32x16xf32>
// CHECK-DAG: %[[W:.*]] = braid.slice %arg1 {{.*}} -> tensor<16x16xf32>
// CHECK: %[[WHOLE:.*]] = braid.all_gather %[[W]] on @world["tp"] dim 0 : tensor<16x16xf32> -> tensor<32x16xf32>
// CHECK: braid.matmul %[[G]], %[[WHOLE]] transpose_rhs : (tensor<2x32x16xf32>, tensor<32x16xf32>) -> tensor<2x32x32xf32>
braid.mesh @world(tp = 2)
func.func @main(%g: tensor<2x64x16xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"], []]>}, %w: tensor<32x16xf32> {braid.sharding = #braid.sharding<@world, [["tp"], []]>}) -> tensor<2x64x32xf32> {
  %y = braid.matmul %g, %w transpose_rhs : (tensor<2x64x16xf32>, tensor<32x16xf32>) -> tensor<2x64x32xf32>
  return %y : tensor<2x64x32xf32>
}

// -----

// A contraction split leaves a partial result, which counts too: the
// weight gradient x^T dy, x [16, 16] split by features, dy [16, 8] by tokens
// (the contraction). x's split gathers dy's block (64 elements, times the
// ranks: 128) and gives [8, 8] blocks of the result; dy's would exchange x's
// block (128) and leave the whole [16, 8] partial to complete (128 more).
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[X:.*]] = braid.slice %arg0 {{.*}} -> tensor<16x8xf32>
// CHECK-DAG: %[[D:.*]] = braid.slice %arg1 {{.*}} -> tensor<8x8xf32>
// CHECK: %[[WHOLE:.*]] = braid.all_gather %[[D]] on @world["tp"] dim 0 : tensor<8x8xf32> -> tensor<16x8xf32>
// CHECK: braid.matmul %[[X]], %[[WHOLE]] transpose_lhs : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
// CHECK-NOT: braid.all_reduce
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<16x16xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>}, %dy: tensor<16x8xf32> {braid.sharding = #braid.sharding<@world, [["tp"], []]>}) -> tensor<16x8xf32> {
  %dw = braid.matmul %x, %dy transpose_lhs : (tensor<16x16xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %dw : tensor<16x8xf32>
}

// -----

// A broadcast split by tokens, read with a value split by the vocabulary
// (a softmax's backward under sp): its [2, 8, 1] input is gathered and
// broadcast to this rank's vocabulary block, not the [2, 4, 64] exchanged.
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[S:.*]] = braid.slice %arg0 {{.*}} -> tensor<2x4x1xf32>
// CHECK-DAG: %[[P:.*]] = braid.slice %arg1 {{.*}} -> tensor<2x8x32xf32>
// CHECK: %[[B:.*]] = braid.broadcast_to %[[S]] : tensor<2x4x1xf32> -> tensor<2x4x64xf32>
// CHECK: %[[WHOLE:.*]] = braid.all_gather %[[S]] on @world["tp"] dim 1 : tensor<2x4x1xf32> -> tensor<2x8x1xf32>
// CHECK: %[[BB:.*]] = braid.broadcast_to %[[WHOLE]] : tensor<2x8x1xf32> -> tensor<2x8x32xf32>
// CHECK: braid.mul %[[BB]], %[[P]] : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
// CHECK-NOT: braid.all_to_all
braid.mesh @world(tp = 2)
func.func @main(%s: tensor<2x8x1xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"], []]>}, %p: tensor<2x8x64xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["tp"]]>}) -> tensor<2x8x64xf32> {
  %b = braid.broadcast_to %s : tensor<2x8x1xf32> -> tensor<2x8x64xf32>
  %y = braid.mul %b, %p : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}
