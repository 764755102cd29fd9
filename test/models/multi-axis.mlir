// Presets combined on a 2x2 mesh: the axes are partitioned one after the
// other (outermost first), each with its own collectives and rank index;
// every example model runs on 4 ranks against the onnxruntime reference.
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel dp=2,tp=2 -o %t.llama.mlir --progress=false
// RUN: FileCheck %s --check-prefix=LLAMA < %t.llama.mlir
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel dp=2,tp=2 --emit=plan -o %t.mlp.dp2_tp2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mlp.dp2_tp2.bplan --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel dp=2,tp=2 --emit=plan -o %t.gpt2.dp2_tp2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.gpt2.dp2_tp2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel dp=2,tp=2 --emit=plan -o %t.llama.dp2_tp2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.dp2_tp2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel dp=2,tp=2 --emit=plan -o %t.mixtral.dp2_tp2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mixtral.dp2_tp2.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=2,tp=2 --emit=plan -o %t.mixtral.ep2_tp2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mixtral.ep2_tp2.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel cp=2,tp=2 --emit=plan -o %t.llama.cp2_tp2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.cp2_tp2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel dp=2,sp=2 --emit=plan -o %t.gpt2.dp2_sp2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.gpt2.dp2_sp2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel dp=2,ep=2 --emit=plan -o %t.mixtral.dp2_ep2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mixtral.dp2_ep2.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=FOUR

// LLAMA: braid.mesh @world(dp = 2, tp = 2)
// LLAMA: braid.rank @world axis "dp"
// LLAMA-COUNT-4: braid.all_reduce %{{.*}} on @world["tp"] sum : tensor<1x16x64xf32>
// The logits are gathered over dp, then over tp (the LM head is column
// parallel, and the dp gather carries the tp split through).
// LLAMA: braid.all_gather %{{.*}} on @world["dp"] dim 0 : tensor<1x16x500xf32> -> tensor<2x16x500xf32>
// LLAMA: braid.all_gather %{{.*}} on @world["tp"] dim 2 : tensor<2x16x500xf32> -> tensor<2x16x1000xf32>

// TWO-COUNT-2: ] PASS
// TWO-NOT: FAIL
// FOUR-COUNT-4: ] PASS
// FOUR-NOT: FAIL
