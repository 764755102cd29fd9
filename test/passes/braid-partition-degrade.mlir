// RUN: not braid-opt %s --braid-partition=tp=3 -split-input-file 2>&1 | FileCheck %s --check-prefix=TP3
// RUN: braid-opt %s --braid-partition="tp=3 allow-replicated=true" -split-input-file 2>&1 | FileCheck %s --check-prefix=ALLOW
// RUN: not braid-opt %s --braid-partition=dp=2 -split-input-file 2>&1 | FileCheck %s --check-prefix=DP

// Partitioning never does less than asked without saying so. Under tp=3 the
// 64 output columns of the weight do not divide: the matmul runs whole, the
// pass says why, and since the axis splits nothing at all it fails unless
// replication is accepted.
// TP3: warning: braid-partition: 'braid.matmul' runs whole on mesh axis 'tp' (3 ranks): its weight is not split: its factor of size 64 does not divide over 3 ranks
// TP3: error: braid-partition: mesh axis 'tp' (3 ranks) partitions nothing in @main: every rank would compute the whole program (accept that with allow-replicated, braidc --allow-replicated)
// ALLOW: warning: braid-partition: 'braid.matmul' runs whole on mesh axis 'tp' (3 ranks): its weight is not split
// ALLOW: warning: braid-partition: mesh axis 'tp' (3 ranks) partitions nothing in @main: every rank would compute the whole program
// ALLOW-NOT: error
// ALLOW: braid.mesh @world(tp = 3)
// ALLOW: braid.matmul %{{.*}} : (tensor<4x32xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
// The batch of 1 cannot be split over dp=2 (dimension 0 has size 1): the
// preset splits nothing.
// DP: error: braid-partition: mesh axis 'dp' (2 ranks) partitions nothing in @main
braid.weight @w : tensor<32x64xf32>
func.func @main(%x: tensor<4x32xf32>) -> tensor<4x64xf32> {
  %w = braid.get_weight @w : tensor<32x64xf32>
  %y = braid.matmul %x, %w : (tensor<4x32xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// A matmul against an inline constant (an importer that folded a weight)
// cannot be loaded split: the pass names it.
// TP3: warning: braid-partition: 'braid.matmul' runs whole on mesh axis 'tp' (3 ranks): it contracts an inline constant, not a weight
func.func @main(%x: tensor<1x4x6xf32>) -> tensor<1x4x6xf32> {
  %w = braid.constant dense<0.5> : tensor<6x6xf32>
  %y = braid.matmul %x, %w : (tensor<1x4x6xf32>, tensor<6x6xf32>) -> tensor<1x4x6xf32>
  return %y : tensor<1x4x6xf32>
}
