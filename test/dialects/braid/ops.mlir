// RUN: braid-opt %s | braid-opt | FileCheck %s
// RUN: braid-opt %s --mlir-print-op-generic | braid-opt | FileCheck %s
// Round-trip of every braid op through the custom and the generic form.

// CHECK: braid.mesh @world(dp = 2, tp = 4)
braid.mesh @world(dp = 2, tp = 4)
// CHECK: braid.mesh @"odd mesh"(tp = 2)
braid.mesh @"odd mesh"(tp = 2)
// CHECK: braid.weight @c_attn : tensor<64x192xf32>
braid.weight @m state : tensor<64x64xf32>
braid.weight @n zeros state : tensor<64x64xf32>
braid.weight @c_attn : tensor<64x192xf32>
// CHECK: braid.weight @"c_attn#1" state part of "c_attn" [64, 192] at [0, 64] : tensor<64x64xf32>
braid.weight @"c_attn#1" state part of "c_attn" [64, 192] at [0, 64] : tensor<64x64xf32>
// CHECK: braid.weight @h0.mlp.c_fc.weight : tensor<768x3072xf32>
braid.weight @h0.mlp.c_fc.weight : tensor<768x3072xf32>

// CHECK-LABEL: func @structure
func.func @structure(%x: tensor<8x1024xf32>) -> (tensor<8x1024xf32>, index, tensor<768x3072xf32>) {
  // CHECK: %[[R:.*]] = braid.rank @world axis "tp"
  %r = braid.rank @world axis "tp"
  // CHECK: braid.get_weight @h0.mlp.c_fc.weight : tensor<768x3072xf32>
  %w = braid.get_weight @h0.mlp.c_fc.weight : tensor<768x3072xf32>
  // CHECK: %[[F:.*]]:2 = braid.async on "comm" {
  // CHECK:   %[[A:.*]] = braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<8x1024xf32>
  // CHECK:   braid.yield %[[A]], %[[A]] : tensor<8x1024xf32>, tensor<8x1024xf32>
  // CHECK: } : !braid.future<tensor<8x1024xf32>>, !braid.future<tensor<8x1024xf32>>
  %f:2 = braid.async on "comm" {
    %a = braid.all_reduce %x on @world["tp"] sum : tensor<8x1024xf32>
    braid.yield %a, %a : tensor<8x1024xf32>, tensor<8x1024xf32>
  } : !braid.future<tensor<8x1024xf32>>, !braid.future<tensor<8x1024xf32>>
  // CHECK: braid.await %[[F]]#1 : tensor<8x1024xf32>
  %y = braid.await %f#1 : tensor<8x1024xf32>
  return %y, %r, %w : tensor<8x1024xf32>, index, tensor<768x3072xf32>
}

// Weights read whole, sharded, as a block, and as a sharded block.
// CHECK-LABEL: func @weights
func.func @weights() -> (tensor<64x192xf32>, tensor<64x48xf32>, tensor<64x64xf32>, tensor<32x16xf32>) {
  // CHECK: braid.get_weight @c_attn : tensor<64x192xf32>
  %w = braid.get_weight @c_attn : tensor<64x192xf32>
  // CHECK: braid.get_weight @c_attn sharded on @world {{\[\[}}], ["tp"]] : tensor<64x48xf32>
  %s = braid.get_weight @c_attn sharded on @world [[], ["tp"]] : tensor<64x48xf32>
  // CHECK: braid.get_weight @c_attn block [64, 64] at [0, 64] : tensor<64x64xf32>
  %b = braid.get_weight @c_attn block [64, 64] at [0, 64] : tensor<64x64xf32>
  // CHECK: braid.get_weight @c_attn block [64, 64] at [0, 128] sharded on @world {{\[\[}}"dp"], ["tp"]] : tensor<32x16xf32>
  %bs = braid.get_weight @c_attn block [64, 64] at [0, 128] sharded on @world [["dp"], ["tp"]] : tensor<32x16xf32>
  return %w, %s, %b, %bs : tensor<64x192xf32>, tensor<64x48xf32>, tensor<64x64xf32>, tensor<32x16xf32>
}

// A state weight set whole and set as this rank's shard.
// CHECK-LABEL: func @set_weights
func.func @set_weights(%w: tensor<64x64xf32>, %s: tensor<64x16xf32>) {
  // CHECK: braid.set_weight @m, %{{.*}} : tensor<64x64xf32>
  braid.set_weight @m, %w : tensor<64x64xf32>
  // CHECK: braid.set_weight @n, %{{.*}} sharded on @world {{\[\[}}], ["tp"]] : tensor<64x16xf32>
  braid.set_weight @n, %s sharded on @world [[], ["tp"]] : tensor<64x16xf32>
  return
}

// CHECK-LABEL: func @elementwise
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4x8xi64>, %m: tensor<4x8xi1>) {
  // CHECK: braid.neg %{{.*}} : tensor<4x8xi64>
  %0 = braid.neg %i : tensor<4x8xi64>
  // CHECK: braid.exp
  %1 = braid.exp %a : tensor<4x8xf32>
  // CHECK: braid.log
  %2 = braid.log %a : tensor<4x8xf32>
  // CHECK: braid.sqrt
  %3 = braid.sqrt %a : tensor<4x8xf32>
  // CHECK: braid.rsqrt
  %4 = braid.rsqrt %a : tensor<4x8xf32>
  // CHECK: braid.tanh
  %5 = braid.tanh %a : tensor<4x8xf32>
  // CHECK: braid.erf
  %6 = braid.erf %a : tensor<4x8xf32>
  // CHECK: braid.sigmoid
  %7 = braid.sigmoid %a : tensor<4x8xf32>
  // CHECK: braid.silu
  %8 = braid.silu %a : tensor<4x8xf32>
  // CHECK: braid.relu %{{.*}} : tensor<4x8xi64>
  %9 = braid.relu %i : tensor<4x8xi64>
  // CHECK: braid.gelu %{{.*}} : tensor<4x8xf32>
  %10 = braid.gelu %a : tensor<4x8xf32>
  // CHECK: braid.gelu %{{.*}} tanh : tensor<4x8xf32>
  %11 = braid.gelu %a tanh : tensor<4x8xf32>
  // CHECK: braid.add %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %12 = braid.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: braid.sub
  %13 = braid.sub %b, %a : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: braid.mul
  %14 = braid.mul %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: braid.div
  %15 = braid.div %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: braid.pow
  %16 = braid.pow %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: braid.max
  %17 = braid.max %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: braid.min
  %18 = braid.min %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: braid.compare ge, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %19 = braid.compare ge, %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: braid.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %20 = braid.select %m, %a, %b : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: braid.cast %{{.*}} : tensor<4x8xf32> -> tensor<4x8xbf16>
  %21 = braid.cast %a : tensor<4x8xf32> -> tensor<4x8xbf16>
  return
}

// CHECK-LABEL: func @contractions
func.func @contractions(%x: tensor<2x8x768xf32>, %w: tensor<768x2304xf32>, %q: tensor<2x12x8x64xf32>, %h: tensor<8x8x64xf16>, %e: tensor<8x128x64xf16>) {
  // CHECK: braid.matmul %{{.*}}, %{{.*}} : (tensor<2x8x768xf32>, tensor<768x2304xf32>) -> tensor<2x8x2304xf32>
  %0 = braid.matmul %x, %w : (tensor<2x8x768xf32>, tensor<768x2304xf32>) -> tensor<2x8x2304xf32>
  // CHECK: braid.matmul %{{.*}}, %{{.*}} transpose_rhs : (tensor<2x12x8x64xf32>, tensor<2x12x8x64xf32>) -> tensor<2x12x8x8xf32>
  %1 = braid.matmul %q, %q transpose_rhs : (tensor<2x12x8x64xf32>, tensor<2x12x8x64xf32>) -> tensor<2x12x8x8xf32>
  // CHECK: braid.matmul %{{.*}}, %{{.*}} transpose_lhs transpose_rhs : (tensor<2x12x8x64xf32>, tensor<2x12x64x8xf32>) -> tensor<2x12x64x64xf32>
  %qt = braid.transpose %q [0, 1, 3, 2] : tensor<2x12x8x64xf32> -> tensor<2x12x64x8xf32>
  %2 = braid.matmul %q, %qt transpose_lhs transpose_rhs : (tensor<2x12x8x64xf32>, tensor<2x12x64x8xf32>) -> tensor<2x12x64x64xf32>
  // CHECK: braid.grouped_matmul %{{.*}}, %{{.*}} transpose_rhs : (tensor<8x8x64xf16>, tensor<8x128x64xf16>) -> tensor<8x8x128xf16>
  %3 = braid.grouped_matmul %h, %e transpose_rhs : (tensor<8x8x64xf16>, tensor<8x128x64xf16>) -> tensor<8x8x128xf16>
  // CHECK: braid.reduce_sum %{{.*}} dims [2] keep_dims : tensor<2x8x768xf32> -> tensor<2x8x1xf32>
  %4 = braid.reduce_sum %x dims [2] keep_dims : tensor<2x8x768xf32> -> tensor<2x8x1xf32>
  // CHECK: braid.reduce_mean %{{.*}} dims [0, 2] : tensor<2x8x768xf32> -> tensor<8xf32>
  %5 = braid.reduce_mean %x dims [0, 2] : tensor<2x8x768xf32> -> tensor<8xf32>
  // CHECK: braid.reduce_max %{{.*}} dims [1] : tensor<2x8x768xf32> -> tensor<2x768xf32>
  %6 = braid.reduce_max %x dims [1] : tensor<2x8x768xf32> -> tensor<2x768xf32>
  // CHECK: braid.softmax %{{.*}} dim 3 : tensor<2x12x8x8xf32>
  %7 = braid.softmax %1 dim 3 : tensor<2x12x8x8xf32>
  return
}

// CHECK-LABEL: func @norms
func.func @norms(%x: tensor<2x8x768xf32>, %g: tensor<768xf32>, %q: tensor<1x8x8x64xbf16>, %c: tensor<8x64xbf16>) {
  // CHECK: braid.layer_norm %{{.*}}, %{{.*}}, %{{.*}} axis 2 eps 9.99999974E-6 : (tensor<2x8x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
  %0 = braid.layer_norm %x, %g, %g axis 2 eps 1.0e-05 : (tensor<2x8x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
  // CHECK: braid.layer_norm %{{.*}}, %{{.*}} axis 2 eps
  %1 = braid.layer_norm %x, %g axis 2 eps 1.0e-05 : (tensor<2x8x768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
  // CHECK: braid.rms_norm %{{.*}}, %{{.*}} axis 2 eps 9.99999997E-7 : (tensor<2x8x768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
  %2 = braid.rms_norm %x, %g axis 2 eps 1.0e-06 : (tensor<2x8x768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
  // CHECK: braid.rotary %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x8x8x64xbf16>, tensor<8x64xbf16>, tensor<8x64xbf16>) -> tensor<1x8x8x64xbf16>
  %3 = braid.rotary %q, %c, %c : (tensor<1x8x8x64xbf16>, tensor<8x64xbf16>, tensor<8x64xbf16>) -> tensor<1x8x8x64xbf16>
  // CHECK: braid.rotary %{{.*}}, %{{.*}}, %{{.*}} interleaved :
  %4 = braid.rotary %q, %c, %c interleaved : (tensor<1x8x8x64xbf16>, tensor<8x64xbf16>, tensor<8x64xbf16>) -> tensor<1x8x8x64xbf16>
  return
}

// CHECK-LABEL: func @shapes
func.func @shapes(%t: tensor<100x16xf32>, %ids: tensor<2x8xi32>, %x: tensor<2x8x768xf32>, %col: tensor<8x1xf32>, %ub: tensor<2x2x8xbf16>, %col_ids: tensor<2xi32>) {
  // CHECK: braid.gather %{{.*}}[%{{.*}}] axis 0 : (tensor<100x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  %0 = braid.gather %t[%ids] axis 0 : (tensor<100x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  // CHECK: braid.scatter_add %{{.*}}[%{{.*}}] axis 0 : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<100x16xf32>
  %sa = braid.scatter_add %0[%ids] axis 0 : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<100x16xf32>
  // CHECK: braid.scatter_add %{{.*}}[%{{.*}}] axis 1 : (tensor<2x2x8xbf16>, tensor<2xi32>) -> tensor<2x5x8xbf16>
  %sb = braid.scatter_add %ub[%col_ids] axis 1 : (tensor<2x2x8xbf16>, tensor<2xi32>) -> tensor<2x5x8xbf16>
  // CHECK: braid.reshape %{{.*}} : tensor<2x8x768xf32> -> tensor<2x8x12x64xf32>
  %1 = braid.reshape %x : tensor<2x8x768xf32> -> tensor<2x8x12x64xf32>
  // CHECK: braid.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x8x12x64xf32> -> tensor<2x12x8x64xf32>
  %2 = braid.transpose %1 [0, 2, 1, 3] : tensor<2x8x12x64xf32> -> tensor<2x12x8x64xf32>
  // CHECK: %[[R:.*]] = braid.rank @world axis "tp"
  // CHECK: braid.slice %{{.*}} offsets [0, 1, %[[R]]] sizes [2, 4, 96] strides [1, 2, 1] : tensor<2x8x768xf32> -> tensor<2x4x96xf32>
  %r = braid.rank @world axis "tp"
  %3 = braid.slice %x offsets [0, 1, %r] sizes [2, 4, 96] strides [1, 2, 1] : tensor<2x8x768xf32> -> tensor<2x4x96xf32>
  // CHECK: braid.concat %{{.*}}, %{{.*}} dim 1 : (tensor<2x8x768xf32>, tensor<2x8x768xf32>) -> tensor<2x16x768xf32>
  %4 = braid.concat %x, %x dim 1 : (tensor<2x8x768xf32>, tensor<2x8x768xf32>) -> tensor<2x16x768xf32>
  // CHECK: braid.split %{{.*}} dim 2 : tensor<2x8x768xf32> -> tensor<2x8x256xf32>, tensor<2x8x512xf32>
  %5:2 = braid.split %x dim 2 : tensor<2x8x768xf32> -> tensor<2x8x256xf32>, tensor<2x8x512xf32>
  // CHECK: braid.broadcast_to %{{.*}} : tensor<8x1xf32> -> tensor<2x8x64xf32>
  %6 = braid.broadcast_to %col : tensor<8x1xf32> -> tensor<2x8x64xf32>
  // CHECK: %[[CST:.*]] = braid.constant dense<1.250000e-01> : tensor<f32>
  %7 = braid.constant dense<0.125> : tensor<f32>
  return
}

// CHECK-LABEL: func @attention
func.func @attention(%q: tensor<2x12x8x64xf32>, %k: tensor<2x4x8x64xf32>, %m: tensor<1x1x8x8xi1>, %l: tensor<2x12x8xf32>) {
  // CHECK: braid.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 1.250000e-01 : (tensor<2x12x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>) -> tensor<2x12x8x64xf32>
  %0 = braid.attention %q, %k, %k causal scale 0.125 : (tensor<2x12x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>) -> tensor<2x12x8x64xf32>
  // CHECK: braid.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale
  %1 = braid.attention %q, %q, %q mask %m scale 0.125 : (tensor<2x12x8x64xf32>, tensor<2x12x8x64xf32>, tensor<2x12x8x64xf32>, tensor<1x1x8x8xi1>) -> tensor<2x12x8x64xf32>
  // CHECK: %[[R:.*]] = braid.rank
  // CHECK: braid.attention_partial %{{.*}}, %{{.*}}, %{{.*}} causal offset %[[R]] scale
  %r = braid.rank @world axis "dp"
  %2:2 = braid.attention_partial %q, %k, %k causal offset %r scale 0.125 : (tensor<2x12x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, index) -> (tensor<2x12x8x64xf32>, tensor<2x12x8xf32>)
  // CHECK: braid.attention_merge %{{.*}}, %{{.*}} lse %{{.*}}, %{{.*}} : (tensor<2x12x8x64xf32>, tensor<2x12x8x64xf32>, tensor<2x12x8xf32>, tensor<2x12x8xf32>) -> (tensor<2x12x8x64xf32>, tensor<2x12x8xf32>)
  %3:2 = braid.attention_merge %0, %2#0 lse %l, %2#1 : (tensor<2x12x8x64xf32>, tensor<2x12x8x64xf32>, tensor<2x12x8xf32>, tensor<2x12x8xf32>) -> (tensor<2x12x8x64xf32>, tensor<2x12x8xf32>)
  return
}

// CHECK-LABEL: func @moe
func.func @moe(%x: tensor<16x64xf32>, %logits: tensor<16x8xf32>, %y: tensor<8x8x64xf32>) {
  // CHECK: braid.router_topk %{{.*}} k 2 normalize : (tensor<16x8xf32>) -> (tensor<16x2xf32>, tensor<16x2xi64>)
  %w, %e = braid.router_topk %logits k 2 normalize : (tensor<16x8xf32>) -> (tensor<16x2xf32>, tensor<16x2xi64>)
  // CHECK: braid.router_topk %{{.*}} k 1 : (tensor<16x8xf32>) -> (tensor<16x1xf32>, tensor<16x1xi64>)
  %w1, %e1 = braid.router_topk %logits k 1 : (tensor<16x8xf32>) -> (tensor<16x1xf32>, tensor<16x1xi64>)
  // CHECK: braid.moe_dispatch %{{.*}}, %{{.*}} : (tensor<16x64xf32>, tensor<16x2xi64>) -> tensor<8x8x64xf32>
  %d = braid.moe_dispatch %x, %e : (tensor<16x64xf32>, tensor<16x2xi64>) -> tensor<8x8x64xf32>
  // CHECK: braid.moe_combine %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x8x64xf32>, tensor<16x2xi64>, tensor<16x2xf32>) -> tensor<16x64xf32>
  %c = braid.moe_combine %y, %e, %w : (tensor<8x8x64xf32>, tensor<16x2xi64>, tensor<16x2xf32>) -> tensor<16x64xf32>
  return
}

// CHECK-LABEL: func @training
func.func @training(%logits: tensor<4x16x100xf32>, %labels: tensor<4x16xi64>) {
  // CHECK: braid.cross_entropy %{{.*}}, %{{.*}} mean : (tensor<4x16x100xf32>, tensor<4x16xi64>) -> tensor<f32>
  %0 = braid.cross_entropy %logits, %labels mean : (tensor<4x16x100xf32>, tensor<4x16xi64>) -> tensor<f32>
  // CHECK: braid.cross_entropy %{{.*}}, %{{.*}} none : (tensor<4x16x100xf32>, tensor<4x16xi64>) -> tensor<4x16xf32>
  %1 = braid.cross_entropy %logits, %labels none : (tensor<4x16x100xf32>, tensor<4x16xi64>) -> tensor<4x16xf32>
  return
}

// CHECK-LABEL: func @collectives
func.func @collectives(%x: tensor<8x1024xf32>, %t: tensor<8x4x64xf32>) {
  // CHECK: braid.all_reduce %{{.*}} on @world["tp"] avg : tensor<8x1024xf32>
  %0 = braid.all_reduce %x on @world["tp"] avg : tensor<8x1024xf32>
  // CHECK: braid.all_reduce %{{.*}} on @world["dp", "tp"] max : tensor<8x1024xf32>
  %1 = braid.all_reduce %x on @world["dp", "tp"] max : tensor<8x1024xf32>
  // CHECK: braid.all_gather %{{.*}} on @world["tp"] dim 1 : tensor<8x1024xf32> -> tensor<8x4096xf32>
  %2 = braid.all_gather %x on @world["tp"] dim 1 : tensor<8x1024xf32> -> tensor<8x4096xf32>
  // CHECK: braid.reduce_scatter %{{.*}} on @world["tp"] min dim 0 : tensor<8x1024xf32> -> tensor<2x1024xf32>
  %3 = braid.reduce_scatter %x on @world["tp"] min dim 0 : tensor<8x1024xf32> -> tensor<2x1024xf32>
  // CHECK: braid.all_to_all %{{.*}} on @world["tp"] split 0 concat 1 : tensor<8x4x64xf32> -> tensor<2x16x64xf32>
  %4 = braid.all_to_all %t on @world["tp"] split 0 concat 1 : tensor<8x4x64xf32> -> tensor<2x16x64xf32>
  // CHECK: braid.collective_permute %{{.*}} on @world["tp"] shift -1 : tensor<8x1024xf32>
  %5 = braid.collective_permute %x on @world["tp"] shift -1 : tensor<8x1024xf32>
  // CHECK: braid.broadcast %{{.*}} on @world["dp"] root 1 : tensor<8x1024xf32>
  %6 = braid.broadcast %x on @world["dp"] root 1 : tensor<8x1024xf32>
  return
}
