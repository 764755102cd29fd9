// RUN: braid-opt %s --braid-balance-sequence=parts=4 -split-input-file -verify-diagnostics | FileCheck %s
// RUN: braid-opt %s --braid-balance-sequence=parts=4 --braid-partition=cp=4 --braid-ring-attention -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=RING

// The zigzag order for 4 ranks over 16 positions: rank r's block holds
// chunks r and 7 - r of 8 (pi), applied to the inputs and undone on the
// outputs (pi^-1); causal attention compares original positions.
// CHECK: %[[PI:.*]] = braid.constant dense<[0, 1, 14, 15, 2, 3, 12, 13, 4, 5, 10, 11, 6, 7, 8, 9]> : tensor<16xi64>
// CHECK: %[[INV:.*]] = braid.constant dense<[0, 1, 4, 5, 8, 9, 12, 13, 14, 15, 10, 11, 6, 7, 2, 3]> : tensor<16xi64>
// CHECK: braid.gather %arg0[%[[PI]]] axis 1
// CHECK: %[[ROW:.*]] = braid.reshape %[[PI]] : tensor<16xi64> -> tensor<1x16xi64>
// CHECK: %[[COL:.*]] = braid.reshape %[[PI]] : tensor<16xi64> -> tensor<16x1xi64>
// CHECK: %[[MASK:.*]] = braid.compare  ge, %[[COL]], %[[ROW]]
// CHECK: %[[A:.*]] = braid.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[MASK]] scale
// CHECK: %[[T:.*]] = braid.transpose %[[A]]
// CHECK: %[[OUT:.*]] = braid.gather %[[T]][%[[INV]]] axis 1
// CHECK: return %[[OUT]]

// After partitioning and Ring Attention, each rank's inputs come from its
// slice of pi (no all-gather of the inputs), and key positions travel with
// the key/value blocks.
// RING: braid.mesh @world(cp = 4)
// RING: braid.slice %{{.*}} offsets [%{{.*}}] sizes [4] strides [1] : tensor<16xi64> -> tensor<4xi64>
// RING: braid.gather %arg0[%{{.*}}] axis 1 : (tensor<1x16x2x8xf32>, tensor<4xi64>) -> tensor<1x4x2x8xf32>
// RING-COUNT-3: braid.collective_permute %{{.*}} : tensor<4xi64>
// RING: braid.attention_merge
func.func @main(%q: tensor<1x16x2x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32> {
  %qt = braid.transpose %q [0, 2, 1, 3] : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %kt = braid.transpose %k [0, 2, 1, 3] : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %vt = braid.transpose %v [0, 2, 1, 3] : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %c = braid.attention %qt, %kt, %vt causal scale 0.35 : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  %ct = braid.transpose %c [0, 2, 1, 3] : tensor<1x2x16x8xf32> -> tensor<1x16x2x8xf32>
  return %ct : tensor<1x16x2x8xf32>
}

// -----

// expected-error @+1 {{braid-balance-sequence: the sequence (12) does not split into 8 equal chunks for 4 ranks}}
func.func @main(%x: tensor<1x12x8xf32>) -> tensor<1x12x8xf32> {
  return %x : tensor<1x12x8xf32>
}
