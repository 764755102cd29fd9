// Checks the hand-written SPMD samples in examples/ir/: each parses, verifies,
// prints and parses again (a round trip), keeps its key ops, and passes the
// dimension-mapping checker on every op. This file holds no IR of its own.

// RUN: braid-opt %braid_src_root/examples/ir/gpt2_block_tp2.mlir | braid-opt | FileCheck %s --check-prefix=GPT2
// RUN: braid-opt %braid_src_root/examples/ir/gpt2_block_tp2.mlir | braid-opt | FileCheck %s --check-prefix=GPT2-ASYNC
// RUN: braid-opt %braid_src_root/examples/ir/gpt2_block_tp2.mlir --braid-print-dimension-mapping -o /dev/null
// RUN: braid-opt %braid_src_root/examples/ir/mixtral_moe_ep2.mlir | braid-opt | FileCheck %s --check-prefix=MOE
// RUN: braid-opt %braid_src_root/examples/ir/mixtral_moe_ep2.mlir --braid-print-dimension-mapping -o /dev/null

// GPT-2 block, Megatron tensor parallel over tp = 2: this rank's weight
// shards, attention on 6 of the 12 heads, and exactly two all_reduces (after
// the two row-parallel c_proj matmuls), none before the attention.
// GPT2:       braid.mesh @world(tp = 2)
// GPT2:       braid.weight @h0.attn.c_attn.weight : tensor<768x1152xf32>
// GPT2:       braid.weight @h0.attn.c_proj.weight : tensor<384x768xf32>
// GPT2:       braid.weight @h0.mlp.c_fc.weight : tensor<768x1536xf32>
// GPT2:       braid.weight @h0.mlp.c_proj.weight : tensor<1536x768xf32>
// GPT2-LABEL: func.func @gpt2_block(%{{.*}}: tensor<2x16x768xf32>) -> tensor<2x16x768xf32>
// GPT2-NOT:   braid.all_reduce
// GPT2:       braid.layer_norm
// GPT2-NOT:   braid.all_reduce
// GPT2:       braid.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 1.250000e-01 : (tensor<2x6x16x64xf32>, tensor<2x6x16x64xf32>, tensor<2x6x16x64xf32>) -> tensor<2x6x16x64xf32>
// GPT2-COUNT-2: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<2x16x768xf32>
// GPT2-NOT:   braid.all_reduce
// GPT2:       return

// The same block's stream structure: each all_reduce sits in its own async
// region on "comm", and its await comes after the async, before the bias add.
// GPT2-ASYNC-LABEL: func.func @gpt2_block
// GPT2-ASYNC:       %[[F1:.*]] = braid.async on "comm" {
// GPT2-ASYNC-NEXT:    braid.all_reduce
// GPT2-ASYNC-NEXT:    braid.yield
// GPT2-ASYNC-NEXT:  } : !braid.future<tensor<2x16x768xf32>>
// GPT2-ASYNC:       %[[R1:.*]] = braid.await %[[F1]] : tensor<2x16x768xf32>
// GPT2-ASYNC-NEXT:  braid.add %[[R1]], %{{.*}} : (tensor<2x16x768xf32>, tensor<768xf32>) -> tensor<2x16x768xf32>
// GPT2-ASYNC:       braid.gelu %{{.*}} tanh : tensor<2x16x1536xf32>
// GPT2-ASYNC:       %[[F2:.*]] = braid.async on "comm" {
// GPT2-ASYNC-NEXT:    braid.all_reduce
// GPT2-ASYNC-NEXT:    braid.yield
// GPT2-ASYNC-NEXT:  } : !braid.future<tensor<2x16x768xf32>>
// GPT2-ASYNC:       %[[R2:.*]] = braid.await %[[F2]] : tensor<2x16x768xf32>
// GPT2-ASYNC-NEXT:  braid.add %[[R2]], %{{.*}} : (tensor<2x16x768xf32>, tensor<768xf32>) -> tensor<2x16x768xf32>
// GPT2-ASYNC-NOT:   braid.async
// GPT2-ASYNC:       return

// Mixtral-style MoE layer, expert parallel over ep = 2: router, dispatch to
// [E = 8, C = 8, H], an async all_to_all to this rank's 4 experts, SwiGLU
// grouped matmuls, the all_to_all back, combine and residual.
// MOE:       braid.mesh @world(ep = 2)
// MOE:       braid.weight @l0.block_sparse_moe.experts.w1.weight : tensor<4x128x64xf32>
// MOE-LABEL: func.func @mixtral_moe(%{{.*}}: tensor<32x64xf32>) -> tensor<32x64xf32>
// MOE:       braid.rms_norm
// MOE:       %[[W:.*]], %[[E:.*]] = braid.router_topk %{{.*}} k 2 normalize : (tensor<32x8xf32>) -> (tensor<32x2xf32>, tensor<32x2xi64>)
// MOE:       braid.moe_dispatch %{{.*}}, %[[E]] : (tensor<32x64xf32>, tensor<32x2xi64>) -> tensor<8x8x64xf32>
// MOE:       %[[F:.*]] = braid.async on "comm" {
// MOE-NEXT:    braid.all_to_all %{{.*}} on @world["ep"] split 0 concat 1 : tensor<8x8x64xf32> -> tensor<4x16x64xf32>
// MOE:       braid.await %[[F]] : tensor<4x16x64xf32>
// MOE-COUNT-2: braid.grouped_matmul {{.*}} -> tensor<4x16x128xf32>
// MOE:       braid.silu
// MOE:       braid.mul
// MOE:       braid.grouped_matmul {{.*}} -> tensor<4x16x64xf32>
// MOE:       braid.all_to_all %{{.*}} on @world["ep"] split 1 concat 0 : tensor<4x16x64xf32> -> tensor<8x8x64xf32>
// MOE:       braid.moe_combine %{{.*}}, %[[E]], %[[W]] : (tensor<8x8x64xf32>, tensor<32x2xi64>, tensor<32x2xf32>) -> tensor<32x64xf32>
// MOE:       braid.add
// MOE:       return
