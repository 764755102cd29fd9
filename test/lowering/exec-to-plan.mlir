// braidc --emit=exec shows what the plan will hold; --emit=plan writes it and
// braid-run executes it. Errors: no plan to translate, or no -o for a plan.
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --emit=exec -o %t.exec.mlir --progress=false
// RUN: FileCheck %s --check-prefix=EXEC < %t.exec.mlir
// RUN: braid-translate --exec-to-plan %t.exec.mlir -o %t.bplan --weights %t.exec.safetensors
// RUN: braid-run %t.bplan --weights %t.exec.safetensors --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=PLAN
// RUN: not braid-translate --exec-to-plan %s -o %t.none.bplan 2>&1 | FileCheck %s --check-prefix=NOPLAN
// RUN: not test -e %t.none.bplan
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --emit=plan --weights %t.w 2>&1 | FileCheck %s --check-prefix=NOOUT

// EXEC: exec.plan @main mesh(["world"], [1]) arena {{[0-9]+}} events 0
// EXEC-DAG: exec.input "x" @[[X:b[0-9]+]]
// EXEC-DAG: exec.weight "fc1.weight" @{{b[0-9]+}} full [256, 64] sharding {{\[\[\], \[\]\]}}
// EXEC-DAG: exec.output "y" @{{b[0-9]+}}
// EXEC: exec.stream "compute" {
// EXEC-NEXT: exec.kernel "layer_norm"([@[[X]], {{.*}}]) -> ({{.*}}) {axis = 1 : i64, epsilon = {{.*}}} flops 2048 bytes 2560
// Both linear layers with their epilogues in the kernel: fc1 its bias and
// GELU, fc2 its bias and the residual.
// EXEC: exec.kernel "matmul"({{.*}}) {activation = "gelu", has_bias = true, transpose_rhs} flops 140288
// EXEC: exec.kernel "matmul"({{.*}}) {has_addend = true, has_bias = true, transpose_rhs} flops 131584

// PLAN: output 0 'y' f32 [4, 64]: {{.*}}: PASS

// NOPLAN: error: expected one exec.plan, found 0 (run braid-to-exec first)
// NOOUT: error: a plan is binary; name its file with -o
func.func @not_a_plan() {
  return
}
