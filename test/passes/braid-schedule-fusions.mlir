// braid-schedule keeps the fusions braid-to-exec will make in one piece: a
// matmul with its epilogue (here through a reshape that keeps the rows:
// bias add, GELU) and an elementwise tree run back to back, with no
// collective issued and no await placed between their ops, and are timed
// as the fused kernels.
// RUN: braid-opt %s --braid-schedule | FileCheck %s
// RUN: braid-opt %s --braid-schedule --braid-to-exec | FileCheck %s --check-prefix=EXEC
// RUN: braid-opt %s --braid-schedule --braid-verify-collectives -o /dev/null

// The first all-reduce is awaited before the tree that reads it (x * s +
// r: one kernel), not between the tree's mul and its add; the second is
// issued after the whole epilogue, not between the matmul and its bias.
// CHECK: %[[F:.*]] = braid.async on "comm"
// CHECK-NEXT: braid.all_reduce %arg3
// CHECK: %[[M:.*]] = braid.matmul %arg0, %arg1
// CHECK-NEXT: %[[V:.*]] = braid.reshape %[[M]]
// CHECK-NEXT: %[[B:.*]] = braid.add %[[V]], %arg2
// CHECK-NEXT: %[[G:.*]] = braid.gelu %[[B]]
// CHECK: %[[R:.*]] = braid.await %[[F]]
// CHECK-NEXT: %[[P:.*]] = braid.mul %arg4, %arg4
// CHECK-NEXT: braid.add %[[P]], %[[R]]
// EXEC-COUNT-1: exec.kernel "matmul"
// EXEC-SAME: activation = "gelu"
// EXEC: exec.kernel "elementwise"
// EXEC-SAME: ops = "mul,add"

braid.mesh @world(tp = 2)
func.func @main(%x: tensor<64x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>, %y: tensor<512x512xf32>, %z: tensor<512x512xf32>) -> (tensor<2x32x256xf32>, tensor<512x512xf32>, tensor<2x32x256xf32>) {
  %r = braid.all_reduce %y on @world["tp"] sum : tensor<512x512xf32>
  %m = braid.matmul %x, %w : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
  %v = braid.reshape %m : tensor<64x256xf32> -> tensor<2x32x256xf32>
  %a = braid.add %v, %b : (tensor<2x32x256xf32>, tensor<256xf32>) -> tensor<2x32x256xf32>
  %g = braid.gelu %a : tensor<2x32x256xf32>
  %p = braid.mul %z, %z : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %q = braid.add %p, %r : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %s = braid.all_reduce %g on @world["tp"] sum : tensor<2x32x256xf32>
  return %g, %q, %s : tensor<2x32x256xf32>, tensor<512x512xf32>, tensor<2x32x256xf32>
}
