// Diagnostics of the named pipelines' options.
// RUN: not braid-opt %s --pass-pipeline='builtin.module(braid-parallel-pipeline{tp=2 balance=true})' 2>&1 | FileCheck %s --check-prefix=BALANCE
// RUN: not braid-opt %s --braid-parallel-pipeline='cp=1 balance=true' 2>&1 | FileCheck %s --check-prefix=BALANCE
// BALANCE: error: balance reorders the sequence for context parallelism and needs cp=N with N >= 2

// RUN: not braid-opt %s --pass-pipeline='builtin.module(braid-overlap-pipeline{overlap=domino,zigzag})' 2>&1 | FileCheck %s --check-prefix=STEP -DSTEP=zigzag
// RUN: not braid-opt %s --braid-overlap-pipeline='overlap=seq=-2' 2>&1 | FileCheck %s --check-prefix=STEP -DSTEP=seq=-2
// RUN: not braid-opt %s --braid-overlap-pipeline='overlap=attention-2d=2by2' 2>&1 | FileCheck %s --check-prefix=STEP -DSTEP=attention-2d=2by2
// STEP: for the --overlap option: '[[STEP]]' is not one of domino[=K|auto], domino-columns[=K|auto], domino-both[=K|auto], seq[=K|auto], seq-at=P[:P...], comet[=K|auto], ring, attention-2d[=RxC|auto], buckets[=MiB|auto], schedule, auto

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}
