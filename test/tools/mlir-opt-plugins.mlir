// Debian's mlir-opt-22 loads the braid dialect and pass plugins.
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so %s | FileCheck %s --check-prefix=PARSE
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so --load-pass-plugin=%braid_libs/libBraidPassPlugin.so --pass-pipeline='builtin.module(braid-cost-report{per-op=false})' %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASS
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so %braid_src_root/examples/ir/gpt2_block_tp2.mlir | braid-opt -o /dev/null
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so %braid_src_root/examples/ir/mixtral_moe_ep2.mlir | braid-opt -o /dev/null
// The named pipelines run through --pass-pipeline= exactly what braidc runs.
// RUN: braid-translate --import-onnx --raw %braid_src_root/examples/models/llama/model.onnx -o %t.llama.raw.mlir --progress=false
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap domino-columns=2 --force-overlap -o %t.llama.braidc.mlir --progress=false
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so --load-pass-plugin=%braid_libs/libBraidPassPlugin.so --pass-pipeline='builtin.module(braid-import-pipeline,braid-parallel-pipeline{tp=2},braid-overlap-pipeline{overlap=domino-columns=2 force=true})' %t.llama.raw.mlir -o %t.llama.plugin.mlir
// RUN: diff %t.llama.braidc.mlir %t.llama.plugin.mlir
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap schedule --emit=exec -o %t.llama.exec.braidc.mlir --progress=false
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so --load-pass-plugin=%braid_libs/libBraidPassPlugin.so --pass-pipeline='builtin.module(braid-import-pipeline,braid-parallel-pipeline{tp=2},braid-overlap-pipeline{overlap=schedule},braid-lower-pipeline)' %t.llama.raw.mlir -o %t.llama.exec.plugin.mlir
// RUN: diff %t.llama.exec.braidc.mlir %t.llama.exec.plugin.mlir
// RUN: FileCheck %s --check-prefix=PIPELINES < %t.llama.exec.plugin.mlir
// PIPELINES: exec.collective

braid.mesh @world(tp = 2)

// PARSE-LABEL: func @f
// PARSE: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<8x16xf32>
// PASS: remark: total: flops = 4096, bytes = 3072, flops/byte = 1.333
func.func @f(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %y = braid.matmul %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %r = braid.all_reduce %y on @world["tp"] sum : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
