// Debian's mlir-opt-22 loads the braid dialect and pass plugins.
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so %s | FileCheck %s --check-prefix=PARSE
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so --load-pass-plugin=%braid_libs/libBraidPassPlugin.so --pass-pipeline='builtin.module(braid-cost-report{per-op=false})' %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASS
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so %braid_src_root/examples/ir/gpt2_block_tp2.mlir | braid-opt -o /dev/null
// RUN: %mlir_opt --load-dialect-plugin=%braid_libs/libBraidDialectPlugin.so %braid_src_root/examples/ir/mixtral_moe_ep2.mlir | braid-opt -o /dev/null

braid.mesh @world(tp = 2)

// PARSE-LABEL: func @f
// PARSE: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<8x16xf32>
// PASS: remark: total: flops = 4096, bytes = 3072, flops/byte = 1.333
func.func @f(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %y = braid.matmul %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %r = braid.all_reduce %y on @world["tp"] sum : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
