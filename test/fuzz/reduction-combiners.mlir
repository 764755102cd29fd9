// Every op with a reduction factor, computed alone in blocks of each of its
// reduction factors (the split operand dimensions annotated), run on the
// CPU runtime's ranks and compared with the reference kernels: the partial
// results must be completed with the op's own combiner (a mean's blocks are
// averaged, a max's maximized, a contraction's summed).
// test/unit/InterfacesTest.cpp checks that these are all the ops whose
// sample mapping has a reduction factor.
// RUN: rm -rf %t && split-file %s %t
// RUN: braid-fuzz-partition --reproduce=%t/matmul-k.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/matmul-k-transposed.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/grouped-matmul-k.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/reduce-sum-inner.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/reduce-sum-outer-of-two.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/reduce-sum-inner-of-two.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/reduce-mean-inner.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/reduce-mean-outer-of-two.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/reduce-mean-inner-of-two.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/reduce-max-inner.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/reduce-max-outer-of-two.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/reduce-max-inner-of-two.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/cross-entropy-mean.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/cross-entropy-sum.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/scatter-add-batch.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS
// RUN: braid-fuzz-partition --reproduce=%t/scatter-add-sequence-of-four.mlir --pipeline='braid-partition,braid-to-exec' | FileCheck %s --check-prefix=PASS

// PASS: pass on {{[24]}} ranks
// PASS: relative {{[0-9.]+e-(0[5-9]|[1-9][0-9])|0.000e\+00}}

//--- matmul-k.mlir
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>, braid.name = "x"}, %w: tensor<8x6xf32> {braid.sharding = #braid.sharding<@world, [["tp"], []]>, braid.name = "w"}) -> (tensor<4x6xf32> {braid.name = "y"}) {
  %0 = braid.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

//--- matmul-k-transposed.mlir
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<2x8x4xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"], []]>, braid.name = "x"}, %w: tensor<6x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>, braid.name = "w"}) -> (tensor<2x4x6xf32> {braid.name = "y"}) {
  %0 = braid.matmul %x, %w transpose_lhs transpose_rhs : (tensor<2x8x4xf32>, tensor<6x8xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

//--- grouped-matmul-k.mlir
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<2x4x8xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["tp"]]>, braid.name = "x"}, %w: tensor<2x8x6xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"], []]>, braid.name = "w"}) -> (tensor<2x4x6xf32> {braid.name = "y"}) {
  %0 = braid.grouped_matmul %x, %w : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

//--- reduce-sum-inner.mlir
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>, braid.name = "x"}) -> (tensor<4x1xf32> {braid.name = "y"}) {
  %0 = braid.reduce_sum %x dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

//--- reduce-sum-outer-of-two.mlir
braid.mesh @world(tp = 4)
func.func @main(%x: tensor<8x3x4xf32> {braid.sharding = #braid.sharding<@world, [["tp"], [], []]>, braid.name = "x"}) -> (tensor<3xf32> {braid.name = "y"}) {
  %0 = braid.reduce_sum %x dims [0, 2] : tensor<8x3x4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

//--- reduce-sum-inner-of-two.mlir
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<3x4x8xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["tp"]]>, braid.name = "x"}) -> (tensor<4xf32> {braid.name = "y"}) {
  %0 = braid.reduce_sum %x dims [0, 2] : tensor<3x4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- reduce-mean-inner.mlir
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>, braid.name = "x"}) -> (tensor<4x1xf32> {braid.name = "y"}) {
  %0 = braid.reduce_mean %x dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

//--- reduce-mean-outer-of-two.mlir
braid.mesh @world(tp = 4)
func.func @main(%x: tensor<8x3x4xf32> {braid.sharding = #braid.sharding<@world, [["tp"], [], []]>, braid.name = "x"}) -> (tensor<3xf32> {braid.name = "y"}) {
  %0 = braid.reduce_mean %x dims [0, 2] : tensor<8x3x4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

//--- reduce-mean-inner-of-two.mlir
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<3x4x8xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["tp"]]>, braid.name = "x"}) -> (tensor<4xf32> {braid.name = "y"}) {
  %0 = braid.reduce_mean %x dims [0, 2] : tensor<3x4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- reduce-max-inner.mlir
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<4x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>, braid.name = "x"}) -> (tensor<4x1xf32> {braid.name = "y"}) {
  %0 = braid.reduce_max %x dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

//--- reduce-max-outer-of-two.mlir
braid.mesh @world(tp = 4)
func.func @main(%x: tensor<8x3x4xf32> {braid.sharding = #braid.sharding<@world, [["tp"], [], []]>, braid.name = "x"}) -> (tensor<3xf32> {braid.name = "y"}) {
  %0 = braid.reduce_max %x dims [0, 2] : tensor<8x3x4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

//--- reduce-max-inner-of-two.mlir
braid.mesh @world(tp = 2)
func.func @main(%x: tensor<3x4x8xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["tp"]]>, braid.name = "x"}) -> (tensor<4xf32> {braid.name = "y"}) {
  %0 = braid.reduce_max %x dims [0, 2] : tensor<3x4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- cross-entropy-mean.mlir
braid.mesh @world(dp = 2)
func.func @main(%x: tensor<8x5xf32> {braid.sharding = #braid.sharding<@world, [["dp"], []]>, braid.name = "x"}, %t: tensor<8xi64> {braid.sharding = #braid.sharding<@world, [["dp"]]>, braid.name = "labels"}) -> (tensor<f32> {braid.name = "loss"}) {
  %0 = braid.cross_entropy %x, %t mean : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

//--- cross-entropy-sum.mlir
braid.mesh @world(dp = 2)
func.func @main(%x: tensor<8x5xf32> {braid.sharding = #braid.sharding<@world, [["dp"], []]>, braid.name = "x"}, %t: tensor<8xi64> {braid.sharding = #braid.sharding<@world, [["dp"]]>, braid.name = "labels"}) -> (tensor<f32> {braid.name = "loss"}) {
  %0 = braid.cross_entropy %x, %t sum : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

//--- scatter-add-batch.mlir
braid.mesh @world(dp = 2)
func.func @main(%g: tensor<4x6x8xf32> {braid.sharding = #braid.sharding<@world, [["dp"], [], []]>, braid.name = "g"}, %ids: tensor<4x6xi64> {braid.sharding = #braid.sharding<@world, [["dp"], []]>, braid.name = "ids"}) -> (tensor<5x8xf32> {braid.name = "grad"}) {
  %0 = braid.scatter_add %g[%ids] axis 0 : (tensor<4x6x8xf32>, tensor<4x6xi64>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

//--- scatter-add-sequence-of-four.mlir
braid.mesh @world(tp = 4)
func.func @main(%g: tensor<3x2x8x4xf32> {braid.sharding = #braid.sharding<@world, [[], [], ["tp"], []]>, braid.name = "g"}, %ids: tensor<2x8xi32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>, braid.name = "ids"}) -> (tensor<3x7x4xf32> {braid.name = "grad"}) {
  %0 = braid.scatter_add %g[%ids] axis 1 : (tensor<3x2x8x4xf32>, tensor<2x8xi32>) -> tensor<3x7x4xf32>
  return %0 : tensor<3x7x4xf32>
}
