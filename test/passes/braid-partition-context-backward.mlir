// RUN: braid-opt %s --braid-partition=cp=2 | FileCheck %s --check-prefix=CP
// RUN: braid-opt %s --braid-partition="dp=2 cp=2" | FileCheck %s --check-prefix=DPCP
// RUN: braid-opt %s --braid-partition=cp=2 --braid-verify-collectives -o /dev/null

// Context parallelism on a backward pass: queries are split along the
// sequence and the keys all-gathered, so the keys' gradient (a contraction
// over this rank's queries) is a partial sum of the whole sequence. It is
// reduce-scattered along the sequence, the transpose of the gather, and the
// weight gradient is contracted over this rank's tokens only; an
// all-reduce would leave every rank the whole sequence's gradient to
// compute on. The weight gradient itself is all-reduced whole, and under
// dp and cp once over both axes rather than once per axis.

// CP: braid.mesh @world(cp = 2)
// CP: %[[WK:.*]] = braid.get_weight @wk
// CP: %[[K:.*]] = braid.matmul %{{.*}}, %[[WK]] : (tensor<2x4x32xf32>, tensor<32x32xf32>) -> tensor<2x4x32xf32>
// CP-NEXT: braid.all_gather %[[K]] on @world["cp"] dim 1 : tensor<2x4x32xf32> -> tensor<2x8x32xf32>
// CP: %[[DK:.*]] = braid.matmul %{{.*}} transpose_lhs : (tensor<2x4x8xf32>, tensor<2x4x32xf32>) -> tensor<2x8x32xf32>
// CP-NOT: braid.all_reduce
// CP: braid.reduce_scatter %{{.*}} on @world["cp"] sum dim 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
// CP: %[[DW:.*]] = braid.matmul %{{.*}} transpose_lhs : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>
// CP: braid.all_reduce %[[DW]] on @world["cp"] sum : tensor<32x32xf32>
// CP-NOT: braid.all_reduce

// The flattened tokens of this rank's half of the batch ([1 * 8, 32]).
// DPCP: braid.mesh @world(dp = 2, cp = 2)
// DPCP: braid.all_gather %{{.*}} on @world["cp"] dim 1 : tensor<1x4x32xf32> -> tensor<1x8x32xf32>
// DPCP: braid.reduce_scatter %{{.*}} on @world["cp"] sum dim 0 : tensor<8x32xf32> -> tensor<4x32xf32>
// DPCP: braid.all_reduce %{{.*}} on @world["dp", "cp"] sum : tensor<32x32xf32>
// DPCP-NOT: braid.all_reduce
braid.weight @wq : tensor<32x32xf32>
braid.weight @wk : tensor<32x32xf32>
func.func @main(%x: tensor<2x8x32xf32>) -> tensor<32x32xf32> {
  %wq = braid.get_weight @wq : tensor<32x32xf32>
  %wk = braid.get_weight @wk : tensor<32x32xf32>
  %q = braid.matmul %x, %wq : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %k = braid.matmul %x, %wk : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
  %s = braid.matmul %q, %k transpose_rhs : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x8xf32>
  %dk = braid.matmul %s, %q transpose_lhs : (tensor<2x8x8xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %x2 = braid.reshape %x : tensor<2x8x32xf32> -> tensor<16x32xf32>
  %dk2 = braid.reshape %dk : tensor<2x8x32xf32> -> tensor<16x32xf32>
  %dwk = braid.matmul %x2, %dk2 transpose_lhs : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<32x32xf32>
  return %dwk : tensor<32x32xf32>
}
