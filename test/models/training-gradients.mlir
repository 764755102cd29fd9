// Step-0 loss and the gradient of every initializer of every example
// language model against PyTorch's (examples/models/*/training): one
// weight per initializer (--weights-as-initializers), next-token loss,
// braid-autodiff, run by the reference interpreter on the batch of step 0
// of examples/data/gpl3.bin. Relative L2 error per tensor <= 1e-4.
// bert_dynamo's exporter folded the token-type lookup into the constant
// `embedding_1`, which Braid would not train: it is named with `train`.
// RUN: mkdir -p %t
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --weights-as-initializers --emit=braid -o %t/gpt2.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/gpt2.mlir -o %t/gpt2.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/gpt2.data %braid_src_root/examples/models/gpt2/training/loss_step0.txt
// RUN: braid-eval %t/gpt2.grad.mlir --weights %t/gpt2.safetensors --test-data %t/gpt2.data --expected-gradients %braid_src_root/examples/models/gpt2/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/gpt2_sdpa/model.onnx --weights-as-initializers --emit=braid -o %t/gpt2_sdpa.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/gpt2_sdpa.mlir -o %t/gpt2_sdpa.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/gpt2_sdpa.data %braid_src_root/examples/models/gpt2_sdpa/training/loss_step0.txt
// RUN: braid-eval %t/gpt2_sdpa.grad.mlir --weights %t/gpt2_sdpa.safetensors --test-data %t/gpt2_sdpa.data --expected-gradients %braid_src_root/examples/models/gpt2_sdpa/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --weights-as-initializers --emit=braid -o %t/llama.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/llama.mlir -o %t/llama.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/llama.data %braid_src_root/examples/models/llama/training/loss_step0.txt
// RUN: braid-eval %t/llama.grad.mlir --weights %t/llama.safetensors --test-data %t/llama.data --expected-gradients %braid_src_root/examples/models/llama/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --weights-as-initializers --emit=braid -o %t/mixtral.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/mixtral.mlir -o %t/mixtral.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/mixtral.data %braid_src_root/examples/models/mixtral/training/loss_step0.txt
// RUN: braid-eval %t/mixtral.grad.mlir --weights %t/mixtral.safetensors --test-data %t/mixtral.data --expected-gradients %braid_src_root/examples/models/mixtral/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/qwen2_dynamo/model.onnx --weights-as-initializers --emit=braid -o %t/qwen2_dynamo.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/qwen2_dynamo.mlir -o %t/qwen2_dynamo.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/qwen2_dynamo.data %braid_src_root/examples/models/qwen2_dynamo/training/loss_step0.txt
// RUN: braid-eval %t/qwen2_dynamo.grad.mlir --weights %t/qwen2_dynamo.safetensors --test-data %t/qwen2_dynamo.data --expected-gradients %braid_src_root/examples/models/qwen2_dynamo/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/qwen2_torchscript/model.onnx --weights-as-initializers --emit=braid -o %t/qwen2_torchscript.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/qwen2_torchscript.mlir -o %t/qwen2_torchscript.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/qwen2_torchscript.data %braid_src_root/examples/models/qwen2_torchscript/training/loss_step0.txt
// RUN: braid-eval %t/qwen2_torchscript.grad.mlir --weights %t/qwen2_torchscript.safetensors --test-data %t/qwen2_torchscript.data --expected-gradients %braid_src_root/examples/models/qwen2_torchscript/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/phi3_dynamo/model.onnx --weights-as-initializers --emit=braid -o %t/phi3_dynamo.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/phi3_dynamo.mlir -o %t/phi3_dynamo.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/phi3_dynamo.data %braid_src_root/examples/models/phi3_dynamo/training/loss_step0.txt
// RUN: braid-eval %t/phi3_dynamo.grad.mlir --weights %t/phi3_dynamo.safetensors --test-data %t/phi3_dynamo.data --expected-gradients %braid_src_root/examples/models/phi3_dynamo/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/phi3_torchscript/model.onnx --weights-as-initializers --emit=braid -o %t/phi3_torchscript.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/phi3_torchscript.mlir -o %t/phi3_torchscript.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/phi3_torchscript.data %braid_src_root/examples/models/phi3_torchscript/training/loss_step0.txt
// RUN: braid-eval %t/phi3_torchscript.grad.mlir --weights %t/phi3_torchscript.safetensors --test-data %t/phi3_torchscript.data --expected-gradients %braid_src_root/examples/models/phi3_torchscript/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --weights-as-initializers --emit=braid -o %t/opt_dynamo.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/opt_dynamo.mlir -o %t/opt_dynamo.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/opt_dynamo.data %braid_src_root/examples/models/opt_dynamo/training/loss_step0.txt
// RUN: braid-eval %t/opt_dynamo.grad.mlir --weights %t/opt_dynamo.safetensors --test-data %t/opt_dynamo.data --expected-gradients %braid_src_root/examples/models/opt_dynamo/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --weights-as-initializers --emit=braid -o %t/opt_torchscript.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/opt_torchscript.mlir -o %t/opt_torchscript.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/opt_torchscript.data %braid_src_root/examples/models/opt_torchscript/training/loss_step0.txt
// RUN: braid-eval %t/opt_torchscript.grad.mlir --weights %t/opt_torchscript.safetensors --test-data %t/opt_torchscript.data --expected-gradients %braid_src_root/examples/models/opt_torchscript/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/bert_dynamo/model.onnx --weights-as-initializers --emit=braid -o %t/bert_dynamo.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff=train=embedding_1 %t/bert_dynamo.mlir -o %t/bert_dynamo.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/bert_dynamo.data %braid_src_root/examples/models/bert_dynamo/training/loss_step0.txt
// RUN: braid-eval %t/bert_dynamo.grad.mlir --weights %t/bert_dynamo.safetensors --test-data %t/bert_dynamo.data --expected-gradients %braid_src_root/examples/models/bert_dynamo/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/bert_torchscript/model.onnx --weights-as-initializers --emit=braid -o %t/bert_torchscript.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/bert_torchscript.mlir -o %t/bert_torchscript.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/bert_torchscript.data %braid_src_root/examples/models/bert_torchscript/training/loss_step0.txt
// RUN: braid-eval %t/bert_torchscript.grad.mlir --weights %t/bert_torchscript.safetensors --test-data %t/bert_torchscript.data --expected-gradients %braid_src_root/examples/models/bert_torchscript/training/grads_step0.safetensors | FileCheck %s
// RUN: braidc %braid_src_root/examples/models/qwen2moe_torchscript/model.onnx --weights-as-initializers --emit=braid -o %t/qwen2moe_torchscript.mlir --progress=false
// RUN: braid-opt --braid-next-token-loss --braid-autodiff %t/qwen2moe_torchscript.mlir -o %t/qwen2moe_torchscript.grad.mlir
// RUN: %python %S/make_training_batch.py %braid_src_root/examples/data/gpl3.bin 0 2 16 %t/qwen2moe_torchscript.data %braid_src_root/examples/models/qwen2moe_torchscript/training/loss_step0.txt
// RUN: braid-eval %t/qwen2moe_torchscript.grad.mlir --weights %t/qwen2moe_torchscript.safetensors --test-data %t/qwen2moe_torchscript.data --expected-gradients %braid_src_root/examples/models/qwen2moe_torchscript/training/grads_step0.safetensors | FileCheck %s
// The vocabulary-parallel loss (braidc's under tensor parallelism: max,
// log-sum-exp and the label's logit as elementwise ops and reductions, the
// max marked braid.stop_gradient) gives the same loss and gradients.
// RUN: braid-opt --braid-next-token-loss="vocab-parallel=true" --braid-autodiff %t/llama.mlir -o %t/llama.vocab.grad.mlir
// RUN: braid-eval %t/llama.vocab.grad.mlir --weights %t/llama.safetensors --test-data %t/llama.data --expected-gradients %braid_src_root/examples/models/llama/training/grads_step0.safetensors | FileCheck %s
// RUN: braid-opt --braid-next-token-loss="vocab-parallel=true" --braid-autodiff %t/gpt2.mlir -o %t/gpt2.vocab.grad.mlir
// RUN: braid-eval %t/gpt2.vocab.grad.mlir --weights %t/gpt2.safetensors --test-data %t/gpt2.data --expected-gradients %braid_src_root/examples/models/gpt2/training/grads_step0.safetensors | FileCheck %s
// RUN: not grep "braid.cross_entropy" %t/llama.vocab.grad.mlir
// CHECK-NOT: FAIL
// CHECK: output 0: 1 elements{{.*}}PASS
// CHECK: gradients: {{[0-9]+}} compared{{.*}}(PASS)
