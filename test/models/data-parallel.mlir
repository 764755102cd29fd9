// Every example model split data-parallel (each rank takes its block of the
// batch) and Mixtral expert-parallel (experts split over ranks, tokens
// exchanged with all-to-all), compiled to plans and run under mpirun on 2
// and 4 ranks; every rank's outputs must match the onnxruntime reference.
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel dp=2 -o %t.mixtral.mlir --progress=false
// RUN: FileCheck %s --check-prefix=MIXTRAL < %t.mixtral.mlir
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=4 -o %t.mixtral-ep.mlir --progress=false
// RUN: FileCheck %s --check-prefix=EP < %t.mixtral-ep.mlir
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel dp=2 --emit=plan -o %t.mlp.dp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mlp.dp2.bplan --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel dp=2 --emit=plan -o %t.gpt2.dp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.dp2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel dp=2 --emit=plan -o %t.llama.dp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.dp2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel dp=2 --emit=plan -o %t.mixtral.dp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mixtral.dp2.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=2 --emit=plan -o %t.mixtral.ep2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mixtral.ep2.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=4 --emit=plan -o %t.mixtral.ep4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mixtral.ep4.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// COMET (braid-comet: per-source pieces of both all-to-alls, scheduled):
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=2 --overlap comet --hw h800-node --emit=plan -o %t.mixtral.ep2.comet.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mixtral.ep2.comet.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=4 --overlap comet --hw h800-node --emit=plan -o %t.mixtral.ep4.comet.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mixtral.ep4.comet.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=4 --overlap comet=2 --hw h800-node --emit=plan -o %t.mixtral.ep4.comet2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mixtral.ep4.comet2.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel dp=2,ep=2 --overlap comet --hw h800-node --emit=plan -o %t.mixtral.dp2_ep2.comet.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mixtral.dp2_ep2.comet.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=FOUR

// Each rank routes its own tokens: the dispatch and combine run on half the
// tokens with half the slots (no token is ever dropped), no gather.
// MIXTRAL: braid.mesh @world(dp = 2)
// MIXTRAL: braid.slice %{{.*}} offsets [%{{.*}}, 0] sizes [1, 16] strides [1, 1] : tensor<2x16xi64> -> tensor<1x16xi64>
// MIXTRAL-NOT: braid.all_gather
// MIXTRAL: braid.router_topk {{.*}} -> (tensor<16x2xf32>, tensor<16x2xi64>)
// MIXTRAL: braid.moe_dispatch {{.*}} : (tensor<16x64xf32>, tensor<16x2xi64>) -> tensor<4x16x64xf32>
// MIXTRAL: braid.moe_combine {{.*}} : (tensor<4x16x64xf32>, tensor<16x2xi64>, tensor<16x2xf32>) -> tensor<16x64xf32>

// Expert parallel on 4 ranks: one expert per rank, an all-to-all before the
// experts and one before the combine, expert weights loaded sharded.
// EP: braid.mesh @world(ep = 4)
// EP: braid.moe_dispatch {{.*}} -> tensor<4x8x64xf32>
// EP: braid.get_weight {{.*}}w1/MatMul.stacked" sharded on @world {{\[\[}}"ep"], [], []] : tensor<1x64x128xf32>
// EP: braid.all_to_all %{{.*}} on @world["ep"] split 0 concat 1 : tensor<4x8x64xf32> -> tensor<1x32x64xf32>
// EP: braid.grouped_matmul
// EP: braid.all_to_all %{{.*}} on @world["ep"] split 1 concat 0 : tensor<1x32x64xf32> -> tensor<4x8x64xf32>
// EP: braid.moe_combine {{.*}} : (tensor<4x8x64xf32>, tensor<8x2xi64>, tensor<8x2xf32>) -> tensor<8x64xf32>

// TWO-COUNT-2: ] PASS
// TWO-NOT: FAIL
// FOUR-COUNT-4: ] PASS
// FOUR-NOT: FAIL
