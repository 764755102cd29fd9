// Imports examples/models/llama, checks the raised ops, and runs the imported
// program with the reference kernels against the onnxruntime reference;
// the unraised import must agree too (raising never changes results).
// RUN: braid-translate --import-onnx %braid_src_root/examples/models/llama/model.onnx -o %t.mlir
// RUN: FileCheck %s --check-prefix=LLAMA < %t.mlir
// RUN: braid-eval %t.mlir --weights %t.safetensors --test-data %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=EVAL
// RUN: braid-translate --import-onnx --raw %braid_src_root/examples/models/llama/model.onnx -o %t.raw.mlir
// RUN: braid-eval %t.raw.mlir --weights %t.raw.safetensors --test-data %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=EVAL
// RUN: braidc %braid_src_root/examples/models/llama/model.onnx --emit=plan -o %t.bplan --progress=false
// RUN: braid-run %t.bplan --inputs %braid_src_root/examples/models/llama/test_data_set_0 --expected %braid_src_root/examples/models/llama/test_data_set_0 | FileCheck %s --check-prefix=PLAN

// LLAMA-COUNT-2: braid.attention {{.*}} causal scale 2.500000e-01
// LLAMA-NOT: braid.softmax

// EVAL: output 0: {{.*}} (PASS, rtol 1e-04)
// PLAN: output 0 {{.*}}: PASS
// PLAN: {{^}}PASS
