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
