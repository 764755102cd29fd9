// braidc's diagnostics for --parallel, --overlap and --pipeline.
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=0 2>&1 | FileCheck %s --check-prefix=PARALLEL
// PARALLEL: error: --parallel 'tp=0': 'tp=0' is not one of tp=N, dp=N, ep=N, cp=N, sp, sp=N (each at most once)
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2,tp=2 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: --parallel 'tp=2,tp=2': 'tp=2' is not one of tp=N, dp=N, ep=N, cp=N, sp, sp=N (each at most once)

// A step that is not one, a count that is neither positive nor auto, a
// count on a step that takes none, a grid that is not RxC.
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino,zigzag 2>&1 | FileCheck %s --check-prefix=STEP -DSTEP=zigzag
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino=-1 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap seq=many 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap ring=2 2>&1 | FileCheck %s --check-prefix=STEP -DSTEP=ring=2
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel cp=2 --overlap attention-2d=2 2>&1 | FileCheck %s --check-prefix=STEP -DSTEP=attention-2d=2
// COUNT: error: --overlap '{{.*}}': '{{.*}}' needs a chunk count >= 0 or auto
// STEP: error: --overlap '{{.*}}': '[[STEP]]' is not one of domino[=K], domino-columns[=K], domino-both[=K], seq[=K], seq-at=P[:P...], comet[=K], balance, ring, attention-2d[=RxC], buckets[=MiB], schedule, auto (K, MiB: a count or auto)

// balance zigzags the sequence over the cp ranks.
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --overlap balance,ring 2>&1 | FileCheck %s --check-prefix=BALANCE
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap balance 2>&1 | FileCheck %s --check-prefix=BALANCE
// BALANCE: error: balance reorders the sequence for context parallelism and needs cp=N with N >= 2

// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --pipeline='builtin.module(cse' 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: error: unbalanced parentheses in --pipeline
