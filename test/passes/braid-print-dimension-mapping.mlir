// RUN: braid-opt %s --braid-print-dimension-mapping -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s

braid.mesh @world(tp = 2)

// A column-parallel then row-parallel pair: the second matmul contracts the
// hidden dimension, which the all_reduce then completes.
// CHECK: remark: ([f0, f1, f3], [f3, f2]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8, f2 = 32, f3 = 16 sum}
// CHECK: remark: ([f0, f1, f2]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8, f2 = 32}
// CHECK: remark: ([f0, f1, f3], [f3, f2]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8, f2 = 16, f3 = 32 sum}
// CHECK: remark: ([f0, f1, f2]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8, f2 = 16}
func.func @mlp(%x: tensor<2x8x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x16xf32>) -> tensor<2x8x16xf32> {
  %h = braid.matmul %x, %w1 : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %a = braid.relu %h : tensor<2x8x32xf32>
  %y = braid.matmul %a, %w2 : (tensor<2x8x32xf32>, tensor<32x16xf32>) -> tensor<2x8x16xf32>
  %r = braid.all_reduce %y on @world["tp"] sum : tensor<2x8x16xf32>
  return %r : tensor<2x8x16xf32>
}

// Causal attention: the key sequence is a causal prefix of the query sequence.
// CHECK: remark: ([f0, (f1 f2), f3, f5], [f0, f1, f4, f5], [f0, f1, f4, f6]) -> ([f0, (f1 f2), f3, f6]) {f0 = 1, f1 = 2, f2 = 1, f3 = 8, f4 = 8 causal(f3), f5 = 4 whole, f6 = 4}
func.func @attn(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %o = braid.attention %q, %q, %q causal scale 0.5 : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}

// A reshape of a tensor with no elements maps without grouping.
// CHECK: remark: ([f0, f1]) -> ([f2, f3]) {f0 = 2 whole, f1 = 0 whole, f2 = 4, f3 = 0}
func.func @empty_reshape(%a: tensor<2x0xf32>) -> tensor<4x0xf32> {
  %0 = braid.reshape %a : tensor<2x0xf32> -> tensor<4x0xf32>
  return %0 : tensor<4x0xf32>
}
