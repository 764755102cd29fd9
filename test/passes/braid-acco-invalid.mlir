// braid-acco refuses what it cannot split into ACCO's rounds, one error
// each, naming the reason.
// RUN: rm -rf %t && mkdir -p %t
// A training step whose gradients braid-training-step did not mark:
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --train -o %t/step.mlir --progress=false
// RUN: not braid-opt %t/step.mlir --braid-acco=ranks=2 -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNMARKED
// UNMARKED: error: braid-acco: @main marks no gradients (run braid-training-step with mark-gradients=true)
// A step partitioned already:
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --train --parallel dp=2 --overlap none -o %t/dp2.mlir --progress=false
// RUN: not braid-opt %t/dp2.mlir --braid-acco=ranks=2 -o /dev/null 2>&1 | FileCheck %s --check-prefix=PARTITIONED
// PARTITIONED: error: braid-acco: the module is partitioned already (it declares a mesh); ACCO runs a one-rank step on each data-parallel rank
// A step that runs several steps per call already (ACCO's own output):
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --train --parallel dp=2 --algorithm acco --overlap none -o %t/acco.mlir --progress=false
// RUN: not braid-opt %t/acco.mlir --braid-acco=ranks=2 -o /dev/null 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: braid-acco: @main already runs several steps per call
// Not a training step at all:
// RUN: not braid-opt %s --braid-acco=ranks=2 -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTSTEP
// NOTSTEP: error: braid-acco: @main is not a training step (no braid.training: run braid-next-token-loss, braid-autodiff and braid-training-step first)
// RUN: not braid-opt %s --braid-acco="ranks=2 micro=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MICRO
// MICRO: error: braid-acco: micro and ranks must be positive (micro=-1, ranks=2)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// RUN: not braid-opt %s --braid-acco="ranks=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: error: braid-acco: micro and ranks must be positive (micro=1, ranks=0)
// RUN: not braid-opt %s --braid-cocod-sgd="ranks=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=COCOD-RANKS
// COCOD-RANKS: error: braid-cocod-sgd: period and ranks must be positive (period=1, ranks=0)
