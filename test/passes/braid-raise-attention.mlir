// RUN: braid-opt %s --braid-raise-attention | FileCheck %s

// GPT-2 eager: matmul with explicit K^T, divide by sqrt(D), select with a
// constant causal mask and a very negative fill.
// CHECK-LABEL: func @gpt2_eager
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3x4x8xf32>, %[[K:.*]]: tensor<2x3x4x8xf32>, %[[V:.*]]: tensor<2x3x4x8xf32>)
// CHECK-NEXT: %[[O:.*]] = braid.attention %[[Q]], %[[K]], %[[V]] causal scale 0.353553385 :
// CHECK-NEXT: return %[[O]]
func.func @gpt2_eager(%q: tensor<2x3x4x8xf32>, %k: tensor<2x3x4x8xf32>, %v: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %kt = braid.transpose %k [0, 1, 3, 2] : tensor<2x3x4x8xf32> -> tensor<2x3x8x4xf32>
  %s = braid.matmul %q, %kt : (tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x4x4xf32>
  %c = braid.constant dense<2.828427> : tensor<f32>
  %d = braid.div %s, %c : (tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  %m = braid.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %fill = braid.constant dense<-3.40282347E+38> : tensor<f32>
  %w = braid.select %m, %d, %fill : (tensor<1x1x4x4xi1>, tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  %p = braid.softmax %w dim 3 : tensor<2x3x4x4xf32>
  %o = braid.matmul %p, %v : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %o : tensor<2x3x4x8xf32>
}

// Exported SDPA: Q and K^T each scaled by sqrt(scale), additive causal mask.
// CHECK-LABEL: func @sdpa
// CHECK: braid.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 0.353553{{[0-9]*}} :
// CHECK-NOT: braid.softmax
func.func @sdpa(%q: tensor<2x3x4x8xf32>, %k: tensor<2x3x4x8xf32>, %v: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %r = braid.constant dense<0.594603539> : tensor<f32>
  %qs = braid.mul %q, %r : (tensor<2x3x4x8xf32>, tensor<f32>) -> tensor<2x3x4x8xf32>
  %kt = braid.transpose %k [0, 1, 3, 2] : tensor<2x3x4x8xf32> -> tensor<2x3x8x4xf32>
  %ks = braid.mul %kt, %r : (tensor<2x3x8x4xf32>, tensor<f32>) -> tensor<2x3x8x4xf32>
  %s = braid.matmul %qs, %ks : (tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x4x4xf32>
  %m = braid.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %a = braid.add %s, %m : (tensor<2x3x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x3x4x4xf32>
  %p = braid.softmax %a dim 3 : tensor<2x3x4x4xf32>
  %o = braid.matmul %p, %v : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %o : tensor<2x3x4x8xf32>
}

// A constant additive mask that is not causal stays a mask operand.
// CHECK-LABEL: func @additive_mask
// CHECK: %[[M:.*]] = braid.constant dense<{{.*}}> : tensor<1x1x4x4xf32>
// CHECK: braid.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[M]] scale 1.000000e+00 :
func.func @additive_mask(%q: tensor<2x3x4x8xf32>, %k: tensor<2x3x4x8xf32>, %v: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %s = braid.matmul %q, %k transpose_rhs : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x4xf32>
  %m = braid.constant dense<[[[[0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38]]]]> : tensor<1x1x4x4xf32>
  %a = braid.add %m, %s : (tensor<1x1x4x4xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %p = braid.softmax %a dim 3 : tensor<2x3x4x4xf32>
  %o = braid.matmul %p, %v : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %o : tensor<2x3x4x8xf32>
}

// A mask computed at run time through select is not raised: rows it masks
// completely would give zeros instead of a uniform average.
// CHECK-LABEL: func @runtime_select_mask
// CHECK-NOT: braid.attention
// CHECK: braid.softmax
func.func @runtime_select_mask(%q: tensor<2x3x4x8xf32>, %k: tensor<2x3x4x8xf32>, %v: tensor<2x3x4x8xf32>, %m: tensor<2x1x4x4xi1>) -> tensor<2x3x4x8xf32> {
  %s = braid.matmul %q, %k transpose_rhs : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x4xf32>
  %fill = braid.constant dense<-1.0e+09> : tensor<f32>
  %w = braid.select %m, %s, %fill : (tensor<2x1x4x4xi1>, tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  %p = braid.softmax %w dim 3 : tensor<2x3x4x4xf32>
  %o = braid.matmul %p, %v : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %o : tensor<2x3x4x8xf32>
}

// A scale applied after the mask would scale the mask too: not raised.
// CHECK-LABEL: func @scale_after_mask
// CHECK-NOT: braid.attention
func.func @scale_after_mask(%q: tensor<2x3x4x8xf32>, %k: tensor<2x3x4x8xf32>, %v: tensor<2x3x4x8xf32>, %m: tensor<2x1x4x4xf32>) -> tensor<2x3x4x8xf32> {
  %s = braid.matmul %q, %k transpose_rhs : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x4xf32>
  %a = braid.add %s, %m : (tensor<2x3x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x3x4x4xf32>
  %c = braid.constant dense<0.5> : tensor<f32>
  %d = braid.mul %a, %c : (tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  %p = braid.softmax %d dim 3 : tensor<2x3x4x4xf32>
  %o = braid.matmul %p, %v : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %o : tensor<2x3x4x8xf32>
}

// Softmax over another dimension is not attention.
// CHECK-LABEL: func @softmax_wrong_dim
// CHECK-NOT: braid.attention
func.func @softmax_wrong_dim(%q: tensor<2x3x4x8xf32>, %k: tensor<2x3x4x8xf32>, %v: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %s = braid.matmul %q, %k transpose_rhs : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x4xf32>
  %p = braid.softmax %s dim 2 : tensor<2x3x4x4xf32>
  %o = braid.matmul %p, %v : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %o : tensor<2x3x4x8xf32>
}
