// RUN: braid-opt %s --braid-verify-collectives -split-input-file -verify-diagnostics | FileCheck %s
// RUN: not braid-opt %s --braid-verify-collectives=serialized-collectives=true -split-input-file 2>&1 | FileCheck %s --check-prefix=SERIAL
// RUN: braid-opt %braid_src_root/examples/ir/gpt2_block_tp2.mlir --braid-verify-collectives -o /dev/null
// RUN: braid-opt %braid_src_root/examples/ir/mixtral_moe_ep2.mlir --braid-verify-collectives -o /dev/null

// Every model braidc partitions is accepted.
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel dp=2,tp=2 -o %t.llama.mlir --progress=false
// RUN: braid-opt %t.llama.mlir --braid-verify-collectives -o /dev/null
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel dp=2,tp=2 -o %t.gpt2.mlir --progress=false
// RUN: braid-opt %t.gpt2.mlir --braid-verify-collectives -o /dev/null
// RUN: braidc %braid_src_root/examples/models/gpt2_sdpa/model.onnx --parallel dp=2,tp=2 -o %t.gpt2_sdpa.mlir --progress=false
// RUN: braid-opt %t.gpt2_sdpa.mlir --braid-verify-collectives -o /dev/null
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=2,tp=2 -o %t.mixtral.mlir --progress=false
// RUN: braid-opt %t.mixtral.mlir --braid-verify-collectives -o /dev/null
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel dp=2,tp=2 -o %t.mlp.mlir --progress=false
// RUN: braid-opt %t.mlp.mlir --braid-verify-collectives -o /dev/null
// RUN: braidc %braid_src_root/examples/models/mlp_external/model.onnx --parallel dp=2,tp=2 -o %t.mlp_external.mlir --progress=false
// RUN: braid-opt %t.mlp_external.mlir --braid-verify-collectives -o /dev/null

// Synchronous collectives only: one stream, one order. The IR is unchanged.
// CHECK-LABEL: func.func @sync_only
// CHECK-COUNT-2: braid.all_reduce
braid.mesh @world(dp = 2, tp = 2)
func.func @sync_only(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
  %b = braid.all_reduce %a on @world["dp", "tp"] sum : tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// One "comm" stream interleaved with compute: asyncs on one stream run in
// program order, and the main flow's collective comes before both asyncs.
braid.mesh @world(dp = 2, tp = 2)
func.func @one_comm_stream(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
  %f1 = braid.async on "comm" {
    %r = braid.all_reduce %s on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %y = braid.add %x, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %f2 = braid.async on "comm" {
    %r = braid.all_reduce %y on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %z = braid.mul %y, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %a = braid.await %f1 : tensor<8xf32>
  %b = braid.await %f2 : tensor<8xf32>
  %c = braid.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %d = braid.add %c, %z : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %d : tensor<8xf32>
}

// -----

// Two streams, ordered by an await in the main flow before the second async.
braid.mesh @world(dp = 2, tp = 2)
func.func @streams_ordered_by_await(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f1 = braid.async on "a" {
    %r = braid.all_reduce %x on @world["dp", "tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %a = braid.await %f1 : tensor<8xf32>
  %f2 = braid.async on "b" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %b = braid.await %f2 : tensor<8xf32>
  %c = braid.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// Two streams, ordered by an await inside the second async's body.
braid.mesh @world(dp = 2, tp = 2)
func.func @streams_ordered_by_await_in_body(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f1 = braid.async on "a" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %f2 = braid.async on "b" {
    %a = braid.await %f1 : tensor<8xf32>
    %r = braid.all_reduce %a on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %b = braid.await %f2 : tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// Two streams, same group, nothing between them: the runtime gives the
// streams separate communicators (collectiveChannels), so this is accepted,
// except with serialized-collectives.
// SERIAL: error: 'braid.all_reduce' op on @world["tp"] (stream "b") and the 'braid.all_reduce' on @world["tp"] (stream "a") may be issued in different orders on different ranks: nothing orders them; put them on one stream or await one before issuing the other
// SERIAL: note: the other collective
braid.mesh @world(dp = 2, tp = 2)
func.func @two_streams_same_group(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f1 = braid.async on "a" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %f2 = braid.async on "b" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %a = braid.await %f1 : tensor<8xf32>
  %b = braid.await %f2 : tensor<8xf32>
  %c = braid.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// The main flow races the comm stream: the synchronous all_reduce sits
// between the async and its await (accepted; serialized: an error).
// SERIAL: error: 'braid.all_reduce' op on @world["tp"] (the main flow) and the 'braid.all_reduce' on @world["tp"] (stream "comm") may be issued in different orders on different ranks
// SERIAL: note: the other collective
braid.mesh @world(dp = 2, tp = 2)
func.func @main_flow_races_comm(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f = braid.async on "comm" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %s = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
  %a = braid.await %f : tensor<8xf32>
  %c = braid.add %a, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// The same with the await first: the main flow waits for the comm stream.
braid.mesh @world(dp = 2, tp = 2)
func.func @await_before_sync(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f = braid.async on "comm" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %a = braid.await %f : tensor<8xf32>
  %s = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
  %c = braid.add %a, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// A group is its set of axes longer than 1: ["tp", "dp"] is ["tp"] when dp
// has size 1.
// SERIAL: error: 'braid.all_reduce' op on @world["tp"] (the main flow) and the 'braid.all_reduce' on @world["tp", "dp"] (stream "comm") may be issued
braid.mesh @world(dp = 1, tp = 2)
func.func @size_one_axis_same_group(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f = braid.async on "comm" {
    %r = braid.all_reduce %x on @world["tp", "dp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %s = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
  %a = braid.await %f : tensor<8xf32>
  %c = braid.add %a, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// Different groups that share an axis: serialized, a conflict too.
// SERIAL: error: 'braid.all_gather' op on @world["tp"] (stream "b") and the 'braid.all_reduce' on @world["dp", "tp"] (stream "a") (both span "tp") may be issued in different orders on different ranks
braid.mesh @world(dp = 2, tp = 2)
func.func @shared_axis(%x: tensor<8x4xf32>) -> tensor<16x4xf32> {
  %f1 = braid.async on "a" {
    %r = braid.all_reduce %x on @world["dp", "tp"] sum : tensor<8x4xf32>
    braid.yield %r : tensor<8x4xf32>
  } : !braid.future<tensor<8x4xf32>>
  %f2 = braid.async on "b" {
    %g = braid.all_gather %x on @world["tp"] dim 0 : tensor<8x4xf32> -> tensor<16x4xf32>
    braid.yield %g : tensor<16x4xf32>
  } : !braid.future<tensor<16x4xf32>>
  %a = braid.await %f1 : tensor<8x4xf32>
  %b = braid.await %f2 : tensor<16x4xf32>
  return %b : tensor<16x4xf32>
}

// -----

// Disjoint axes use independent communicators: accepted, except with
// serialized-collectives.
// SERIAL: error: 'braid.all_reduce' op on @world["tp"] (stream "b") and the 'braid.all_reduce' on @world["dp"] (stream "a") (serialized-collectives: a rank runs one collective at a time) may be issued in different orders on different ranks
// SERIAL: note: the other collective
braid.mesh @world(dp = 2, tp = 2)
func.func @disjoint_axes(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f1 = braid.async on "a" {
    %r = braid.all_reduce %x on @world["dp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %f2 = braid.async on "b" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %a = braid.await %f1 : tensor<8xf32>
  %b = braid.await %f2 : tensor<8xf32>
  %c = braid.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// A group of one rank waits for nobody.
braid.mesh @world(dp = 2, tp = 1)
func.func @trivial_group(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f1 = braid.async on "a" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %f2 = braid.async on "b" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %a = braid.await %f1 : tensor<8xf32>
  %b = braid.await %f2 : tensor<8xf32>
  %c = braid.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// Nested asyncs do not run.
braid.mesh @world(tp = 2)
func.func @nested_async(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f = braid.async on "a" {
    // expected-error @+1 {{'braid.async' op is nested in an async on stream "a"; only async regions in the main flow can be run}}
    %g = braid.async on "b" {
      braid.yield %x : tensor<8xf32>
    } : !braid.future<tensor<8xf32>>
    %y = braid.await %g : tensor<8xf32>
    braid.yield %y : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %a = braid.await %f : tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

// An async cannot run on the main stream.
braid.mesh @world(tp = 2)
func.func @async_on_main_stream(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.async' op runs on stream "compute", the main stream; an async region needs another stream}}
  %f = braid.async on "compute" {
    %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
    braid.yield %r : tensor<8xf32>
  } : !braid.future<tensor<8xf32>>
  %a = braid.await %f : tensor<8xf32>
  return %a : tensor<8xf32>
}
