// A small Mixtral-style mixture-of-experts layer, expert-parallel over 2
// ranks.
//
// This is the SPMD program of ONE rank. Each rank brings its own 32 tokens
// (hidden 64; batch and sequence already flattened) and owns 4 of the 8
// experts: rank r holds experts 4r .. 4r + 3. Each expert is a SwiGLU FFN
// (ffn 128): down(silu(gate(x)) * up(x)). Every token goes to its top 2
// experts, with the two router weights renormalized to sum to 1 (Mixtral).
// Each expert takes at most 8 (token, choice) pairs from each source rank
// (capacity 8 = 32 tokens * 2 choices / 8 experts: no slack, so a skewed
// router drops pairs; a dropped pair contributes zero).
//
// Data flow of the expert buffers (E experts, C capacity, H hidden):
//   moe_dispatch     [8, 8, 64]  all 8 experts, this rank's tokens
//   all_to_all       [4, 16, 64] this rank's 4 experts, 8 slots from rank 0
//                                 then 8 slots from rank 1
//   grouped_matmul   [4, 16, 128] -> silu * up -> [4, 16, 64]
//   all_to_all back  [8, 8, 64]  all 8 experts' outputs for this rank's tokens
//   moe_combine      [32, 64]
//
// Check: braid-opt examples/ir/mixtral_moe_ep2.mlir | braid-opt
//        braid-opt --braid-cost-report=per-op=false examples/ir/mixtral_moe_ep2.mlir

braid.mesh @world(ep = 2)

// Replicated: the norm and the router (gate) weights. The router is stored
// as a Linear weight [out = experts, in = hidden], hence transpose_rhs below.
braid.weight @l0.post_attention_layernorm.weight : tensor<64xf32>
braid.weight @l0.block_sparse_moe.gate.weight : tensor<8x64xf32>
// Expert-parallel: the experts' weights are stacked along a leading expert
// dimension and sharded along it, so each rank holds [4, ...], the slice of
// its own experts. Each is stored as a Linear weight [E, out, in], hence
// transpose_rhs on the grouped matmuls. w1 = gate, w3 = up, w2 = down.
braid.weight @l0.block_sparse_moe.experts.w1.weight : tensor<4x128x64xf32>
braid.weight @l0.block_sparse_moe.experts.w3.weight : tensor<4x128x64xf32>
braid.weight @l0.block_sparse_moe.experts.w2.weight : tensor<4x64x128xf32>

func.func @mixtral_moe(%x: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %norm_g = braid.get_weight @l0.post_attention_layernorm.weight : tensor<64xf32>
  %xn = braid.rms_norm %x, %norm_g axis 1 eps 1.0e-05
      : (tensor<32x64xf32>, tensor<64xf32>) -> tensor<32x64xf32>

  // Router: logits over the 8 experts, then the top 2 per token.
  %router_w = braid.get_weight @l0.block_sparse_moe.gate.weight : tensor<8x64xf32>
  %logits = braid.matmul %xn, %router_w transpose_rhs
      : (tensor<32x64xf32>, tensor<8x64xf32>) -> tensor<32x8xf32>
  %weights, %experts = braid.router_topk %logits k 2 normalize
      : (tensor<32x8xf32>) -> (tensor<32x2xf32>, tensor<32x2xi64>)

  // Group this rank's tokens by expert into a fixed-capacity buffer.
  %disp = braid.moe_dispatch %xn, %experts
      : (tensor<32x64xf32>, tensor<32x2xi64>) -> tensor<8x8x64xf32>

  // Dispatch: split along experts (dim 0) into 2 halves, send half j to rank
  // j, and stack what arrives along the capacity dimension (dim 1), rank 0's
  // rows first. Issued async on the communication stream.
  %disp_f = braid.async on "comm" {
    %a = braid.all_to_all %disp on @world["ep"] split 0 concat 1
        : tensor<8x8x64xf32> -> tensor<4x16x64xf32>
    braid.yield %a : tensor<4x16x64xf32>
  } : !braid.future<tensor<4x16x64xf32>>

  // Overlap window: only work independent of the arriving rows fits here; in
  // this single-chunk layer that is the expert weight reads. braid-comet
  // widens the window by splitting the exchange by source rank and by tile:
  // the rows this rank sends to itself need no network, so the expert GEMMs
  // on them can start while the other rank's rows are still in flight.
  %w_gate = braid.get_weight @l0.block_sparse_moe.experts.w1.weight : tensor<4x128x64xf32>
  %w_up = braid.get_weight @l0.block_sparse_moe.experts.w3.weight : tensor<4x128x64xf32>
  %w_down = braid.get_weight @l0.block_sparse_moe.experts.w2.weight : tensor<4x64x128xf32>
  %tokens = braid.await %disp_f : tensor<4x16x64xf32>

  // SwiGLU expert FFN on this rank's 4 experts, 16 slots each.
  %gate = braid.grouped_matmul %tokens, %w_gate transpose_rhs
      : (tensor<4x16x64xf32>, tensor<4x128x64xf32>) -> tensor<4x16x128xf32>
  %up = braid.grouped_matmul %tokens, %w_up transpose_rhs
      : (tensor<4x16x64xf32>, tensor<4x128x64xf32>) -> tensor<4x16x128xf32>
  %gate_act = braid.silu %gate : tensor<4x16x128xf32>
  %inner = braid.mul %gate_act, %up
      : (tensor<4x16x128xf32>, tensor<4x16x128xf32>) -> tensor<4x16x128xf32>
  %down = braid.grouped_matmul %inner, %w_down transpose_rhs
      : (tensor<4x16x128xf32>, tensor<4x64x128xf32>) -> tensor<4x16x64xf32>

  // Combine side: split along capacity (dim 1) by source rank, send each
  // rank back the outputs of its own tokens, and stack the arrivals along
  // the expert dimension (dim 0): rank 0's experts 0-3, then rank 1's 4-7.
  // Synchronous: everything after it depends on it (braid-comet would split
  // this side along H so that the combine of one tile overlaps the next).
  %back = braid.all_to_all %down on @world["ep"] split 1 concat 0
      : tensor<4x16x64xf32> -> tensor<8x8x64xf32>

  // Weighted sum of each token's 2 expert outputs, then the residual.
  %moe = braid.moe_combine %back, %experts, %weights
      : (tensor<8x8x64xf32>, tensor<32x2xi64>, tensor<32x2xf32>) -> tensor<32x64xf32>
  %y = braid.add %x, %moe
      : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}
