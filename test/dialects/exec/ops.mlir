// RUN: braid-opt %s | FileCheck %s
// RUN: braid-opt %s | braid-opt | FileCheck %s

// The training fields of the exec dialect print and parse back.

// CHECK-LABEL: exec.plan @train
// CHECK-SAME: training {batch = 2 : i64, labels = "labels", loss = "loss", sequence = 3 : i64, tokens = "tokens"}
// CHECK: exec.weight "w" @w full [8, 4] sharding {{\[\[\], \[\]\]}} state
// CHECK: exec.weight "w.moment" @m full [8, 4] sharding {{\[\[\], \[\]\]}} init "zeros" state
// CHECK: exec.weight "lr" @lr full [] sharding []{{$}}
exec.plan @train mesh(["world"], [1]) arena 1024 events 0 training {tokens = "tokens", labels = "labels", loss = "loss", batch = 2 : i64, sequence = 3 : i64} {
  exec.buffer @tokens offset 0 : tensor<2x3xi64>
  exec.buffer @labels offset 64 : tensor<2x3xi32>
  exec.buffer @w offset 128 : tensor<8x4xf32>
  exec.buffer @m offset 256 : tensor<8x4xf32>
  exec.buffer @lr offset 384 : tensor<f32>
  exec.buffer @loss offset 448 : tensor<f32>
  exec.input "tokens" @tokens
  exec.input "labels" @labels
  exec.weight "w" @w full [8, 4] sharding [[], []] state
  exec.weight "w.moment" @m full [8, 4] sharding [[], []] init "zeros" state
  exec.weight "lr" @lr full [] sharding []
  exec.output "loss" @loss
  exec.stream "compute" {
    exec.kernel "copy"([@m]) -> ([@w]) {} flops 0 bytes 256
  }
}
