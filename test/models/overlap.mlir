// The overlap passes on GPT-2 and LLaMA under tensor parallelism: each
// program is partitioned, chunked (Domino rows or columns, ISO sequence
// chunks, with counts that split unevenly: 64 columns in 3, 16 tokens in 3),
// scheduled (async collectives), checked by braid-verify-collectives, run
// under mpirun on 2 and 4 ranks, and must match onnxruntime on every rank.
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap seq=2 --force-overlap -o %t.llama-seq.mlir --progress=false
// RUN: FileCheck %s --check-prefix=LLAMA-SEQ < %t.llama-seq.mlir
// RUN: FileCheck %s --check-prefix=LLAMA-ATT < %t.llama-seq.mlir
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap schedule --force-overlap --emit=plan -o %t.gpt2.tp2.schedule.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.tp2.schedule.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino=2 --force-overlap --emit=plan -o %t.gpt2.tp2.domino2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.tp2.domino2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino-columns=2 --force-overlap --emit=plan -o %t.gpt2.tp2.dominocolumns2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.tp2.dominocolumns2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino-columns=3 --force-overlap --emit=plan -o %t.gpt2.tp2.dominocolumns3.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.tp2.dominocolumns3.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap seq=2 --force-overlap --emit=plan -o %t.gpt2.tp2.seq2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.tp2.seq2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap seq=3 --force-overlap --emit=plan -o %t.gpt2.tp2.seq3.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.tp2.seq3.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap auto --force-overlap --emit=plan -o %t.gpt2.tp2.auto.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.tp2.auto.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=4 --overlap domino=2 --force-overlap --emit=plan -o %t.gpt2.tp4.domino2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.gpt2.tp4.domino2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=4 --overlap domino-columns=3 --force-overlap --emit=plan -o %t.gpt2.tp4.dominocolumns3.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.gpt2.tp4.dominocolumns3.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=4 --overlap seq=3 --force-overlap --emit=plan -o %t.gpt2.tp4.seq3.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.gpt2.tp4.seq3.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap schedule --force-overlap --emit=plan -o %t.llama.tp2.schedule.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.tp2.schedule.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap domino=2 --force-overlap --emit=plan -o %t.llama.tp2.domino2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.tp2.domino2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap domino-columns=2 --force-overlap --emit=plan -o %t.llama.tp2.dominocolumns2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.tp2.dominocolumns2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap domino-columns=3 --force-overlap --emit=plan -o %t.llama.tp2.dominocolumns3.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.tp2.dominocolumns3.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap seq=2 --force-overlap --emit=plan -o %t.llama.tp2.seq2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.tp2.seq2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap seq=3 --force-overlap --emit=plan -o %t.llama.tp2.seq3.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.tp2.seq3.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 --overlap auto --force-overlap --emit=plan -o %t.llama.tp2.auto.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.llama.tp2.auto.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=4 --overlap domino=2 --force-overlap --emit=plan -o %t.llama.tp4.domino2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.tp4.domino2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=4 --overlap domino-columns=3 --force-overlap --emit=plan -o %t.llama.tp4.dominocolumns3.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.tp4.dominocolumns3.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=4 --overlap seq=3 --force-overlap --emit=plan -o %t.llama.tp4.seq3.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.tp4.seq3.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel dp=2,tp=2 --overlap seq=2 --force-overlap --emit=plan -o %t.llama.dp2_tp2.seq2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.llama.dp2_tp2.seq2.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel sp=2 --overlap schedule --force-overlap --emit=plan -o %t.gpt2.sp2.schedule.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.gpt2.sp2.schedule.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s --check-prefix=TWO

// LLaMA in two sequence chunks: every collective is async on the comm
// stream: per layer 2 all-reduces per chunk (the repeated K/V heads stay
// split: no gathers), plus the logits' gathers of the two chunks (10).
// Chunk 1's attention reads 16 keys from position 8.
// LLAMA-SEQ-COUNT-10: braid.async on "comm"
// LLAMA-SEQ-NOT: braid.async
// LLAMA-ATT: %[[C0:.*]] = arith.constant 0 : index
// LLAMA-ATT: braid.attention {{.*}} causal offset %[[C0]] {{.*}} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, index) -> tensor<2x2x8x16xf32>
// LLAMA-ATT: %[[C8:.*]] = arith.constant 8 : index
// LLAMA-ATT: braid.attention {{.*}} causal offset %[[C8]] {{.*}} : (tensor<2x2x8x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>, index) -> tensor<2x2x8x16xf32>

// TWO-COUNT-2: ] PASS
// TWO-NOT: FAIL
// FOUR-COUNT-4: ] PASS
// FOUR-NOT: FAIL
