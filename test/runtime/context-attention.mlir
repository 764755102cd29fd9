// Context-parallel attention, causal and not, against the single-rank
// program: the sequence split over 2 and 4 ranks with braid-partition cp=N,
// then the all-gather of K/V (as partitioned), Ring Attention, and
// ATTENTION2D on 2x2, 1x4 and 4x1 grids, each scheduled (async collectives)
// and checked by braid-verify-collectives, run under mpirun; and ring and
// 2x2 again on the zigzag order of braid-balance-sequence.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/attention_inputs.py %t/in
// RUN: braid-opt %s --braid-to-exec -o %t/ref.exec.mlir
// RUN: braid-translate --exec-to-plan %t/ref.exec.mlir -o %t/ref.bplan
// RUN: braid-run %t/ref.bplan --inputs %t/in --outputs %t/ref
// RUN: braid-opt %s --braid-partition=cp=4 --braid-schedule --braid-verify-collectives --braid-to-exec -o %t/gather.exec.mlir
// RUN: braid-translate --exec-to-plan %t/gather.exec.mlir -o %t/gather.bplan
// RUN: %mpirun -n 4 braid-run %t/gather.bplan --inputs %t/in --expected %t/ref | FileCheck %s --check-prefix=FOUR
// RUN: braid-opt %s --braid-partition=cp=2 --braid-ring-attention --braid-schedule --braid-verify-collectives --braid-to-exec -o %t/ring2.exec.mlir
// RUN: braid-translate --exec-to-plan %t/ring2.exec.mlir -o %t/ring2.bplan
// RUN: %mpirun -n 2 braid-run %t/ring2.bplan --inputs %t/in --expected %t/ref | FileCheck %s --check-prefix=TWO
// RUN: braid-opt %s --braid-partition=cp=4 --braid-ring-attention --braid-schedule --braid-verify-collectives --braid-to-exec -o %t/ring4.exec.mlir
// RUN: braid-translate --exec-to-plan %t/ring4.exec.mlir -o %t/ring4.bplan
// RUN: %mpirun -n 4 braid-run %t/ring4.bplan --inputs %t/in --expected %t/ref | FileCheck %s --check-prefix=FOUR
// RUN: braid-opt %s --braid-partition=cp=4 --braid-attention-2d=grid=2x2 --braid-schedule --braid-verify-collectives --braid-to-exec -o %t/a2d.exec.mlir
// RUN: braid-translate --exec-to-plan %t/a2d.exec.mlir -o %t/a2d.bplan
// RUN: %mpirun -n 4 braid-run %t/a2d.bplan --inputs %t/in --expected %t/ref | FileCheck %s --check-prefix=FOUR
// RUN: braid-opt %s --braid-partition=cp=4 --braid-attention-2d=grid=1x4 --braid-schedule --braid-verify-collectives --braid-to-exec -o %t/a14.exec.mlir
// RUN: braid-translate --exec-to-plan %t/a14.exec.mlir -o %t/a14.bplan
// RUN: %mpirun -n 4 braid-run %t/a14.bplan --inputs %t/in --expected %t/ref | FileCheck %s --check-prefix=FOUR
// RUN: braid-opt %s --braid-partition=cp=4 --braid-attention-2d=grid=4x1 --braid-schedule --braid-verify-collectives --braid-to-exec -o %t/a41.exec.mlir
// RUN: braid-translate --exec-to-plan %t/a41.exec.mlir -o %t/a41.bplan
// RUN: %mpirun -n 4 braid-run %t/a41.bplan --inputs %t/in --expected %t/ref | FileCheck %s --check-prefix=FOUR
// RUN: braid-opt %s --braid-partition=cp=2 --braid-attention-2d --braid-schedule --braid-verify-collectives --braid-to-exec -o %t/a2.exec.mlir
// RUN: braid-translate --exec-to-plan %t/a2.exec.mlir -o %t/a2.bplan
// RUN: %mpirun -n 2 braid-run %t/a2.bplan --inputs %t/in --expected %t/ref | FileCheck %s --check-prefix=TWO

// RUN: braid-opt %s --braid-balance-sequence=parts=4 --braid-partition=cp=4 --braid-ring-attention --braid-schedule --braid-verify-collectives --braid-to-exec -o %t/zring.exec.mlir
// RUN: braid-translate --exec-to-plan %t/zring.exec.mlir -o %t/zring.bplan
// RUN: %mpirun -n 4 braid-run %t/zring.bplan --inputs %t/in --expected %t/ref | FileCheck %s --check-prefix=FOUR
// RUN: braid-opt %s --braid-balance-sequence=parts=4 --braid-partition=cp=4 --braid-attention-2d=grid=2x2 --braid-schedule --braid-verify-collectives --braid-to-exec -o %t/z2d.exec.mlir
// RUN: braid-translate --exec-to-plan %t/z2d.exec.mlir -o %t/z2d.bplan
// RUN: %mpirun -n 4 braid-run %t/z2d.bplan --inputs %t/in --expected %t/ref | FileCheck %s --check-prefix=FOUR

// TWO-COUNT-2: ] PASS
// TWO-NOT: FAIL
// FOUR-COUNT-4: ] PASS
// FOUR-NOT: FAIL
func.func @main(%q: tensor<1x16x2x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>) -> (tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) {
  %qt = braid.transpose %q [0, 2, 1, 3] : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %kt = braid.transpose %k [0, 2, 1, 3] : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %vt = braid.transpose %v [0, 2, 1, 3] : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %c = braid.attention %qt, %kt, %vt causal scale 0.35 : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  %n = braid.attention %qt, %kt, %vt scale 0.35 : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  %ct = braid.transpose %c [0, 2, 1, 3] : tensor<1x2x16x8xf32> -> tensor<1x16x2x8xf32>
  %nt = braid.transpose %n [0, 2, 1, 3] : tensor<1x2x16x8xf32> -> tensor<1x16x2x8xf32>
  return %ct, %nt : tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>
}
