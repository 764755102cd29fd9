// RUN: braid-opt %s --braid-partition -split-input-file -verify-diagnostics
// RUN: not braid-opt %s --braid-partition=sp=true -split-input-file 2>&1 | FileCheck %s --check-prefix=SP
// RUN: not braid-opt %s --braid-partition="tp=2 function=nope" -split-input-file 2>&1 | FileCheck %s --check-prefix=NOFUNC
// RUN: not braid-opt %s --braid-partition=dp=4 -split-input-file 2>&1 | FileCheck %s --check-prefix=DP
// RUN: not braid-opt %s --braid-partition=cp=3 -split-input-file 2>&1 | FileCheck %s --check-prefix=CP

// Every diagnostic of braid-partition. The cases use annotations (the mesh
// is declared); the RUN lines above check the option errors.
// SP: error: braid-partition: sequence parallelism (sp) needs tensor parallelism (tp=N)
// NOFUNC: error: braid-partition: no function @nope
// DP: error: braid-partition: dimension 0 (size 6) of argument 0 of @main does not divide over mesh axis 'dp' of size 4
// CP: error: braid-partition: dimension 1 (size 8) of argument 0 of @main does not divide over mesh axis 'cp' of size 3

// expected-error @+1 {{braid-partition: nothing to partition over: give tp, dp, ep or cp, or declare a braid.mesh and annotate with braid.sharding}}
module {
  func.func @main(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
    return %x : tensor<6x8xf32>
  }
}

// -----

// expected-error @+1 {{braid-partition: the program declares several meshes; annotate over one}}
module {
  braid.mesh @a(tp = 2)
  braid.mesh @b(tp = 2)
  func.func @main(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
    return %x : tensor<6x8xf32>
  }
}

// -----

braid.mesh @world(tp = 2)
// expected-error @+1 {{braid-partition: the sharding of argument 0 names axis 'dp', which mesh @world does not have}}
func.func @main(%x: tensor<6x8xf32> {braid.sharding = #braid.sharding<@world, [["dp"], []]>}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

// -----

braid.mesh @world(tp = 2)
// expected-error @+1 {{braid-partition: the sharding of argument 0 names mesh @other, but the program is partitioned over @world}}
func.func @main(%x: tensor<6x8xf32> {braid.sharding = #braid.sharding<@other, [["tp"], []]>}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

// -----

braid.mesh @world(tp = 2)
// expected-error @+1 {{braid-partition: the sharding of argument 0 has 1 entries for a value of type 'tensor<6x8xf32>'}}
func.func @main(%x: tensor<6x8xf32> {braid.sharding = #braid.sharding<@world, [["tp"]]>}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

// -----

braid.mesh @world(tp = 2)
// expected-error @+1 {{braid-partition: the sharding of argument 0 asks for a partial sum; only how dimensions are split can be requested}}
func.func @main(%x: tensor<6x8xf32> {braid.sharding = #braid.sharding<@world, [[], []], partial = ["tp"]>}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

// -----

braid.mesh @world(dp = 2, tp = 2)
// expected-error @+1 {{braid-partition: the sharding of argument 0 lists axis 'dp' after a later mesh axis; list a dimension's axes in mesh order}}
func.func @main(%x: tensor<8x8xf32> {braid.sharding = #braid.sharding<@world, [["tp", "dp"], []]>}) -> tensor<8x8xf32> {
  return %x : tensor<8x8xf32>
}

// -----

braid.mesh @world(tp = 4)
// expected-error @+1 {{braid-partition: the sharding of argument 0: dimension 0 (size 6) does not divide over 4 ranks}}
func.func @main(%x: tensor<6x8xf32> {braid.sharding = #braid.sharding<@world, [["tp"], []]>}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

// -----

braid.mesh @world(tp = 2)
func.func @main(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  // expected-error @+1 {{'braid.softmax' op cannot compute dimension 1 of its result split over mesh axis 'tp': the op needs that dimension whole}}
  %s = braid.softmax %x dim 1 {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>} : tensor<6x8xf32>
  return %s : tensor<6x8xf32>
}

// -----

braid.mesh @world(tp = 4)
func.func @main(%x: tensor<2x8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'braid.reshape' op cannot compute dimension 0 of its result split over mesh axis 'tp': its factor of size 2 does not divide over 4 ranks}}
  %r = braid.reshape %x {braid.sharding = #braid.sharding<@world, [["tp"]]>} : tensor<2x8xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

braid.mesh @world(tp = 2)
func.func @main(%x: tensor<6x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{braid-partition: a sharding annotation needs an op with one result}}
  %a, %b = braid.split %x dim 0 {braid.sharding = #braid.sharding<@world, [["tp"], []]>} : tensor<6x8xf32> -> tensor<3x8xf32>, tensor<3x8xf32>
  return %a : tensor<3x8xf32>
}

// -----

braid.mesh @world(tp = 2)
func.func @main(%x: tensor<6x8xf32> {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>}) -> tensor<6x8xf32> {
  // expected-error @+1 {{'braid.async' op braid-partition does not handle regions yet (partition first, then overlap)}}
  %f = braid.async on "comm" {
    %y = braid.relu %x : tensor<6x8xf32>
    braid.yield %y : tensor<6x8xf32>
  } : !braid.future<tensor<6x8xf32>>
  %z = braid.await %f : tensor<6x8xf32>
  return %z : tensor<6x8xf32>
}

// -----

braid.mesh @world(tp = 2)
// expected-error @+1 {{sharding uses mesh axis 'tp' twice}}
func.func @main(%x: tensor<6x8xf32> {braid.sharding = #braid.sharding<@world, [["tp"], ["tp"]]>}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

// -----

braid.mesh @world(tp = 2)
// expected-error @+1 {{sharding entry 0 must be a list of mesh axes, got "tp"}}
func.func @main(%x: tensor<6x8xf32> {braid.sharding = #braid.sharding<@world, ["tp", []]>}) -> tensor<6x8xf32> {
  return %x : tensor<6x8xf32>
}

// -----

// Slots that this rank's block of tokens filled (the dispatch of %t, split
// by tokens) are in that block's order; the dispatch of %x (features
// split, all tokens) fills slots in the order of all tokens. Pairing them
// slot by slot would add different tokens' rows (a ZeRO-3 Mixtral step once
// did this in its expert weights' gradients, silently).
braid.mesh @world(dp = 2)
func.func @main(%x: tensor<8x16xf32> {braid.sharding = #braid.sharding<@world, [[], ["dp"]]>}, %t: tensor<8x16xf32> {braid.sharding = #braid.sharding<@world, [["dp"], []]>}, %e: tensor<8x1xi64>, %w: tensor<8x1xf32>) -> tensor<8x16xf32> {
  %a = braid.moe_dispatch %x, %e : (tensor<8x16xf32>, tensor<8x1xi64>) -> tensor<4x8x16xf32>
  %b = braid.moe_dispatch %t, %e : (tensor<8x16xf32>, tensor<8x1xi64>) -> tensor<4x8x16xf32>
  // expected-error @+1 {{braid-partition: operand #1 holds the expert slots that this rank's block of tokens filled on axis 'dp' and operand #0 slots that were not routed the same way (a dispatch of all tokens, or other expert choices); their slots are in different orders}}
  %c = braid.add %a, %b : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %y = braid.moe_combine %c, %e, %w : (tensor<4x8x16xf32>, tensor<8x1xi64>, tensor<8x1xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
