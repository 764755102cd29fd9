// RUN: braid-opt %s --braid-partition="tp=2" | FileCheck %s
// State weights (a training step's parameters and optimizer moments) under
// tensor parallelism: stored the way the step reads them. A parameter that a
// column- or row-parallel matmul reads first is loaded sharded once for all
// its readers (the forward matmul, the backward's, the update) and set
// sharded; a moment read only by the update is stored sharded too (the
// partitioner's second attempt, after seeing it set from a sharded value);
// the backward's matmuls need no collective of their own (Megatron: the
// forward's all-reduce is the only one here, the backward's would complete
// d x).

braid.weight @w state : tensor<8x16xf32>
braid.weight @w.m zeros state : tensor<8x16xf32>
braid.weight @v state : tensor<16x8xf32>
braid.weight @norm state : tensor<8xf32>

// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[W:.*]] = braid.get_weight @w sharded on @world {{\[\[}}], ["tp"]] : tensor<8x8xf32>
// CHECK-DAG: %[[V:.*]] = braid.get_weight @v sharded on @world {{\[\[}}"tp"], []] : tensor<8x8xf32>
// CHECK-DAG: %[[N:.*]] = braid.get_weight @norm : tensor<8xf32>
// CHECK-NOT: braid.get_weight @w :
// CHECK: braid.get_weight @w.m sharded on @world {{\[\[}}], ["tp"]] : tensor<8x8xf32>
// CHECK-NOT: all_gather
// CHECK-NOT: all_reduce
// CHECK: braid.set_weight @w.m, %{{.*}} sharded on @world {{\[\[}}], ["tp"]] : tensor<8x8xf32>
// CHECK: braid.set_weight @w, %{{.*}} sharded on @world {{\[\[}}], ["tp"]] : tensor<8x8xf32>
// CHECK: braid.set_weight @v, %{{.*}} sharded on @world {{\[\[}}"tp"], []] : tensor<8x8xf32>
// CHECK: braid.set_weight @norm, %{{.*}} : tensor<8xf32>
// CHECK: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<4x8xf32>
// CHECK-NOT: braid.all_reduce
// CHECK: return
func.func @main(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = braid.get_weight @w : tensor<8x16xf32>
  %v = braid.get_weight @v : tensor<16x8xf32>
  %n = braid.get_weight @norm : tensor<8xf32>
  %xn = braid.mul %x, %n : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %h = braid.matmul %xn, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = braid.matmul %h, %v : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %dh = braid.matmul %dy, %v transpose_rhs : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %dv = braid.matmul %h, %dy transpose_lhs : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  %dw = braid.matmul %xn, %dh transpose_lhs : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  // A second read of @w (as autodiff may leave one) is the same read.
  %w_again = braid.get_weight @w : tensor<8x16xf32>
  %m = braid.get_weight @w.m : tensor<8x16xf32>
  %m2 = braid.add %m, %dw : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %w2 = braid.sub %w_again, %m2 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %v2 = braid.sub %v, %dv : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %n2 = braid.mul %n, %n : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  braid.set_weight @w.m, %m2 : tensor<8x16xf32>
  braid.set_weight @w, %w2 : tensor<8x16xf32>
  braid.set_weight @v, %v2 : tensor<16x8xf32>
  braid.set_weight @norm, %n2 : tensor<8xf32>
  return %y : tensor<4x8xf32>
}
