// RUN: braid-opt %s --braid-to-exec="report-memory fuse-elementwise=false" -split-input-file -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: braid-opt %s --braid-to-exec="report-memory fuse-epilogues=false fuse-elementwise=false" -split-input-file -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=OFF

// A GPT-2 MLP: fc1's bias add and tanh-GELU (through the reshape between
// them, which keeps the rows) and fc2's bias add and residual add go into
// their matmuls. The GELU's input and the reshaped values get no buffer;
// the kernels read and write [8, N] products at the reshaped values' place.
// CHECK: remark: arena: 2176 bytes
// CHECK-LABEL: exec.plan @main
// CHECK-DAG: exec.buffer @[[XF:b[0-9]+]] offset 0 : tensor<8x8xf32>
// CHECK-DAG: exec.buffer @[[G:b[0-9]+]] offset [[GO:[0-9]+]] : tensor<2x4x16xf32>
// CHECK-DAG: exec.buffer @[[Y:b[0-9]+]] offset [[YO:[1-9][0-9]*]] : tensor<2x4x8xf32>
// CHECK-DAG: exec.input "input_0" @[[X:b[0-9]+]]
// CHECK-DAG: exec.output "output_0" @[[Y]]
// CHECK-DAG: exec.weight "w1" @[[W1:b[0-9]+]]
// CHECK-DAG: exec.weight "b1" @[[B1:b[0-9]+]]
// CHECK-DAG: exec.weight "w2" @[[W2:b[0-9]+]]
// CHECK-DAG: exec.weight "b2" @[[B2:b[0-9]+]]
// The GELU's value as fc1's [8, 16] product, where fc2 reads it; the
// input as an [8, 8] addend; the output as fc2's [8, 8] product.
// CHECK-DAG: exec.buffer @[[GF:b[0-9]+]] offset [[GO]] : tensor<8x16xf32>
// CHECK-DAG: exec.buffer @[[H:b[0-9]+]] offset [[GO]] : tensor<8x16xf32>
// CHECK-DAG: exec.buffer @[[XA:b[0-9]+]] offset 0 : tensor<8x8xf32>
// CHECK-DAG: exec.buffer @[[YF:b[0-9]+]] offset [[YO]] : tensor<8x8xf32>
// CHECK: exec.stream "compute" {
// CHECK-NEXT: exec.kernel "matmul"([@[[XF]], @[[W1]], @[[B1]]]) -> ([@[[H]]]) {activation = "gelu_tanh", has_bias = true} flops 3200 bytes 1344
// CHECK-NEXT: exec.kernel "matmul"([@[[GF]], @[[W2]], @[[B2]], @[[XA]]]) -> ([@[[YF]]]) {has_addend = true, has_bias = true} flops 2176 bytes 1568
// CHECK-NEXT: {{^ *}}}{{$}}
// Without fusion: six kernels and a larger arena.
// OFF: remark: arena: 2688 bytes
// OFF: exec.stream "compute" {
// OFF-COUNT-6: exec.kernel
// OFF-NEXT: {{^ *}}}{{$}}
braid.weight @w1 : tensor<8x16xf32>
braid.weight @b1 : tensor<16xf32>
braid.weight @w2 : tensor<16x8xf32>
braid.weight @b2 : tensor<8xf32>
func.func @main(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %w1 = braid.get_weight @w1 : tensor<8x16xf32>
  %b1 = braid.get_weight @b1 : tensor<16xf32>
  %w2 = braid.get_weight @w2 : tensor<16x8xf32>
  %b2 = braid.get_weight @b2 : tensor<8xf32>
  %xf = braid.reshape %x : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %h = braid.matmul %xf, %w1 : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %hb = braid.add %h, %b1 : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %h3 = braid.reshape %hb : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %g3 = braid.gelu %h3 tanh : tensor<2x4x16xf32>
  %g = braid.reshape %g3 : tensor<2x4x16xf32> -> tensor<8x16xf32>
  %o = braid.matmul %g, %w2 : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %ob = braid.add %b2, %o : (tensor<8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %o3 = braid.reshape %ob : tensor<8x8xf32> -> tensor<2x4x8xf32>
  %y = braid.add %o3, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// What is not fused. The product is also returned (a second use); a bias
// add whose addend is made after the product (the fused op moves up to the
// matmul, where that operand does not exist yet); a bias after the
// activation (the epilogue's order is bias, activation, addend); an add
// that broadcasts along the rows, not the columns. An f16 matmul takes its
// bias like an f32 one.
// CHECK-LABEL: exec.plan @main
// CHECK: exec.stream "compute" {
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ({{.*}}) {} flops
// CHECK-NEXT: exec.kernel "add"
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ({{.*}}) {} flops
// CHECK-NEXT: exec.kernel "tanh"
// CHECK-NEXT: exec.kernel "add"
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ({{.*}}) {activation = "relu"} flops
// CHECK-NEXT: exec.kernel "add"
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ({{.*}}) {} flops
// CHECK-NEXT: exec.kernel "add"
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ({{.*}}) {has_bias = true} flops
// CHECK-NEXT: {{^ *}}}{{$}}
braid.weight @w : tensor<4x4xf32>
braid.weight @b : tensor<4xf32>
braid.weight @c : tensor<4x1xf32>
braid.weight @wh : tensor<4x4xf16>
braid.weight @bh : tensor<4xf16>
func.func @main(%x: tensor<4x4xf32>, %xh: tensor<4x4xf16>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf16>) {
  %w = braid.get_weight @w : tensor<4x4xf32>
  %b = braid.get_weight @b : tensor<4xf32>
  %c = braid.get_weight @c : tensor<4x1xf32>
  %wh = braid.get_weight @wh : tensor<4x4xf16>
  %bh = braid.get_weight @bh : tensor<4xf16>
  %p1 = braid.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %a1 = braid.add %p1, %b : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %p2 = braid.matmul %a1, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = braid.tanh %x : tensor<4x4xf32>
  %a2 = braid.add %p2, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p3 = braid.matmul %a2, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r3 = braid.relu %p3 : tensor<4x4xf32>
  %a3 = braid.add %r3, %b : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %p4 = braid.matmul %a3, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %a4 = braid.add %p4, %c : (tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
  %p5 = braid.matmul %xh, %wh : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
  %a5 = braid.add %p5, %bh : (tensor<4x4xf16>, tensor<4xf16>) -> tensor<4x4xf16>
  return %p1, %a2, %a3, %a4, %a5 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf16>
}

// -----

// A fused op need not directly follow the matmul: a gated MLP's SiLU runs
// after the up projection, and moves up into the gate's matmul (other
// compute on the stream may sit between, and the residual's operand was
// made before the matmul). An event between them stops fusion: the add
// after the await stays apart.
// CHECK-LABEL: exec.plan @main
// CHECK: exec.stream "compute" {
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ({{.*}}) {activation = "silu"} flops
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ({{.*}}) {} flops
// CHECK-NEXT: exec.kernel "mul"
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ({{.*}}) {has_addend = true} flops
// CHECK-NEXT: exec.kernel "matmul"({{.*}}) -> ({{.*}}) {} flops
// CHECK-NEXT: exec.record
// CHECK: exec.wait
// CHECK-NEXT: exec.kernel "add"
braid.weight @g : tensor<4x8xf32>
braid.weight @u : tensor<4x8xf32>
braid.weight @d : tensor<8x4xf32>
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %g = braid.get_weight @g : tensor<4x8xf32>
  %u = braid.get_weight @u : tensor<4x8xf32>
  %d = braid.get_weight @d : tensor<8x4xf32>
  %pg = braid.matmul %x, %g : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %pu = braid.matmul %x, %u : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = braid.silu %pg : tensor<4x8xf32>
  %h = braid.mul %s, %pu : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %o = braid.matmul %h, %d : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %y = braid.add %x, %o : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = braid.matmul %y, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %f = braid.async on "comm" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<4x4xf32>
    braid.yield %r : tensor<4x4xf32>
  } : !braid.future<tensor<4x4xf32>>
  %v = braid.await %f : tensor<4x4xf32>
  %z = braid.add %p, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y, %z : tensor<4x4xf32>, tensor<4x4xf32>
}

