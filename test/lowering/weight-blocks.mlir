// Two blocks of one stored weight, end to end: slices of a weight
// canonicalize to get_weight blocks, which braid-eval, braid-to-exec, the
// plan and braid-run honour; then the same blocks sharded Megatron-style
// (the first by columns, the second by rows) on 2 MPI ranks. Expected
// outputs come from numpy (weight_blocks.py).
// RUN: rm -rf %t && split-file %s %t
// RUN: %python %S/weight_blocks.py %t
// RUN: braid-opt %t/one.mlir -canonicalize -o %t/one.canon.mlir
// RUN: FileCheck %s --check-prefix=CANON < %t/one.canon.mlir
// RUN: braid-eval %t/one.canon.mlir --weights %t/w.safetensors --test-data %t/data | FileCheck %s --check-prefix=EVAL
// RUN: braid-opt %t/one.canon.mlir --braid-to-exec -o %t/one.exec.mlir
// RUN: FileCheck %s --check-prefix=EXEC < %t/one.exec.mlir
// RUN: braid-translate --exec-to-plan %t/one.exec.mlir -o %t/one.bplan
// RUN: braid-run %t/one.bplan --weights %t/w.safetensors --inputs %t/data --expected %t/data | FileCheck %s --check-prefix=ONE
// RUN: braid-opt %t/tp.mlir --braid-to-exec -o %t/tp.exec.mlir
// RUN: FileCheck %s --check-prefix=TPEXEC < %t/tp.exec.mlir
// RUN: braid-translate --exec-to-plan %t/tp.exec.mlir -o %t/tp.bplan
// RUN: %mpirun -n 2 braid-run %t/tp.bplan --weights %t/w.safetensors --inputs %t/data --expected %t/data | FileCheck %s --check-prefix=TWO
// The same blocks as weights of their own, `part of` the stored w (what
// braid-split-fused-projections{parts=true} declares for training): each
// part reads the box of w it covers, with a block of a part composing
// offsets; whole and sharded.
// RUN: braid-eval %t/parts.mlir --weights %t/w.safetensors --test-data %t/data | FileCheck %s --check-prefix=EVAL
// RUN: braid-opt %t/parts.mlir --braid-to-exec -o %t/parts.exec.mlir
// RUN: FileCheck %s --check-prefix=PARTSEXEC < %t/parts.exec.mlir
// RUN: braid-translate --exec-to-plan %t/parts.exec.mlir -o %t/parts.bplan
// RUN: braid-run %t/parts.bplan --weights %t/w.safetensors --inputs %t/data --expected %t/data | FileCheck %s --check-prefix=ONE
// RUN: braid-opt %t/tp-parts.mlir --braid-to-exec -o %t/tp-parts.exec.mlir
// RUN: FileCheck %s --check-prefix=TPEXEC < %t/tp-parts.exec.mlir
// RUN: braid-translate --exec-to-plan %t/tp-parts.exec.mlir -o %t/tp-parts.bplan
// RUN: %mpirun -n 2 braid-run %t/tp-parts.bplan --weights %t/w.safetensors --inputs %t/data --expected %t/data | FileCheck %s --check-prefix=TWO

// CANON: braid.get_weight @w block [4, 2] at [0, 4] : tensor<4x2xf32>
// CANON: braid.get_weight @w block [2, 4] at [1, 2] : tensor<2x4xf32>
// CANON-NOT: braid.slice

// EVAL-COUNT-2: (PASS, rtol 1e-04)

// EXEC-DAG: exec.weight "w" @{{b[0-9]+}} full [4, 6] block [4, 2] at [0, 4] sharding {{\[\[\], \[\]\]}}
// EXEC-DAG: exec.weight "w" @{{b[0-9]+}} full [4, 6] block [2, 4] at [1, 2] sharding {{\[\[\], \[\]\]}}

// ONE-COUNT-2: : PASS
// ONE-NOT: FAIL

// TPEXEC-DAG: exec.weight "w" @{{b[0-9]+}} full [4, 6] block [4, 2] at [0, 4] sharding {{\[\[\], \["tp"\]\]}}
// TPEXEC-DAG: exec.weight "w" @{{b[0-9]+}} full [4, 6] block [2, 4] at [1, 2] sharding {{\[\["tp"\], \[\]\]}}

// TWO-COUNT-4: : PASS
// TWO-NOT: FAIL

// PARTSEXEC-DAG: exec.weight "w" @{{b[0-9]+}} full [4, 6] block [4, 2] at [0, 4] sharding {{\[\[\], \[\]\]}}
// PARTSEXEC-DAG: exec.weight "w" @{{b[0-9]+}} full [4, 6] block [2, 4] at [1, 2] sharding {{\[\[\], \[\]\]}}

//--- one.mlir
braid.weight @w : tensor<4x6xf32>
func.func @main(%x: tensor<3x4xf32> {braid.name = "x"}) -> (tensor<3x2xf32>, tensor<3x4xf32>) {
  %w0 = braid.get_weight @w : tensor<4x6xf32>
  %a = braid.slice %w0 offsets [0, 4] sizes [4, 2] strides [1, 1] : tensor<4x6xf32> -> tensor<4x2xf32>
  %w1 = braid.get_weight @w : tensor<4x6xf32>
  %b = braid.slice %w1 offsets [1, 2] sizes [2, 4] strides [1, 1] : tensor<4x6xf32> -> tensor<2x4xf32>
  %y1 = braid.matmul %x, %a : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %y2 = braid.matmul %y1, %b : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return %y1, %y2 : tensor<3x2xf32>, tensor<3x4xf32>
}

//--- tp.mlir
braid.mesh @world(tp = 2)
braid.weight @w : tensor<4x6xf32>
func.func @main(%x: tensor<3x4xf32> {braid.name = "x"}) -> (tensor<3x2xf32>, tensor<3x4xf32>) {
  // Column tp of a, row tp of b.
  %a = braid.get_weight @w block [4, 2] at [0, 4] sharded on @world [[], ["tp"]] : tensor<4x1xf32>
  %b = braid.get_weight @w block [2, 4] at [1, 2] sharded on @world [["tp"], []] : tensor<1x4xf32>
  %y1s = braid.matmul %x, %a : (tensor<3x4xf32>, tensor<4x1xf32>) -> tensor<3x1xf32>
  %y1 = braid.all_gather %y1s on @world["tp"] dim 1 : tensor<3x1xf32> -> tensor<3x2xf32>
  %p = braid.matmul %y1s, %b : (tensor<3x1xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  %y2 = braid.all_reduce %p on @world["tp"] sum : tensor<3x4xf32>
  return %y1, %y2 : tensor<3x2xf32>, tensor<3x4xf32>
}

//--- parts.mlir
braid.weight @"w#0" part of "w" [4, 6] at [0, 4] : tensor<4x2xf32>
braid.weight @"w#1" part of "w" [4, 6] at [1, 0] : tensor<2x6xf32>
func.func @main(%x: tensor<3x4xf32> {braid.name = "x"}) -> (tensor<3x2xf32>, tensor<3x4xf32>) {
  %a = braid.get_weight @"w#0" : tensor<4x2xf32>
  %b = braid.get_weight @"w#1" block [2, 4] at [0, 2] : tensor<2x4xf32>
  %y1 = braid.matmul %x, %a : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %y2 = braid.matmul %y1, %b : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return %y1, %y2 : tensor<3x2xf32>, tensor<3x4xf32>
}

//--- tp-parts.mlir
braid.mesh @world(tp = 2)
braid.weight @"w#0" part of "w" [4, 6] at [0, 4] : tensor<4x2xf32>
braid.weight @"w#1" part of "w" [4, 6] at [1, 2] : tensor<2x4xf32>
func.func @main(%x: tensor<3x4xf32> {braid.name = "x"}) -> (tensor<3x2xf32>, tensor<3x4xf32>) {
  %a = braid.get_weight @"w#0" sharded on @world [[], ["tp"]] : tensor<4x1xf32>
  %b = braid.get_weight @"w#1" sharded on @world [["tp"], []] : tensor<1x4xf32>
  %y1s = braid.matmul %x, %a : (tensor<3x4xf32>, tensor<4x1xf32>) -> tensor<3x1xf32>
  %y1 = braid.all_gather %y1s on @world["tp"] dim 1 : tensor<3x1xf32> -> tensor<3x2xf32>
  %p = braid.matmul %y1s, %b : (tensor<3x1xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  %y2 = braid.all_reduce %p on @world["tp"] sum : tensor<3x4xf32>
  return %y1, %y2 : tensor<3x2xf32>, tensor<3x4xf32>
}
