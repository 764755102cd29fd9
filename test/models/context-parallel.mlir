// Every example model split along the sequence (cp), compiled to plans and
// run under mpirun on 2 and 4 ranks against the onnxruntime reference. Causal
// attention computes this rank's block of queries against gathered keys and
// values, with its causal diagonal moved to the block's position.
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel cp=2 -o %t.llama.mlir --progress=false
// RUN: FileCheck %s --check-prefix=LLAMA < %t.llama.mlir
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel cp=2 --emit=plan -o %t.mlp.cp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mlp.cp2.bplan --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel cp=2 --emit=plan -o %t.gpt2.cp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.cp2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel cp=2 --emit=plan -o %t.llama.cp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.cp2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel cp=2 --emit=plan -o %t.mixtral.cp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mixtral.cp2.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel cp=4 --emit=plan -o %t.mlp.cp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mlp.cp4.bplan --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel cp=4 --emit=plan -o %t.gpt2.cp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.gpt2.cp4.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel cp=4 --emit=plan -o %t.llama.cp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.cp4.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel cp=4 --emit=plan -o %t.mixtral.cp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mixtral.cp4.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// Ring Attention, ATTENTION2D and the zigzag order (braid-balance-sequence):
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel cp=4 --overlap ring --emit=plan -o %t.llama.cp4.ring.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.cp4.ring.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel cp=4 --overlap attention-2d=2x2 --emit=plan -o %t.llama.cp4.attention2d2x2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.cp4.attention2d2x2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel cp=2 --overlap ring --emit=plan -o %t.gpt2.cp2.ring.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.cp2.ring.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel cp=4 --overlap balance,ring --emit=plan -o %t.llama.cp4.balance_ring.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.cp4.balance_ring.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel cp=2 --overlap balance,attention-2d --emit=plan -o %t.llama.cp2.balance_attention2d.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.cp2.balance_attention2d.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel cp=4 --overlap balance,attention-2d=2x2 --emit=plan -o %t.gpt2.cp4.balance_attention2d2x2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.gpt2.cp4.balance_attention2d2x2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=FOUR

// LLAMA: braid.mesh @world(cp = 2)
// LLAMA: %[[K:.*]] = braid.all_gather %{{.*}} on @world["cp"] dim 2 : tensor<2x4x8x16xf32> -> tensor<2x4x16x16xf32>
// LLAMA: %[[V:.*]] = braid.all_gather %{{.*}} on @world["cp"] dim 2 : tensor<2x4x8x16xf32> -> tensor<2x4x16x16xf32>
// LLAMA: %[[R:.*]] = braid.rank @world axis "cp"
// LLAMA: %[[O:.*]] = arith.muli %[[R]]
// LLAMA: %[[OFF:.*]] = arith.addi %{{.*}}, %[[O]]
// LLAMA: braid.attention %{{.*}}, %[[K]], %[[V]] causal offset %[[OFF]] scale {{.*}} -> tensor<2x4x8x16xf32>

// TWO-COUNT-2: ] PASS
// TWO-NOT: FAIL
// FOUR-COUNT-4: ] PASS
// FOUR-NOT: FAIL
