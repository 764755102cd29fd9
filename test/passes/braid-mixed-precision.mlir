// RUN: braid-opt %s --braid-mixed-precision --split-input-file --verify-diagnostics | FileCheck %s
// RUN: braid-opt %s --braid-mixed-precision="type=f16" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=F16
// RUN: braid-opt %s --braid-mixed-precision --split-input-file --verify-diagnostics --braid-partition="tp=2" | FileCheck %s --check-prefix=TP
// braid-mixed-precision: every f32 value of @main computed in bf16 (f16).
// Each weight read and each f32 argument is cast where it enters, the
// result cast back to f32 where it leaves; integer values and the weights'
// storage stay as they are; f32 constants are converted, and -FLT_MAX
// saturates to the largest finite bf16 (f16: -65504) rather than -inf.
// The partitioner sees through the casts: the weights are still loaded
// sharded (Megatron's column- then row-parallel pair) and the all-reduce is
// of bf16 partial sums.

// CHECK: braid.weight @w1 : tensor<8x16xf32>
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[IDS:.*]]: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4xi64>)
// CHECK: %[[XB:.*]] = braid.cast %[[X]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: %[[W1:.*]] = braid.get_weight @w1 : tensor<8x16xf32>
// CHECK: %[[W1B:.*]] = braid.cast %[[W1]] : tensor<8x16xf32> -> tensor<8x16xbf16>
// CHECK: braid.matmul %[[XB]], %[[W1B]] : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
// CHECK: braid.constant dense<-3.389530e+38> : tensor<bf16>
// CHECK: braid.max {{.*}} -> tensor<4x16xbf16>
// CHECK: %[[Y:.*]] = braid.matmul {{.*}} -> tensor<4x8xbf16>
// CHECK: %[[OUT:.*]] = braid.cast %[[Y]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: return %[[OUT]], %[[IDS]] : tensor<4x8xf32>, tensor<4xi64>
// F16: braid.constant dense<-6.550400e+04> : tensor<f16>
// F16: braid.matmul {{.*}} -> tensor<4x8xf16>
// TP: braid.get_weight @w1 sharded on @world {{\[\[}}], ["tp"]] : tensor<8x8xf32>
// TP: braid.cast %{{.*}} : tensor<8x8xf32> -> tensor<8x8xbf16>
// TP: braid.get_weight @w2 sharded on @world {{\[\[}}"tp"], []] : tensor<8x8xf32>
// TP: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<4x8xbf16>
module {
  braid.weight @w1 : tensor<8x16xf32>
  braid.weight @w2 : tensor<16x8xf32>
  func.func @main(%x: tensor<4x8xf32>, %ids: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4xi64>) {
    %w1 = braid.get_weight @w1 : tensor<8x16xf32>
    %h = braid.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %floor = braid.constant dense<-3.40282347e+38> : tensor<f32>
    %r = braid.max %h, %floor : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
    %w2 = braid.get_weight @w2 : tensor<16x8xf32>
    %y = braid.matmul %r, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    return %y, %ids : tensor<4x8xf32>, tensor<4xi64>
  }
}

// -----

// expected-error @+1 {{braid-mixed-precision: no function @main}}
module {
  func.func @other() {
    return
  }
}
