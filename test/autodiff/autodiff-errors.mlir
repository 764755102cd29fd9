// Options and ops braid-autodiff refuses, one clear line each.
// RUN: split-file %s %t
// RUN: not braid-opt --braid-autodiff=trainable=all %t/rotary.mlir 2>&1 | FileCheck %s --check-prefix=ROTARY
// RUN: not braid-opt "--braid-autodiff=frozen=nothere" %t/rotary.mlir 2>&1 | FileCheck %s --check-prefix=FROZEN
// RUN: not braid-opt "--braid-autodiff=wrt=everything" %t/rotary.mlir 2>&1 | FileCheck %s --check-prefix=WRT
// ROTARY: error: 'braid.rotary' op is not differentiable in operand #1, which depends on a trained weight
// FROZEN: error: braid-autodiff: frozen names no weight @nothere
// RUN: not braid-opt "--braid-autodiff=recompute=everything" %t/rotary.mlir 2>&1 | FileCheck %s --check-prefix=RECOMPUTE
// RECOMPUTE: error: braid-autodiff: recompute must be 'none' or 'elementwise', not 'everything'
// WRT: error: braid-autodiff: wrt must be 'weights' or 'arguments', not 'everything'

//--- rotary.mlir
module {
  braid.weight @cos : tensor<4x8xf32>
  braid.weight @sin : tensor<4x8xf32>
  func.func @main(%x: tensor<1x1x4x8xf32>) -> tensor<f32> {
    %c = braid.get_weight @cos : tensor<4x8xf32>
    %s = braid.get_weight @sin : tensor<4x8xf32>
    %r = braid.rotary %x, %c, %s : (tensor<1x1x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
    %l = braid.reduce_sum %r dims [0, 1, 2, 3] : tensor<1x1x4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
