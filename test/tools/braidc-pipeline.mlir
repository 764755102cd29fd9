// braidc --pipeline runs after --parallel's partitioning and before
// --overlap's passes, with or without the builtin.module(...) anchor.
//
// After partitioning: the cost report counts one rank's half of the flops.
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --pipeline='braid-cost-report{per-op=false}' -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=WHOLE
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --pipeline='builtin.module(braid-cost-report{per-op=false})' -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=HALF
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --pipeline='braid-cost-report{per-op=false}' -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=HALF
// WHOLE: remark: total: flops = 10797696,
// HALF: remark: total: flops = 5449024,
//
// Before the overlap passes: a schedule made by --pipeline reaches Domino,
// which refuses scheduled IR.
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino=2 --pipeline=braid-schedule -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: error: braid-domino: @main is already scheduled
//
// And the other way round it composes: Domino from --pipeline, then
// --overlap schedule.
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap schedule --pipeline='braid-domino{chunks=2 force=true}' -o %t.mlir --progress=false
// RUN: FileCheck %s --check-prefix=COMPOSE --implicit-check-not='sum : tensor<32x64xf32>' < %t.mlir
// (the all-reduces of 32 rows become two of 16, each in an async region).
// COMPOSE: braid.async on "comm" {
// COMPOSE-NEXT: braid.all_reduce {{.*}} : tensor<16x64xf32>
// COMPOSE-COUNT-7: braid.all_reduce {{.*}} : tensor<16x64xf32>
//
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --pipeline='builtin.module(braid-cost-report' -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=PARENS
// PARENS: unbalanced parentheses in --pipeline
