// Every collective, synchronous and inside braid.async, in a hand-written
// SPMD program run as a plan on 1, 2 and 4 MPI ranks; each rank checks all
// outputs against numpy's single-rank meaning (spmd_collectives.py).
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/spmd_collectives.py 1 %t/p1
// RUN: braid-opt %t/p1/spmd.mlir --braid-to-exec -o %t/p1/exec.mlir
// RUN: braid-translate --exec-to-plan %t/p1/exec.mlir -o %t/p1/plan.bplan
// RUN: braid-run %t/p1/plan.bplan --inputs %t/p1/data --expected %t/p1/data | FileCheck %s --check-prefix=ONE
// RUN: %python %S/spmd_collectives.py 2 %t/p2
// RUN: braid-opt %t/p2/spmd.mlir --braid-to-exec -o %t/p2/exec.mlir
// RUN: braid-translate --exec-to-plan %t/p2/exec.mlir -o %t/p2/plan.bplan
// RUN: %mpirun -n 2 braid-run %t/p2/plan.bplan --inputs %t/p2/data --expected %t/p2/data | FileCheck %s --check-prefix=TWO
// RUN: %python %S/spmd_collectives.py 4 %t/p4
// RUN: braid-opt %t/p4/spmd.mlir --braid-to-exec -o %t/p4/exec.mlir
// RUN: braid-translate --exec-to-plan %t/p4/exec.mlir -o %t/p4/plan.bplan
// RUN: %mpirun -n 4 braid-run %t/p4/plan.bplan --inputs %t/p4/data --expected %t/p4/data | FileCheck %s --check-prefix=FOUR

// ONE-COUNT-8: : PASS
// ONE-NOT: FAIL
// TWO-COUNT-16: : PASS
// TWO-NOT: FAIL
// FOUR-COUNT-32: : PASS
// FOUR-NOT: FAIL
