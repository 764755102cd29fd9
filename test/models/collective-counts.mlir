// Collectives per forward pass (two layers) of every dense example model:
// Megatron's plan exactly. Under tp, 2 all-reduces per layer and one
// all-gather of the column-parallel logits; under sp, 2 reduce-scatters and
// 2 all-gathers per layer plus the logits; dp adds the logits' gather along
// dp. Counted over the whole IR (grep | sort | uniq -c), so a stray
// collective of any kind fails the check.
// RUN: mkdir -p %t
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 -o %t/gpt2.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/gpt2.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=4 -o %t/gpt2.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/gpt2.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel sp=2 -o %t/gpt2.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/gpt2.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel dp=2,tp=2 -o %t/gpt2.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/gpt2.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/gpt2_sdpa/model.onnx --parallel tp=2 -o %t/gpt2_sdpa.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/gpt2_sdpa.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/gpt2_sdpa/model.onnx --parallel tp=4 -o %t/gpt2_sdpa.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/gpt2_sdpa.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/gpt2_sdpa/model.onnx --parallel sp=2 -o %t/gpt2_sdpa.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/gpt2_sdpa.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/gpt2_sdpa/model.onnx --parallel dp=2,tp=2 -o %t/gpt2_sdpa.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/gpt2_sdpa.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=2 -o %t/llama.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/llama.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel tp=4 -o %t/llama.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/llama.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel sp=2 -o %t/llama.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/llama.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --parallel dp=2,tp=2 -o %t/llama.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/llama.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/qwen2_dynamo/model.onnx --parallel tp=2 -o %t/qwen2_dynamo.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/qwen2_dynamo.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/qwen2_dynamo/model.onnx --parallel tp=4 -o %t/qwen2_dynamo.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/qwen2_dynamo.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/qwen2_dynamo/model.onnx --parallel sp=2 -o %t/qwen2_dynamo.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/qwen2_dynamo.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/qwen2_dynamo/model.onnx --parallel dp=2,tp=2 -o %t/qwen2_dynamo.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/qwen2_dynamo.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/qwen2_torchscript/model.onnx --parallel tp=2 -o %t/qwen2_torchscript.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/qwen2_torchscript.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/qwen2_torchscript/model.onnx --parallel tp=4 -o %t/qwen2_torchscript.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/qwen2_torchscript.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/qwen2_torchscript/model.onnx --parallel sp=2 -o %t/qwen2_torchscript.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/qwen2_torchscript.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/qwen2_torchscript/model.onnx --parallel dp=2,tp=2 -o %t/qwen2_torchscript.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/qwen2_torchscript.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/phi3_dynamo/model.onnx --parallel tp=2 -o %t/phi3_dynamo.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/phi3_dynamo.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/phi3_dynamo/model.onnx --parallel tp=4 -o %t/phi3_dynamo.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/phi3_dynamo.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/phi3_dynamo/model.onnx --parallel sp=2 -o %t/phi3_dynamo.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/phi3_dynamo.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/phi3_dynamo/model.onnx --parallel dp=2,tp=2 -o %t/phi3_dynamo.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/phi3_dynamo.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/phi3_torchscript/model.onnx --parallel tp=2 -o %t/phi3_torchscript.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/phi3_torchscript.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/phi3_torchscript/model.onnx --parallel tp=4 -o %t/phi3_torchscript.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/phi3_torchscript.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/phi3_torchscript/model.onnx --parallel sp=2 -o %t/phi3_torchscript.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/phi3_torchscript.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/phi3_torchscript/model.onnx --parallel dp=2,tp=2 -o %t/phi3_torchscript.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/phi3_torchscript.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/bert_torchscript/model.onnx --parallel tp=2 -o %t/bert_torchscript.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/bert_torchscript.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/bert_torchscript/model.onnx --parallel tp=4 -o %t/bert_torchscript.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/bert_torchscript.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/bert_torchscript/model.onnx --parallel sp=2 -o %t/bert_torchscript.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/bert_torchscript.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/bert_torchscript/model.onnx --parallel dp=2,tp=2 -o %t/bert_torchscript.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/bert_torchscript.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/bert_dynamo/model.onnx --parallel tp=2 -o %t/bert_dynamo.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/bert_dynamo.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/bert_dynamo/model.onnx --parallel tp=4 -o %t/bert_dynamo.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/bert_dynamo.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/bert_dynamo/model.onnx --parallel sp=2 -o %t/bert_dynamo.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/bert_dynamo.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/bert_dynamo/model.onnx --parallel dp=2,tp=2 -o %t/bert_dynamo.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/bert_dynamo.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --parallel tp=2 -o %t/opt_dynamo.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/opt_dynamo.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --parallel tp=4 -o %t/opt_dynamo.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/opt_dynamo.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --parallel sp=2 -o %t/opt_dynamo.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/opt_dynamo.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --parallel dp=2,tp=2 -o %t/opt_dynamo.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/opt_dynamo.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --parallel tp=2 -o %t/opt_torchscript.tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/opt_torchscript.tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --parallel tp=4 -o %t/opt_torchscript.tp4.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/opt_torchscript.tp4.mlir | sort | uniq -c | FileCheck %s --check-prefix=TP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --parallel sp=2 -o %t/opt_torchscript.sp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/opt_torchscript.sp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=SP --match-full-lines --strict-whitespace=false
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --parallel dp=2,tp=2 -o %t/opt_torchscript.dp2_tp2.mlir --progress=false
// RUN: grep -oE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' %t/opt_torchscript.dp2_tp2.mlir | sort | uniq -c | FileCheck %s --check-prefix=DPTP --match-full-lines --strict-whitespace=false

// TP: {{ *}}1 braid.all_gather
// TP-NEXT: {{ *}}4 braid.all_reduce
// TP-EMPTY:
// SP: {{ *}}5 braid.all_gather
// SP-NEXT: {{ *}}4 braid.reduce_scatter
// SP-EMPTY:
// DPTP: {{ *}}2 braid.all_gather
// DPTP-NEXT: {{ *}}4 braid.all_reduce
// DPTP-EMPTY:
