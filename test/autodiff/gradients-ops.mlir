// Every op's gradient rule against central finite differences of the
// reference interpreter in double precision (braid-check-gradients): one
// small program per op, loss = sum(op(...) * r) with r a random weight.
// RUN: split-file %s %t
// RUN: braid-check-gradients %t/neg.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/exp.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/log.mlir --wrt=arguments --low=0.5 --high=2 | FileCheck %s
// RUN: braid-check-gradients %t/sqrt.mlir --wrt=arguments --low=0.5 --high=2 | FileCheck %s
// RUN: braid-check-gradients %t/rsqrt.mlir --wrt=arguments --low=0.5 --high=2 | FileCheck %s
// RUN: braid-check-gradients %t/tanh.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/erf.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/sigmoid.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/silu.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/relu.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/gelu.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/gelu_tanh.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/add.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/sub.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/mul.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/div.mlir --wrt=arguments --low=0.5 --high=2 | FileCheck %s
// RUN: braid-check-gradients %t/pow.mlir --wrt=arguments --low=0.5 --high=2 | FileCheck %s
// RUN: braid-check-gradients %t/max.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/min.mlir --wrt=arguments  | FileCheck %s
// RUN: braid-check-gradients %t/mul_both_broadcast.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/select.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/matmul.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/matmul_tl.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/matmul_tr.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/matmul_tt.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/matmul_batched_weight.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/matmul_batched_weight_tr.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/matmul_batch_broadcast.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/matmul_batched_tl.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/reduce_sum.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/reduce_sum_keep.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/reduce_mean.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/reduce_mean_keep.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/reduce_max.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/reduce_max_keep.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/softmax.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/softmax_dim1.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/layer_norm.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/layer_norm_two_axes.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/rms_norm.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/rotary.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/rotary_interleaved.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/reshape.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/transpose.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/slice.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/concat.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/split.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/split_one_used.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/broadcast_to.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/gather.mlir --wrt=arguments --int-bound=5 | FileCheck %s
// RUN: braid-check-gradients %t/cast_f32_bf16_f32.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/attention.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/attention_causal.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/attention_gqa_causal.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/attention_causal_prefix.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/attention_float_mask.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/attention_bool_mask.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/cross_entropy_mean.mlir --wrt=arguments --int-bound=5 | FileCheck %s
// RUN: braid-check-gradients %t/cross_entropy_sum.mlir --wrt=arguments --int-bound=5 | FileCheck %s
// RUN: braid-check-gradients %t/cross_entropy_none.mlir --wrt=arguments --int-bound=5 | FileCheck %s
// RUN: braid-check-gradients %t/router_topk.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/router_topk_normalize.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/moe_layer.mlir --wrt=arguments | FileCheck %s
// RUN: braid-check-gradients %t/collectives_one_rank.mlir --wrt=arguments | FileCheck %s
// CHECK-NOT: FAIL
// CHECK: passed:

//--- neg.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.neg %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- exp.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.exp %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- log.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.log %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- sqrt.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.sqrt %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- rsqrt.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.rsqrt %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- tanh.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.tanh %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- erf.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.erf %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- sigmoid.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.sigmoid %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- silu.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.silu %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- relu.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.relu %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- gelu.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.gelu %x : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- gelu_tanh.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.gelu %x tanh : tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- add.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>, %z: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.add %x, %z : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- sub.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>, %z: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.sub %x, %z : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- mul.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>, %z: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.mul %x, %z : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- div.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>, %z: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.div %x, %z : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- pow.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>, %z: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.pow %x, %z : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- max.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>, %z: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.max %x, %z : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- min.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>, %z: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.min %x, %z : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- mul_both_broadcast.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x1xf32>, %z: tensor<1x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.mul %x, %z : (tensor<3x1xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- select.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>, %z: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %zero = braid.constant dense<0.0> : tensor<f32>
    %c = braid.compare gt, %x, %zero : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xi1>
    %y = braid.select %c, %x, %z : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- matmul.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%a: tensor<3x5xf32>, %b: tensor<5x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.matmul %a, %b : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- matmul_tl.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%a: tensor<5x3xf32>, %b: tensor<5x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.matmul %a, %b transpose_lhs : (tensor<5x3xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- matmul_tr.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%a: tensor<3x5xf32>, %b: tensor<4x5xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.matmul %a, %b transpose_rhs : (tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- matmul_tt.mlir
module {

  braid.weight @r : tensor<3x4xf32>
  func.func @main(%a: tensor<5x3xf32>, %b: tensor<4x5xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %y = braid.matmul %a, %b transpose_lhs transpose_rhs : (tensor<5x3xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- matmul_batched_weight.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%a: tensor<2x3x5xf32>, %b: tensor<5x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.matmul %a, %b : (tensor<2x3x5xf32>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- matmul_batched_weight_tr.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%a: tensor<2x3x5xf32>, %b: tensor<4x5xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.matmul %a, %b transpose_rhs : (tensor<2x3x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- matmul_batch_broadcast.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%a: tensor<2x3x5xf32>, %b: tensor<1x5x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.matmul %a, %b : (tensor<2x3x5xf32>, tensor<1x5x4xf32>) -> tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- matmul_batched_tl.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%a: tensor<2x5x3xf32>, %b: tensor<2x5x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.matmul %a, %b transpose_lhs : (tensor<2x5x3xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- reduce_sum.mlir
module {

  braid.weight @r : tensor<2x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x4xf32>
    %y = braid.reduce_sum %x dims [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
    %p = braid.mul %y, %r : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- reduce_sum_keep.mlir
module {

  braid.weight @r : tensor<1x3x1xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x3x1xf32>
    %y = braid.reduce_sum %x dims [0, 2] keep_dims : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
    %p = braid.mul %y, %r : (tensor<1x3x1xf32>, tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<1x3x1xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- reduce_mean.mlir
module {

  braid.weight @r : tensor<2x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x4xf32>
    %y = braid.reduce_mean %x dims [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
    %p = braid.mul %y, %r : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- reduce_mean_keep.mlir
module {

  braid.weight @r : tensor<1x3x1xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x3x1xf32>
    %y = braid.reduce_mean %x dims [0, 2] keep_dims : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
    %p = braid.mul %y, %r : (tensor<1x3x1xf32>, tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<1x3x1xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- reduce_max.mlir
module {

  braid.weight @r : tensor<2x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x4xf32>
    %y = braid.reduce_max %x dims [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
    %p = braid.mul %y, %r : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- reduce_max_keep.mlir
module {

  braid.weight @r : tensor<1x3x1xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x3x1xf32>
    %y = braid.reduce_max %x dims [0, 2] keep_dims : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
    %p = braid.mul %y, %r : (tensor<1x3x1xf32>, tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<1x3x1xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- softmax.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.softmax %x dim 2 : tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- softmax_dim1.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.softmax %x dim 1 : tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- layer_norm.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.layer_norm %x, %g, %b axis 2 eps 1.0e-05 : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- layer_norm_two_axes.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>, %g: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.layer_norm %x, %g axis 1 eps 1.0e-05 : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- rms_norm.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>, %g: tensor<4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.rms_norm %x, %g axis 2 eps 1.0e-06 : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- rotary.mlir
module {
  braid.weight @c : tensor<3x4xf32>
  braid.weight @s : tensor<3x4xf32>
  braid.weight @r : tensor<1x2x3x4xf32>
  func.func @main(%x: tensor<1x2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x2x3x4xf32>
    %c = braid.get_weight @c : tensor<3x4xf32>
    %s = braid.get_weight @s : tensor<3x4xf32>
    %y = braid.rotary %x, %c, %s : (tensor<1x2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2, 3] : tensor<1x2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- rotary_interleaved.mlir
module {
  braid.weight @c : tensor<3x4xf32>
  braid.weight @s : tensor<3x4xf32>
  braid.weight @r : tensor<1x2x3x4xf32>
  func.func @main(%x: tensor<1x2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x2x3x4xf32>
    %c = braid.get_weight @c : tensor<3x4xf32>
    %s = braid.get_weight @s : tensor<3x4xf32>
    %y = braid.rotary %x, %c, %s interleaved : (tensor<1x2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2, 3] : tensor<1x2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- reshape.mlir
module {

  braid.weight @r : tensor<6x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<6x4xf32>
    %y = braid.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %p = braid.mul %y, %r : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<6x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- transpose.mlir
module {

  braid.weight @r : tensor<4x2x3xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<4x2x3xf32>
    %y = braid.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
    %p = braid.mul %y, %r : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<4x2x3xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- slice.mlir
module {

  braid.weight @r : tensor<2x2x2xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x2x2xf32>
    %y = braid.slice %x offsets [0, 1, 1] sizes [2, 2, 2] strides [1, 1, 1] : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
    %p = braid.mul %y, %r : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x2x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- concat.mlir
module {

  braid.weight @r : tensor<2x4x4xf32>
  func.func @main(%x: tensor<2x3x4xf32>, %z: tensor<2x1x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x4x4xf32>
    %y = braid.concat %x, %z dim 1 : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x4x4xf32>
    %p = braid.mul %y, %r : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x4x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- split.mlir
module {

  braid.weight @r : tensor<2x3x2xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x2xf32>
    %a, %b = braid.split %x dim 2 : tensor<2x3x4xf32> -> tensor<2x3x2xf32>, tensor<2x3x2xf32>
    %y = braid.mul %a, %b : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
    %p = braid.mul %y, %r : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- split_one_used.mlir
module {

  braid.weight @r : tensor<2x3x2xf32>
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x2xf32>
    %a, %b = braid.split %x dim 2 : tensor<2x3x4xf32> -> tensor<2x3x2xf32>, tensor<2x3x2xf32>
    %p = braid.mul %b, %r : (tensor<2x3x2xf32>, tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- broadcast_to.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%x: tensor<3x1xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.broadcast_to %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- gather.mlir
module {

  braid.weight @r : tensor<2x3x4xf32>
  func.func @main(%t: tensor<5x4xf32>, %i: tensor<2x3xi64>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3x4xf32>
    %y = braid.gather %t[%i] axis 0 : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    %p = braid.mul %y, %r : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- cast_f32_bf16_f32.mlir
module {
  braid.weight @r : tensor<3x4xf32>
  func.func @main(%x: tensor<3x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<3x4xf32>
    %h = braid.cast %x : tensor<3x4xf32> -> tensor<3x4xbf16>
    %y = braid.cast %h : tensor<3x4xbf16> -> tensor<3x4xf32>
    %p = braid.mul %y, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- attention.mlir
module {
  braid.weight @r : tensor<1x4x3x2xf32>
  func.func @main(%q: tensor<1x4x3x2xf32>, %k: tensor<1x4x3x2xf32>, %v: tensor<1x4x3x2xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x4x3x2xf32>
    %y = braid.attention %q, %k, %v scale 0.5 : (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
    %p = braid.mul %y, %r : (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2, 3] : tensor<1x4x3x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- attention_causal.mlir
module {
  braid.weight @r : tensor<1x4x3x2xf32>
  func.func @main(%q: tensor<1x4x3x2xf32>, %k: tensor<1x4x3x2xf32>, %v: tensor<1x4x3x2xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x4x3x2xf32>
    %y = braid.attention %q, %k, %v causal scale 0.5 : (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
    %p = braid.mul %y, %r : (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2, 3] : tensor<1x4x3x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- attention_gqa_causal.mlir
module {
  braid.weight @r : tensor<1x4x3x2xf32>
  func.func @main(%q: tensor<1x4x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x4x3x2xf32>
    %y = braid.attention %q, %k, %v causal scale 0.5 : (tensor<1x4x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x4x3x2xf32>
    %p = braid.mul %y, %r : (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2, 3] : tensor<1x4x3x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- attention_causal_prefix.mlir
module {
  braid.weight @r : tensor<1x2x2x2xf32>
  func.func @main(%q: tensor<1x2x2x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x2x2x2xf32>
    %y = braid.attention %q, %k, %v causal scale 0.5 : (tensor<1x2x2x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x2x2xf32>
    %p = braid.mul %y, %r : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2, 3] : tensor<1x2x2x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- attention_float_mask.mlir
module {
  braid.weight @m : tensor<1x1x3x3xf32>
  braid.weight @r : tensor<1x4x3x2xf32>
  func.func @main(%q: tensor<1x4x3x2xf32>, %k: tensor<1x4x3x2xf32>, %v: tensor<1x4x3x2xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x4x3x2xf32>
    %m = braid.get_weight @m : tensor<1x1x3x3xf32>
    %y = braid.attention %q, %k, %v mask %m scale 0.5 : (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x2xf32>
    %p = braid.mul %y, %r : (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2, 3] : tensor<1x4x3x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- attention_bool_mask.mlir
module {
  braid.weight @r : tensor<1x4x3x2xf32>
  func.func @main(%q: tensor<1x4x3x2xf32>, %k: tensor<1x4x3x2xf32>, %v: tensor<1x4x3x2xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<1x4x3x2xf32>
    %m = braid.constant dense<[[true, false, true], [true, true, false], [false, true, true]]> : tensor<3x3xi1>
    %y = braid.attention %q, %k, %v mask %m scale 0.5 : (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<3x3xi1>) -> tensor<1x4x3x2xf32>
    %p = braid.mul %y, %r : (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
    %l = braid.reduce_sum %p dims [0, 1, 2, 3] : tensor<1x4x3x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- cross_entropy_mean.mlir
module {
  func.func @main(%x: tensor<2x3x5xf32>, %t: tensor<2x3xi64>) -> tensor<f32> {
    %l = braid.cross_entropy %x, %t mean : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- cross_entropy_sum.mlir
module {
  func.func @main(%x: tensor<2x3x5xf32>, %t: tensor<2x3xi64>) -> tensor<f32> {
    %l = braid.cross_entropy %x, %t sum : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- cross_entropy_none.mlir
module {
  braid.weight @r : tensor<2x3xf32>
  func.func @main(%x: tensor<2x3x5xf32>, %t: tensor<2x3xi64>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<2x3xf32>
    %y = braid.cross_entropy %x, %t none : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
    %p = braid.mul %y, %r : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- router_topk.mlir
module {
  braid.weight @r : tensor<6x2xf32>
  func.func @main(%x: tensor<6x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<6x2xf32>
    %w, %e = braid.router_topk %x k 2 : (tensor<6x4xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
    %p = braid.mul %w, %r : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<6x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- router_topk_normalize.mlir
module {
  braid.weight @r : tensor<6x2xf32>
  func.func @main(%x: tensor<6x4xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<6x2xf32>
    %w, %e = braid.router_topk %x k 2 normalize : (tensor<6x4xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
    %p = braid.mul %w, %r : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<6x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- moe_layer.mlir
module {
  braid.weight @r : tensor<6x3xf32>
  func.func @main(%x: tensor<6x3xf32>, %g: tensor<3x4xf32>, %w1: tensor<4x3x5xf32>, %w2: tensor<4x3x5xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<6x3xf32>
    %logits = braid.matmul %x, %g : (tensor<6x3xf32>, tensor<3x4xf32>) -> tensor<6x4xf32>
    %w, %e = braid.router_topk %logits k 2 normalize : (tensor<6x4xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
    %d = braid.moe_dispatch %x, %e : (tensor<6x3xf32>, tensor<6x2xi64>) -> tensor<4x3x3xf32>
    %h = braid.grouped_matmul %d, %w1 : (tensor<4x3x3xf32>, tensor<4x3x5xf32>) -> tensor<4x3x5xf32>
    %a = braid.tanh %h : tensor<4x3x5xf32>
    %o = braid.grouped_matmul %a, %w2 transpose_rhs : (tensor<4x3x5xf32>, tensor<4x3x5xf32>) -> tensor<4x3x3xf32>
    %y = braid.moe_combine %o, %e, %w : (tensor<4x3x3xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> tensor<6x3xf32>
    %p = braid.mul %y, %r : (tensor<6x3xf32>, tensor<6x3xf32>) -> tensor<6x3xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<6x3xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- collectives_one_rank.mlir
module {
  braid.mesh @world(tp = 1)
  braid.weight @r : tensor<4x2xf32>
  func.func @main(%x: tensor<4x2xf32>) -> tensor<f32> {
    %r = braid.get_weight @r : tensor<4x2xf32>
    %a = braid.all_reduce %x on @world["tp"] sum : tensor<4x2xf32>
    %b = braid.all_gather %a on @world["tp"] dim 0 : tensor<4x2xf32> -> tensor<4x2xf32>
    %c = braid.reduce_scatter %b on @world["tp"] sum dim 1 : tensor<4x2xf32> -> tensor<4x2xf32>
    %d = braid.all_to_all %c on @world["tp"] split 0 concat 1 : tensor<4x2xf32> -> tensor<4x2xf32>
    %y = braid.collective_permute %d on @world["tp"] shift 1 : tensor<4x2xf32>
    %p = braid.mul %y, %r : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %l = braid.reduce_sum %p dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
