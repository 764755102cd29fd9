// RUN: braid-opt %s --braid-partition --braid-ring-attention | FileCheck %s --check-prefix=RING
// RUN: braid-opt %s --braid-partition --braid-attention-2d=grid=2x2 | FileCheck %s --check-prefix=GRID
// RUN: braid-opt %s --braid-partition --braid-attention-2d | FileCheck %s --check-prefix=AUTO
// RUN: not braid-opt %s --braid-partition --braid-attention-2d=grid=3x2 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not braid-opt %s --braid-partition --braid-attention-2d="grid=2x2 axis=tp" 2>&1 | FileCheck %s --check-prefix=AXIS

// Causal and non-causal attention over a sequence split on 4 ranks (the
// arguments are annotated, as braid-partition's cp preset would split them).

// Ring: this rank's block, then 3 shifts of K and V (shared by both
// attentions) and of the causal attention's key positions; 4 partial
// attentions each, one merge each; no gather of K/V.
// RING-NOT: braid.all_gather %{{.*}} dim 2 : tensor<1x2x4x8xf32> -> tensor<1x2x16x8xf32>
// RING: braid.compare ge
// RING: braid.attention_partial {{.*}} mask
// RING-COUNT-3: braid.collective_permute %{{.*}} on @world["cp"] shift 1 : tensor<1x2x4x8xf32>
// RING: braid.attention_merge {{.*}} -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
// RING: braid.attention_merge {{.*}} -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)

// 2x2 grid: the axis becomes cp_r x cp_c; queries gathered along the row,
// K/V shifted once along the column, partials exchanged along the row.
// GRID: braid.mesh @world(cp_r = 2, cp_c = 2)
// GRID: braid.all_gather %{{.*}} on @world["cp_c"] dim 2 : tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
// GRID: braid.attention_partial {{.*}} : (tensor<1x2x8x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<8x4xi1>)
// GRID: braid.collective_permute %{{.*}} on @world["cp_r"] shift 1 : tensor<1x2x4x8xf32>
// GRID: braid.all_to_all %{{.*}} on @world["cp_c"] split 2 concat 2 : tensor<1x2x2x4x8xf32> -> tensor<1x2x2x4x8xf32>
// GRID: braid.attention_merge {{.*}} -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>)
// GRID: braid.all_gather %{{.*}} on @world["cp_r", "cp_c"] dim 2 : tensor<1x2x4x8xf32> -> tensor<1x2x16x8xf32>

// The cost model picks a grid (recorded on the module).
// AUTO: module attributes {braid.attention_2d_grid = "{{[124]x[124]}}", braid.explain = [{candidates = [{estimate_us = {{.*}}, name = "1x4"}, {estimate_us = {{.*}}, name = "2x2"}, {estimate_us = {{.*}}, name = "4x1"}], chosen = "{{[124]x[124]}}", function = "*", hw = "dgx-a100", pass = "braid-attention-2d"}]}

// BAD: error: braid-attention-2d: a 3x2 grid does not cover the 4 ranks of axis 'cp'
// AXIS: error: braid-attention-2d: expects one braid.mesh with axis 'tp' (partition with cp=N first)
braid.mesh @world(cp = 4)
func.func @main(%q: tensor<1x2x16x8xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["cp"], []]>}, %k: tensor<1x2x16x8xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["cp"], []]>}, %v: tensor<1x2x16x8xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["cp"], []]>}) -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) {
  %c = braid.attention %q, %k, %v causal scale 0.35 : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  %n = braid.attention %q, %k, %v scale 0.35 : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  return %c, %n : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
}
