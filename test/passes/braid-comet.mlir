// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=4 -o %t.ep4.mlir --progress=false
// RUN: braid-opt %t.ep4.mlir --braid-comet=combine-chunks=1 | FileCheck %s
// RUN: braid-opt %t.ep4.mlir --braid-comet=combine-chunks=1 | FileCheck %s --check-prefix=ATTR
// RUN: braid-opt %t.ep4.mlir --braid-comet=combine-chunks=auto | FileCheck %s --check-prefix=AUTO
// RUN: braid-opt %t.ep4.mlir --braid-comet=combine-chunks=2 | FileCheck %s --check-prefix=CHUNKS
// RUN: braid-opt %t.ep4.mlir --braid-comet="hw=h800-node" --braid-schedule --braid-verify-collectives --braid-to-exec | FileCheck %s --check-prefix=PLAN
// RUN: braid-opt %t.ep4.mlir --braid-comet --braid-overlap-report=hw=h800-node -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// Mixtral's MoE layers under ep=4 (one expert per rank). The dispatch
// buffer is rotated by this rank's row of an index table so that block t
// holds the experts of rank r + t; block 0 stays, blocks 1..3 go 1..3 steps
// around the ring; the three expert GEMMs run once per piece; each result
// goes back 3..1 steps and the blocks are rotated back before the combine.
// CHECK: braid.moe_dispatch {{.*}} -> tensor<4x8x64xf32>
// CHECK: %[[ROT:.*]] = braid.gather %{{.*}}[%{{.*}}] axis 0 : (tensor<4x8x64xf32>, tensor<4xi64>) -> tensor<4x8x64xf32>
// CHECK-NOT: braid.all_to_all
// CHECK: %[[P0:.*]] = braid.slice %[[ROT]] offsets [0, 0, 0] sizes [1, 8, 64]
// CHECK: braid.collective_permute %{{.*}} on @world["ep"] shift 1 : tensor<1x8x64xf32>
// CHECK: braid.collective_permute %{{.*}} on @world["ep"] shift 2 : tensor<1x8x64xf32>
// CHECK: braid.collective_permute %{{.*}} on @world["ep"] shift 3 : tensor<1x8x64xf32>
// CHECK: braid.grouped_matmul %[[P0]], %{{.*}} : (tensor<1x8x64xf32>, tensor<1x64x128xf32>) -> tensor<1x8x128xf32>
// CHECK-COUNT-3: braid.grouped_matmul %{{.*}} : (tensor<1x8x64xf32>, tensor<1x64x128xf32>) -> tensor<1x8x128xf32>
// CHECK: braid.collective_permute %{{.*}} on @world["ep"] shift 3 : tensor<1x8x64xf32>
// CHECK: braid.collective_permute %{{.*}} on @world["ep"] shift 2 : tensor<1x8x64xf32>
// CHECK: braid.collective_permute %{{.*}} on @world["ep"] shift 1 : tensor<1x8x64xf32>
// CHECK: %[[BACK:.*]] = braid.concat {{.*}} dim 0 : {{.*}} -> tensor<4x8x64xf32>
// CHECK: %[[OUT:.*]] = braid.gather %[[BACK]][%{{.*}}] axis 0
// CHECK: braid.moe_combine %[[OUT]]

// ATTR: module attributes {braid.comet_combine_chunks = 1 : i64, braid.comm_sms = {{[0-9]+}} : i64} {
// AUTO: module attributes {braid.comet_combine_chunks = 1 : i64, braid.comm_sms = {{[0-9]+}} : i64, braid.explain = [{candidates = [{estimate_us = {{.*}}, name = "combine-chunks=1"}, {estimate_us = {{.*}}, name = "combine-chunks=2"}, {estimate_us = {{.*}}, name = "combine-chunks=4"}], chosen = "combine-chunks=1", function = "*", hw = "h800-node", pass = "braid-comet"}]}

// Column chunks: each returning piece goes back in two halves.

// CHUNKS-COUNT-2: braid.collective_permute %{{.*}} on @world["ep"] shift 3 : tensor<1x8x32xf32>

// The chosen communication SM share reaches the plan.
// PLAN: exec.plan @main mesh(["ep"], [4]) arena {{[0-9]+}} events {{[0-9]+}} comm_sms {{[0-9]+}}

// The rotated dispatch pieces hide behind the GEMMs on earlier pieces.
// REPORT: remark: makespan
