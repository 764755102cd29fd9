// braidc writes what -o's extension says unless --emit does: .bplan a plan,
// .mlir braid IR (exec IR with --emit=exec), stdout and any other extension
// braid IR. An --emit that contradicts the extension is an error naming both,
// and nothing is written.
// RUN: rm -rf %t && mkdir -p %t

// A .bplan output is a plan that braid-run runs.
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx -o %t/mlp.bplan --progress=false
// RUN: braid-run %t/mlp.bplan --inputs %braid_src_root/examples/models/mlp/test_data_set_0 --expected %braid_src_root/examples/models/mlp/test_data_set_0 | FileCheck %s --check-prefix=PLAN
// PLAN: PASS

// .mlir, stdout and an unknown extension: braid IR.
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx -o %t/mlp.mlir --progress=false
// RUN: FileCheck %s --check-prefix=BRAID < %t/mlp.mlir
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --weights %t/stdout.safetensors --progress=false | FileCheck %s --check-prefix=BRAID
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx -o %t/mlp.txt --progress=false
// RUN: FileCheck %s --check-prefix=BRAID < %t/mlp.txt
// BRAID: braid.weight @norm.weight
// BRAID: func.func @main
// BRAID-NOT: exec.plan

// --emit=exec into .mlir: exec IR.
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --emit=exec -o %t/mlp.exec.mlir --progress=false
// RUN: FileCheck %s --check-prefix=EXEC < %t/mlp.exec.mlir
// EXEC: exec.plan @main

// An explicit --emit that agrees with the extension writes the same plan.
// RUN: mkdir -p %t/explicit
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx --emit=plan -o %t/explicit/mlp.bplan --progress=false
// RUN: cmp %t/mlp.bplan %t/explicit/mlp.bplan

// Conflicts.
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --emit=braid -o %t/braid.bplan 2>&1 | FileCheck %s --check-prefix=BRAID-BPLAN
// RUN: not test -e %t/braid.bplan
// BRAID-BPLAN: error: --emit=braid writes IR text, but -o '{{.*}}braid.bplan' names a plan file (.bplan: --emit=plan)
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --emit=exec -o %t/exec.bplan 2>&1 | FileCheck %s --check-prefix=EXEC-BPLAN
// EXEC-BPLAN: error: --emit=exec writes IR text, but -o '{{.*}}exec.bplan' names a plan file (.bplan: --emit=plan)
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --emit=plan -o %t/plan.mlir 2>&1 | FileCheck %s --check-prefix=PLAN-MLIR
// RUN: not test -e %t/plan.mlir
// PLAN-MLIR: error: --emit=plan writes a binary plan, but -o '{{.*}}plan.mlir' names an IR file (.mlir: --emit=braid or exec)
// RUN: not braidc %braid_src_root/examples/models/mlp/model.onnx --emit=plan 2>&1 | FileCheck %s --check-prefix=PLAN-STDOUT
// PLAN-STDOUT: error: a plan is binary; name its file with -o

// The weights file goes beside the output only when the output is a regular
// file: -o /dev/null (here through a link to it) discards everything and
// creates no null.safetensors beside it.
// RUN: mkdir -p %t/null && ln -sf /dev/null %t/null/out.mlir && ln -sf /dev/null %t/null/out.bplan
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx -o %t/null/out.mlir --progress=false
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx -o %t/null/out.bplan --progress=false
// RUN: not ls %t/null/out.safetensors
// --weights naming a device (a link to /dev/null) writes it in place and
// leaves the link (a temporary renamed over it would replace it: given
// /dev/null itself, as root, the device).
// RUN: ln -sf /dev/null %t/null/weights.safetensors
// RUN: braidc %braid_src_root/examples/models/mlp/model.onnx -o %t/null/w.bplan --weights %t/null/weights.safetensors --progress=false
// RUN: test -L %t/null/weights.safetensors
