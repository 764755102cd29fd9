// braidc's --parallel and --overlap: each bad item gives one clear error;
// domino-both and seq-at spell braid-domino{split=both} and
// braid-seq-pipeline{split-points=...}.
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tq=2 -o %t.mlir --progress=false 2>&1 | FileCheck %s --check-prefix=PARALLEL
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tp=2,tp=2 -o %t.mlir --progress=false 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tp=2 --overlap bogus -o %t.mlir --progress=false 2>&1 | FileCheck %s --check-prefix=ITEM
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tp=2 --overlap domino=-1 -o %t.mlir --progress=false 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tp=2 --overlap seq-at=2:x -o %t.mlir --progress=false 2>&1 | FileCheck %s --check-prefix=POINTS
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tp=2 --overlap balance -o %t.mlir --progress=false 2>&1 | FileCheck %s --check-prefix=BALANCE
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tp=2 --overlap domino-both=2 --force-overlap -o %t.both.mlir --progress=false
// RUN: FileCheck %s --check-prefix=BOTH < %t.both.mlir
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tp=2 --overlap seq-at=16 --force-overlap -o %t.seq.mlir --progress=false
// RUN: FileCheck %s --check-prefix=SEQ < %t.seq.mlir

// PARALLEL: error: --parallel 'tq=2': 'tq=2' is not one of tp=N, dp=N, ep=N, cp=N, sp, sp=N (each at most once)
// TWICE: error: --parallel 'tp=2,tp=2': 'tp=2' is not one of
// ITEM: error: --overlap 'bogus': 'bogus' is not one of domino[=K], domino-columns[=K], domino-both[=K], seq[=K], seq-at=P[:P...], comet[=K], balance, ring, attention-2d[=RxC], buckets[=MiB], schedule, auto (K, MiB: a count or auto)
// COUNT: error: --overlap 'domino=-1': 'domino=-1' needs a chunk count >= 0 or auto
// POINTS: error: --overlap 'seq-at=2:x': 'seq-at=2:x' needs split points P:P:... (positions >= 1)
// BALANCE: error: balance reorders the sequence for context parallelism and needs cp=N with N >= 2

// Two row chunks, each with its row-parallel output in two column chunks:
// four all-reduces of a quarter each, issued asynchronously.
// BOTH-COUNT-4: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<2x32xf32>
// BOTH-NOT: braid.all_reduce

// The MLP's dimension 1 (its 64 features) split at 16: chunks of 16 and 48.
// SEQ-DAG: tensor<4x16xf32>
// SEQ-DAG: tensor<4x48xf32>
