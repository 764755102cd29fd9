// Every example model partitioned with the tp preset (Megatron) and with
// sequence parallelism (sp), compiled to a plan and run under mpirun on 2
// and 4 ranks; every rank's outputs must match the onnxruntime reference of
// the unpartitioned model.
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --pipeline='braid-partition{tp=2}' -o %t.llama.mlir --progress=false
// RUN: FileCheck %s --check-prefix=LLAMA < %t.llama.mlir
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 -o %t.gpt2.mlir --progress=false
// RUN: FileCheck %s --check-prefix=GPT2 < %t.gpt2.mlir
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --pipeline=braid-split-fused-projections --emit=plan -o %t.gpt2-split.bplan --progress=false
// RUN: braid-run %t.gpt2-split.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=ONE
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel sp=2 -o %t.llama-sp.mlir --progress=false
// RUN: FileCheck %s --check-prefix=LLAMA-SP < %t.llama-sp.mlir
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tp=2 --emit=plan -o %t.mlp.tp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mlp.tp2.bplan --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --emit=plan -o %t.gpt2.tp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.tp2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --emit=plan -o %t.llama.tp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.tp2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel tp=2 --emit=plan -o %t.mixtral.tp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mixtral.tp2.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel tp=4 --emit=plan -o %t.mlp.tp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mlp.tp4.bplan --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=4 --emit=plan -o %t.gpt2.tp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.gpt2.tp4.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=4 --emit=plan -o %t.llama.tp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.tp4.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel tp=4 --emit=plan -o %t.mixtral.tp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.mixtral.tp4.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --parallel sp=2 --emit=plan -o %t.mlp.sp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mlp.sp2.bplan --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel sp=2 --emit=plan -o %t.gpt2.sp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.sp2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel sp=2 --emit=plan -o %t.llama.sp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.sp2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel sp=2 --emit=plan -o %t.mixtral.sp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.mixtral.sp2.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel sp=4 --emit=plan -o %t.llama.sp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.sp4.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR

// LLaMA's q/k/v/o and gate/up/down projections become Megatron pairs: two
// all-reduces per decoder layer, four for the two layers.
// LLAMA: braid.mesh @world(tp = 2)
// LLAMA-COUNT-4: braid.all_reduce
// LLAMA-NOT: braid.all_reduce

// GPT-2's fused q/k/v weight is split into three blocks first, so each is
// column parallel by heads: exactly Megatron's two all-reduces per block (two
// blocks), and one all-gather, of the column-parallel LM head's logits.
// GPT2: braid.mesh @world(tp = 2)
// GPT2-COUNT-3: braid.get_weight @lm.transformer.h.0.attn.c_attn.weight block [64, 64] at [0, {{0|64|128}}] sharded on @world {{\[\[}}], ["tp"]] : tensor<64x32xf32>
// GPT2-NOT: braid.all_gather
// GPT2-COUNT-4: braid.all_reduce %{{.*}} on @world["tp"] sum
// GPT2-NOT: braid.all_reduce
// GPT2: braid.all_gather %{{.*}} on @world["tp"] dim 2 : tensor<2x16x500xf32> -> tensor<2x16x1000xf32>
// GPT2-NOT: braid.all_
// The single-device program with the split projections still matches.
// ONE: PASS

// With sequence parallelism each all-reduce becomes a reduce-scatter along
// the tokens, and the column-parallel projections gather them back.
// LLAMA-SP: braid.mesh @world(tp = 2)
// LLAMA-SP-NOT: braid.all_reduce
// LLAMA-SP: braid.all_gather %{{.*}} on @world["tp"] dim 1 : tensor<2x8x64xf32> -> tensor<2x16x64xf32>
// LLAMA-SP: braid.reduce_scatter %{{.*}} on @world["tp"] sum dim 1 : tensor<2x16x64xf32> -> tensor<2x8x64xf32>
// LLAMA-SP-NOT: braid.all_reduce

// TWO-COUNT-2: ] PASS
// TWO-NOT: FAIL
// FOUR-COUNT-4: ] PASS
// FOUR-NOT: FAIL
