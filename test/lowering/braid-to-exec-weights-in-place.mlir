// RUN: braid-opt %s --braid-to-exec=report-memory -split-input-file -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// An SGD step with momentum: each state weight's next value is made by an
// elementwise kernel (a fused tree) on the main stream after every read of
// the weight, so the kernel writes it over the weight (its buffer is the
// weight's) and no copy is left at the end of the step.
// CHECK: remark: arena: 512 bytes
// CHECK-LABEL: exec.plan @main
// CHECK-DAG: exec.weight "p" @[[P:b[0-9]+]]
// CHECK-DAG: exec.weight "v" @[[V:b[0-9]+]]
// CHECK-DAG: exec.buffer @[[P]] offset [[PO:[0-9]+]] : tensor<4x8xf32>
// CHECK-DAG: exec.buffer @[[V]] offset [[VO:[0-9]+]] : tensor<4x8xf32>
// CHECK-DAG: exec.buffer @[[V2:b[0-9]+]] offset [[VO]] : tensor<4x8xf32>
// CHECK-DAG: exec.buffer @[[P2:b[0-9]+]] offset [[PO]] : tensor<4x8xf32>
// CHECK: exec.stream "compute" {
// CHECK-NEXT: exec.kernel "elementwise"({{.*}}) -> ([@[[V2]]])
// CHECK-NEXT: exec.kernel "elementwise"({{.*}}) -> ([@[[P2]]])
// CHECK-NEXT: {{^ *}}}{{$}}
braid.weight @p state : tensor<4x8xf32>
braid.weight @v zeros state : tensor<4x8xf32>
func.func @main(%g: tensor<4x8xf32>) {
  %p = braid.get_weight @p : tensor<4x8xf32>
  %v = braid.get_weight @v : tensor<4x8xf32>
  %mu = braid.constant dense<0.9> : tensor<f32>
  %lr = braid.constant dense<0.1> : tensor<f32>
  %a = braid.mul %v, %mu : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v2 = braid.add %a, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = braid.mul %v2, %lr : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %p2 = braid.sub %p, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  braid.set_weight @v, %v2 : tensor<4x8xf32>
  braid.set_weight @p, %p2 : tensor<4x8xf32>
  return
}

// -----

// Kept as copies: a weight also read after the kernel that makes its next
// value (the tanh reads the old p), and one read on another stream (the
// all-reduce reads v there). Two copies at the end of the step.
// CHECK-LABEL: exec.plan @main
// CHECK: exec.stream "compute" {
// CHECK: exec.kernel "tanh"
// CHECK: exec.kernel "copy"
// CHECK-NEXT: exec.kernel "copy"
// CHECK-NEXT: {{^ *}}}{{$}}
braid.mesh @world(tp = 2)
braid.weight @p state : tensor<4x8xf32>
braid.weight @v zeros state : tensor<4x8xf32>
func.func @main(%g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %p = braid.get_weight @p : tensor<4x8xf32>
  %v = braid.get_weight @v : tensor<4x8xf32>
  %f = braid.async on "comm" {
    %r = braid.all_reduce %v on @world["tp"] sum : tensor<4x8xf32>
    braid.yield %r : tensor<4x8xf32>
  } : !braid.future<tensor<4x8xf32>>
  %p2 = braid.sub %p, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = braid.tanh %p : tensor<4x8xf32>
  %r = braid.await %f : tensor<4x8xf32>
  %v2 = braid.add %v, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  braid.set_weight @p, %p2 : tensor<4x8xf32>
  braid.set_weight @v, %v2 : tensor<4x8xf32>
  return %t, %r : tensor<4x8xf32>, tensor<4x8xf32>
}
