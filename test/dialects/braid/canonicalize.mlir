// RUN: braid-opt %s -canonicalize -split-input-file | FileCheck %s

braid.mesh @world(dp = 1, tp = 2)

// A collective over an axis of size 1 is the identity and disappears.
// CHECK-LABEL: func @trivial_group
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK-NOT: braid.all_reduce
// CHECK-NOT: braid.all_gather
// CHECK-NOT: braid.reduce_scatter
// CHECK-NOT: braid.all_to_all
// CHECK-NOT: braid.collective_permute
// CHECK-NOT: braid.broadcast
// CHECK: return %[[X]]
func.func @trivial_group(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = braid.all_reduce %x on @world["dp"] sum : tensor<8x16xf32>
  %1 = braid.all_gather %0 on @world["dp"] dim 0 : tensor<8x16xf32> -> tensor<8x16xf32>
  %2 = braid.reduce_scatter %1 on @world["dp"] sum dim 1 : tensor<8x16xf32> -> tensor<8x16xf32>
  %3 = braid.all_to_all %2 on @world["dp"] split 0 concat 1 : tensor<8x16xf32> -> tensor<8x16xf32>
  %4 = braid.collective_permute %3 on @world["dp"] shift 1 : tensor<8x16xf32>
  %5 = braid.broadcast %4 on @world[] root 0 : tensor<8x16xf32>
  return %5 : tensor<8x16xf32>
}

// -----

braid.mesh @world(dp = 1, tp = 2)

// A real group keeps its collective, even when combined with a trivial axis.
// CHECK-LABEL: func @real_group
// CHECK: braid.all_reduce %{{.*}} on @world["dp", "tp"] sum
func.func @real_group(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = braid.all_reduce %x on @world["dp", "tp"] sum : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

braid.mesh @world(dp = 2, cp = 2, tp = 2)

// An all-reduce of an all-reduce over other axes, with the same reduction,
// is one all-reduce over both (axes in the mesh's order), also along a
// chain of three.
// CHECK-LABEL: func @chained_all_reduces
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK: %[[A:.*]] = braid.all_reduce %[[X]] on @world["dp", "cp"] sum
// CHECK: %[[B:.*]] = braid.all_reduce %[[X]] on @world["dp", "cp", "tp"] avg
// CHECK-NOT: braid.all_reduce
// CHECK: return %[[A]], %[[B]]
func.func @chained_all_reduces(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %0 = braid.all_reduce %x on @world["cp"] sum : tensor<8x16xf32>
  %1 = braid.all_reduce %0 on @world["dp"] sum : tensor<8x16xf32>
  %2 = braid.all_reduce %x on @world["tp"] avg : tensor<8x16xf32>
  %3 = braid.all_reduce %2 on @world["dp"] avg : tensor<8x16xf32>
  %4 = braid.all_reduce %3 on @world["cp"] avg : tensor<8x16xf32>
  return %1, %4 : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

braid.mesh @world(dp = 2, cp = 2)

// Not merged: different reductions, an overlapping axis, and an inner
// all-reduce that something else reads too.
// CHECK-LABEL: func @unmerged_all_reduces
// CHECK-COUNT-6: braid.all_reduce
// CHECK-NOT: braid.all_reduce
func.func @unmerged_all_reduces(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %0 = braid.all_reduce %x on @world["cp"] sum : tensor<8x16xf32>
  %1 = braid.all_reduce %0 on @world["dp"] max : tensor<8x16xf32>
  %2 = braid.all_reduce %x on @world["dp", "cp"] sum : tensor<8x16xf32>
  %3 = braid.all_reduce %2 on @world["dp"] sum : tensor<8x16xf32>
  %4 = braid.all_reduce %x on @world["cp"] min : tensor<8x16xf32>
  %5 = braid.all_reduce %4 on @world["dp"] min : tensor<8x16xf32>
  return %1, %3, %4, %5 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// Identity shape ops fold away.
// CHECK-LABEL: func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NOT: braid.
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @identities(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = braid.cast %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %1 = braid.reshape %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %2 = braid.transpose %x [0, 1] : tensor<2x8xf32> -> tensor<2x8xf32>
  %3 = braid.slice %x offsets [0, 0] sizes [2, 8] strides [1, 1] : tensor<2x8xf32> -> tensor<2x8xf32>
  %4 = braid.concat %x dim 0 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %5 = braid.broadcast_to %x : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// A chain of reshapes becomes one.
// CHECK-LABEL: func @reshape_chain
// CHECK: %[[R:.*]] = braid.reshape %{{.*}} : tensor<2x8x12xf32> -> tensor<16x12xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x8x12xf32>) -> tensor<16x12xf32> {
  %0 = braid.reshape %x : tensor<2x8x12xf32> -> tensor<192xf32>
  %1 = braid.reshape %0 : tensor<192xf32> -> tensor<16x12xf32>
  return %1 : tensor<16x12xf32>
}

// -----

// Reshapes and broadcasts of constants fold into constants.
// CHECK-LABEL: func @constant_folding
// CHECK-DAG: braid.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: braid.constant dense<5.000000e-01> : tensor<4x8xf32>
// CHECK-NOT: braid.reshape
// CHECK-NOT: braid.broadcast_to
func.func @constant_folding() -> (tensor<2x2xf32>, tensor<4x8xf32>) {
  %c = braid.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = braid.reshape %c : tensor<4xf32> -> tensor<2x2xf32>
  %s = braid.constant dense<0.5> : tensor<8xf32>
  %1 = braid.broadcast_to %s : tensor<8xf32> -> tensor<4x8xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<4x8xf32>
}

// -----

braid.mesh @world(tp = 2)

// Futures nobody awaits are dropped from the async; their work too.
// CHECK-LABEL: func @unused_future
// CHECK: %[[F:.*]] = braid.async on "comm" {
// CHECK-NEXT:   %[[G:.*]] = braid.all_gather
// CHECK-NEXT:   braid.yield %[[G]] : tensor<16x16xf32>
// CHECK-NEXT: } : !braid.future<tensor<16x16xf32>>
// CHECK: braid.await %[[F]] : tensor<16x16xf32>
func.func @unused_future(%x: tensor<8x16xf32>) -> tensor<16x16xf32> {
  %f:2 = braid.async on "comm" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8x16xf32>
    %g = braid.all_gather %x on @world["tp"] dim 0 : tensor<8x16xf32> -> tensor<16x16xf32>
    braid.yield %r, %g : tensor<8x16xf32>, tensor<16x16xf32>
  } : !braid.future<tensor<8x16xf32>>, !braid.future<tensor<16x16xf32>>
  %y = braid.await %f#1 : tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----

braid.mesh @world(tp = 2)

// An async whose futures are all unused disappears.
// CHECK-LABEL: func @dead_async
// CHECK-NOT: braid.async
// CHECK: return
func.func @dead_async(%x: tensor<8x16xf32>) {
  %f = braid.async on "comm" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8x16xf32>
    braid.yield %r : tensor<8x16xf32>
  } : !braid.future<tensor<8x16xf32>>
  return
}

// -----

braid.weight @c_attn : tensor<64x192xf32>

// A constant unit-stride slice of a weight read only there reads a block.
// CHECK-LABEL: func @slice_of_weight
// CHECK-NEXT: %[[K:.*]] = braid.get_weight @c_attn block [64, 64] at [0, 64] : tensor<64x64xf32>
// CHECK-NEXT: return %[[K]]
func.func @slice_of_weight() -> tensor<64x64xf32> {
  %w = braid.get_weight @c_attn : tensor<64x192xf32>
  %k = braid.slice %w offsets [0, 64] sizes [64, 64] strides [1, 1] : tensor<64x192xf32> -> tensor<64x64xf32>
  return %k : tensor<64x64xf32>
}

// -----

braid.weight @c_attn : tensor<64x192xf32>

// A slice of a block reads a block whose offsets add up.
// CHECK-LABEL: func @slice_of_block
// CHECK-NEXT: %[[K:.*]] = braid.get_weight @c_attn block [32, 16] at [8, 72] : tensor<32x16xf32>
// CHECK-NEXT: return %[[K]]
func.func @slice_of_block() -> tensor<32x16xf32> {
  %w = braid.get_weight @c_attn block [64, 64] at [0, 64] : tensor<64x64xf32>
  %k = braid.slice %w offsets [8, 8] sizes [32, 16] strides [1, 1] : tensor<64x64xf32> -> tensor<32x16xf32>
  return %k : tensor<32x16xf32>
}

// -----

braid.mesh @world(tp = 2)
braid.weight @c_attn : tensor<64x192xf32>

// Slices stay slices when the weight has other uses, is sharded, or the
// slice is strided or has a run-time offset.
// CHECK-LABEL: func @slices_that_stay
// CHECK-COUNT-4: braid.slice
// CHECK-NOT: block
func.func @slices_that_stay(%o: index) -> (tensor<64x192xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32>) {
  %w = braid.get_weight @c_attn : tensor<64x192xf32>
  %a = braid.slice %w offsets [0, 64] sizes [64, 64] strides [1, 1] : tensor<64x192xf32> -> tensor<64x64xf32>
  %s = braid.get_weight @c_attn sharded on @world [[], ["tp"]] : tensor<64x96xf32>
  %b = braid.slice %s offsets [0, 0] sizes [64, 32] strides [1, 1] : tensor<64x96xf32> -> tensor<64x32xf32>
  %w2 = braid.get_weight @c_attn : tensor<64x192xf32>
  %c = braid.slice %w2 offsets [0, 0] sizes [64, 32] strides [1, 2] : tensor<64x192xf32> -> tensor<64x32xf32>
  %w3 = braid.get_weight @c_attn : tensor<64x192xf32>
  %d = braid.slice %w3 offsets [0, %o] sizes [64, 64] strides [1, 1] : tensor<64x192xf32> -> tensor<64x64xf32>
  return %w, %a, %b, %c, %d : tensor<64x192xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32>
}
