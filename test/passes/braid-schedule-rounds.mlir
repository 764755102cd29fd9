// RUN: braid-opt %s --braid-schedule | FileCheck %s
// RUN: braid-opt %s --braid-schedule --braid-verify-collectives -o /dev/null
// RUN: braid-opt %s --braid-schedule --braid-to-exec | FileCheck %s --check-prefix=EXEC

// A communication round (braid.round: braid-acco's reduce-scatter, the
// update on this rank's shard, the all-gather) runs on the communication
// stream, in one async: the compute stream never waits for the
// reduce-scatter, only the reader of the gathered parameters waits for the
// round. The weight read and the constant between the round's ops move
// before the async; the matmul, which is not round work, stays on the
// compute stream and runs while the round is in flight. Its gather is not
// held back to its first reader (a run-time count skips optional
// micro-batches once the round is done).
// CHECK-LABEL: func.func @main
// CHECK: braid.get_weight @m
// CHECK-NEXT: braid.constant
// CHECK-NEXT: %[[ROUND:.*]]:2 = braid.async on "comm" {
// CHECK-NEXT: braid.reduce_scatter %arg0 {{.*}}braid.round = 1
// CHECK-NEXT: braid.mul {{.*}}braid.round = 1
// CHECK-NEXT: braid.sub {{.*}}braid.round = 1
// CHECK-NEXT: %[[G:.*]] = braid.all_gather {{.*}}braid.round = 1
// CHECK-NEXT: braid.yield %{{.*}}, %[[G]]
// CHECK: braid.matmul %arg1, %arg1
// CHECK: braid.relu
// CHECK: %[[P:.*]] = braid.await %[[ROUND]]#1
// CHECK-NEXT: braid.matmul %[[P]]
// CHECK: braid.await %[[ROUND]]#0
// CHECK-NEXT: braid.set_weight @m

// braid-to-exec: the update's elementwise ops fused on the communication
// stream, between the two collectives.
// EXEC: exec.stream "comm"
// EXEC: exec.collective "reduce_scatter"
// EXEC-NEXT: exec.kernel "elementwise"
// EXEC-NEXT: exec.collective "all_gather"
braid.mesh @world(dp = 2)
braid.weight @w zeros state : tensor<256x256xf32>
braid.weight @m zeros state : tensor<128x256xf32>
func.func @main(%g: tensor<256x256xf32>, %x: tensor<256x256xf32>) -> (tensor<256x256xf32>, tensor<256x256xf32>) {
  %w = braid.get_weight @w : tensor<256x256xf32>
  %shard = braid.reduce_scatter %g on @world["dp"] sum dim 0 {braid.round = 1 : i64} : tensor<256x256xf32> -> tensor<128x256xf32>
  %m = braid.get_weight @m : tensor<128x256xf32>
  %lr = braid.constant dense<0.1> : tensor<f32>
  %step = braid.mul %shard, %lr {braid.round = 1 : i64} : (tensor<128x256xf32>, tensor<f32>) -> tensor<128x256xf32>
  %next = braid.sub %m, %step {braid.round = 1 : i64} : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  %p = braid.all_gather %next on @world["dp"] dim 0 {braid.round = 1 : i64} : tensor<128x256xf32> -> tensor<256x256xf32>
  %y = braid.matmul %x, %x : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %r = braid.relu %y : tensor<256x256xf32>
  %z = braid.matmul %p, %r : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  braid.set_weight @m, %next : tensor<128x256xf32>
  return %z, %w : tensor<256x256xf32>, tensor<256x256xf32>
}
