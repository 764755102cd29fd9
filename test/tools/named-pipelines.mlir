// braid-opt runs what braidc runs through the named pipelines braidc builds
// its pass manager from: the same IR, byte for byte.
// RUN: rm -rf %t && mkdir -p %t
// RUN: braid-translate --import-onnx --raw %braid_src_root/examples/models/gpt2/model.onnx -o %t/gpt2.raw.mlir --progress=false
// RUN: braid-translate --import-onnx --raw %braid_src_root/examples/models/llama/model.onnx -o %t/llama.raw.mlir --progress=false
// RUN: braid-translate --import-onnx --raw %braid_src_root/examples/models/mixtral/model.onnx -o %t/mixtral.raw.mlir --progress=false

// Import cleanup alone: braid-import-pipeline.
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx -o %t/gpt2.braidc.mlir --progress=false
// RUN: braid-opt %t/gpt2.raw.mlir --braid-import-pipeline -o %t/gpt2.opt.mlir
// RUN: diff %t/gpt2.braidc.mlir %t/gpt2.opt.mlir
// RUN: FileCheck %s --check-prefix=IMPORT < %t/gpt2.opt.mlir
// IMPORT: braid.attention

// Tensor parallel with Domino rows.
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap domino=2 --force-overlap -o %t/gpt2.tp2.braidc.mlir --progress=false
// RUN: braid-opt %t/gpt2.raw.mlir --pass-pipeline='builtin.module(braid-import-pipeline,braid-parallel-pipeline{tp=2},braid-overlap-pipeline{overlap=domino=2 force=true})' -o %t/gpt2.tp2.opt.mlir
// RUN: diff %t/gpt2.tp2.braidc.mlir %t/gpt2.tp2.opt.mlir
// RUN: FileCheck %s --check-prefix=DOMINO < %t/gpt2.tp2.opt.mlir
// DOMINO: braid.mesh @world(tp = 2)
// DOMINO: braid.async on "comm"

// Sequence parallelism, data parallelism and ISO chunks chosen by the cost
// model, with pass flags instead of --pass-pipeline.
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel dp=2,sp=2 --overlap seq=auto --hw=dgx-a100 --force-overlap -o %t/llama.sp.braidc.mlir --progress=false
// RUN: braid-opt %t/llama.raw.mlir --braid-import-pipeline --braid-parallel-pipeline='dp=2 tp=2 sp=true' --braid-overlap-pipeline='overlap=seq=auto hw=dgx-a100 force=true' -o %t/llama.sp.opt.mlir
// RUN: diff %t/llama.sp.braidc.mlir %t/llama.sp.opt.mlir
// RUN: FileCheck %s --check-prefix=SEQ < %t/llama.sp.opt.mlir
// SEQ: braid.seq_split_point
// SEQ: braid.reduce_scatter

// Context parallel, zigzag order and Ring Attention.
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel cp=4 --overlap balance,ring -o %t/llama.cp4.braidc.mlir --progress=false
// RUN: braid-opt %t/llama.raw.mlir --pass-pipeline='builtin.module(braid-import-pipeline,braid-parallel-pipeline{cp=4 balance=true},braid-overlap-pipeline{overlap=ring})' -o %t/llama.cp4.opt.mlir
// RUN: diff %t/llama.cp4.braidc.mlir %t/llama.cp4.opt.mlir
// RUN: FileCheck %s --check-prefix=RING < %t/llama.cp4.opt.mlir
// RING: braid.collective_permute
// RING: braid.attention_merge

// Expert parallel with COMET, lowered to exec: braid-lower-pipeline.
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --parallel ep=2 --overlap comet --emit=exec -o %t/mixtral.ep2.braidc.mlir --progress=false
// RUN: braid-opt %t/mixtral.raw.mlir --pass-pipeline='builtin.module(braid-import-pipeline,braid-parallel-pipeline{ep=2},braid-overlap-pipeline{overlap=comet},braid-lower-pipeline)' -o %t/mixtral.ep2.opt.mlir
// RUN: diff %t/mixtral.ep2.braidc.mlir %t/mixtral.ep2.opt.mlir
// RUN: FileCheck %s --check-prefix=LOWER < %t/mixtral.ep2.opt.mlir
// LOWER: braid.comet_combine_chunks
// LOWER: exec.plan @main

// Every step prints back as it is spelled (--dump-pass-pipeline prints before
// the run, which then fails: GPT-2's batch of 2 is not 4 Domino chunks).
// RUN: not braid-opt %t/gpt2.raw.mlir --pass-pipeline='builtin.module(braid-parallel-pipeline{tp=2},braid-overlap-pipeline{overlap=domino,domino-columns=3,seq=0,comet=2,ring,attention-2d=2x2,schedule,auto hw=dgx-a100})' --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP
// DUMP: braid-split-fused-projections{parts=false},
// DUMP-NEXT: braid-partition{allow-replicated=false cp=0 dp=0 ep=0 function=main sp=false tp=2 zero=0},
// DUMP-NEXT: braid-domino{chunks=auto force=false function= hw=dgx-a100 split=rows},
// DUMP-NEXT: braid-domino{chunks=3 force=false function= hw=dgx-a100 split=columns},
// DUMP-NEXT: braid-seq-pipeline{chunks=auto force=false function= hw=dgx-a100 },
// DUMP-NEXT: braid-comet{combine-chunks=2 hw=dgx-a100},
// DUMP-NEXT: braid-ring-attention,
// DUMP-NEXT: braid-attention-2d{axis=cp grid=2x2 hw=dgx-a100},
// DUMP-NEXT: braid-overlap-auto{function= hw=dgx-a100},
// DUMP-NEXT: braid-schedule{gather-stream= hw=dgx-a100 memory-limit=0 prefetch=auto stream=comm},
// DUMP-NEXT: braid-verify-collectives{serialized-collectives=false}
