// Asked for an overlap technique where it has nothing to work on (COMET
// without an expert-parallel MoE layer, a ring without a sequence-split
// attention), the pass says so instead of silently doing nothing, and
// leaves the program as it was.
// RUN: braid-opt %s --braid-comet -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=COMET
// RUN: braid-opt %s --braid-ring-attention -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=RING
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap comet -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=BRAIDC
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap ring -o /dev/null --progress=false 2>&1 | FileCheck %s --check-prefix=BRAIDCRING

// COMET: warning: braid-comet: no expert-parallel MoE layer (an all-to-all dispatch to the experts and back over an ep axis; partition with ep=N first); nothing changed
// COMET: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<2x4x16xf32>
// COMET-NOT: braid.collective_permute
// RING: warning: braid-ring-attention: no attention reads keys and values all-gathered along a sequence axis (partition with cp=N first); nothing changed
// RING: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<2x4x16xf32>
// BRAIDC: warning: braid-comet: no expert-parallel MoE layer
// BRAIDCRING: warning: braid-ring-attention: no attention reads keys and values all-gathered

module {
  braid.mesh @world(tp = 2)
  braid.weight @w1 : tensor<16x32xf32>
  braid.weight @w2 : tensor<32x16xf32>
  func.func @main(%arg0: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
    %0 = braid.get_weight @w1 sharded on @world [[], ["tp"]] : tensor<16x16xf32>
    %1 = braid.get_weight @w2 sharded on @world [["tp"], []] : tensor<16x16xf32>
    %2 = braid.matmul %arg0, %0 : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
    %3 = braid.gelu %2 : tensor<2x4x16xf32>
    %4 = braid.matmul %3, %1 : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
    %5 = braid.all_reduce %4 on @world["tp"] sum : tensor<2x4x16xf32>
    return %5 : tensor<2x4x16xf32>
  }
}
