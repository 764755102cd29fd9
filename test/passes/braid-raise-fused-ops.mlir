// RUN: braid-opt %s --braid-raise-fused-ops | FileCheck %s

// GPT-2's gelu_new as both exporters write it (x^3 as pow).
// CHECK-LABEL: func @gelu_tanh_pow
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[Y:.*]] = braid.gelu %[[X]] tanh : tensor<2x4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_pow(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %half = braid.constant dense<5.000000e-01> : tensor<f32>
  %three = braid.constant dense<3.000000e+00> : tensor<f32>
  %k = braid.constant dense<4.471500e-02> : tensor<f32>
  %c = braid.constant dense<0.797884583> : tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %a = braid.mul %x, %half : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %p = braid.pow %x, %three : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %q = braid.mul %p, %k : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %s = braid.add %x, %q : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %u = braid.mul %s, %c : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %t = braid.tanh %u : tensor<2x4x8xf32>
  %b = braid.add %t, %one : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %y = braid.mul %a, %b : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Other orders: constants on the left, x * x * x, the 0.5 applied last.
// CHECK-LABEL: func @gelu_tanh_cubed
// CHECK-NEXT: braid.gelu %{{.*}} tanh
// CHECK-NEXT: return
func.func @gelu_tanh_cubed(%x: tensor<16xf32>) -> tensor<16xf32> {
  %half = braid.constant dense<5.000000e-01> : tensor<1xf32>
  %k = braid.constant dense<4.471500e-02> : tensor<f32>
  %c = braid.constant dense<0.797884583> : tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %x2 = braid.mul %x, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %x3 = braid.mul %x2, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %q = braid.mul %k, %x3 : (tensor<f32>, tensor<16xf32>) -> tensor<16xf32>
  %s = braid.add %q, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %u = braid.mul %c, %s : (tensor<f32>, tensor<16xf32>) -> tensor<16xf32>
  %t = braid.tanh %u : tensor<16xf32>
  %b = braid.add %one, %t : (tensor<f32>, tensor<16xf32>) -> tensor<16xf32>
  %a = braid.mul %x, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %y = braid.mul %half, %a : (tensor<1xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// BERT's exact GELU (TorchScript): x * (erf(x / sqrt 2) + 1) * 0.5.
// CHECK-LABEL: func @gelu_erf
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[Y:.*]] = braid.gelu %[[X]] : tensor<2x4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %r2 = braid.constant dense<1.41421354> : tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %half = braid.constant dense<5.000000e-01> : tensor<f32>
  %d = braid.div %x, %r2 : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %e = braid.erf %d : tensor<2x4x8xf32>
  %b = braid.add %e, %one : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %m = braid.mul %x, %b : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = braid.mul %m, %half : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// A constant that is not the formula's (0.04 for 0.044715) is left alone.
// CHECK-LABEL: func @gelu_wrong_constant
// CHECK-NOT: braid.gelu
// CHECK: braid.tanh
func.func @gelu_wrong_constant(%x: tensor<16xf32>) -> tensor<16xf32> {
  %half = braid.constant dense<5.000000e-01> : tensor<f32>
  %three = braid.constant dense<3.000000e+00> : tensor<f32>
  %k = braid.constant dense<4.000000e-02> : tensor<f32>
  %c = braid.constant dense<0.797884583> : tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %a = braid.mul %x, %half : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %p = braid.pow %x, %three : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %q = braid.mul %p, %k : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %s = braid.add %x, %q : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %u = braid.mul %s, %c : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %t = braid.tanh %u : tensor<16xf32>
  %b = braid.add %t, %one : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %y = braid.mul %a, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// An intermediate read elsewhere (the erf) is still needed: nothing raised.
// CHECK-LABEL: func @gelu_shared_intermediate
// CHECK-NOT: braid.gelu
func.func @gelu_shared_intermediate(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %r2 = braid.constant dense<1.41421354> : tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %half = braid.constant dense<5.000000e-01> : tensor<f32>
  %d = braid.div %x, %r2 : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %e = braid.erf %d : tensor<16xf32>
  %b = braid.add %e, %one : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %m = braid.mul %x, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %y = braid.mul %m, %half : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  return %y, %e : tensor<16xf32>, tensor<16xf32>
}

// SiLU, either operand order.
// CHECK-LABEL: func @silu
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[Z:.*]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[A:.*]] = braid.silu %[[X]] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[B:.*]] = braid.silu %[[Z]] : tensor<2x4x8xf32>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @silu(%x: tensor<2x4x8xf32>, %z: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %s = braid.sigmoid %x : tensor<2x4x8xf32>
  %a = braid.mul %x, %s : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %t = braid.sigmoid %z : tensor<2x4x8xf32>
  %b = braid.mul %t, %z : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %a, %b : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// A gate of another value (LLaMA's up * silu(gate)) is not x * sigmoid(x).
// CHECK-LABEL: func @sigmoid_of_other
// CHECK-NOT: braid.silu
// CHECK: braid.sigmoid
func.func @sigmoid_of_other(%x: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %s = braid.sigmoid %g : tensor<8xf32>
  %a = braid.mul %x, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %a : tensor<8xf32>
}

// LLaMA's RMSNorm as the dynamo exporter writes it.
// CHECK-LABEL: func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>, %[[G:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.*]] = braid.rms_norm %[[X]], %[[G]] axis 2 eps 9.99999997E-7 : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %two = braid.constant dense<2.000000e+00> : tensor<f32>
  %eps = braid.constant dense<9.99999997E-7> : tensor<f32>
  %one = braid.constant dense<1.000000e+00> : tensor<f32>
  %p = braid.pow %x, %two : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %m = braid.reduce_mean %p dims [2] keep_dims : tensor<2x16x64xf32> -> tensor<2x16x1xf32>
  %a = braid.add %m, %eps : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16x1xf32>
  %s = braid.sqrt %a : tensor<2x16x1xf32>
  %r = braid.div %one, %s : (tensor<f32>, tensor<2x16x1xf32>) -> tensor<2x16x1xf32>
  %n = braid.mul %x, %r : (tensor<2x16x64xf32>, tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %y = braid.mul %g, %n : (tensor<64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// Spelled with x * x, rsqrt, and over two trailing dimensions.
// CHECK-LABEL: func @rms_norm_rsqrt
// CHECK: braid.rms_norm %{{.*}}, %{{.*}} axis 1 eps 9.99999974E-6 : (tensor<2x4x8xf32>, tensor<4x8xf32>)
// CHECK-NOT: braid.reduce_mean
func.func @rms_norm_rsqrt(%x: tensor<2x4x8xf32>, %g: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %eps = braid.constant dense<9.99999974E-6> : tensor<f32>
  %p = braid.mul %x, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %m = braid.reduce_mean %p dims [1, 2] keep_dims : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %a = braid.add %eps, %m : (tensor<f32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %r = braid.rsqrt %a : tensor<2x1x1xf32>
  %n = braid.mul %r, %x : (tensor<2x1x1xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = braid.mul %n, %g : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Divided by the root (x / sqrt(...)).
// CHECK-LABEL: func @rms_norm_divide
// CHECK: braid.rms_norm %{{.*}}, %{{.*}} axis 1 eps
func.func @rms_norm_divide(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %two = braid.constant dense<2.000000e+00> : tensor<f32>
  %eps = braid.constant dense<1.0E-5> : tensor<f32>
  %p = braid.pow %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = braid.reduce_mean %p dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  %a = braid.add %m, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = braid.sqrt %a : tensor<4x1xf32>
  %n = braid.div %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = braid.mul %n, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Not RMSNorm: the mean over a leading dimension; a gamma that also scales
// along a normalized-away dimension (broadcast [2, 1, 8]); the mean square
// of another tensor.
// CHECK-LABEL: func @not_rms_norm
// CHECK-NOT: braid.rms_norm
func.func @not_rms_norm(%x: tensor<2x4x8xf32>, %g: tensor<2x1x8xf32>, %w: tensor<8xf32>, %z: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %two = braid.constant dense<2.000000e+00> : tensor<f32>
  %eps = braid.constant dense<1.0E-5> : tensor<f32>
  %p = braid.pow %x, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %m = braid.reduce_mean %p dims [1] keep_dims : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
  %a = braid.add %m, %eps : (tensor<2x1x8xf32>, tensor<f32>) -> tensor<2x1x8xf32>
  %r = braid.rsqrt %a : tensor<2x1x8xf32>
  %n = braid.mul %x, %r : (tensor<2x4x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>
  %y = braid.mul %n, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>

  %p2 = braid.pow %x, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %m2 = braid.reduce_mean %p2 dims [2] keep_dims : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %a2 = braid.add %m2, %eps : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %r2 = braid.rsqrt %a2 : tensor<2x4x1xf32>
  %n2 = braid.mul %x, %r2 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %y2 = braid.mul %n2, %g : (tensor<2x4x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>

  %p3 = braid.pow %z, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %m3 = braid.reduce_mean %p3 dims [2] keep_dims : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %a3 = braid.add %m3, %eps : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %r3 = braid.rsqrt %a3 : tensor<2x4x1xf32>
  %n3 = braid.mul %x, %r3 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %y3 = braid.mul %n3, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y, %y2, %y3 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// LayerNorm as TorchScript writes it below opset 17: centre, variance,
// divide by the root, scale, shift.
// CHECK-LABEL: func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[Y:.*]] = braid.layer_norm %[[X]], %[[G]], %[[B]] axis 2 eps 9.99999974E-6 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %two = braid.constant dense<2.000000e+00> : tensor<f32>
  %eps = braid.constant dense<9.99999974E-6> : tensor<f32>
  %m = braid.reduce_mean %x dims [2] keep_dims : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %d = braid.sub %x, %m : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %p = braid.pow %d, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %v = braid.reduce_mean %p dims [2] keep_dims : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %a = braid.add %v, %eps : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %s = braid.sqrt %a : tensor<2x4x1xf32>
  %n = braid.div %d, %s : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %w = braid.mul %n, %g : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %y = braid.add %w, %b : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Centred squared with mul, rsqrt, no shift.
// CHECK-LABEL: func @layer_norm_no_shift
// CHECK-NEXT: braid.layer_norm %{{.*}}, %{{.*}} axis 1 eps 9.99999974E-6 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return
func.func @layer_norm_no_shift(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %eps = braid.constant dense<9.99999974E-6> : tensor<f32>
  %m = braid.reduce_mean %x dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = braid.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = braid.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = braid.reduce_mean %p dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  %a = braid.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = braid.rsqrt %a : tensor<4x1xf32>
  %n = braid.mul %d, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = braid.mul %n, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Centred by another tensor's mean: an RMS norm of x - mean(z), not a
// layer norm.
// CHECK-LABEL: func @centred_by_other_mean
// CHECK-NOT: braid.layer_norm
// CHECK: braid.rms_norm
func.func @centred_by_other_mean(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %eps = braid.constant dense<9.99999974E-6> : tensor<f32>
  %m = braid.reduce_mean %z dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = braid.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = braid.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = braid.reduce_mean %p dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  %a = braid.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = braid.rsqrt %a : tensor<4x1xf32>
  %n = braid.mul %d, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = braid.mul %n, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// LLaMA's rotary embedding as the dynamo exporter writes it (the tables
// [1, 1, S, D], broadcast over batch and heads).
// CHECK-LABEL: func @rotary_rotate_half
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x16x8xf32>, %[[C:.*]]: tensor<1x1x16x8xf32>, %[[S:.*]]: tensor<1x1x16x8xf32>)
// CHECK-NEXT: %[[Y:.*]] = braid.rotary %[[X]], %[[C]], %[[S]] : (tensor<2x4x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<2x4x16x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rotary_rotate_half(%x: tensor<2x4x16x8xf32>, %cos: tensor<1x1x16x8xf32>, %sin: tensor<1x1x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %a = braid.mul %x, %cos : (tensor<2x4x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<2x4x16x8xf32>
  %lo = braid.slice %x offsets [0, 0, 0, 0] sizes [2, 4, 16, 4] strides [1, 1, 1, 1] : tensor<2x4x16x8xf32> -> tensor<2x4x16x4xf32>
  %hi = braid.slice %x offsets [0, 0, 0, 4] sizes [2, 4, 16, 4] strides [1, 1, 1, 1] : tensor<2x4x16x8xf32> -> tensor<2x4x16x4xf32>
  %n = braid.neg %hi : tensor<2x4x16x4xf32>
  %r = braid.concat %n, %lo dim 3 : (tensor<2x4x16x4xf32>, tensor<2x4x16x4xf32>) -> tensor<2x4x16x8xf32>
  %b = braid.mul %r, %sin : (tensor<2x4x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<2x4x16x8xf32>
  %y = braid.add %a, %b : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %y : tensor<2x4x16x8xf32>
}

// The other operand orders (tables on the left, the rotated product first),
// and tables per head.
// CHECK-LABEL: func @rotary_other_orders
// CHECK-SAME: (%[[X:.*]]: tensor<4x6x8xf32>, %[[C:.*]]: tensor<4x6x8xf32>, %[[S:.*]]: tensor<6x8xf32>)
// CHECK-NEXT: %[[Y:.*]] = braid.rotary %[[X]], %[[C]], %[[S]]
// CHECK-NEXT: return %[[Y]]
func.func @rotary_other_orders(%x: tensor<4x6x8xf32>, %cos: tensor<4x6x8xf32>, %sin: tensor<6x8xf32>) -> tensor<4x6x8xf32> {
  %lo = braid.slice %x offsets [0, 0, 0] sizes [4, 6, 4] strides [1, 1, 1] : tensor<4x6x8xf32> -> tensor<4x6x4xf32>
  %hi = braid.slice %x offsets [0, 0, 4] sizes [4, 6, 4] strides [1, 1, 1] : tensor<4x6x8xf32> -> tensor<4x6x4xf32>
  %n = braid.neg %hi : tensor<4x6x4xf32>
  %r = braid.concat %n, %lo dim 2 : (tensor<4x6x4xf32>, tensor<4x6x4xf32>) -> tensor<4x6x8xf32>
  %b = braid.mul %sin, %r : (tensor<6x8xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %a = braid.mul %cos, %x : (tensor<4x6x8xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %y = braid.add %b, %a : (tensor<4x6x8xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %y : tensor<4x6x8xf32>
}

// Not rotate_half: the halves in the other order (rotating the other way),
// the negated half of another tensor, a table broadcast along the last
// dimension, a slice that skips a row, and a concat also returned.
// CHECK-LABEL: func @rotary_not_raised
// CHECK-NOT: braid.rotary
// CHECK: return
func.func @rotary_not_raised(%x: tensor<6x8xf32>, %z: tensor<6x8xf32>, %cos: tensor<6x8xf32>, %sin: tensor<6x8xf32>, %col: tensor<6x1xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<5x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) {
  %lo = braid.slice %x offsets [0, 0] sizes [6, 4] strides [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %hi = braid.slice %x offsets [0, 4] sizes [6, 4] strides [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %nlo = braid.neg %lo : tensor<6x4xf32>
  %r1 = braid.concat %hi, %nlo dim 1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  %a1 = braid.mul %x, %cos : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %b1 = braid.mul %r1, %sin : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %y1 = braid.add %a1, %b1 : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %zhi = braid.slice %z offsets [0, 4] sizes [6, 4] strides [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %nz = braid.neg %zhi : tensor<6x4xf32>
  %r2 = braid.concat %nz, %lo dim 1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  %a2 = braid.mul %x, %cos : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %b2 = braid.mul %r2, %sin : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %y2 = braid.add %a2, %b2 : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %hi3 = braid.slice %x offsets [0, 4] sizes [6, 4] strides [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %n3 = braid.neg %hi3 : tensor<6x4xf32>
  %r3 = braid.concat %n3, %lo dim 1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  %a3 = braid.mul %x, %col : (tensor<6x8xf32>, tensor<6x1xf32>) -> tensor<6x8xf32>
  %b3 = braid.mul %r3, %sin : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %y3 = braid.add %a3, %b3 : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %x5 = braid.slice %x offsets [1, 0] sizes [5, 8] strides [1, 1] : tensor<6x8xf32> -> tensor<5x8xf32>
  %lo4 = braid.slice %x5 offsets [0, 0] sizes [5, 4] strides [1, 1] : tensor<5x8xf32> -> tensor<5x4xf32>
  %hi4 = braid.slice %x offsets [1, 4] sizes [5, 4] strides [1, 1] : tensor<6x8xf32> -> tensor<5x4xf32>
  %n4 = braid.neg %hi4 : tensor<5x4xf32>
  %r4 = braid.concat %n4, %lo4 dim 1 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x8xf32>
  %c4 = braid.slice %cos offsets [1, 0] sizes [5, 8] strides [1, 1] : tensor<6x8xf32> -> tensor<5x8xf32>
  %a4 = braid.mul %x5, %c4 : (tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<5x8xf32>
  %b4 = braid.mul %r4, %c4 : (tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<5x8xf32>
  %y4 = braid.add %a4, %b4 : (tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<5x8xf32>
  %hi5 = braid.slice %x offsets [0, 4] sizes [6, 4] strides [1, 1] : tensor<6x8xf32> -> tensor<6x4xf32>
  %n5 = braid.neg %hi5 : tensor<6x4xf32>
  %r5 = braid.concat %n5, %lo dim 1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  %a5 = braid.mul %x, %cos : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %b5 = braid.mul %r5, %sin : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %y5 = braid.add %a5, %b5 : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  return %y1, %y2, %y3, %y4, %y5, %r5 : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<5x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>
}
