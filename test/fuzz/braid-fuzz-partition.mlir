// braid-fuzz-partition on one program: a clean pass on 2 and 4 ranks (with
// overlap passes), the one-rank baseline, a clean rejection, and the mismatch
// path (with tolerance 0 and no allowance for the program's conditioning,
// any rounding difference between the reference interpreter and the CPU
// executor counts).
// RUN: braid-fuzz-partition --reproduce=%s --mesh=tp=2 | FileCheck %s --check-prefix=TP
// RUN: braid-fuzz-partition --reproduce=%s --mesh=dp=2,tp=2 --overlap=domino-columns=2 | FileCheck %s --check-prefix=OVERLAP
// RUN: braid-fuzz-partition --reproduce=%s --mesh=none | FileCheck %s --check-prefix=NONE
// RUN: braid-fuzz-partition --reproduce=%s --mesh=dp=3 | FileCheck %s --check-prefix=REJECT
// RUN: braid-fuzz-partition --reproduce=%s --pipeline='braid-partition{tp=2},braid-to-exec' | FileCheck %s --check-prefix=PIPELINE
// RUN: not braid-fuzz-partition --reproduce=%s --mesh=none --tolerance=0 --conditioning-factor=0 | FileCheck %s --check-prefix=EXACT

// TP: braid-fuzz-partition.mlir: pass on 2 ranks
// TP-NEXT: pipeline: canonicalize{{.*}},braid-raise-attention,braid-raise-fused-ops{activations=true norms=true rotary=true},canonicalize{{.*}},cse,braid-split-fused-projections{parts=false},braid-partition{{{.*}} tp=2 zero=0},braid-to-exec{{.*}}
// TP-NEXT: output 'y': max abs error {{.*}}, relative {{.*}} (worst rank {{[01]}})

// OVERLAP: pass on 4 ranks
// OVERLAP-NEXT: pipeline: {{.*}},braid-partition{{.*}}dp=2{{.*}}tp=2 zero=0},braid-domino{chunks=2 force=true function= hw=dgx-h100 split=columns},braid-schedule{{.*}},braid-verify-collectives{{.*}},braid-to-exec{{.*}}

// NONE: pass on 1 ranks
// NONE-NEXT: pipeline: canonicalize{{.*}},braid-raise-attention,braid-raise-fused-ops{activations=true norms=true rotary=true},canonicalize{{.*}},cse,braid-to-exec{{.*}}

// REJECT: braid-fuzz-partition.mlir: rejected
// REJECT: at braid-partition{{.*}}dp=3{{.*}}: braid-partition: dimension 0 (size 2) of argument 0 of @main does not divide over mesh axis 'dp' of size 3

// PIPELINE: pass on 2 ranks
// PIPELINE-NEXT: pipeline: braid-partition{tp=2},braid-to-exec

// EXACT: MISMATCH on 1 ranks
// EXACT: output 'y': max abs error {{.*}}, relative {{.*}} (worst rank 0); the f32 reference moves {{.*}} under other roundings
// EXACT-NEXT: worst element of 'y' [{{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}]: {{.*}} on rank 0, {{.*}} in the f32 reference, {{.*}} in double precision; allowed error 0.000e+00 (relative)

braid.weight @norm : tensor<8xf32>
braid.weight @up : tensor<8x16xf32>
braid.weight @down : tensor<16x8xf32>
func.func @main(%x: tensor<2x4x8xf32> {braid.name = "x"}) -> (tensor<2x4x8xf32> {braid.name = "y"}) {
  %g = braid.get_weight @norm : tensor<8xf32>
  %w1 = braid.get_weight @up : tensor<8x16xf32>
  %w2 = braid.get_weight @down : tensor<16x8xf32>
  %n = braid.rms_norm %x, %g axis 2 eps 1.0e-06 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %h = braid.matmul %n, %w1 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %a = braid.gelu %h : tensor<2x4x16xf32>
  %o = braid.matmul %a, %w2 : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %y = braid.add %x, %o : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
