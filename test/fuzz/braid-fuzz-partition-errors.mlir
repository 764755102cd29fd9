// Bad options and bad input files: one clear message each, exit status 1.
// RUN: not braid-fuzz-partition --features=mlp,bogus 2>&1 | FileCheck %s --check-prefix=FEATURES
// RUN: not braid-fuzz-partition --count=1 --mesh=tq=2 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not braid-fuzz-partition --count=1 --mesh=tp=2 --overlap=bogus 2>&1 | FileCheck %s --check-prefix=OVERLAP
// RUN: not braid-fuzz-partition --reproduce=%t.missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not braid-fuzz-partition --reproduce=%s --mesh=tp=2 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not braid-fuzz-partition --reproduce=%S/braid-fuzz-partition.mlir --pipeline=no-such-pass 2>&1 | FileCheck %s --check-prefix=PIPELINE

// FEATURES: error: --features 'mlp,bogus': expected a comma-separated list of embedding, attention, mlp, gated-mlp, moe, norms, decomposed-norms, reductions, softmax, elementwise, shape-ops, lm-head, all
// MESH: error: --parallel 'tq=2': 'tq=2' is not one of tp=N, dp=N, ep=N, cp=N, sp, sp=N (each at most once)
// OVERLAP: error: --overlap 'bogus': 'bogus' is not one of
// MISSING: error: cannot read '{{.*}}missing.mlir': No such file or directory
// PARSE: braid-fuzz-partition-errors.mlir:[[@LINE+4]]:8: error: custom op 'braid.no_such_op' is unknown
// PIPELINE: error: --pipeline 'no-such-pass': {{.*}}'no-such-pass' does not refer to a registered pass or pass pipeline

func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = braid.no_such_op %x : tensor<2xf32>
  return %y : tensor<2xf32>
}
