// Imported ops are located at their ONNX node (and graph); diagnostics name
// the node, with no op dump unless asked; braidc takes mlir-opt's --mlir-*
// flags.
//
// RUN: not braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=3 -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=WARN --implicit-check-not='see current operation' --implicit-check-not=':0:0'
// WARN: model.onnx: node '/lm/transformer/h.0/attn/c_attn/Gemm': warning: braid-partition: 'braid.matmul' runs whole on mesh axis 'tp' (3 ranks)
// WARN: model.onnx: node '/lm/transformer/h.0/attn/c_proj/Gemm': warning: braid-partition:
// WARN: model.onnx: node '/lm/lm_head/MatMul': warning: braid-partition:
// WARN: model.onnx: graph 'main_graph': error: braid-partition: mesh axis 'tp' (3 ranks) partitions nothing in @main
//
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --mlir-print-debuginfo -o %t.mlir --progress=false
// RUN: FileCheck %s --check-prefix=DEBUGINFO < %t.mlir
// DEBUGINFO: #[[FILE:loc[0-9]*]] = loc("{{.*}}model.onnx":0:0)
// DEBUGINFO: #[[GRAPH:loc[0-9]*]] = loc("main_graph"(#[[FILE]]))
// DEBUGINFO: braid.weight @lm.transformer.wte.weight : {{.*}} loc(#[[GRAPH]])
// DEBUGINFO: = loc("/lm/transformer/h.0/attn/c_attn/Gemm"(#[[GRAPH]]))
//
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 -o /dev/null --progress=false --mlir-timing 2>&1 | FileCheck %s --check-prefix=TIMING
// TIMING: Execution time report
// TIMING: Import ONNX
// TIMING: BraidPartition
// TIMING: Output
//
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 -o /dev/null --progress=false --mlir-print-ir-after-all 2>&1 | FileCheck %s --check-prefix=AFTER
// AFTER: IR Dump After BraidRaiseAttention (braid-raise-attention)
// AFTER: IR Dump After BraidPartition (braid-partition)
//
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap schedule -o /dev/null --progress=false --mlir-pass-statistics 2>&1 | FileCheck %s --check-prefix=STATS
// STATS: Pass statistics report
//
// RUN: braidc --help | FileCheck %s --check-prefix=HELP
// HELP-DAG: --mlir-print-debuginfo
// HELP-DAG: --mlir-print-ir-after-all
// HELP-DAG: --mlir-timing
// HELP-DAG: --mlir-pass-statistics
