// The passes that rewrite synchronous collectives refuse IR braid-schedule
// has already scheduled, with one error naming the pass and the function
// (they used to crash in the verifier: braidc --overlap schedule --emit=braid
// then braid-opt --braid-domino). They run on every function with a body
// unless `function` names one, not on @main only.
// RUN: braid-opt %s --braid-schedule | not braid-opt --braid-domino=chunks=2 2>&1 | FileCheck %s --check-prefix=DOMINO
// RUN: braid-opt %s --braid-schedule | not braid-opt --braid-seq-pipeline=chunks=2 2>&1 | FileCheck %s --check-prefix=SEQ
// RUN: braid-opt %s --braid-schedule | not braid-opt --braid-overlap-auto 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: braid-opt %s --braid-schedule | not braid-opt --braid-comet 2>&1 | FileCheck %s --check-prefix=COMET
// RUN: braid-opt %s --braid-schedule | not braid-opt --braid-ring-attention 2>&1 | FileCheck %s --check-prefix=RING
// RUN: braid-opt %s --braid-schedule | not braid-opt --braid-print-chunk-runs 2>&1 | FileCheck %s --check-prefix=RUNS
// RUN: braid-opt %s --braid-domino="chunks=2 force=true" | FileCheck %s --check-prefix=EVERY
// RUN: braid-opt %s --braid-domino="chunks=2 function=second force=true" | FileCheck %s --check-prefix=ONE
// RUN: braid-opt %s --braid-seq-pipeline="chunks=2 force=true" | FileCheck %s --check-prefix=SEQEVERY
// RUN: not braid-opt %s --braid-domino="chunks=2 function=nope" 2>&1 | FileCheck %s --check-prefix=MISSING

// DOMINO: error: braid-domino: @block is already scheduled (it holds braid.async regions, braid-schedule's output); run braid-domino before braid-schedule
// DOMINO-NOT: error:
// SEQ: error: braid-seq-pipeline: @block is already scheduled
// SEQ-NOT: error:
// AUTO: error: braid-overlap-auto: @block is already scheduled
// AUTO-NOT: error:
// COMET: error: braid-comet: @block is already scheduled
// COMET-NOT: error:
// RING: error: braid-ring-attention: @block is already scheduled
// RING-NOT: error:
// RUNS: error: braid-print-chunk-runs: @block is already scheduled

// Both functions are chunked by default (2 + 2 row chunks, one all-reduce
// each); with function=second only @second is.
// EVERY-LABEL: func.func @block
// EVERY-COUNT-2: braid.all_reduce {{.*}} : tensor<2x4x16xf32>
// EVERY-LABEL: func.func @second
// EVERY-COUNT-2: braid.all_reduce {{.*}} : tensor<2x4x16xf32>
// ONE-LABEL: func.func @block
// ONE: braid.all_reduce {{.*}} : tensor<4x4x16xf32>
// ONE-LABEL: func.func @second
// ONE-COUNT-2: braid.all_reduce {{.*}} : tensor<2x4x16xf32>
// SEQEVERY-LABEL: func.func @block
// SEQEVERY-COUNT-2: braid.all_reduce {{.*}} : tensor<4x2x16xf32>
// SEQEVERY-LABEL: func.func @second
// SEQEVERY-COUNT-2: braid.all_reduce {{.*}} : tensor<4x2x16xf32>
// MISSING: error: braid-domino: no function @nope with a body
module {
  braid.mesh @world(tp = 2)
  braid.weight @w1 : tensor<16x32xf32>
  braid.weight @w2 : tensor<32x16xf32>
  func.func @block(%arg0: tensor<4x4x16xf32>) -> tensor<4x4x16xf32> {
    %0 = braid.get_weight @w1 sharded on @world [[], ["tp"]] : tensor<16x16xf32>
    %1 = braid.get_weight @w2 sharded on @world [["tp"], []] : tensor<16x16xf32>
    %2 = braid.matmul %arg0, %0 : (tensor<4x4x16xf32>, tensor<16x16xf32>) -> tensor<4x4x16xf32>
    %3 = braid.gelu %2 : tensor<4x4x16xf32>
    %4 = braid.matmul %3, %1 : (tensor<4x4x16xf32>, tensor<16x16xf32>) -> tensor<4x4x16xf32>
    %5 = braid.all_reduce %4 on @world["tp"] sum : tensor<4x4x16xf32>
    %6 = braid.add %arg0, %5 : (tensor<4x4x16xf32>, tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
    return %6 : tensor<4x4x16xf32>
  }
  func.func @second(%arg0: tensor<4x4x16xf32>) -> tensor<4x4x16xf32> {
    %0 = braid.get_weight @w1 sharded on @world [[], ["tp"]] : tensor<16x16xf32>
    %1 = braid.get_weight @w2 sharded on @world [["tp"], []] : tensor<16x16xf32>
    %2 = braid.matmul %arg0, %0 : (tensor<4x4x16xf32>, tensor<16x16xf32>) -> tensor<4x4x16xf32>
    %3 = braid.relu %2 : tensor<4x4x16xf32>
    %4 = braid.matmul %3, %1 : (tensor<4x4x16xf32>, tensor<16x16xf32>) -> tensor<4x4x16xf32>
    %5 = braid.all_reduce %4 on @world["tp"] sum : tensor<4x4x16xf32>
    %6 = braid.add %arg0, %5 : (tensor<4x4x16xf32>, tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
    return %6 : tensor<4x4x16xf32>
  }
}
