// RUN: braid-opt %s --braid-partition=tp=2 | FileCheck %s --check-prefix=TP
// RUN: braid-opt %s --braid-partition="tp=2 sp=true" | FileCheck %s --check-prefix=SP
// RUN: braid-opt %s --braid-partition=dp=2 | FileCheck %s --check-prefix=DP
// RUN: braid-opt %s --braid-partition="dp=2 tp=2" | FileCheck %s --check-prefix=DPTP
// RUN: braid-opt %s --braid-partition=cp=2 | FileCheck %s --check-prefix=CP

// Each preset on a block of two residual MLP layers ([batch, seq, hidden]).

// Megatron: column- then row-parallel weights, one all-reduce per layer.
// TP: braid.mesh @world(tp = 2)
// TP-DAG: braid.get_weight @w1 sharded on @world {{\[\[}}], ["tp"]] : tensor<16x16xf32>
// TP-DAG: braid.get_weight @w2 sharded on @world {{\[\[}}"tp"], []] : tensor<16x16xf32>
// TP-DAG: braid.get_weight @w3 sharded on @world {{\[\[}}], ["tp"]] : tensor<16x16xf32>
// TP-DAG: braid.get_weight @w4 sharded on @world {{\[\[}}"tp"], []] : tensor<16x16xf32>
// TP: braid.matmul {{.*}} -> tensor<2x8x16xf32>
// TP: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<2x8x16xf32>
// TP: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<2x8x16xf32>
// TP-NOT: braid.all_

// Sequence parallel: each all-reduce becomes a reduce-scatter along the
// sequence, the residual stream stays split, and the next column-parallel
// matmul gathers its input back.
// SP: %[[RS:.*]] = braid.reduce_scatter %{{.*}} on @world["tp"] sum dim 1 : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
// SP: %[[R1:.*]] = braid.add %{{.*}}, %[[RS]] : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
// SP: %[[AG:.*]] = braid.all_gather %[[R1]] on @world["tp"] dim 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
// SP: braid.matmul %[[AG]], %{{.*}} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// SP: braid.reduce_scatter %{{.*}} on @world["tp"] sum dim 1
// SP: braid.add %[[R1]], %{{.*}} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
// SP-NOT: braid.all_reduce

// Data parallel: the batch is split, weights stay whole, the output is
// gathered.
// DP: braid.mesh @world(dp = 2)
// DP: braid.slice %arg0 offsets [%{{.*}}, 0, 0] sizes [1, 8, 16]
// DP-NOT: sharded
// DP-NOT: braid.all_
// DP: braid.all_gather %{{.*}} on @world["dp"] dim 0 : tensor<1x8x16xf32> -> tensor<2x8x16xf32>

// Both on a 2x2 mesh: batch over dp, Megatron over tp.
// DPTP: braid.mesh @world(dp = 2, tp = 2)
// DPTP: braid.slice %arg0 offsets [%{{.*}}, 0, 0] sizes [1, 8, 16]
// DPTP: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<1x8x16xf32>
// DPTP: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<1x8x16xf32>
// DPTP: braid.all_gather %{{.*}} on @world["dp"] dim 0 : tensor<1x8x16xf32> -> tensor<2x8x16xf32>

// Context parallel: the sequence is split; an MLP needs no communication.
// CP: braid.mesh @world(cp = 2)
// CP: braid.slice %arg0 offsets [0, %{{.*}}, 0] sizes [2, 4, 16]
// CP-NOT: braid.all_
// CP: braid.all_gather %{{.*}} on @world["cp"] dim 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
braid.weight @w1 : tensor<16x32xf32>
braid.weight @w2 : tensor<32x16xf32>
braid.weight @w3 : tensor<16x32xf32>
braid.weight @w4 : tensor<32x16xf32>
func.func @main(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %w1 = braid.get_weight @w1 : tensor<16x32xf32>
  %w2 = braid.get_weight @w2 : tensor<32x16xf32>
  %w3 = braid.get_weight @w3 : tensor<16x32xf32>
  %w4 = braid.get_weight @w4 : tensor<32x16xf32>
  %h = braid.matmul %x, %w1 : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %a = braid.gelu %h : tensor<2x8x32xf32>
  %y = braid.matmul %a, %w2 : (tensor<2x8x32xf32>, tensor<32x16xf32>) -> tensor<2x8x16xf32>
  %r = braid.add %x, %y : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %h2 = braid.matmul %r, %w3 : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %a2 = braid.gelu %h2 : tensor<2x8x32xf32>
  %y2 = braid.matmul %a2, %w4 : (tensor<2x8x32xf32>, tensor<32x16xf32>) -> tensor<2x8x16xf32>
  %r2 = braid.add %r, %y2 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %r2 : tensor<2x8x16xf32>
}
