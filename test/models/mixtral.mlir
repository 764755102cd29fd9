// Imports examples/models/mixtral, checks the raised ops, and runs the imported
// program with the reference kernels against the onnxruntime reference;
// (MoE blocks have data-dependent shapes: there is no unraised import.)
// RUN: braid-translate --import-onnx %braid_src_root/examples/models/mixtral/model.onnx -o %t.mlir
// RUN: FileCheck %s --check-prefix=MIXTRAL < %t.mlir
// RUN: braid-eval %t.mlir --weights %t.safetensors --test-data %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=EVAL
// RUN: braidc %braid_src_root/examples/models/mixtral/model.onnx --emit=plan -o %t.bplan --progress=false
// RUN: braid-run %t.bplan --inputs %braid_src_root/examples/models/mixtral/test_data_set_0 --expected %braid_src_root/examples/models/mixtral/test_data_set_0 | FileCheck %s --check-prefix=PLAN

// MIXTRAL: braid.attention {{.*}} causal
// MIXTRAL: braid.router_topk {{.*}} k 2 normalize
// MIXTRAL: braid.moe_dispatch
// MIXTRAL-COUNT-3: braid.grouped_matmul
// MIXTRAL: braid.moe_combine
// MIXTRAL: braid.router_topk
// MIXTRAL-NOT: braid.softmax

// EVAL: output 0: {{.*}} (PASS, rtol 1e-04)
// PLAN: output 0 {{.*}}: PASS
// PLAN: {{^}}PASS
