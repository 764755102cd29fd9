// RUN: braid-opt %s --braid-buckets="mib=1 force=true" 2>/dev/null | FileCheck %s --check-prefix=FUSED
// RUN: braid-opt %s --braid-buckets="mib=auto" 2>/dev/null | FileCheck %s --check-prefix=AUTO
// RUN: braid-opt %s --braid-buckets="mib=auto" --braid-schedule 2>/dev/null | FileCheck %s --check-prefix=SCHEDULED
// RUN: not braid-opt %s --braid-schedule --braid-buckets 2>&1 | FileCheck %s --check-prefix=TWICE
// DDP's gradient buckets: all-reduces in the order their operands are
// produced (a backward pass produces the last layer's gradient first), fused
// where the size allows and every result is read after the bucket's last
// operand; all-reduces over another axis are another bucket.

braid.mesh @world(dp = 2, tp = 2)

// The one read before the others' operands exist (%early) cannot join them.
// FUSED-LABEL: func.func @main
// FUSED: braid.all_reduce %arg2 on @world["dp"] sum : tensor<4x4xf32>
// FUSED: %[[G2:.*]] = braid.matmul %arg0, %arg1 transpose_lhs
// FUSED: %[[G3:.*]] = braid.reduce_sum
// FUSED: %[[G1:.*]] = braid.matmul %arg0, %arg0 transpose_lhs
// FUSED: %[[F2:.*]] = braid.reshape %[[G2]] : tensor<8x16xf32> -> tensor<128xf32>
// FUSED: %[[F1:.*]] = braid.reshape %[[G1]] : tensor<8x8xf32> -> tensor<64xf32>
// FUSED: %[[B:.*]] = braid.concat %[[F2]], %[[G3]], %[[F1]] dim 0 : (tensor<128xf32>, tensor<16xf32>, tensor<64xf32>) -> tensor<208xf32>
// FUSED: %[[R:.*]] = braid.all_reduce %[[B]] on @world["dp"] sum : tensor<208xf32>
// FUSED: braid.slice %[[R]] offsets [0] sizes [128]
// FUSED: braid.slice %[[R]] offsets [128] sizes [16]
// FUSED: braid.slice %[[R]] offsets [144] sizes [64]
// The tp all-reduce is its own bucket.
// FUSED: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<8x8xf32>
// FUSED-NOT: braid.all_reduce

// Without fusion (what the cost model picks for these tiny tensors) the
// all-reduces still move to production order: g2, g3, g1.
// AUTO: module attributes {braid.bucket_bytes = 0 : i64
// AUTO: braid.all_reduce %{{.*}} on @world["dp"] sum : tensor<4x4xf32>
// AUTO: braid.all_reduce %{{.*}} on @world["dp"] sum : tensor<8x16xf32>
// AUTO: braid.all_reduce %{{.*}} on @world["dp"] sum : tensor<16xf32>
// AUTO: braid.all_reduce %{{.*}} on @world["dp"] sum : tensor<8x8xf32>

// SCHEDULED: braid.async on "comm"
// TWICE: braid-buckets: @main is already scheduled

func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x16xf32>, %s: tensor<4x4xf32>) -> (tensor<8x8xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<8x8xf32>, tensor<4x4xf32>) {
  %early = braid.all_reduce %s on @world["dp"] sum : tensor<4x4xf32>
  %e = braid.mul %early, %early : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  // "Backward": gradients produced last layer first.
  %g2 = braid.matmul %x, %y transpose_lhs : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %g3 = braid.reduce_sum %y dims [0] : tensor<4x16xf32> -> tensor<16xf32>
  %g1 = braid.matmul %x, %x transpose_lhs : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %t = braid.matmul %x, %x transpose_lhs : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  // "Update": the all-reduces in parameter order.
  %r1 = braid.all_reduce %g1 on @world["dp"] sum : tensor<8x8xf32>
  %r2 = braid.all_reduce %g2 on @world["dp"] sum : tensor<8x16xf32>
  %r3 = braid.all_reduce %g3 on @world["dp"] sum : tensor<16xf32>
  %rt = braid.all_reduce %t on @world["tp"] sum : tensor<8x8xf32>
  return %r1, %r2, %r3, %rt, %e : tensor<8x8xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<8x8xf32>, tensor<4x4xf32>
}

// The op right after a bucket's last operand is one of its all-reduces
// (the bucket is built before it, then its members are erased).
// FUSED-LABEL: func.func @adjacent
// FUSED: %[[B:.*]] = braid.concat
// FUSED: braid.all_reduce %[[B]] on @world["dp"] sum : tensor<2xf32>
// FUSED-NOT: braid.all_reduce
func.func @adjacent(%x: tensor<4xf32>) -> (tensor<f32>, tensor<f32>) {
  %a = braid.reduce_sum %x dims [0] : tensor<4xf32> -> tensor<f32>
  %b = braid.reduce_max %x dims [0] : tensor<4xf32> -> tensor<f32>
  %rb = braid.all_reduce %b on @world["dp"] sum : tensor<f32>
  %ra = braid.all_reduce %a on @world["dp"] sum : tensor<f32>
  return %ra, %rb : tensor<f32>, tensor<f32>
}

// Reduce-scatters (ZeRO's gradients) are not fused but move to where their
// operand is produced, in backward order.
// AUTO-LABEL: func.func @scatter
// AUTO: %[[G2:.*]] = braid.mul %arg1, %arg1
// AUTO-NEXT: braid.reduce_scatter %[[G2]]
// AUTO: %[[G1:.*]] = braid.mul %arg0, %arg0
// AUTO-NEXT: braid.reduce_scatter %[[G1]]
func.func @scatter(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %g2 = braid.mul %b, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %g1 = braid.mul %a, %a : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %s1 = braid.reduce_scatter %g1 on @world["dp"] sum dim 0 : tensor<8xf32> -> tensor<4xf32>
  %s2 = braid.reduce_scatter %g2 on @world["dp"] sum dim 0 : tensor<8xf32> -> tensor<4xf32>
  return %s1, %s2 : tensor<4xf32>, tensor<4xf32>
}
