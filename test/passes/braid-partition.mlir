// RUN: braid-opt %s --braid-partition=tp=2 -split-input-file -verify-diagnostics | FileCheck %s

// An MLP becomes Megatron's column-parallel then row-parallel pair: the first
// weight and its bias are loaded sharded on their output dimension, the
// second weight on its input dimension, and one all-reduce completes the
// partial sum before the second bias.
// CHECK: braid.mesh @world(tp = 2)
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[W1:.*]] = braid.get_weight @w1 sharded on @world {{\[\[}}], ["tp"]] : tensor<16x32xf32>
// CHECK-DAG: %[[B1:.*]] = braid.get_weight @b1 sharded on @world {{\[\[}}"tp"]] : tensor<32xf32>
// CHECK-DAG: %[[W2:.*]] = braid.get_weight @w2 sharded on @world {{\[\[}}"tp"], []] : tensor<32x16xf32>
// CHECK-DAG: %[[B2:.*]] = braid.get_weight @b2 : tensor<16xf32>
// CHECK: %[[H:.*]] = braid.matmul %{{.*}}, %[[W1]] : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
// CHECK: braid.add %[[H]], %[[B1]] : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK: braid.relu %{{.*}} : tensor<4x32xf32>
// CHECK: %[[P:.*]] = braid.matmul %{{.*}}, %[[W2]] : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[R:.*]] = braid.all_reduce %[[P]] on @world["tp"] sum : tensor<4x16xf32>
// CHECK-NEXT: braid.add %[[R]], %[[B2]]
// CHECK-NOT: braid.all_
braid.weight @w1 : tensor<16x64xf32>
braid.weight @b1 : tensor<64xf32>
braid.weight @w2 : tensor<64x16xf32>
braid.weight @b2 : tensor<16xf32>
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %w1 = braid.get_weight @w1 : tensor<16x64xf32>
  %b1 = braid.get_weight @b1 : tensor<64xf32>
  %w2 = braid.get_weight @w2 : tensor<64x16xf32>
  %b2 = braid.get_weight @b2 : tensor<16xf32>
  %h = braid.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
  %hb = braid.add %h, %b1 : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  %a = braid.relu %hb : tensor<4x64xf32>
  %y = braid.matmul %a, %w2 : (tensor<4x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32>
  %yb = braid.add %y, %b2 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %yb : tensor<4x16xf32>
}

// -----

// A column-parallel projection whose users would gather it right back (the
// softmax needs its axis whole) is not split: the pass looks ahead through
// the consumers. The projection feeding the row-parallel one is split.
// CHECK-LABEL: func.func @main
// CHECK: braid.matmul {{.*}} : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
// CHECK-NEXT: braid.softmax %{{.*}} dim 1 : tensor<4x64xf32>
// CHECK: braid.matmul {{.*}} : (tensor<4x64xf32>, tensor<64x32xf32>) -> tensor<4x32xf32>
// CHECK: braid.matmul {{.*}} : (tensor<4x32xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
// CHECK-NEXT: braid.all_reduce
braid.weight @w : tensor<16x64xf32>
braid.weight @u : tensor<64x64xf32>
braid.weight @v : tensor<64x64xf32>
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x64xf32> {
  %w = braid.get_weight @w : tensor<16x64xf32>
  %h = braid.matmul %x, %w : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
  %s = braid.softmax %h dim 1 : tensor<4x64xf32>
  %u = braid.get_weight @u : tensor<64x64xf32>
  %a = braid.matmul %s, %u : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %v = braid.get_weight @v : tensor<64x64xf32>
  %b = braid.matmul %a, %v : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  return %b : tensor<4x64xf32>
}

// -----

// A sharded factor that an op needs whole (the softmax axis) is gathered
// first, here where an annotation asks for the projection split.
// CHECK-LABEL: func.func @main
// CHECK: %[[H:.*]] = braid.matmul {{.*}} -> tensor<4x32xf32>
// CHECK-NEXT: %[[G:.*]] = braid.all_gather %[[H]] on @world["tp"] dim 1 : tensor<4x32xf32> -> tensor<4x64xf32>
// CHECK-NEXT: braid.softmax %[[G]] dim 1 : tensor<4x64xf32>
braid.weight @w : tensor<16x64xf32>
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x64xf32> {
  %w = braid.get_weight @w : tensor<16x64xf32>
  %h = braid.matmul %x, %w {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>} : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
  %s = braid.softmax %h dim 1 : tensor<4x64xf32>
  return %s : tensor<4x64xf32>
}

// -----

// An argument meeting a sharded factor cannot be loaded sharded like a
// weight: it is sliced locally from this rank's index.
// CHECK-LABEL: func.func @main
// CHECK: %[[R:.*]] = braid.rank @world axis "tp"
// CHECK: %[[O:.*]] = arith.muli %[[R]], %{{.*}} : index
// CHECK: braid.slice %{{.*}} offsets [0, %[[O]]] sizes [4, 32] strides [1, 1] : tensor<4x64xf32> -> tensor<4x32xf32>
braid.weight @w : tensor<16x64xf32>
func.func @main(%x: tensor<4x16xf32>, %y: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %w = braid.get_weight @w : tensor<16x64xf32>
  %h = braid.matmul %x, %w : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
  %s = braid.add %h, %y : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  return %s : tensor<4x64xf32>
}

// -----

// expected-error @+1 {{braid-partition: the program already declares mesh @world; give either presets or a mesh with annotations}}
module {
  braid.mesh @world(tp = 2)
  func.func @main() {
    return
  }
}
