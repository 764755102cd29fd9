// RUN: braid-opt %s --braid-partition="dp=2 zero=1" | FileCheck %s
// RUN: not braid-opt %s --braid-partition="dp=2 cp=2 zero=1" 2>&1 | FileCheck %s --check-prefix=AXES
// RUN: not braid-opt %s --braid-partition="dp=2 ep=2 zero=1" 2>&1 | FileCheck %s --check-prefix=AXES
// RUN: not braid-opt %s --braid-partition="zero=1 tp=2" 2>&1 | FileCheck %s --check-prefix=NO-DP
// ZeRO stage 1 on a data-parallel step (SGD with momentum written out): the
// momentum (a zero-initialized state weight) is stored split over dp, the
// gradient (a partial sum over the batch) is reduce-scattered into the
// update, which runs on this rank's rows, and the parameter, read whole by
// the forward pass, is all-gathered when it is stored. No all-reduce of the
// gradient is left.

braid.weight @w state : tensor<8x16xf32>
braid.weight @w.momentum_buffer zeros state : tensor<8x16xf32>

// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[W:.*]] = braid.get_weight @w : tensor<8x16xf32>
// CHECK-DAG: braid.get_weight @w.momentum_buffer sharded on @world {{\[\[}}"dp"], []] : tensor<4x16xf32>
// CHECK: braid.reduce_scatter %{{.*}} on @world["dp"] sum dim 0 : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK: braid.set_weight @w.momentum_buffer, %{{.*}} sharded on @world {{\[\[}}"dp"], []] : tensor<4x16xf32>
// CHECK: braid.all_gather %{{.*}} on @world["dp"] dim 0 : tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK: braid.set_weight @w, %{{.*}} : tensor<8x16xf32>
// CHECK-NOT: braid.all_reduce %{{.*}} : tensor<8x16xf32>
// AXES: zero=1 with ep or cp is not supported yet (dp and tp are)
// NO-DP: zero=1 splits the optimizer state over the dp axis and needs dp=N with N >= 2
func.func @main(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %w = braid.get_weight @w : tensor<8x16xf32>
  %y = braid.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %g = braid.matmul %x, %dy transpose_lhs : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %m = braid.get_weight @w.momentum_buffer : tensor<8x16xf32>
  %c = braid.constant dense<9.000000e-01> : tensor<f32>
  %mm = braid.mul %m, %c : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %m2 = braid.add %mm, %g : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %w2 = braid.sub %w, %m2 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  braid.set_weight @w.momentum_buffer, %m2 : tensor<8x16xf32>
  braid.set_weight @w, %w2 : tensor<8x16xf32>
  return %y : tensor<4x16xf32>
}
