// RUN: braid-opt %s --braid-next-token-loss="vocab-parallel=true" --braid-autodiff | FileCheck %s
// RUN: braid-opt %s --braid-next-token-loss="vocab-parallel=true" --braid-autodiff --braid-partition="tp=2" | FileCheck %s --check-prefix=TP
// RUN: braid-opt %s --braid-next-token-loss="vocab-parallel=true" --braid-autodiff --braid-partition="tp=2" | not grep "2x4x16x"
// braid-next-token-loss's vocabulary-parallel form: the max (no gradient
// through it), the log-sum-exp and the label's shifted logit (a one-hot
// product), their difference averaged; the backward pass braid-autodiff
// derives is exp(x - m) / s - onehot, and it has no reduce_max gradient.
// Under tp=2 the LM head's columns are split, the three per-position
// values all-reduced (max, sum, sum), every [B, S, V] value is a block of
// 8 columns (no rank builds the whole one-hot or a whole broadcast: the
// partitioner computes such values on the block instead of slicing them).

// CHECK-LABEL: func.func @main
// CHECK: %[[M:.*]] = braid.reduce_max %[[X:.*]] dims [2] keep_dims {braid.stop_gradient} : tensor<2x4x16xf32> -> tensor<2x4x1xf32>
// CHECK: %[[D:.*]] = braid.sub %[[X]], %[[M]]
// CHECK: %[[E:.*]] = braid.exp %[[D]]
// CHECK: %[[S:.*]] = braid.reduce_sum %[[E]] dims [2] keep_dims
// CHECK: braid.log %[[S]]
// CHECK: braid.compare eq
// CHECK: braid.reduce_mean %{{.*}} dims [0, 1, 2] : tensor<2x4x1xf32> -> tensor<f32>
// CHECK-NOT: braid.cross_entropy
// CHECK-NOT: braid.softmax
// CHECK-NOT: braid.reduce_max
// CHECK: return
// TP: braid.get_weight @head sharded on @world {{\[\[}}], ["tp"]] : tensor<8x8xf32>
// TP: braid.all_reduce %{{.*}} on @world["tp"] max : tensor<2x4x1xf32>
// TP: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<2x4x1xf32>
// TP: braid.slice %{{.*}} : tensor<16xi64> -> tensor<8xi64>
// TP: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<2x4x1xf32>
// TP-NOT: braid.all_reduce
// TP: braid.all_gather %{{.*}} on @world["tp"] dim 1 : tensor<8x8xf32> -> tensor<8x16xf32>
module {
  braid.weight @head : tensor<8x16xf32>
  func.func @main(%tokens: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
    %table = braid.constant dense<0.5> : tensor<16x8xf32>
    %h = braid.gather %table[%tokens] axis 0 : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    %w = braid.get_weight @head : tensor<8x16xf32>
    %logits = braid.matmul %h, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    return %logits : tensor<2x4x16xf32>
  }
}
