// RUN: braid-opt %s --braid-to-exec=report-memory -split-input-file -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: braid-opt %s --braid-to-exec="report-memory fuse-elementwise=false" -split-input-file -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=OFF

// An AdamW-like update: m2 = m b1 + g c (a tree: both multiplies move down
// into the add), and p2 = p - m2 / (sqrt(v) + eps), whose tree stops at
// m2 (also returned: a leaf). Two kernels, one pass each; the leaves are
// numbered in the order the tree reads them, the ops in evaluation order.
// CHECK: remark: arena: 960 bytes
// CHECK-LABEL: exec.plan @main
// CHECK-DAG: exec.input "input_0" @[[P:b[0-9]+]]
// CHECK-DAG: exec.input "input_1" @[[M:b[0-9]+]]
// CHECK-DAG: exec.input "input_2" @[[V:b[0-9]+]]
// CHECK-DAG: exec.input "input_3" @[[G:b[0-9]+]]
// CHECK-DAG: exec.constant @[[B1:b[0-9]+]] dense<0.899999976>
// CHECK-DAG: exec.constant @[[C:b[0-9]+]] dense<1.000000e-01>
// CHECK-DAG: exec.constant @[[EPS:b[0-9]+]] dense<9.99999993E-9>
// CHECK: exec.stream "compute" {
// CHECK-NEXT: exec.kernel "elementwise"([@[[M]], @[[B1]], @[[G]], @[[C]]]) -> ([@[[M2:b[0-9]+]]]) {operands = array<i64: 0, 1, 2, 3, 4, 5>, ops = "mul,mul,add"} flops 96 bytes 392
// CHECK-NEXT: exec.kernel "elementwise"([@[[P]], @[[M2]], @[[V]], @[[EPS]]]) -> ([@{{b[0-9]+}}]) {operands = array<i64: 2, -1, 4, 3, 1, 5, 0, 6>, ops = "sqrt,add,div,sub"} flops 128 bytes 516
// CHECK-NEXT: {{^ *}}}{{$}}
// Without the fusion: seven kernels and a larger arena.
// OFF: remark: arena: 1216 bytes
// OFF: exec.stream "compute" {
// OFF-COUNT-7: exec.kernel
// OFF-NEXT: {{^ *}}}{{$}}
func.func @main(%p: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %b1 = braid.constant dense<0.9> : tensor<f32>
  %c = braid.constant dense<0.1> : tensor<f32>
  %eps = braid.constant dense<1.0e-8> : tensor<f32>
  %a = braid.mul %m, %b1 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %b = braid.mul %g, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m2 = braid.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = braid.sqrt %v : tensor<4x8xf32>
  %d = braid.add %s, %eps : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %u = braid.div %m2, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %p2 = braid.sub %p, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m2, %p2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// What is not fused. An op of another shape (the [4, 1] row scale is a
// leaf of the [4, 8] tree, computed apart); an intermediate with a second
// user (a leaf, computed apart); a producer with an event between it and
// its user (it cannot move down past the wait). An f16 tree is fused like
// an f32 one (the kernel rounds each step to f16).
// CHECK-LABEL: exec.plan @main
// CHECK: exec.stream "compute" {
// CHECK-NEXT: exec.kernel "exp"
// CHECK-NEXT: exec.kernel "tanh"
// CHECK-NEXT: exec.kernel "elementwise"({{.*}}) {operands = array<i64: 0, 1, 2, 1>, ops = "mul,add"}
// CHECK-NEXT: exec.kernel "neg"
// CHECK-NEXT: exec.record
// CHECK: exec.wait
// CHECK-NEXT: exec.kernel "add"
// CHECK-NEXT: exec.kernel "elementwise"({{.*}}) {operands = array<i64: 0, -1, 1, 0>, ops = "neg,add"}
// CHECK-NEXT: {{^ *}}}{{$}}
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32>, %r: tensor<4x1xf32>, %h: tensor<4x8xf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>) {
  %e = braid.exp %r : tensor<4x1xf32>
  %t = braid.tanh %x : tensor<4x8xf32>
  %y = braid.mul %e, %t : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = braid.add %y, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = braid.neg %x : tensor<4x8xf32>
  %f = braid.async on "comm" {
    %a = braid.all_reduce %x on @world["tp"] sum : tensor<4x8xf32>
    braid.yield %a : tensor<4x8xf32>
  } : !braid.future<tensor<4x8xf32>>
  %w = braid.await %f : tensor<4x8xf32>
  %k = braid.add %n, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %hn = braid.neg %h : tensor<4x8xf16>
  %ha = braid.add %hn, %h : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  return %z, %k, %w, %ha : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>
}

// -----

// Fusion is judged tree by tree. Moving the add down into the multiply
// would keep both softmaxes it reads alive across the two softmaxes of %c,
// a larger arena (by more than the 1% allowed), so that tree is refused;
// the exp/neg tree beside it does not grow the arena and is kept (before,
// one tree that did not fit cost every tree its fusion).
// CHECK-LABEL: exec.plan @main mesh(["world"], [1]) arena 147456 events 0
// CHECK: exec.kernel "add"
// CHECK: exec.kernel "mul"
// CHECK: exec.kernel "elementwise"({{.*}}) {operands = array<i64: 0, -1, 1, -1>, ops = "exp,neg"}
// OFF-LABEL: exec.plan @main mesh(["world"], [1]) arena 147456 events 0
func.func @main(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>, %z: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %x1 = braid.softmax %a dim 1 : tensor<64x64xf32>
  %x2 = braid.softmax %b dim 1 : tensor<64x64xf32>
  %p = braid.add %x1, %x2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %t = braid.softmax %c dim 1 : tensor<64x64xf32>
  %s = braid.softmax %t dim 1 : tensor<64x64xf32>
  %r = braid.mul %p, %s : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = braid.exp %z : tensor<64x64xf32>
  %n = braid.neg %e : tensor<64x64xf32>
  return %r, %n : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// A value an async region reads lives until the main stream awaits the
// region, at that await's position in the program after fusion. The tree
// before the async removes an instruction; the position found while
// linearizing would keep %n's buffer live one instruction past the await,
// over the exp, which then could not reuse it: the arena grew and the tree
// was refused. %n and %e share their bytes, and the tree is fused.
// CHECK-LABEL: exec.plan @main mesh(["tp"], [2]) arena 65920 events 2
// CHECK: exec.buffer @b4 offset [[AT:[0-9]+]] : tensor<64x64xf32>
// CHECK: exec.buffer @b7 offset [[AT]] : tensor<64x64xf32>
// CHECK: exec.stream "compute" {
// CHECK-NEXT: exec.kernel "elementwise"([@b0, @b1]) -> ([@b3]) {operands = array<i64: 0, 1, 2, 0>, ops = "mul,add"}
// CHECK-NEXT: exec.kernel "neg"([@b2]) -> ([@b4])
// CHECK-NEXT: exec.record 0
// CHECK-NEXT: exec.wait 1
// CHECK-NEXT: exec.kernel "exp"([@b6]) -> ([@b7])
// OFF-LABEL: exec.plan @main mesh(["tp"], [2]) arena 65920 events 2
braid.mesh @world(tp = 2)
func.func @main(%p: tensor<4x8xf32>, %q: tensor<4x8xf32>, %x: tensor<64x64xf32>) -> (tensor<4x8xf32>, tensor<64x64xf32>) {
  %a = braid.mul %p, %q : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = braid.add %a, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = braid.neg %x : tensor<64x64xf32>
  %f = braid.async on "comm" {
    %r = braid.all_reduce %n on @world["tp"] sum : tensor<64x64xf32>
    braid.yield %r : tensor<64x64xf32>
  } : !braid.future<tensor<64x64xf32>>
  %w = braid.await %f : tensor<64x64xf32>
  %e = braid.exp %w : tensor<64x64xf32>
  %t = braid.add %e, %e : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %b, %t : tensor<4x8xf32>, tensor<64x64xf32>
}
