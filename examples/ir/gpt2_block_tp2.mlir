// One GPT-2 (small) decoder block, tensor-parallel over 2 ranks, Megatron-style.
//
// This is the SPMD program of ONE rank: both ranks run it, each with its own
// shard of the weights (the weights file holds each rank's slice; the shapes
// below are this rank's). Shapes: batch 2, sequence 16, hidden 768, 12 heads
// of 64 (6 per rank), MLP 3072 (1536 per rank), f32.
//
// Sharding (Megatron-LM):
//   * attention: c_attn (QKV) is column-parallel, so each rank computes q, k, v
//     for its own 6 heads and runs attention on them with no communication;
//     c_proj is row-parallel, so each rank produces a partial sum of the full
//     [2, 16, 768] output, which one all_reduce over "tp" completes.
//   * MLP: c_fc is column-parallel (gelu is elementwise, so it applies to the
//     column shard), c_proj is row-parallel, followed by one all_reduce.
//   * layer norms, the row-parallel layers' biases and the residual stream are
//     replicated: every rank holds the full [2, 16, 768] activations.
//
// So the block issues exactly two collectives, both async on stream "comm".
//
// Check: braid-opt examples/ir/gpt2_block_tp2.mlir | braid-opt
//        braid-opt --braid-cost-report=per-op=false examples/ir/gpt2_block_tp2.mlir

braid.mesh @world(tp = 2)

// ln_1: replicated.
braid.weight @h0.ln_1.weight : tensor<768xf32>
braid.weight @h0.ln_1.bias : tensor<768xf32>
// c_attn: column-parallel. The full weight is [768, 2304] = [q | k | v], 768
// columns each; rank r holds columns [384r, 384r + 384) of EACH of q, k and v
// (heads 6r .. 6r + 5), laid side by side as [q_r | k_r | v_r]. The shard is
// therefore three strided blocks of the full matrix, not one contiguous
// slice. The bias is sharded the same way.
braid.weight @h0.attn.c_attn.weight : tensor<768x1152xf32>
braid.weight @h0.attn.c_attn.bias : tensor<1152xf32>
// c_proj: row-parallel. Rank r holds rows [384r, 384r + 384) of the full
// [768, 768] weight: the rows that multiply its own heads' outputs. The bias
// is replicated and added once, after the reduction.
braid.weight @h0.attn.c_proj.weight : tensor<384x768xf32>
braid.weight @h0.attn.c_proj.bias : tensor<768xf32>
// ln_2: replicated.
braid.weight @h0.ln_2.weight : tensor<768xf32>
braid.weight @h0.ln_2.bias : tensor<768xf32>
// mlp.c_fc: column-parallel, columns [1536r, 1536r + 1536) of [768, 3072];
// the bias is sharded the same way.
braid.weight @h0.mlp.c_fc.weight : tensor<768x1536xf32>
braid.weight @h0.mlp.c_fc.bias : tensor<1536xf32>
// mlp.c_proj: row-parallel, rows [1536r, 1536r + 1536) of [3072, 768]; the
// bias is replicated and added after the reduction.
braid.weight @h0.mlp.c_proj.weight : tensor<1536x768xf32>
braid.weight @h0.mlp.c_proj.bias : tensor<768xf32>

func.func @gpt2_block(%x: tensor<2x16x768xf32>) -> tensor<2x16x768xf32> {
  //===--------------------------------------------------------------------===//
  // Attention
  //===--------------------------------------------------------------------===//
  %ln1_g = braid.get_weight @h0.ln_1.weight : tensor<768xf32>
  %ln1_b = braid.get_weight @h0.ln_1.bias : tensor<768xf32>
  %ln1 = braid.layer_norm %x, %ln1_g, %ln1_b axis 2 eps 1.0e-05
      : (tensor<2x16x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x16x768xf32>

  // QKV for this rank's 6 heads (column-parallel: no communication).
  %attn_w = braid.get_weight @h0.attn.c_attn.weight : tensor<768x1152xf32>
  %attn_b = braid.get_weight @h0.attn.c_attn.bias : tensor<1152xf32>
  %qkv_mm = braid.matmul %ln1, %attn_w
      : (tensor<2x16x768xf32>, tensor<768x1152xf32>) -> tensor<2x16x1152xf32>
  %qkv = braid.add %qkv_mm, %attn_b
      : (tensor<2x16x1152xf32>, tensor<1152xf32>) -> tensor<2x16x1152xf32>
  %q, %k, %v = braid.split %qkv dim 2
      : tensor<2x16x1152xf32> -> tensor<2x16x384xf32>, tensor<2x16x384xf32>, tensor<2x16x384xf32>

  // [B, S, H*D] -> [B, S, H, D] -> [B, H, S, D].
  %q4 = braid.reshape %q : tensor<2x16x384xf32> -> tensor<2x16x6x64xf32>
  %k4 = braid.reshape %k : tensor<2x16x384xf32> -> tensor<2x16x6x64xf32>
  %v4 = braid.reshape %v : tensor<2x16x384xf32> -> tensor<2x16x6x64xf32>
  %qh = braid.transpose %q4 [0, 2, 1, 3] : tensor<2x16x6x64xf32> -> tensor<2x6x16x64xf32>
  %kh = braid.transpose %k4 [0, 2, 1, 3] : tensor<2x16x6x64xf32> -> tensor<2x6x16x64xf32>
  %vh = braid.transpose %v4 [0, 2, 1, 3] : tensor<2x16x6x64xf32> -> tensor<2x6x16x64xf32>

  // Causal self-attention over this rank's heads; scale = 1 / sqrt(64).
  %o = braid.attention %qh, %kh, %vh causal scale 0.125
      : (tensor<2x6x16x64xf32>, tensor<2x6x16x64xf32>, tensor<2x6x16x64xf32>) -> tensor<2x6x16x64xf32>

  // [B, H, S, D] -> [B, S, H, D] -> [B, S, H*D].
  %ot = braid.transpose %o [0, 2, 1, 3] : tensor<2x6x16x64xf32> -> tensor<2x16x6x64xf32>
  %o2 = braid.reshape %ot : tensor<2x16x6x64xf32> -> tensor<2x16x384xf32>

  // Row-parallel c_proj: %attn_partial is this rank's partial sum of the
  // block's attention output (its 6 heads' contribution).
  %proj_w = braid.get_weight @h0.attn.c_proj.weight : tensor<384x768xf32>
  %attn_partial = braid.matmul %o2, %proj_w
      : (tensor<2x16x384xf32>, tensor<384x768xf32>) -> tensor<2x16x768xf32>

  // Issue the reduction on the communication stream as soon as the partial
  // sum exists.
  %attn_f = braid.async on "comm" {
    %r = braid.all_reduce %attn_partial on @world["tp"] sum : tensor<2x16x768xf32>
    braid.yield %r : tensor<2x16x768xf32>
  } : !braid.future<tensor<2x16x768xf32>>

  // Overlap window 1. Everything after this point depends on the reduced
  // value, so in a one-chunk block only independent work fits here: the
  // weight reads below, and (a rewrite braid-schedule may choose) the
  // precomputation of %x + c_proj.bias. Real overlap comes from splitting:
  // braid-domino cuts the batch into chunks so that chunk i's all_reduce runs
  // while chunk i+1's c_proj matmul computes; across blocks, the next block's
  // independent work cannot start before this residual is known.
  %proj_b = braid.get_weight @h0.attn.c_proj.bias : tensor<768xf32>
  %ln2_g = braid.get_weight @h0.ln_2.weight : tensor<768xf32>
  %ln2_b = braid.get_weight @h0.ln_2.bias : tensor<768xf32>
  %fc_w = braid.get_weight @h0.mlp.c_fc.weight : tensor<768x1536xf32>
  %fc_b = braid.get_weight @h0.mlp.c_fc.bias : tensor<1536xf32>
  %mproj_w = braid.get_weight @h0.mlp.c_proj.weight : tensor<1536x768xf32>
  %mproj_b = braid.get_weight @h0.mlp.c_proj.bias : tensor<768xf32>

  // Wait only where the reduced value is first used. The replicated bias is
  // added after the reduction so that it counts once, not once per rank.
  %attn_sum = braid.await %attn_f : tensor<2x16x768xf32>
  %attn_out = braid.add %attn_sum, %proj_b
      : (tensor<2x16x768xf32>, tensor<768xf32>) -> tensor<2x16x768xf32>
  %h1 = braid.add %x, %attn_out
      : (tensor<2x16x768xf32>, tensor<2x16x768xf32>) -> tensor<2x16x768xf32>

  //===--------------------------------------------------------------------===//
  // MLP
  //===--------------------------------------------------------------------===//
  %ln2 = braid.layer_norm %h1, %ln2_g, %ln2_b axis 2 eps 1.0e-05
      : (tensor<2x16x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x16x768xf32>

  // Column-parallel c_fc and gelu on this rank's 1536 columns.
  %fc_mm = braid.matmul %ln2, %fc_w
      : (tensor<2x16x768xf32>, tensor<768x1536xf32>) -> tensor<2x16x1536xf32>
  %fc = braid.add %fc_mm, %fc_b
      : (tensor<2x16x1536xf32>, tensor<1536xf32>) -> tensor<2x16x1536xf32>
  %act = braid.gelu %fc tanh : tensor<2x16x1536xf32>

  // Row-parallel c_proj: a partial sum over this rank's 1536 rows.
  %mlp_partial = braid.matmul %act, %mproj_w
      : (tensor<2x16x1536xf32>, tensor<1536x768xf32>) -> tensor<2x16x768xf32>

  %mlp_f = braid.async on "comm" {
    %r = braid.all_reduce %mlp_partial on @world["tp"] sum : tensor<2x16x768xf32>
    braid.yield %r : tensor<2x16x768xf32>
  } : !braid.future<tensor<2x16x768xf32>>

  // Overlap window 2: nothing left in this block is independent of the
  // reduction. In a full model the next block's weight reads (and, after
  // braid-domino, the next chunk's MLP) go here; as written the await sits
  // directly before the first use.
  %mlp_sum = braid.await %mlp_f : tensor<2x16x768xf32>
  %mlp_out = braid.add %mlp_sum, %mproj_b
      : (tensor<2x16x768xf32>, tensor<768xf32>) -> tensor<2x16x768xf32>
  %y = braid.add %h1, %mlp_out
      : (tensor<2x16x768xf32>, tensor<2x16x768xf32>) -> tensor<2x16x768xf32>
  return %y : tensor<2x16x768xf32>
}
