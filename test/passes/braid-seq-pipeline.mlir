// RUN: braid-opt %s --braid-print-chunk-runs="dim=1 chunks=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RUNS
// RUN: braid-opt %s --braid-seq-pipeline="split-points=5 force=true" | FileCheck %s
// RUN: braid-opt %s --braid-seq-pipeline="split-points=5 force=true" --braid-schedule | FileCheck %s --check-prefix=SCHED
// RUN: not braid-opt %s --braid-seq-pipeline=split-points=9 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not braid-opt %s --braid-seq-pipeline=chunks=40 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: braid-opt %s --braid-seq-pipeline=chunks=auto | FileCheck %s --check-prefix=AUTO
// RUN: braid-opt %s --braid-seq-pipeline=chunks=0 | FileCheck %s --check-prefix=AUTO
// RUN: braid-opt %s --braid-seq-pipeline="chunks=auto force=true" | FileCheck %s --check-prefix=FORCEAUTO
// RUN: braid-opt %s --braid-seq-pipeline=split-points=5 2>&1 | FileCheck %s --check-prefix=KEEP

// A tensor-parallel attention block chunked along the sequence (ISO).

// The dependency analysis: every op is in one run; attention's queries are
// chunked and its keys and values are causal prefixes (chunks 0..i).
// RUNS: remark: run 0, factor f1 in chunks [4, 4]: #0 chunk(dim 1) #1 whole
// RUNS: remark: run 0, factor f3 in chunks [4, 4]: #0 chunk(dim 2) #1 prefix(dim 2) #2 prefix(dim 2)
// RUNS: remark: run 0, factor f1 in chunks [4, 4]: #0 chunk(dim 1) #1 chunk(dim 1)

// Uneven chunks [0, 5) and [5, 8): chunk 1's attention reads the keys of
// both chunks, with its causal diagonal at position 5.
// CHECK-LABEL: func.func @main
// CHECK: %[[X0:.*]] = braid.slice %arg0 offsets [0, 0, 0] sizes [1, 5, 16]
// CHECK: %[[X1:.*]] = braid.slice %arg0 offsets [0, 5, 0] sizes [1, 3, 16]
// CHECK: %[[T0:.*]] = braid.transpose {{.*}} -> tensor<1x2x5x8xf32>
// CHECK: %[[T1:.*]] = braid.transpose {{.*}} -> tensor<1x2x3x8xf32>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: braid.attention %[[T0]], %[[T0]], %[[T0]] causal offset %[[C0]] {{.*}} -> tensor<1x2x5x8xf32>
// CHECK: %[[K:.*]] = braid.concat %[[T0]], %[[T1]] dim 2 : (tensor<1x2x5x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x8x8xf32>
// CHECK: %[[C5:.*]] = arith.constant 5 : index
// CHECK: braid.attention %[[T1]], %[[K]], %[[K]] causal offset %[[C5]] {{.*}} -> tensor<1x2x3x8xf32>
// CHECK: braid.all_reduce {{.*}} : tensor<1x5x16xf32>
// CHECK: braid.all_reduce {{.*}} : tensor<1x3x16xf32>
// CHECK: %[[Y:.*]] = braid.concat %{{.*}}, %{{.*}} dim 1 : (tensor<1x5x16xf32>, tensor<1x3x16xf32>) -> tensor<1x8x16xf32>
// CHECK: return %[[Y]]

// Scheduled: chunk 0's all-reduce is issued before chunk 1's output
// projection and awaited after it.
// SCHED: %[[F0:.*]] = braid.async on "comm" {
// SCHED-NEXT: braid.all_reduce {{.*}} : tensor<1x5x16xf32>
// SCHED: braid.matmul {{.*}} -> tensor<1x3x16xf32>
// SCHED: %[[F1:.*]] = braid.async on "comm" {
// SCHED: braid.await %[[F0]] : tensor<1x5x16xf32>
// SCHED: braid.await %[[F1]] : tensor<1x3x16xf32>

// BAD: error: braid-seq-pipeline: split points must increase strictly inside (0, 8), got [9]
// The cost model's split point, recorded on the module. The input itself
// competes: on this tiny layer two chunks cost more than they hide, so the
// input is kept (split point 0); forced, the best real split is taken.
// AUTO: module attributes {braid.explain = [{candidates = [{estimate_us = [[IN:[0-9.e+]+]] : f64, name = "input"}, {estimate_us = {{.*}}, name = "split at 1"}{{.*}}, {estimate_us = {{.*}}, name = "split at 7"}], chosen = "input", function = "main", hw = "dgx-h100", pass = "braid-seq-pipeline"}], braid.seq_split_point = 0 : i64}
// AUTO: func.func @main({{.*}}) -> tensor<1x8x16xf32> attributes {braid.unoverlapped = {hw = "dgx-h100", makespan_us = [[IN]] : f64}}
// AUTO-NOT: braid.slice
// FORCEAUTO: module attributes {braid.explain = [{candidates = [{estimate_us = {{.*}}, name = "split at 1"}{{.*}}], chosen = "split at [[SPLIT:[0-9]+]]", function = "main", hw = "dgx-h100", pass = "braid-seq-pipeline"}], braid.seq_split_point = [[SPLIT]] : i64}
// FORCEAUTO: braid.slice %arg0 offsets [0, 0, 0] sizes [1, [[SPLIT]], 16]

// Fixed split points the cost model estimates slower than the input: the
// input is kept, and a warning says so with both estimates.
// KEEP: warning: braid-seq-pipeline: chunks of 5+3 is estimated slower than its input on dgx-h100 ({{[0-9.]+}} us against {{[0-9.]+}} us, {{[0-9.]+}}x); keeping the input (force=true, or braidc --force-overlap, applies it anyway)
// KEEP: braid.explain = [{candidates = [{estimate_us = {{.*}}, name = "input"}, {estimate_us = {{.*}}, name = "chunks of 5+3"}], chosen = "input"
// KEEP-NOT: braid.slice
// MANY: error: braid-seq-pipeline: the sequence (8) cannot be split into 40 chunks
braid.mesh @world(tp = 2)
braid.weight @wq : tensor<16x16xf32>
braid.weight @wo : tensor<16x16xf32>
func.func @main(%x: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  %wq = braid.get_weight @wq : tensor<16x16xf32>
  %wo = braid.get_weight @wo : tensor<16x16xf32>
  %q = braid.matmul %x, %wq : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
  %r = braid.reshape %q : tensor<1x8x16xf32> -> tensor<1x8x2x8xf32>
  %t = braid.transpose %r [0, 2, 1, 3] : tensor<1x8x2x8xf32> -> tensor<1x2x8x8xf32>
  %a = braid.attention %t, %t, %t causal scale 0.35 : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %b = braid.transpose %a [0, 2, 1, 3] : tensor<1x2x8x8xf32> -> tensor<1x8x2x8xf32>
  %c = braid.reshape %b : tensor<1x8x2x8xf32> -> tensor<1x8x16xf32>
  %o = braid.matmul %c, %wo : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
  %s = braid.all_reduce %o on @world["tp"] sum : tensor<1x8x16xf32>
  %y = braid.add %x, %s : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  return %y : tensor<1x8x16xf32>
}
