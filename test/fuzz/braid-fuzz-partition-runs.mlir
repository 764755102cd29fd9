// Random cases from a seed: a run that passes (MLPs and built-in norms under
// tp=2), and the minimizer on a run that fails by construction (tolerance 0 on
// one rank), which must print a reproducer that can be rerun.
// RUN: braid-fuzz-partition --seed=7 --count=30 --features=mlp,gated-mlp,norms --mesh=tp=2 --verbose | FileCheck %s --check-prefix=CASES
// RUN: rm -rf %t && mkdir -p %t
// RUN: not braid-fuzz-partition --seed=1 --count=1 --mesh=none --tolerance=0 --conditioning-factor=0 --save-dir=%t | FileCheck %s --check-prefix=MINIMIZE
// RUN: not braid-fuzz-partition --reproduce=%t/case-1.mlir --mesh=none --tolerance=0 --conditioning-factor=0 --data-seed=1 | FileCheck %s --check-prefix=AGAIN

// CASES: case 7: --mesh=tp=2 --overlap=none program: {{.*}} -> pass (2 ranks, {{[0-9]+}} collectives, {{[0-9]+}} sharded weights)
// CASES: case 36: --mesh=tp=2
// CASES: braid-fuzz-partition: 30 configurations, {{[0-9]+}} passed, {{[0-9]+}} rejected{{.*}}, 0 mismatches, 0 crashes in {{.*}} s; largest relative error passed: {{.*}} (case {{[0-9]+}})

// MINIMIZE: case 1: --mesh=none --overlap=none program: {{.*}} -> MISMATCH
// MINIMIZE: === minimized reproducer of case 1 (MISMATCH, {{[0-9]+}} trials) ===
// MINIMIZE-NEXT: // braid-fuzz-partition --reproduce={{.*}}case-1.mlir --mesh=none --overlap=none --data-seed=1
// MINIMIZE-NEXT: // braid-opt {{.*}}case-1.mlir --pass-pipeline='builtin.module(canonicalize{{.*}},braid-raise-attention,braid-raise-fused-ops{activations=true norms=true rotary=true},canonicalize{{.*}},cse,braid-to-exec{{.*}})'
// MINIMIZE-NEXT: //  output '{{.*}}': max abs error {{.*}}, relative {{.*}} (worst rank 0); the f32 reference moves {{.*}} under other roundings
// MINIMIZE: func.func @main
// MINIMIZE: braid-fuzz-partition: 1 configurations, 0 passed, 0 rejected, 1 mismatches, 0 crashes

// AGAIN: case-1.mlir: MISMATCH on 1 ranks
