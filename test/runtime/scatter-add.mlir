// braid.scatter_add (an embedding's gradient) run on the CPU runtime against
// numpy's np.add.at, with repeated and negative token ids: on one rank, with
// the tokens split by dp over 2 ranks (partial tables, all-reduce sum), and
// with the hidden dimension split by tp over 2 ranks (all-gather of columns).
// An id out of range is a run-time error naming the op.
// RUN: rm -rf %t && split-file %s %t
// RUN: %python %S/scatter_add_data.py %t/in
// RUN: %python %S/scatter_add_data.py %t/bad --bad
// RUN: braid-opt %t/table.mlir --braid-to-exec -o %t/one.exec.mlir
// RUN: braid-translate --exec-to-plan %t/one.exec.mlir -o %t/one.bplan
// RUN: braid-run %t/one.bplan --inputs %t/in --expected %t/in --rtol 1e-5 | FileCheck %s --check-prefix=ONE
// RUN: braid-opt %t/table.mlir --braid-partition=dp=2 --braid-to-exec -o %t/dp.exec.mlir
// RUN: FileCheck %s --check-prefix=DP-IR < %t/dp.exec.mlir
// RUN: braid-translate --exec-to-plan %t/dp.exec.mlir -o %t/dp.bplan
// RUN: %mpirun -n 2 braid-run %t/dp.bplan --inputs %t/in --expected %t/in --rtol 1e-5 | FileCheck %s --check-prefix=TWO
// RUN: braid-opt %t/columns.mlir --braid-partition --braid-to-exec -o %t/tp.exec.mlir
// RUN: braid-translate --exec-to-plan %t/tp.exec.mlir -o %t/tp.bplan
// RUN: %mpirun -n 2 braid-run %t/tp.bplan --inputs %t/in --expected %t/in --rtol 1e-5 | FileCheck %s --check-prefix=TWO
// RUN: not braid-run %t/one.bplan --inputs %t/bad 2>&1 | FileCheck %s --check-prefix=BAD

// ONE: output 0 'grad_table' f32 [10, 8]: {{.*}}: PASS
// ONE-NOT: FAIL
// DP-IR: exec.kernel "scatter_add"({{.*}}) -> ([@[[P:b[0-9]+]]]) {axis = 0 : i64} flops 96
// DP-IR-NEXT: exec.collective "all_reduce" @[[P]] -> @{{.*}} on ["dp"] {reduction = #braid<reduction sum>}
// TWO-COUNT-2: ] PASS
// TWO-NOT: FAIL
// BAD: scatter_add: index 10 is out of range for dimension 0 of size 10

//--- table.mlir
func.func @main(%g: tensor<4x6x8xf32> {braid.name = "grad_output"}, %ids: tensor<4x6xi64> {braid.name = "input_ids"}) -> (tensor<10x8xf32> {braid.name = "grad_table"}) {
  %0 = braid.scatter_add %g[%ids] axis 0 : (tensor<4x6x8xf32>, tensor<4x6xi64>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}

//--- columns.mlir
braid.mesh @world(tp = 2)
func.func @main(%g: tensor<4x6x8xf32> {braid.name = "grad_output", braid.sharding = #braid.sharding<@world, [[], [], ["tp"]]>}, %ids: tensor<4x6xi64> {braid.name = "input_ids"}) -> (tensor<10x8xf32> {braid.name = "grad_table"}) {
  %0 = braid.scatter_add %g[%ids] axis 0 : (tensor<4x6x8xf32>, tensor<4x6xi64>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}
