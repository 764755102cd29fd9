// RUN: braid-opt %s --braid-to-exec="report-memory fuse-epilogues=false" -split-input-file -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// (Epilogue fusion is off here; braid-to-exec-epilogues.mlir tests it.)

// Memory reuse: %h dies at relu, so %r takes its place; the
// argument, weights and the output live throughout.
// CHECK: remark: arena: 2048 bytes (2304 bytes without reuse)
// CHECK-LABEL: exec.plan @main mesh(["world"], [1]) arena 2048 events 0
// CHECK-DAG: exec.buffer @[[X:b[0-9]+]] offset [[XO:[0-9]+]] : tensor<4x16xf32>
// CHECK-DAG: exec.buffer @[[H:b[0-9]+]] offset [[HO:[0-9]+]] : tensor<4x16xf32>
// CHECK-DAG: exec.buffer @[[R:b[0-9]+]] offset [[HO]] : tensor<4x16xf32>
// CHECK-DAG: exec.input "x" @[[X]]
// CHECK-DAG: exec.weight "w" @{{b[0-9]+}} full [16, 16] sharding {{\[\[\], \[\]\]}}
// CHECK: exec.stream "compute" {
// CHECK-NEXT: exec.kernel "matmul"([@[[X]], @{{b[0-9]+}}]) -> ([@[[H]]]) {} flops 2048 bytes 1536
// CHECK-NEXT: exec.kernel "relu"([@[[H]]]) -> ([@[[G:b[0-9]+]]])
// CHECK-NEXT: exec.kernel "matmul"([@[[G]], @{{b[0-9]+}}]) -> ([@[[R]]])
braid.weight @w : tensor<16x16xf32>
func.func @main(%x: tensor<4x16xf32> {braid.name = "x"}) -> tensor<4x16xf32> {
  %w = braid.get_weight @w : tensor<16x16xf32>
  %h = braid.matmul %x, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %g = braid.relu %h : tensor<4x16xf32>
  %r = braid.matmul %g, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %y = braid.add %r, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Streams and events: the async runs on "comm" after an event recorded where
// it starts; the await waits for the event recorded where it ends. The value
// the region reads (%h) stays live until the await, so %t, computed while the
// all-reduce runs, cannot take its memory.
// CHECK-LABEL: exec.plan @main mesh(["tp"], [2]) arena {{[0-9]+}} events 2
// CHECK-DAG: exec.buffer @b2 offset 1536 : tensor<4x16xf32>
// CHECK-DAG: exec.buffer @b4 offset 2048 : tensor<4x16xf32>
// CHECK: exec.stream "compute" {
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ([@b2])
// CHECK-NEXT: exec.record 0
// CHECK-NEXT: exec.kernel "tanh"([@b0]) -> ([@b4])
// CHECK-NEXT: exec.wait 1
// CHECK-NEXT: exec.kernel "add"
// CHECK: exec.stream "comm" {
// CHECK-NEXT: exec.wait 0
// CHECK-NEXT: exec.collective "all_reduce" @b2 -> @{{b[0-9]+}} on ["tp"] {reduction = #braid<reduction sum>}
// CHECK-NEXT: exec.record 1
braid.mesh @world(tp = 2)
braid.weight @w : tensor<16x16xf32>
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %w = braid.get_weight @w : tensor<16x16xf32>
  %h = braid.matmul %x, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %f = braid.async on "comm" {
    %r = braid.all_reduce %h on @world["tp"] sum : tensor<4x16xf32>
    braid.yield %r : tensor<4x16xf32>
  } : !braid.future<tensor<4x16xf32>>
  %t = braid.tanh %x : tensor<4x16xf32>
  %y = braid.await %f : tensor<4x16xf32>
  %z = braid.add %y, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %z : tensor<4x16xf32>
}

// -----

// Rank-dependent slice offsets become run-time index expressions.
// CHECK-LABEL: exec.plan @main mesh(["tp"], [2])
// CHECK: exec.kernel "slice"({{.*}}) -> ({{.*}}) {{{.*}}} indices {{\[\[}}8, "tp", 4]] flops 0
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x4xf32> {
  %r = braid.rank @world axis "tp"
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %m = arith.muli %r, %c4 : index
  %o = arith.addi %m, %c8 : index
  %s = braid.slice %x offsets [0, %o] sizes [4, 4] strides [1, 1] : tensor<4x16xf32> -> tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// -----

// Reshapes are views: no kernel, the result shares its input's buffer.
// CHECK-LABEL: exec.plan @main
// CHECK: exec.buffer @b1 offset 128 : tensor<4x4xf32>
// CHECK-NEXT: exec.buffer @b2 offset 128 : tensor<16xf32>
// CHECK-NOT: "reshape"
func.func @main(%x: tensor<4x4xf32>) -> tensor<16xf32> {
  %e = braid.exp %x : tensor<4x4xf32>
  %r = braid.reshape %e : tensor<4x4xf32> -> tensor<16xf32>
  %n = braid.neg %r : tensor<16xf32>
  return %n : tensor<16xf32>
}
