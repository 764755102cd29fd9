// Every braid pass and named pipeline of braid-opt is in mlir-opt-22 with the
// plugins, and gives the same output and diagnostics on the example IR and
// on this file (test/tools/plugin-parity.py).
// RUN: %python %braid_src_root/test/tools/plugin-parity.py braid-opt "%mlir_opt" %braid_libs %s %braid_src_root/examples/ir/gpt2_block_tp2.mlir %braid_src_root/examples/ir/mixtral_moe_ep2.mlir | FileCheck %s
// CHECK: plugin-parity: {{[0-9]+}} passes and pipelines, {{[0-9]+}} runs, 0 differ

braid.mesh @world(tp = 2)

func.func @main(%x: tensor<4x8x16xf32>, %w1: tensor<16x32xf32>,
                %w2: tensor<32x16xf32>) -> tensor<4x8x16xf32> {
  %h = braid.matmul %x, %w1 : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  %g = braid.gelu %h : tensor<4x8x32xf32>
  %y = braid.matmul %g, %w2 : (tensor<4x8x32xf32>, tensor<32x16xf32>) -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}
