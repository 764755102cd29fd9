// braid-autodiff: gradients appended as results marked with the weight
// they belong to; a trained weight the loss does not read gets zeros;
// frozen tables (rotary) get none; errors for what cannot be differentiated.
// RUN: braid-opt --braid-autodiff %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: braid.weight @w
// CHECK: func.func @main(%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<2xi64>) -> (tensor<f32>, tensor<4x3xf32> {braid.gradient_of = @w}, tensor<3xf32> {braid.gradient_of = @b}, tensor<3xf32> {braid.gradient_of = @unused})
// The weight's gradient is one matmul of the input and the logits' adjoint.
// CHECK: %[[DW:.*]] = braid.matmul %arg0, %{{.*}} transpose_lhs : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[ZERO:.*]] = braid.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[DU:.*]] = braid.broadcast_to %[[ZERO]] : tensor<f32> -> tensor<3xf32>
// CHECK: return %{{.*}}, %[[DW]], %{{.*}}, %[[DU]]
module {
  braid.weight @w : tensor<4x3xf32>
  braid.weight @b : tensor<3xf32>
  braid.weight @unused : tensor<3xf32>
  func.func @main(%x: tensor<2x4xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
    %w = braid.get_weight @w : tensor<4x3xf32>
    %b = braid.get_weight @b : tensor<3xf32>
    %h = braid.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %z = braid.add %h, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %l = braid.cross_entropy %z, %labels mean : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Rotary tables and an additive mask of rank > 1 are not trained; the
// projection and the norm scale are.
// CHECK-LABEL: braid.weight @cos
// CHECK: -> (tensor<f32>, tensor<8xf32> {braid.gradient_of = @g}, tensor<8x8xf32> {braid.gradient_of = @proj})
module {
  braid.weight @cos : tensor<4x8xf32>
  braid.weight @sin : tensor<4x8xf32>
  braid.weight @mask : tensor<4x8xf32>
  braid.weight @g : tensor<8xf32>
  braid.weight @proj : tensor<8x8xf32>
  func.func @main(%x: tensor<1x1x4x8xf32>) -> tensor<f32> {
    %c = braid.get_weight @cos : tensor<4x8xf32>
    %s = braid.get_weight @sin : tensor<4x8xf32>
    %m = braid.get_weight @mask : tensor<4x8xf32>
    %g = braid.get_weight @g : tensor<8xf32>
    %p = braid.get_weight @proj : tensor<8x8xf32>
    %n = braid.rms_norm %x, %g axis 3 eps 1.0e-06 : (tensor<1x1x4x8xf32>, tensor<8xf32>) -> tensor<1x1x4x8xf32>
    %h = braid.matmul %n, %p : (tensor<1x1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x1x4x8xf32>
    %r = braid.rotary %h, %c, %s : (tensor<1x1x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
    %a = braid.add %r, %m : (tensor<1x1x4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
    %l = braid.reduce_sum %a dims [0, 1, 2, 3] : tensor<1x1x4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

module {
  braid.weight @w : tensor<4xf32>
  // expected-error @below {{braid-autodiff: result #0 of @main must be a scalar float loss, not 'tensor<4xf32>'}}
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %w = braid.get_weight @w : tensor<4xf32>
    %y = braid.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module {
  braid.weight @w : tensor<2x4xf32>
  func.func @main(%x: tensor<2x4xf32>) -> tensor<f32> {
    // expected-error @below {{'braid.get_weight' op reads a block or a shard of a trained weight: differentiate before partitioning and braid-split-fused-projections (or split with parts=true, which makes each block a weight of its own)}}
    %w = braid.get_weight @w block [2, 2] at [0, 0] : tensor<2x2xf32>
    %y = braid.matmul %x, %w transpose_lhs : (tensor<2x4xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
    %l = braid.reduce_sum %y dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
