// RUN: braid-opt %s --braid-partition="dp=2 tp=2 zero=1" | FileCheck %s
// RUN: braid-opt %s --braid-partition="dp=2 tp=2 zero=3" | FileCheck %s --check-prefix=ZERO3
// ZeRO under tensor parallelism (Megatron's distributed optimizer): the dp
// axis is partitioned after tp, so ZeRO shards each rank's tensor-parallel
// block. A column-parallel weight (split by columns on tp) has its momentum
// split by rows on dp; a bias split on tp has its momentum split again
// along the same dimension, listed tp first: dp's piece of tp's block. The
// gradients are reduce-scattered over dp only, and the parameters gathered
// over dp only, back to their tp block. Under ZeRO-3 the parameters are
// stored like their moments and gathered over dp before their use.

braid.weight @w state : tensor<8x16xf32>
braid.weight @w.momentum_buffer zeros state : tensor<8x16xf32>
braid.weight @b state : tensor<16xf32>
braid.weight @b.momentum_buffer zeros state : tensor<16xf32>

// CHECK-LABEL: func.func @main
// CHECK-DAG: braid.get_weight @w sharded on @world {{\[\[}}], ["tp"]] : tensor<8x8xf32>
// CHECK-DAG: braid.get_weight @b sharded on @world {{\[\[}}"tp"]] : tensor<8xf32>
// CHECK-DAG: braid.get_weight @w.momentum_buffer sharded on @world {{\[\[}}"dp"], ["tp"]] : tensor<4x8xf32>
// CHECK-DAG: braid.reduce_scatter %{{.*}} on @world["dp"] sum dim 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-DAG: braid.get_weight @b.momentum_buffer sharded on @world {{\[\[}}"tp", "dp"]] : tensor<4xf32>
// CHECK-DAG: braid.reduce_scatter %{{.*}} on @world["dp"] sum dim 0 : tensor<8xf32> -> tensor<4xf32>
// CHECK: braid.set_weight @w.momentum_buffer, %{{.*}} sharded on @world {{\[\[}}"dp"], ["tp"]] : tensor<4x8xf32>
// CHECK: braid.all_gather %{{.*}} on @world["dp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: braid.set_weight @w, %{{.*}} sharded on @world {{\[\[}}], ["tp"]] : tensor<8x8xf32>
// CHECK: braid.set_weight @b.momentum_buffer, %{{.*}} sharded on @world {{\[\[}}"tp", "dp"]] : tensor<4xf32>
// CHECK: braid.all_gather %{{.*}} on @world["dp"] dim 0 : tensor<4xf32> -> tensor<8xf32>
// CHECK: braid.set_weight @b, %{{.*}} sharded on @world {{\[\[}}"tp"]] : tensor<8xf32>
// CHECK-NOT: braid.all_reduce

// ZERO3-LABEL: func.func @main
// ZERO3: %[[W:.*]] = braid.get_weight @w sharded on @world {{\[\[}}"dp"], ["tp"]] : tensor<4x8xf32>
// ZERO3: %[[B:.*]] = braid.get_weight @b sharded on @world {{\[\[}}"tp", "dp"]] : tensor<4xf32>
// ZERO3: braid.all_gather %[[W]] on @world["dp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// ZERO3: braid.all_gather %[[B]] on @world["dp"] dim 0 : tensor<4xf32> -> tensor<8xf32>
// ZERO3: braid.sub %[[W]], %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// ZERO3: braid.sub %[[B]], %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// ZERO3: braid.set_weight @w, %{{.*}} sharded on @world {{\[\[}}"dp"], ["tp"]] : tensor<4x8xf32>
// ZERO3: braid.set_weight @b, %{{.*}} sharded on @world {{\[\[}}"tp", "dp"]] : tensor<4xf32>
// ZERO3-NOT: braid.all_reduce
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = braid.get_weight @w : tensor<8x16xf32>
  %b = braid.get_weight @b : tensor<16xf32>
  %xw = braid.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = braid.add %xw, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %gw = braid.matmul %x, %y transpose_lhs : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %gb = braid.reduce_sum %y dims [0] : tensor<4x16xf32> -> tensor<16xf32>
  %c = braid.constant dense<9.000000e-01> : tensor<f32>
  %mw = braid.get_weight @w.momentum_buffer : tensor<8x16xf32>
  %mw1 = braid.mul %mw, %c : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  %mw2 = braid.add %mw1, %gw : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %w2 = braid.sub %w, %mw2 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %mb = braid.get_weight @b.momentum_buffer : tensor<16xf32>
  %mb1 = braid.mul %mb, %c : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %mb2 = braid.add %mb1, %gb : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %b2 = braid.sub %b, %mb2 : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  braid.set_weight @w.momentum_buffer, %mw2 : tensor<8x16xf32>
  braid.set_weight @w, %w2 : tensor<8x16xf32>
  braid.set_weight @b.momentum_buffer, %mb2 : tensor<16xf32>
  braid.set_weight @b, %b2 : tensor<16xf32>
  return %y : tensor<4x16xf32>
}
