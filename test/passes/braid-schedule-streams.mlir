// braid-schedule with gathers on a stream of their own (gather-stream;
// braidc --comm-streams 2): a ZeRO-3-shaped step where the next layer's
// parameter gather is issued after this layer's gradient reduce-scatter.
//
// One stream (the default): everything on "comm", in issue order; the
// gather's await proves the reduce-scatter before it done.
// RUN: braid-opt %s --braid-schedule | FileCheck %s --check-prefix=ONE
// ONE-NOT: comm_gather
// ONE: braid.reduce_scatter
// ONE: braid.async on "comm"
// ONE-NEXT: braid.all_gather
// ONE: braid.await
// ONE-NEXT: braid.matmul

// Two streams: gathers on "comm_gather", the reduce-scatter on "comm". The
// gather no longer proves the reduce-scatter done, so the reduce-scatter is
// awaited where the gather is (before its reader), not at its own reader,
// the add at the end: its operand, the gradient, is freed as with one
// stream. The arena the remark predicts is the one braid-to-exec builds,
// and the same as with one stream.
// RUN: braid-opt %s --braid-schedule=gather-stream=comm_gather | FileCheck %s --check-prefix=TWO
// RUN: braid-opt %s --braid-schedule="gather-stream=comm_gather memory-limit=100000000" --braid-verify-collectives --braid-to-exec=report-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEM
// RUN: braid-opt %s --braid-schedule="memory-limit=100000000" --braid-to-exec=report-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEM
// TWO: %[[G0:.*]] = braid.async on "comm_gather"
// TWO-NEXT: braid.all_gather %arg1
// TWO: %[[RS:.*]] = braid.async on "comm" {
// TWO-NEXT: braid.reduce_scatter
// TWO: %[[G1:.*]] = braid.async on "comm_gather" {
// TWO-NEXT: braid.all_gather
// TWO: %[[S:.*]] = braid.await %[[RS]]
// TWO-NEXT: %[[W:.*]] = braid.await %[[G1]]
// TWO-NEXT: braid.matmul %{{.*}}, %[[W]] transpose_rhs
// TWO-NEXT: %[[R:.*]] = braid.relu
// TWO-NEXT: braid.add %[[S]], %[[R]]
// MEM: remark: braid-schedule: @main needs 23068672 bytes per rank
// MEM: remark: arena: 23068672 bytes

// Unordered collectives on the two streams share the dp group: accepted
// (the runtime gives each stream its own communicators), except for a
// backend that runs one collective at a time.
// RUN: not braid-opt %s --braid-schedule=gather-stream=comm_gather --braid-verify-collectives=serialized-collectives=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=SERIAL
// SERIAL: error: 'braid.all_gather' op on @world["dp"] (stream "comm_gather") and the 'braid.reduce_scatter' on @world["dp"] (stream "comm") may be issued in different orders on different ranks

braid.mesh @world(dp = 2)
func.func @main(%x: tensor<512x1024xf32>, %w0: tensor<512x1024xf32>) -> (tensor<512x1024xf32>, tensor<512x1024xf32>) {
  %g0 = braid.all_gather %w0 on @world["dp"] dim 0 : tensor<512x1024xf32> -> tensor<1024x1024xf32>
  %h0 = braid.matmul %x, %g0 transpose_rhs : (tensor<512x1024xf32>, tensor<1024x1024xf32>) -> tensor<512x1024xf32>
  %d0 = braid.matmul %h0, %x transpose_lhs : (tensor<512x1024xf32>, tensor<512x1024xf32>) -> tensor<1024x1024xf32>
  %s0 = braid.reduce_scatter %d0 on @world["dp"] sum dim 0 : tensor<1024x1024xf32> -> tensor<512x1024xf32>
  %w1 = braid.matmul %h0, %d0 : (tensor<512x1024xf32>, tensor<1024x1024xf32>) -> tensor<512x1024xf32>
  %g1 = braid.all_gather %w1 on @world["dp"] dim 0 : tensor<512x1024xf32> -> tensor<1024x1024xf32>
  %h1 = braid.matmul %h0, %g1 transpose_rhs : (tensor<512x1024xf32>, tensor<1024x1024xf32>) -> tensor<512x1024xf32>
  %r1 = braid.relu %h1 : tensor<512x1024xf32>
  %u0 = braid.add %s0, %r1 : (tensor<512x1024xf32>, tensor<512x1024xf32>) -> tensor<512x1024xf32>
  return %r1, %u0 : tensor<512x1024xf32>, tensor<512x1024xf32>
}
