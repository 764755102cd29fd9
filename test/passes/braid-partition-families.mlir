// RUN: braid-opt %s --braid-partition -split-input-file | FileCheck %s

// Propagation through each op family, from #braid.sharding annotations on the
// arguments of a program that declares its mesh. Each case is checked by
// reasoning about the op's dimension mapping; the model tests run the same
// rules end to end.

// Reductions: over the sharded dimension a partial sum (completed by an
// all-reduce), over another one the sharding stays.
// CHECK-LABEL: func.func @main
// CHECK: %[[X:.*]] = braid.slice %arg0 offsets [0, %{{.*}}] sizes [4, 4]
// CHECK: %[[R:.*]] = braid.reduce_sum %[[X]] dims [1] : tensor<4x4xf32> -> tensor<4xf32>
// CHECK: %[[C:.*]] = braid.reduce_sum %[[X]] dims [0] : tensor<4x4xf32> -> tensor<4xf32>
// CHECK: %[[AR:.*]] = braid.all_reduce %[[R]] on @world["tp"] sum : tensor<4xf32>
// CHECK: %[[AG:.*]] = braid.all_gather %[[C]] on @world["tp"] dim 0 : tensor<4xf32> -> tensor<8xf32>
// CHECK: return %[[AR]], %[[AG]]
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>}) -> (tensor<4xf32>, tensor<8xf32>) {
  %r = braid.reduce_sum %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  %c = braid.reduce_sum %x dims [0] : tensor<4x8xf32> -> tensor<8xf32>
  return %r, %c : tensor<4xf32>, tensor<8xf32>
}

// -----

// Normalizations need their axis whole; rows stay split.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = braid.slice %arg1 offsets [0, %{{.*}}] sizes [4, 4]
// CHECK: %[[X:.*]] = braid.slice %arg0 offsets [%{{.*}}, 0] sizes [2, 8]
// CHECK: braid.layer_norm %[[X]], %arg2, %arg3 axis 1 {{.*}} -> tensor<2x8xf32>
// CHECK: %[[G:.*]] = braid.all_gather %[[Y]] on @world["tp"] dim 1 : tensor<4x4xf32> -> tensor<4x8xf32>
// CHECK: braid.rms_norm %[[G]], %arg2 axis 1 {{.*}} -> tensor<4x8xf32>
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [["tp"], []]>}, %y: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>}, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %n = braid.layer_norm %x, %g, %b axis 1 eps 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %m = braid.rms_norm %y, %g axis 1 eps 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %n, %m : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Reshape: a split dimension that stays major stays split; merged below
// another one it stays split too, strided (every 8 elements, this rank's 4),
// and is gathered through the view that makes the split contiguous again.
// Transpose moves the split dimension.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = braid.slice %arg1 offsets [0, %{{.*}}] sizes [4, 4]
// CHECK: %[[X:.*]] = braid.slice %arg0 offsets [%{{.*}}, 0] sizes [2, 8]
// CHECK: %[[R:.*]] = braid.reshape %[[X]] : tensor<2x8xf32> -> tensor<16xf32>
// CHECK: %[[S:.*]] = braid.reshape %[[Y]] : tensor<4x4xf32> -> tensor<16xf32>
// CHECK: %[[T:.*]] = braid.transpose %[[X]] [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32>
// CHECK: %[[RR:.*]] = braid.reshape %[[R]] : tensor<16xf32> -> tensor<4x4xf32>
// CHECK: braid.all_gather %[[T]] on @world["tp"] dim 1 : tensor<8x2xf32> -> tensor<8x4xf32>
// CHECK: %[[V:.*]] = braid.reshape %[[S]] : tensor<16xf32> -> tensor<4x4xf32>
// CHECK: %[[G:.*]] = braid.all_gather %[[V]] on @world["tp"] dim 1 : tensor<4x4xf32> -> tensor<4x8xf32>
// CHECK: braid.reshape %[[G]] : tensor<4x8xf32> -> tensor<32xf32>
// CHECK: braid.all_gather %[[RR]] on @world["tp"] dim 0 : tensor<4x4xf32> -> tensor<8x4xf32>
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [["tp"], []]>}, %y: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>}) -> (tensor<8x4xf32>, tensor<32xf32>, tensor<8x4xf32>) {
  %r = braid.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %s = braid.reshape %y : tensor<4x8xf32> -> tensor<32xf32>
  %t = braid.transpose %x [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %rr = braid.reshape %r : tensor<32xf32> -> tensor<8x4xf32>
  return %t, %s, %rr : tensor<8x4xf32>, tensor<32xf32>, tensor<8x4xf32>
}

// -----

// Attention: heads split, no communication; a gathered table (embedding)
// keeps its rows whole and passes the index split on.
// CHECK-LABEL: func.func @main
// CHECK-NOT: braid.all_gather
// CHECK: braid.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale {{.*}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
// CHECK: braid.gather %arg3[%{{.*}}] axis 0 : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
braid.mesh @world(tp = 2)
func.func @main(%q: tensor<1x4x8x16xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"], [], []]>}, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>, %table: tensor<100x16xf32>, %ids: tensor<4x8xi64> {braid.sharding = #braid.sharding<@world, [["tp"], []]>}) -> (tensor<1x4x8x16xf32>, tensor<4x8x16xf32>) {
  %o = braid.attention %q, %k, %v causal scale 0.25 : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %e = braid.gather %table[%ids] axis 0 : (tensor<100x16xf32>, tensor<4x8xi64>) -> tensor<4x8x16xf32>
  return %o, %e : tensor<1x4x8x16xf32>, tensor<4x8x16xf32>
}

// -----

// Slice, concat and split along the split dimension need it whole; along
// another dimension they keep the split.
// CHECK-LABEL: func.func @main
// CHECK: %[[X:.*]] = braid.slice %arg0 offsets [%{{.*}}, 0] sizes [2, 8]
// CHECK: braid.slice %[[X]] offsets [0, 2] sizes [2, 4] strides [1, 1] : tensor<2x8xf32> -> tensor<2x4xf32>
// CHECK: braid.concat %[[X]], %[[X]] dim 1 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
// CHECK: %[[G:.*]] = braid.all_gather %[[X]] on @world["tp"] dim 0 : tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK: braid.split %[[G]] dim 0 : tensor<4x8xf32> -> tensor<2x8xf32>, tensor<2x8xf32>
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [["tp"], []]>}) -> (tensor<4x4xf32>, tensor<4x16xf32>, tensor<2x8xf32>) {
  %s = braid.slice %x offsets [0, 2] sizes [4, 4] strides [1, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  %c = braid.concat %x, %x dim 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  %p:2 = braid.split %x dim 0 : tensor<4x8xf32> -> tensor<2x8xf32>, tensor<2x8xf32>
  return %s, %c, %p#0 : tensor<4x4xf32>, tensor<4x16xf32>, tensor<2x8xf32>
}
