// RUN: braid-opt %s --braid-domino="chunks=2 force=true" | FileCheck %s --check-prefix=ROWS
// RUN: braid-opt %s --braid-domino="split=columns chunks=2 force=true" | FileCheck %s --check-prefix=COLS
// RUN: braid-opt %s --braid-domino="split=both chunks=2 force=true" | FileCheck %s --check-prefix=BOTH
// RUN: braid-opt %s --braid-domino="chunks=2 force=true" --braid-schedule | FileCheck %s --check-prefix=SCHED
// RUN: braid-opt %s --braid-domino=chunks=auto 2>&1 | FileCheck %s --check-prefix=AUTO --implicit-check-not=error:
// RUN: braid-opt %s --braid-domino=chunks=0 2>&1 | FileCheck %s --check-prefix=AUTO --implicit-check-not=error:
// RUN: not braid-opt %s --braid-domino=chunks=-1 2>&1 | FileCheck %s --check-prefix=COUNT -DCOUNT=-1
// RUN: not braid-opt %s --braid-domino=chunks=some 2>&1 | FileCheck %s --check-prefix=COUNT -DCOUNT=some
// RUN: not braid-opt %s --braid-domino=chunks=4 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: braid-opt %s --braid-domino=chunks=2 2>&1 | FileCheck %s --check-prefix=KEEP
// RUN: braid-opt %s --braid-domino="split=columns chunks=2" -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=KEEPCOLS
// RUN: not braid-opt %s --braid-domino="split=diagonal" 2>&1 | FileCheck %s --check-prefix=SPLIT

// Two tensor-parallel residual MLP layers (one all-reduce each) on a batch
// of 3: Domino's row split gives chunks of 2 and 1 rows through both layers.
// ROWS: %[[X0:.*]] = braid.slice %arg0 offsets [0, 0, 0] sizes [2, 8, 16]
// ROWS: %[[X1:.*]] = braid.slice %arg0 offsets [2, 0, 0] sizes [1, 8, 16]
// ROWS-COUNT-2: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<{{[21]}}x8x16xf32>
// ROWS-COUNT-2: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<{{[21]}}x8x16xf32>
// ROWS: %[[Y:.*]] = braid.concat %{{.*}}, %{{.*}} dim 0 : (tensor<2x8x16xf32>, tensor<1x8x16xf32>) -> tensor<3x8x16xf32>
// ROWS: return %[[Y]]

// The column split: each row-parallel matmul computes half of its output
// columns at a time (its weight sliced by columns), each half all-reduced
// on its own, up to the next matmul, which needs the hidden dimension whole.
// The weight's column chunks are blocks the runtime cuts at load, not slices
// copied every run.
// COLS-NOT: braid.get_weight @w2 sharded
// COLS: braid.get_weight @w2 block [32, 8] at [0, 0] sharded on @world {{\[\["tp"\], \[\]\]}} : tensor<16x8xf32>
// COLS: braid.get_weight @w2 block [32, 8] at [0, 8] sharded on @world {{\[\["tp"\], \[\]\]}} : tensor<16x8xf32>
// COLS-COUNT-2: braid.all_reduce %{{.*}} : tensor<3x8x8xf32>
// COLS: braid.concat %{{.*}}, %{{.*}} dim 2 : (tensor<3x8x8xf32>, tensor<3x8x8xf32>) -> tensor<3x8x16xf32>

// Both: four all-reduces per layer (2 row chunks x 2 column chunks).
// BOTH-COUNT-4: braid.all_reduce
// BOTH: braid.concat
// BOTH-COUNT-4: braid.all_reduce
// BOTH-NOT: braid.all_reduce

// Scheduled: chunk 0's all-reduce runs while chunk 1's second matmul does,
// and chunk 1's while chunk 0's next layer starts.
// SCHED: %[[F0:.*]] = braid.async on "comm" {
// SCHED: braid.matmul {{.*}} -> tensor<1x8x16xf32>
// SCHED: %[[F1:.*]] = braid.async on "comm" {
// SCHED: braid.await %[[F0]] : tensor<2x8x16xf32>
// SCHED: braid.await %[[F1]] : tensor<1x8x16xf32>

// On a block this small kernel overheads dominate: the cost model keeps one
// chunk. The counts that do not apply (4 and 8 chunks of a batch of 3) are
// skipped without an error line each.
// AUTO: module attributes {braid.domino_chunks = 1 : i64, braid.explain = [{candidates = [{estimate_us = {{[0-9.e+]+}} : f64, name = "chunks=1"}, {estimate_us = {{[0-9.e+]+}} : f64, name = "chunks=2"}, {name = "chunks=4", rejected = "braid-domino: the batch (3) cannot be split into 4 chunks"}
// AUTO-SAME: chosen = "chunks=1", function = "main", hw = "dgx-h100", pass = "braid-domino"}]}
// AUTO-NOT: braid.concat

// COUNT: for the --chunks option: '[[COUNT]]' is not a positive count or auto
// TOOMANY: error: braid-domino: the batch (3) cannot be split into 4 chunks
// SPLIT: error: braid-domino: split must be rows, columns or both, not 'diagonal'

// Unforced, a count the cost model estimates slower than the input (this
// tiny layer: two chunks double the launches and hide 2 us) keeps the input,
// with a warning giving both estimates, and records the decision.
// KEEP: warning: braid-domino: chunks=2 is estimated slower than its input on dgx-h100 ({{[0-9.]+}} us against {{[0-9.]+}} us, {{[0-9.]+}}x); keeping the input (force=true, or braidc --force-overlap, applies it anyway)
// KEEP: {candidates = [{estimate_us = {{.*}}, name = "input"}, {estimate_us = {{.*}}, name = "chunks=2"}], chosen = "input", function = "main", hw = "dgx-h100", pass = "braid-domino"}
// KEEP-NOT: braid.slice
// KEEP-NOT: braid.concat
// KEEPCOLS: warning: braid-domino: chunks=2 split=columns is estimated slower than its input
module {
  braid.mesh @world(tp = 2)
  braid.weight @w1 : tensor<16x32xf32>
  braid.weight @w2 : tensor<32x16xf32>
  braid.weight @w3 : tensor<16x32xf32>
  braid.weight @w4 : tensor<32x16xf32>
  func.func @main(%arg0: tensor<3x8x16xf32>) -> tensor<3x8x16xf32> {
    %0 = braid.get_weight @w1 sharded on @world [[], ["tp"]] : tensor<16x16xf32>
    %1 = braid.get_weight @w2 sharded on @world [["tp"], []] : tensor<16x16xf32>
    %2 = braid.get_weight @w3 sharded on @world [[], ["tp"]] : tensor<16x16xf32>
    %3 = braid.get_weight @w4 sharded on @world [["tp"], []] : tensor<16x16xf32>
    %4 = braid.matmul %arg0, %0 : (tensor<3x8x16xf32>, tensor<16x16xf32>) -> tensor<3x8x16xf32>
    %5 = braid.gelu %4 : tensor<3x8x16xf32>
    %6 = braid.matmul %5, %1 : (tensor<3x8x16xf32>, tensor<16x16xf32>) -> tensor<3x8x16xf32>
    %7 = braid.all_reduce %6 on @world["tp"] sum : tensor<3x8x16xf32>
    %8 = braid.add %arg0, %7 : (tensor<3x8x16xf32>, tensor<3x8x16xf32>) -> tensor<3x8x16xf32>
    %9 = braid.matmul %8, %2 : (tensor<3x8x16xf32>, tensor<16x16xf32>) -> tensor<3x8x16xf32>
    %10 = braid.gelu %9 : tensor<3x8x16xf32>
    %11 = braid.matmul %10, %3 : (tensor<3x8x16xf32>, tensor<16x16xf32>) -> tensor<3x8x16xf32>
    %12 = braid.all_reduce %11 on @world["tp"] sum : tensor<3x8x16xf32>
    %13 = braid.add %8, %12 : (tensor<3x8x16xf32>, tensor<3x8x16xf32>) -> tensor<3x8x16xf32>
    return %13 : tensor<3x8x16xf32>
  }
}
