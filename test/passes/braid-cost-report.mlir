// RUN: braid-opt %s --braid-cost-report -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s
// RUN: braid-opt %s --braid-cost-report=per-op=false -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOTAL

braid.mesh @world(tp = 2)

// Matmul: 2*8*16*16 = 4096 flops, (128 + 256 + 128) * 4 B; ops inside an
// async region count toward the function.
// CHECK: remark: flops = 4096, bytes = 2048
// CHECK: remark: flops = 0, bytes = 1024
// CHECK: remark: flops = 128, bytes = 1536
// CHECK: remark: total: flops = 4224, bytes = 4608, flops/byte = 0.917
// TOTAL-NOT: remark: flops =
// TOTAL: remark: total: flops = 4224, bytes = 4608, flops/byte = 0.917
func.func @block(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %y = braid.matmul %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %f = braid.async on "comm" {
    %r = braid.all_reduce %y on @world["tp"] sum : tensor<8x16xf32>
    braid.yield %r : tensor<8x16xf32>
  } : !braid.future<tensor<8x16xf32>>
  %z = braid.await %f : tensor<8x16xf32>
  %o = braid.add %z, %y : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}
