// Every example model split data-parallel (each rank takes half of the batch),
// compiled to a plan and run under mpirun on 2 ranks; every rank's outputs
// must match the onnxruntime reference of the unpartitioned model. Mixtral
// guards the MoE combine: its slots depend on every earlier token, so the
// tokens are gathered before it.
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel dp=2 -o %t.mixtral.mlir --progress=false
// RUN: FileCheck %s --check-prefix=MIXTRAL < %t.mixtral.mlir
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel dp=2 --emit=plan -o %t.mlp.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mlp.bplan --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel dp=2 --emit=plan -o %t.gpt2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel dp=2 --emit=plan -o %t.llama.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel dp=2 --emit=plan -o %t.mixtral.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mixtral.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=TWO

// MIXTRAL: braid.mesh @world(dp = 2)
// MIXTRAL: braid.slice %{{.*}} offsets [%{{.*}}, 0] sizes [1, 16] strides [1, 1] : tensor<2x16xi64> -> tensor<1x16xi64>
// MIXTRAL: braid.router_topk {{.*}} -> (tensor<16x2xf32>, tensor<16x2xi64>)
// MIXTRAL: braid.moe_dispatch {{.*}} : (tensor<32x64xf32>, tensor<32x2xi64>) -> tensor<4x32x64xf32>
// MIXTRAL: braid.moe_combine {{.*}} : (tensor<4x32x64xf32>, tensor<32x2xi64>, tensor<32x2xf32>) -> tensor<32x64xf32>

// TWO-COUNT-2: ] PASS
// TWO-NOT: FAIL
