// braid-comet refuses an MoE layer whose expert-parallel all-to-all Domino
// has split (found by braid-fuzz-partition: ep=2,tp=2 with domino-both=2
// then comet gave wrong logits, relative error 0.4, on 4 ranks): COMET's
// pieces are in rank-rotated order, Domino's in group order. (The column
// chunks cut the slots: ep splits the batch of 2, so no rank has rows left
// for Domino's row chunks, which braid-domino now refuses.)
// RUN: not braid-opt %s --pass-pipeline='builtin.module(braid-partition{ep=2 tp=2},braid-domino{chunks=2 split=columns force=true},braid-comet{combine-chunks=1})' 2>&1 | FileCheck %s
// CHECK: error: 'braid.concat' op braid-comet: the slots of an expert-parallel all-to-all are cut or joined before the experts (Domino's chunks?); COMET cuts them by source rank itself: run it on MoE layers Domino has not split

module {
  braid.weight @embed.weight : tensor<10x4xf32>
  braid.weight @l1.reduce.up.weight : tensor<4x8xf32>
  braid.weight @l1.reduce.down.weight : tensor<8x4xf32>
  braid.weight @l2.moe.w1 : tensor<4x4x8xf32>
  braid.weight @l2.moe.w2 : tensor<4x8x4xf32>
  func.func @main(%arg0: tensor<2x13xi64> {braid.name = "input_ids"}) -> (tensor<2x13x10xf32> {braid.name = "logits"}) {
    %0 = braid.get_weight @embed.weight : tensor<10x4xf32>
    %1 = braid.gather %0[%arg0] axis 0 : (tensor<10x4xf32>, tensor<2x13xi64>) -> tensor<2x13x4xf32>
    %2 = braid.get_weight @l1.reduce.up.weight : tensor<4x8xf32>
    %3 = braid.matmul %1, %2 : (tensor<2x13x4xf32>, tensor<4x8xf32>) -> tensor<2x13x8xf32>
    %4 = braid.get_weight @l1.reduce.down.weight : tensor<8x4xf32>
    %5 = braid.matmul %3, %4 : (tensor<2x13x8xf32>, tensor<8x4xf32>) -> tensor<2x13x4xf32>
    %6 = braid.reshape %5 : tensor<2x13x4xf32> -> tensor<26x4xf32>
    %weights, %experts = braid.router_topk %6 k 1 normalize : (tensor<26x4xf32>) -> (tensor<26x1xf32>, tensor<26x1xi64>)
    %7 = braid.moe_dispatch %6, %experts : (tensor<26x4xf32>, tensor<26x1xi64>) -> tensor<4x26x4xf32>
    %8 = braid.get_weight @l2.moe.w1 : tensor<4x4x8xf32>
    %9 = braid.grouped_matmul %7, %8 : (tensor<4x26x4xf32>, tensor<4x4x8xf32>) -> tensor<4x26x8xf32>
    %10 = braid.get_weight @l2.moe.w2 : tensor<4x8x4xf32>
    %11 = braid.grouped_matmul %9, %10 : (tensor<4x26x8xf32>, tensor<4x8x4xf32>) -> tensor<4x26x4xf32>
    %12 = braid.moe_combine %11, %experts, %weights : (tensor<4x26x4xf32>, tensor<26x1xi64>, tensor<26x1xf32>) -> tensor<26x4xf32>
    %13 = braid.reshape %12 : tensor<26x4xf32> -> tensor<2x13x4xf32>
    %14 = braid.add %13, %5 : (tensor<2x13x4xf32>, tensor<2x13x4xf32>) -> tensor<2x13x4xf32>
    %15 = braid.matmul %14, %0 transpose_rhs : (tensor<2x13x4xf32>, tensor<10x4xf32>) -> tensor<2x13x10xf32>
    return %15 : tensor<2x13x10xf32>
  }
}
