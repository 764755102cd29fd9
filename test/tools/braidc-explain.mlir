// braidc --explain prints every decision an overlap pass took by its cost
// model: each candidate with its estimated makespan or why it does not
// apply, and the one chosen; rejected candidates print no error line.
//
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap auto --explain -o %t.mlir --progress=false 2>&1 | FileCheck %s --check-prefix=AUTO --implicit-check-not=error:
// AUTO: braid-overlap-auto on @main, estimated on dgx-h100:
// AUTO-NEXT: candidate makespan   vs best
// AUTO-NEXT: schedule [[T:[0-9.]+]] us 1.00x  <- chosen
// AUTO-NEXT: domino=2 {{[0-9.]+}} us {{[0-9.]+}}x
// AUTO-NEXT: domino=4 not applicable: braid-domino: the batch (2) cannot be split into 4 chunks
// AUTO-NEXT: domino=8 not applicable:
// AUTO-NEXT: domino-columns=2 {{[0-9.]+}} us
// AUTO-NEXT: domino-columns=4 {{[0-9.]+}} us
// AUTO-NEXT: seq@8 {{[0-9.]+}} us
//
// The decisions stay in the IR, and braid-overlap-report prints them too.
// RUN: FileCheck %s --check-prefix=ATTR < %t.mlir
// ATTR: module attributes {braid.explain = [{candidates = [{estimate_us = {{.*}}, name = "schedule"}
// ATTR-SAME: chosen = "schedule", function = "main", hw = "dgx-h100", pass = "braid-overlap-auto"}]
// RUN: braid-opt %t.mlir --braid-overlap-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// REPORT: remark: choices of the overlap passes:
// REPORT-NEXT: braid-overlap-auto on @main, estimated on dgx-h100:
//
// A chunk count left to the cost model.
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino=auto --explain -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=DOMINO --implicit-check-not=error:
// DOMINO: braid-domino on @main, estimated on dgx-h100:
// DOMINO: chunks=1 {{.*}}x
// DOMINO: chunks=2 {{.*}}x
// DOMINO: chunks=4 not applicable:
//
// A fixed count is weighed against the input: here the input wins, is
// kept, and a warning says so; --force-overlap applies the count anyway.
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino=2 --explain -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=FIXED
// FIXED: model.onnx: graph 'main_graph': warning: braid-domino: chunks=2 is estimated slower than its input on dgx-h100
// FIXED: braid-domino on @main, estimated on dgx-h100:
// FIXED-NEXT: candidate makespan vs best
// FIXED-NEXT: input {{[0-9.]+}} us 1.00x <- chosen
// FIXED-NEXT: chunks=2 {{[0-9.]+}} us {{[0-9.]+}}x
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino=2 --force-overlap --explain -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=FORCED
// FORCED: remark: braid-domino: chunks=2 is estimated slower than its input on dgx-h100 ({{.*}}); applied because it was forced
// FORCED: input {{[0-9.]+}} us 1.00x
// FORCED-NEXT: chunks=2 {{[0-9.]+}} us {{[0-9.]+}}x <- chosen
//
// Nothing decided by the cost model: it says so.
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap schedule --explain -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: braidc: no choice to explain: no overlap pass decided anything by its cost model
