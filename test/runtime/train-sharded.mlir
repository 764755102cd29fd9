// A training plan whose state weights are split over two ranks (tp=2,
// columns of the table and of its moment), run under mpirun: the checkpoint
// holds every state weight whole, byte for byte what the one-rank plan of
// train-plan.mlir saves, and the losses agree; a one-rank checkpoint
// resumes on two ranks.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/train_files.py %t
// RUN: braid-translate --exec-to-plan %s -o %t/tp2.bplan --weights train.safetensors
// RUN: braid-translate --exec-to-plan %S/train-plan.mlir -o %t/tp1.bplan --weights train.safetensors
// RUN: braid-run %t/tp1.bplan --weights %t/train.safetensors --steps 6 --data %t/tokens.bin --loss-log %t/tp1.csv --save %t/tp1.safetensors > /dev/null
// RUN: %mpirun -n 2 braid-run %t/tp2.bplan --weights %t/train.safetensors --steps 6 --data %t/tokens.bin --loss-log %t/tp2.csv --save %t/tp2.safetensors | FileCheck %s
// RUN: cmp %t/tp2.safetensors %t/tp1.safetensors
// RUN: %python -c "import numpy as n, sys; a, b = (n.loadtxt(f, delimiter=',', skiprows=1) for f in sys.argv[1:]); sys.exit(not (a[:, 0] == b[:, 0]).all() or not n.allclose(a, b, rtol=1e-6, atol=0))" %t/tp1.csv %t/tp2.csv
// RUN: braid-run %t/tp1.bplan --weights %t/train.safetensors --steps 3 --data %t/tokens.bin --save %t/tp1-3.safetensors > /dev/null
// RUN: %mpirun -n 2 braid-run %t/tp2.bplan --weights %t/train.safetensors --steps 6 --data %t/tokens.bin --resume %t/tp1-3.safetensors --save %t/resumed.safetensors > /dev/null
// RUN: cmp %t/resumed.safetensors %t/tp1.safetensors

// Rank 0 alone prints the summary.
// CHECK: trained steps 0..5 (6 steps of 6 tokens)
// CHECK-NOT: trained steps

module {
  exec.plan @main mesh(["tp"], [2]) arena 2560 events 0 training {batch = 2 : i64, labels = "labels", loss = "loss", sequence = 3 : i64, tokens = "tokens"} {
    exec.buffer @b0 offset 0 : tensor<2x3xi64>
    exec.buffer @b1 offset 64 : tensor<2x3xi64>
    exec.buffer @b2 offset 128 : tensor<16x2xf32>
    exec.buffer @b3 offset 384 : tensor<16x2xf32>
    exec.buffer @b4 offset 640 : tensor<f32>
    exec.buffer @b5 offset 704 : tensor<f32>
    exec.buffer @b6 offset 768 : tensor<2x3xf32>
    exec.buffer @b7 offset 832 : tensor<2x3xf32>
    exec.buffer @b8 offset 896 : tensor<2x3x2xf32>
    exec.buffer @b9 offset 1024 : tensor<f32>
    exec.buffer @b10 offset 1088 : tensor<f32>
    exec.buffer @b11 offset 1152 : tensor<f32>
    exec.buffer @b12 offset 1216 : tensor<f32>
    exec.buffer @b13 offset 1280 : tensor<16x2xf32>
    exec.buffer @b14 offset 1536 : tensor<16x2xf32>
    exec.buffer @b15 offset 1792 : tensor<16x2xf32>
    exec.buffer @b16 offset 2048 : tensor<16x2xf32>
    exec.buffer @b17 offset 2304 : tensor<16x2xf32>
    exec.input "tokens" @b0
    exec.input "labels" @b1
    exec.weight "w" @b2 full [16, 4] sharding [[], ["tp"]] state
    exec.weight "m" @b3 full [16, 4] sharding [[], ["tp"]] init "zeros" state
    exec.weight "lr" @b4 full [] sharding []
    exec.constant @b5 dense<5.000000e-01> : tensor<f32>
    exec.output "loss" @b12
    exec.stream "compute" {
      exec.kernel "cast"([@b0]) -> ([@b6]) {} flops 6 bytes 72
      exec.kernel "cast"([@b1]) -> ([@b7]) {} flops 6 bytes 72
      exec.kernel "reduce_mean"([@b6]) -> ([@b9]) {dims = array<i64: 0, 1>} flops 6 bytes 28
      exec.kernel "reduce_mean"([@b7]) -> ([@b10]) {dims = array<i64: 0, 1>} flops 6 bytes 28
      exec.kernel "gather"([@b2, @b0]) -> ([@b8]) {axis = 0 : i64} flops 0 bytes 144
      exec.kernel "reduce_mean"([@b8]) -> ([@b11]) {dims = array<i64: 0, 1, 2>} flops 24 bytes 100
      exec.collective "all_reduce" @b11 -> @b12 on ["tp"] {reduction = "avg"}
      exec.kernel "mul"([@b3, @b5]) -> ([@b13]) {} flops 64 bytes 516
      exec.kernel "add"([@b13, @b9]) -> ([@b14]) {} flops 64 bytes 516
      exec.kernel "mul"([@b14, @b4]) -> ([@b15]) {} flops 64 bytes 516
      exec.kernel "mul"([@b15, @b10]) -> ([@b16]) {} flops 64 bytes 516
      exec.kernel "sub"([@b2, @b16]) -> ([@b17]) {} flops 64 bytes 768
      exec.kernel "copy"([@b14]) -> ([@b3]) {} flops 0 bytes 512
      exec.kernel "copy"([@b17]) -> ([@b2]) {} flops 0 bytes 512
    }
  }
}
