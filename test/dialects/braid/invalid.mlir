// RUN: braid-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the braid dialect, one case per message. Ops whose result
// types are inferred (InferTypeOpAdaptor) report the specific message at the
// op and then MLIR's generic "failed to infer returned types".

//===----------------------------------------------------------------------===//
// braid.mesh
//===----------------------------------------------------------------------===//

// A mesh without axes (only reachable in generic form).
// expected-error @+1 {{'braid.mesh' op needs at least one axis}}
"braid.mesh"() <{sym_name = "m", axis_names = [], shape = array<i64>}> : () -> ()

// -----

// Axis names and sizes of different lengths (only reachable in generic form).
// expected-error @+1 {{'braid.mesh' op has 2 axis names but 1 sizes}}
"braid.mesh"() <{sym_name = "m", axis_names = ["dp", "tp"], shape = array<i64: 2>}> : () -> ()

// -----

// An empty axis name.
// expected-error @+1 {{'braid.mesh' op has an axis with an empty name}}
braid.mesh @m("" = 2)

// -----

// A duplicated axis name.
// expected-error @+1 {{'braid.mesh' op has axis 'tp' twice}}
braid.mesh @m(tp = 2, tp = 4)

// -----

// A zero-sized axis.
// expected-error @+1 {{'braid.mesh' op axis 'tp' has size 0; sizes must be positive}}
braid.mesh @m(dp = 2, tp = 0)

// -----

//===----------------------------------------------------------------------===//
// braid.rank
//===----------------------------------------------------------------------===//

// rank on a mesh that is not declared.
func.func @rank_unknown_mesh() -> index {
  // expected-error @+1 {{'braid.rank' op 'nowhere' is not a braid.mesh}}
  %r = braid.rank @nowhere axis "tp"
  return %r : index
}

// -----

// rank on an axis the mesh does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @rank_unknown_axis() -> index {
  // expected-error @+1 {{'braid.rank' op mesh 'world' has no axis 'pp'}}
  %r = braid.rank @world axis "pp"
  return %r : index
}

// -----

//===----------------------------------------------------------------------===//
// braid.weight, braid.get_weight
//===----------------------------------------------------------------------===//

// A weight whose type is not a static braid tensor.
// expected-error @+1 {{'braid.weight' op attribute 'type' failed to satisfy constraint}}
braid.weight @w : tensor<4xf64>

// -----

// get_weight of an undeclared weight.
func.func @get_missing_weight() -> tensor<4xf32> {
  // expected-error @+1 {{'braid.get_weight' op 'missing' is not a braid.weight}}
  %w = braid.get_weight @missing : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

// get_weight with a type other than the declared one.
braid.weight @w : tensor<4x8xf32>
func.func @get_weight_type_mismatch() -> tensor<8x4xf32> {
  // expected-error @+1 {{'braid.get_weight' op result type 'tensor<8x4xf32>' differs from the type 'tensor<4x8xf32>' of weight 'w'}}
  %w = braid.get_weight @w : tensor<8x4xf32>
  return %w : tensor<8x4xf32>
}

// -----

// get_weight with a block but no offsets (only reachable in generic form).
braid.weight @w : tensor<4x8xf32>
func.func @get_weight_block_without_offsets() -> tensor<4x4xf32> {
  // expected-error @+1 {{'braid.get_weight' op needs both a block and its offsets, or neither}}
  %w = "braid.get_weight"() <{name = @w, block = array<i64: 4, 4>}> : () -> tensor<4x4xf32>
  return %w : tensor<4x4xf32>
}

// -----

// get_weight with a block of another rank than the weight.
braid.weight @w : tensor<4x8xf32>
func.func @get_weight_block_rank() -> tensor<4xf32> {
  // expected-error @+1 {{'braid.get_weight' op block has 1 sizes and 1 offsets for weight 'w' of rank 2}}
  %w = braid.get_weight @w block [4] at [0] : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

// A part that runs past the stored tensor.
// expected-error @+1 {{'braid.weight' op part dimension 1 (offset 160, size 64) does not fit in size 192 of 'c_attn'}}
braid.weight @"c_attn#2" part of "c_attn" [64, 192] at [0, 160] : tensor<64x64xf32>

// -----

// A part of another rank than its stored tensor.
// expected-error @+1 {{'braid.weight' op is a part of rank 2 of 'c_attn' given 1 sizes and 1 offsets}}
braid.weight @"c_attn#0" part of "c_attn" [192] at [0] : tensor<64x64xf32>

// -----

// A part without its offsets (the generic form can say that).
// expected-error @+1 {{'braid.weight' op a part needs the stored name, shape and offsets}}
"braid.weight"() <{sym_name = "p", type = tensor<4xf32>, part_of = "q", part_shape = array<i64: 8>}> : () -> ()

// -----

// get_weight with a block that runs past the weight.
braid.weight @w : tensor<4x8xf32>
func.func @get_weight_block_out_of_bounds() -> tensor<4x4xf32> {
  // expected-error @+1 {{'braid.get_weight' op block dimension 1 (offset 6, size 4) does not fit in size 8 of weight 'w'}}
  %w = braid.get_weight @w block [4, 4] at [0, 6] : tensor<4x4xf32>
  return %w : tensor<4x4xf32>
}

// -----

// get_weight with a negative block offset.
braid.weight @w : tensor<4x8xf32>
func.func @get_weight_block_negative() -> tensor<4x4xf32> {
  // expected-error @+1 {{'braid.get_weight' op block dimension 0 (offset -1, size 4) does not fit in size 4 of weight 'w'}}
  %w = braid.get_weight @w block [4, 4] at [-1, 0] : tensor<4x4xf32>
  return %w : tensor<4x4xf32>
}

// -----

// get_weight with a block that its sharding does not divide.
braid.mesh @world(tp = 4)
braid.weight @w : tensor<4x12xf32>
func.func @get_weight_block_sharding() -> tensor<4x1xf32> {
  // expected-error @+1 {{'braid.get_weight' op block dimension 1 of size 6 does not divide over 4 ranks}}
  %w = braid.get_weight @w block [4, 6] at [0, 6] sharded on @world [[], ["tp"]] : tensor<4x1xf32>
  return %w : tensor<4x1xf32>
}

// -----

// get_weight whose result type is not the block's.
braid.weight @w : tensor<4x8xf32>
func.func @get_weight_block_type() -> tensor<4x8xf32> {
  // expected-error @+1 {{'braid.get_weight' op result type 'tensor<4x8xf32>' differs from the block 'tensor<4x4xf32>' of weight 'w'}}
  %w = braid.get_weight @w block [4, 4] at [0, 4] : tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}

// -----

// get_weight whose result type is not this rank's slice of the block.
braid.mesh @world(tp = 2)
braid.weight @w : tensor<4x8xf32>
func.func @get_weight_sharded_block_type() -> tensor<4x4xf32> {
  // expected-error @+1 {{'braid.get_weight' op result type 'tensor<4x4xf32>' differs from this rank's slice of the block 'tensor<4x4xf32>' of weight 'w'}}
  %w = braid.get_weight @w block [4, 4] at [0, 4] sharded on @world [[], ["tp"]] : tensor<4x4xf32>
  return %w : tensor<4x4xf32>
}

// -----

// set_weight of a shard whose type is not this rank's slice.
braid.mesh @world(tp = 2)
braid.weight @w state : tensor<4x8xf32>
func.func @set_weight_sharded_type(%v: tensor<4x8xf32>) {
  // expected-error @+1 {{'braid.set_weight' op value of type 'tensor<4x8xf32>' for this rank's slice of weight 'w' of type 'tensor<4x8xf32>'}}
  braid.set_weight @w, %v sharded on @world [[], ["tp"]] : tensor<4x8xf32>
  return
}

// -----

// set_weight sharded over an axis the mesh does not have.
braid.mesh @world(tp = 2)
braid.weight @w state : tensor<4x8xf32>
func.func @set_weight_sharded_axis(%v: tensor<4x4xf32>) {
  // expected-error @+1 {{'braid.set_weight' op sharding entry 1 must list axes of mesh 'world'}}
  braid.set_weight @w, %v sharded on @world [[], ["dp"]] : tensor<4x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// braid.async, braid.await, braid.yield
//===----------------------------------------------------------------------===//

// async with an empty stream name.
func.func @async_no_stream(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'braid.async' op needs a stream name}}
  %f = braid.async on "" {
    braid.yield %a : tensor<4xf32>
  } : !braid.future<tensor<4xf32>>
  %y = braid.await %f : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// async without results (only reachable in generic form).
func.func @async_no_results(%a: tensor<4xf32>) {
  // expected-error @+1 {{'braid.async' op must return at least one future}}
  "braid.async"() <{stream = "s"}> ({
    braid.yield %a : tensor<4xf32>
  }) : () -> ()
  return
}

// -----

// async whose body does not end with braid.yield.
func.func @async_no_yield(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'braid.async' op body must end with braid.yield}}
  %f = braid.async on "s" {
    %n = braid.neg %a : tensor<4xf32>
  } : !braid.future<tensor<4xf32>>
  %y = braid.await %f : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// async yielding more values than it returns futures.
func.func @async_yield_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'braid.async' op yields 2 values but returns 1 futures}}
  %f = braid.async on "s" {
    braid.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  } : !braid.future<tensor<4xf32>>
  %y = braid.await %f : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// async whose future type differs from the yielded value's type.
func.func @async_yield_type(%a: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.async' op future #0 has type '!braid.future<tensor<8xf32>>' but the body yields 'tensor<4xf32>'}}
  %f = braid.async on "s" {
    braid.yield %a : tensor<4xf32>
  } : !braid.future<tensor<8xf32>>
  %y = braid.await %f : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// await with a result type that the future does not wrap (generic form: the
// custom form derives the future type from the result type).
func.func @await_type(%f: !braid.future<tensor<4xf32>>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.await' op failed to verify that future wraps the result type}}
  %y = "braid.await"(%f) : (!braid.future<tensor<4xf32>>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// yield outside of an async.
func.func @yield_outside(%a: tensor<4xf32>) {
  // expected-error @+1 {{'braid.yield' op expects parent op 'braid.async'}}
  braid.yield %a : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// ODS type constraints
//===----------------------------------------------------------------------===//

// A dynamically shaped operand.
func.func @dynamic_operand(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'braid.neg' op operand #0 must be statically shaped tensor of}}
  %y = braid.neg %a : tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// An f64 element type.
func.func @f64_operand(%a: tensor<4xf64>) -> tensor<4xf64> {
  // expected-error @+1 {{'braid.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %y = braid.exp %a : tensor<4xf64>
  return %y : tensor<4xf64>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise: binary ops, compare, select, cast
//===----------------------------------------------------------------------===//

// Binary op on different element types.
func.func @add_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'braid.add' op failed to infer returned types}}
  %y = braid.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Binary op on shapes that do not broadcast.
func.func @mul_no_broadcast(%a: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{operand shapes [4, 8] and [4] do not broadcast}}
  // expected-error @+1 {{'braid.mul' op failed to infer returned types}}
  %y = braid.mul %a, %b : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Binary op whose declared result differs from the broadcast shape.
func.func @sub_wrong_result(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+2 {{'braid.sub' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error @+1 {{'braid.sub' op failed to infer returned types}}
  %y = braid.sub %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// compare on shapes that do not broadcast.
func.func @compare_no_broadcast(%a: tensor<4xi64>, %b: tensor<3xi64>) -> tensor<4xi1> {
  // expected-error @+2 {{operand shapes [4] and [3] do not broadcast}}
  // expected-error @+1 {{'braid.compare' op failed to infer returned types}}
  %m = braid.compare lt, %a, %b : (tensor<4xi64>, tensor<3xi64>) -> tensor<4xi1>
  return %m : tensor<4xi1>
}

// -----

// select whose condition does not broadcast with the values.
func.func @select_condition(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{condition shape [3] does not broadcast with value shape [4]}}
  // expected-error @+1 {{'braid.select' op failed to infer returned types}}
  %y = braid.select %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// cast that changes the shape.
func.func @cast_shape(%a: tensor<4x8xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{'braid.cast' op changes the shape from [4, 8] to [8, 4]; a cast changes only the element type}}
  %y = braid.cast %a : tensor<4x8xf32> -> tensor<8x4xbf16>
  return %y : tensor<8x4xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// braid.matmul
//===----------------------------------------------------------------------===//

// matmul of a vector.
func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{operands must be at least 2-D, got ranks 1 and 2}}
  // expected-error @+1 {{'braid.matmul' op failed to infer returned types}}
  %y = braid.matmul %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// matmul of different element types.
func.func @matmul_element_types(%a: tensor<2x8xf32>, %b: tensor<8x4xf16>) -> tensor<2x4xf32> {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f16'}}
  // expected-error @+1 {{'braid.matmul' op failed to infer returned types}}
  %y = braid.matmul %a, %b : (tensor<2x8xf32>, tensor<8x4xf16>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// matmul whose contraction sizes differ.
func.func @matmul_contraction(%a: tensor<2x8xf32>, %b: tensor<6x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+2 {{contraction sizes differ: lhs has 8, rhs has 6}}
  // expected-error @+1 {{'braid.matmul' op failed to infer returned types}}
  %y = braid.matmul %a, %b : (tensor<2x8xf32>, tensor<6x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// matmul whose batch dimensions do not broadcast.
func.func @matmul_batch(%a: tensor<3x2x8xf32>, %b: tensor<4x8x4xf32>) -> tensor<3x2x4xf32> {
  // expected-error @+2 {{batch dimensions [3] and [4] do not broadcast}}
  // expected-error @+1 {{'braid.matmul' op failed to infer returned types}}
  %y = braid.matmul %a, %b : (tensor<3x2x8xf32>, tensor<4x8x4xf32>) -> tensor<3x2x4xf32>
  return %y : tensor<3x2x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Reductions, softmax
//===----------------------------------------------------------------------===//

// Reduction over a dimension the input does not have.
func.func @reduce_out_of_range(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{reduced dimension 2 is out of range for rank 2}}
  // expected-error @+1 {{'braid.reduce_sum' op failed to infer returned types}}
  %y = braid.reduce_sum %a dims [2] : tensor<4x8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Reduction over a duplicated dimension.
func.func @reduce_twice(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{dimension 1 is reduced twice}}
  // expected-error @+1 {{'braid.reduce_mean' op failed to infer returned types}}
  %y = braid.reduce_mean %a dims [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// softmax along a dimension the input does not have.
func.func @softmax_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'braid.softmax' op dimension 2 is out of range for rank 2}}
  %y = braid.softmax %a dim 2 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// braid.layer_norm, braid.rms_norm
//===----------------------------------------------------------------------===//

// layer_norm from an axis the input does not have.
func.func @layer_norm_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'braid.layer_norm' op axis 2 is out of range for rank 2}}
  %y = braid.layer_norm %x, %g axis 2 eps 1.0e-05 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// layer_norm whose result type differs from the input type.
func.func @layer_norm_result(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf16> {
  // expected-error @+1 {{'braid.layer_norm' op result type 'tensor<2x8xf16>' differs from input type 'tensor<2x8xf32>'}}
  %y = braid.layer_norm %x, %g axis 1 eps 1.0e-05 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf16>
  return %y : tensor<2x8xf16>
}

// -----

// layer_norm whose bias does not have the normalized shape.
func.func @layer_norm_bias_shape(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'braid.layer_norm' op beta shape [2, 8] must equal the normalized dimensions [8]}}
  %y = braid.layer_norm %x, %g, %b axis 1 eps 1.0e-05 : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// layer_norm whose scale has another element type.
func.func @layer_norm_scale_type(%x: tensor<2x8xf32>, %g: tensor<8xbf16>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'braid.layer_norm' op gamma element type 'bf16' differs from input element type 'f32'}}
  %y = braid.layer_norm %x, %g axis 1 eps 1.0e-05 : (tensor<2x8xf32>, tensor<8xbf16>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// rms_norm whose scale covers only the last of the normalized dimensions.
func.func @rms_norm_scale_shape(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'braid.rms_norm' op gamma shape [8] must equal the normalized dimensions [4, 8]}}
  %y = braid.rms_norm %x, %g axis 1 eps 1.0e-06 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// braid.rotary
//===----------------------------------------------------------------------===//

// rotary of an odd last dimension.
func.func @rotary_odd(%x: tensor<4x7xf32>, %c: tensor<4x7xf32>, %s: tensor<4x7xf32>) -> tensor<4x7xf32> {
  // expected-error @+1 {{'braid.rotary' op last dimension must be even to rotate pairs, got [4, 7]}}
  %y = braid.rotary %x, %c, %s : (tensor<4x7xf32>, tensor<4x7xf32>, tensor<4x7xf32>) -> tensor<4x7xf32>
  return %y : tensor<4x7xf32>
}

// -----

// rotary whose result type differs from the input type.
func.func @rotary_result(%x: tensor<4x8xf32>, %c: tensor<4x8xf32>, %s: tensor<4x8xf32>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'braid.rotary' op result type 'tensor<4x8xf16>' differs from input type 'tensor<4x8xf32>'}}
  %y = braid.rotary %x, %c, %s : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

// rotary whose sin table has another element type.
func.func @rotary_table_type(%x: tensor<4x8xf32>, %c: tensor<4x8xf32>, %s: tensor<4x8xf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'braid.rotary' op sin element type 'f16' differs from input element type 'f32'}}
  %y = braid.rotary %x, %c, %s : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// rotary whose cos table does not broadcast to the input.
func.func @rotary_table_broadcast(%x: tensor<2x4x8xf32>, %c: tensor<3x8xf32>, %s: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'braid.rotary' op cos shape [3, 8] must broadcast to the input shape [2, 4, 8] with the same last dimension}}
  %y = braid.rotary %x, %c, %s : (tensor<2x4x8xf32>, tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// rotary whose cos table broadcasts along the rotated dimension.
func.func @rotary_table_last_dim(%x: tensor<4x8xf32>, %c: tensor<4x1xf32>, %s: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'braid.rotary' op cos shape [4, 1] must broadcast to the input shape [4, 8] with the same last dimension}}
  %y = braid.rotary %x, %c, %s : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// braid.gather, braid.reshape, braid.transpose
//===----------------------------------------------------------------------===//

// gather along an axis the input does not have.
func.func @gather_axis(%t: tensor<16x4xf32>, %i: tensor<3xi64>) -> tensor<16x4xf32> {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'braid.gather' op failed to infer returned types}}
  %y = braid.gather %t[%i] axis 2 : (tensor<16x4xf32>, tensor<3xi64>) -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// braid.scatter_add
//===----------------------------------------------------------------------===//

// scatter_add whose updates and result element types differ.
func.func @scatter_add_element_type(%u: tensor<3x4xf32>, %i: tensor<3xi64>) -> tensor<16x4xbf16> {
  // expected-error @+1 {{'braid.scatter_add' op updates element type 'f32' differs from result element type 'bf16'}}
  %y = braid.scatter_add %u[%i] axis 0 : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<16x4xbf16>
  return %y : tensor<16x4xbf16>
}

// -----

// scatter_add along an axis the result does not have.
func.func @scatter_add_axis(%u: tensor<3x4xf32>, %i: tensor<3xi64>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'braid.scatter_add' op axis 2 is out of range for the result rank 2}}
  %y = braid.scatter_add %u[%i] axis 2 : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}

// -----

// scatter_add whose updates are not what gathering from the result would give.
func.func @scatter_add_updates_shape(%u: tensor<2x3x5xf32>, %i: tensor<2x3xi64>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'braid.scatter_add' op updates shape [2, 3, 5] must be [2, 3, 4] (result shape [16, 4] with dimension 0 replaced by the indices shape [2, 3])}}
  %y = braid.scatter_add %u[%i] axis 0 : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}

// -----

// scatter_add of integers: sums of float slices only.
func.func @scatter_add_integer(%u: tensor<3x4xi32>, %i: tensor<3xi64>) -> tensor<16x4xi32> {
  // expected-error @+1 {{'braid.scatter_add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<3x4xi32>'}}
  %y = braid.scatter_add %u[%i] axis 0 : (tensor<3x4xi32>, tensor<3xi64>) -> tensor<16x4xi32>
  return %y : tensor<16x4xi32>
}

// -----

// scatter_add with float indices.
func.func @scatter_add_float_indices(%u: tensor<3x4xf32>, %i: tensor<3xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'braid.scatter_add' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values, but got 'tensor<3xf32>'}}
  %y = braid.scatter_add %u[%i] axis 0 : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}

// -----

// reshape that changes the number of elements.
func.func @reshape_count(%a: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'braid.reshape' op cannot reshape [4, 8] (32 elements) into [4, 4] (16 elements)}}
  %y = braid.reshape %a : tensor<4x8xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// reshape that changes the element type.
func.func @reshape_element_type(%a: tensor<4x8xf32>) -> tensor<32xi32> {
  // expected-error @+1 {{'braid.reshape' op changes the element type from 'f32' to 'i32'}}
  %y = braid.reshape %a : tensor<4x8xf32> -> tensor<32xi32>
  return %y : tensor<32xi32>
}

// -----

// transpose with a permutation of the wrong length.
func.func @transpose_length(%a: tensor<2x4x8xf32>) -> tensor<4x2x8xf32> {
  // expected-error @+2 {{permutation has 2 entries for rank 3}}
  // expected-error @+1 {{'braid.transpose' op failed to infer returned types}}
  %y = braid.transpose %a [1, 0] : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
  return %y : tensor<4x2x8xf32>
}

// -----

// transpose with a repeated entry.
func.func @transpose_repeat(%a: tensor<2x4x8xf32>) -> tensor<4x4x8xf32> {
  // expected-error @+2 {{permutation [1, 1, 2] is not a permutation of 0..2}}
  // expected-error @+1 {{'braid.transpose' op failed to infer returned types}}
  %y = braid.transpose %a [1, 1, 2] : tensor<2x4x8xf32> -> tensor<4x4x8xf32>
  return %y : tensor<4x4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// braid.slice
//===----------------------------------------------------------------------===//

// slice with fewer offsets than the input has dimensions.
func.func @slice_counts(%a: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'braid.slice' op expects 2 offsets, sizes and strides, got 1, 2 and 2}}
  %y = braid.slice %a offsets [0] sizes [2, 8] strides [1, 1] : tensor<4x8xf32> -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// slice with more offset values than dynamic offsets (only reachable in
// generic form).
func.func @slice_dynamic_count(%a: tensor<4x8xf32>, %o: index) -> tensor<2x8xf32> {
  // expected-error @+1 {{'braid.slice' op has 0 dynamic offsets but 1 offset values}}
  %y = "braid.slice"(%a, %o) <{static_offsets = array<i64: 0, 0>, static_sizes = array<i64: 2, 8>, static_strides = array<i64: 1, 1>}> : (tensor<4x8xf32>, index) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// slice whose result shape differs from the sizes.
func.func @slice_result_shape(%a: tensor<4x8xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'braid.slice' op result shape [2, 4] differs from the sizes [2, 8]}}
  %y = braid.slice %a offsets [0, 0] sizes [2, 8] strides [1, 1] : tensor<4x8xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// slice whose result has another element type.
func.func @slice_element_type(%a: tensor<4x8xf32>) -> tensor<2x8xf16> {
  // expected-error @+1 {{'braid.slice' op changes the element type}}
  %y = braid.slice %a offsets [0, 0] sizes [2, 8] strides [1, 1] : tensor<4x8xf32> -> tensor<2x8xf16>
  return %y : tensor<2x8xf16>
}

// -----

// slice with a zero stride.
func.func @slice_stride(%a: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'braid.slice' op stride 0 of dimension 0 is not positive}}
  %y = braid.slice %a offsets [0, 0] sizes [2, 8] strides [0, 1] : tensor<4x8xf32> -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// slice that runs past the end of a dimension.
func.func @slice_out_of_bounds(%a: tensor<4x8xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'braid.slice' op slice of dimension 1 (offset 6, size 4, stride 1) exceeds its size 8}}
  %y = braid.slice %a offsets [0, 6] sizes [2, 4] strides [1, 1] : tensor<4x8xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// slice whose strided extent runs past the end of a dimension.
func.func @slice_out_of_bounds_strided(%a: tensor<4x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'braid.slice' op slice of dimension 0 (offset 0, size 3, stride 2) exceeds its size 4}}
  %y = braid.slice %a offsets [0, 0] sizes [3, 8] strides [2, 1] : tensor<4x8xf32> -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// braid.concat, braid.split, braid.broadcast_to, braid.constant
//===----------------------------------------------------------------------===//

// concat of nothing.
func.func @concat_empty() -> tensor<4xf32> {
  // expected-error @+2 {{expects at least one input}}
  // expected-error @+1 {{'braid.concat' op failed to infer returned types}}
  %y = braid.concat dim 0 : () -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// concat along a dimension the inputs do not have.
func.func @concat_dim(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{dimension 2 is out of range for rank 2}}
  // expected-error @+1 {{'braid.concat' op failed to infer returned types}}
  %y = braid.concat %a, %b dim 2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// concat of inputs with different element types.
func.func @concat_element_type(%a: tensor<2x4xf32>, %b: tensor<2x4xf16>) -> tensor<2x8xf32> {
  // expected-error @+2 {{input #1 has type 'tensor<2x4xf16>', incompatible with input #0 of type 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'braid.concat' op failed to infer returned types}}
  %y = braid.concat %a, %b dim 1 : (tensor<2x4xf32>, tensor<2x4xf16>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// concat of inputs that differ outside the concatenated dimension.
func.func @concat_other_dim(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{input #1 has size 3 in dimension 0 where input #0 has 2}}
  // expected-error @+1 {{'braid.concat' op failed to infer returned types}}
  %y = braid.concat %a, %b dim 1 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// split along a dimension the input does not have.
func.func @split_dim(%a: tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  // expected-error @+1 {{'braid.split' op dimension 2 is out of range for rank 2}}
  %y:2 = braid.split %a dim 2 : tensor<2x8xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
  return %y#0, %y#1 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// split into nothing (only reachable in generic form).
func.func @split_no_results(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{'braid.split' op expects at least one result}}
  "braid.split"(%a) <{dim = 1 : i64}> : (tensor<2x8xf32>) -> ()
  return
}

// -----

// split into a piece of another element type.
func.func @split_piece_type(%a: tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf16>) {
  // expected-error @+1 {{'braid.split' op result #1 has type 'tensor<2x4xf16>', incompatible with input 'tensor<2x8xf32>'}}
  %y:2 = braid.split %a dim 1 : tensor<2x8xf32> -> tensor<2x4xf32>, tensor<2x4xf16>
  return %y#0, %y#1 : tensor<2x4xf32>, tensor<2x4xf16>
}

// -----

// split into a piece that differs outside the split dimension.
func.func @split_other_dim(%a: tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<1x4xf32>) {
  // expected-error @+1 {{'braid.split' op result #1 has size 1 in dimension 0 where the input has 2}}
  %y:2 = braid.split %a dim 1 : tensor<2x8xf32> -> tensor<2x4xf32>, tensor<1x4xf32>
  return %y#0, %y#1 : tensor<2x4xf32>, tensor<1x4xf32>
}

// -----

// split into pieces that do not add up to the input.
func.func @split_sum(%a: tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x2xf32>) {
  // expected-error @+1 {{'braid.split' op pieces add up to 6 along dimension 1 but the input has 8}}
  %y:2 = braid.split %a dim 1 : tensor<2x8xf32> -> tensor<2x4xf32>, tensor<2x2xf32>
  return %y#0, %y#1 : tensor<2x4xf32>, tensor<2x2xf32>
}

// -----

// broadcast_to that changes the element type.
func.func @broadcast_to_element_type(%a: tensor<4xf32>) -> tensor<2x4xf16> {
  // expected-error @+1 {{'braid.broadcast_to' op changes the element type from 'f32' to 'f16'}}
  %y = braid.broadcast_to %a : tensor<4xf32> -> tensor<2x4xf16>
  return %y : tensor<2x4xf16>
}

// -----

// broadcast_to a shape the input does not broadcast to.
func.func @broadcast_to_shape(%a: tensor<3x1xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'braid.broadcast_to' op input shape [3, 1] does not broadcast to [2, 4, 8]}}
  %y = braid.broadcast_to %a : tensor<3x1xf32> -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// braid.attention, braid.attention_partial
//===----------------------------------------------------------------------===//

// attention on 3-D operands.
func.func @attention_rank(%q: tensor<2x8x64xf32>, %k: tensor<2x8x64xf32>, %v: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+2 {{expects 4-D query [B, H, Sq, D], key [B, Hkv, Sk, D] and value [B, Hkv, Sk, Dv]}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %o = braid.attention %q, %k, %v scale 0.125 : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %o : tensor<2x8x64xf32>
}

// -----

// attention on operands of different element types.
func.func @attention_element_types(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf16>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+2 {{query, key and value have different element types}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %o = braid.attention %q, %k, %v scale 0.25 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// attention whose operands have different batch sizes.
func.func @attention_batch(%q: tensor<1x2x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+2 {{batch sizes differ: query 1, key 2, value 2}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %o = braid.attention %q, %k, %v scale 0.25 : (tensor<1x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// attention whose key and value have different sequence lengths.
func.func @attention_key_value(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x4x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+2 {{key [1, 2, 8, 16] and value [1, 2, 4, 16] differ in heads or sequence length}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %o = braid.attention %q, %k, %v scale 0.25 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// attention whose query heads are not a multiple of the key/value heads.
func.func @attention_heads(%q: tensor<1x6x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x6x8x16xf32> {
  // expected-error @+2 {{query heads (6) are not a multiple of key/value heads (4)}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %o = braid.attention %q, %k, %v scale 0.25 : (tensor<1x6x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x6x8x16xf32>
  return %o : tensor<1x6x8x16xf32>
}

// -----

// attention whose query and key head sizes differ.
func.func @attention_head_size(%q: tensor<1x2x8x32xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+2 {{query head size 32 differs from key head size 16}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %o = braid.attention %q, %k, %v scale 0.25 : (tensor<1x2x8x32xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// attention with an integer mask that is not i1.
func.func @attention_mask_type(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %m: tensor<8x8xi32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+2 {{mask must be i1 or 'f32', got 'i32'}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %o = braid.attention %q, %k, %v mask %m scale 0.25 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8x8xi32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// attention with a mask that does not broadcast to the scores.
func.func @attention_mask_shape(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>, %m: tensor<8x8xi1>) -> tensor<1x2x8x16xf32> {
  // expected-error @+2 {{mask shape [8, 8] does not broadcast to the scores [1, 2, 8, 4]}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %o = braid.attention %q, %k, %v mask %m scale 0.25 : (tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<8x8xi1>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// attention with a causal offset but no `causal`.
func.func @attention_offset(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %off: index) -> tensor<1x2x8x16xf32> {
  // expected-error @+2 {{an offset needs `causal`}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %o = braid.attention %q, %k, %v offset %off scale 0.25 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, index) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// attention_partial shares the checks of attention.
func.func @attention_partial_heads(%q: tensor<1x3x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x3x8x16xf32>, tensor<1x3x8xf32>) {
  // expected-error @+2 {{query heads (3) are not a multiple of key/value heads (2)}}
  // expected-error @+1 {{'braid.attention_partial' op failed to infer returned types}}
  %o, %l = braid.attention_partial %q, %k, %v scale 0.25 : (tensor<1x3x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x3x8x16xf32>, tensor<1x3x8xf32>)
  return %o, %l : tensor<1x3x8x16xf32>, tensor<1x3x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// braid.attention_merge
//===----------------------------------------------------------------------===//

// attention_merge with more outputs than log-sum-exps.
func.func @attention_merge_counts(%o0: tensor<1x2x8x16xf32>, %o1: tensor<1x2x8x16xf32>, %l0: tensor<1x2x8xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) {
  // expected-error @+2 {{expects as many partial outputs as log-sum-exps, at least one; got 2 and 1}}
  // expected-error @+1 {{'braid.attention_merge' op failed to infer returned types}}
  %o, %l = braid.attention_merge %o0, %o1 lse %l0 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %o, %l : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
}

// -----

// attention_merge of nothing.
func.func @attention_merge_empty() -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) {
  // expected-error @+2 {{expects as many partial outputs as log-sum-exps, at least one; got 0 and 0}}
  // expected-error @+1 {{'braid.attention_merge' op failed to infer returned types}}
  %o, %l = braid.attention_merge lse : () -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %o, %l : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
}

// -----

// attention_merge whose log-sum-exps do not match the outputs.
func.func @attention_merge_shapes(%o0: tensor<1x2x8x16xf32>, %l0: tensor<1x2x4xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x4xf32>) {
  // expected-error @+2 {{expects outputs [B, H, S, Dv] and log-sum-exps [B, H, S], got [1, 2, 8, 16] and [1, 2, 4]}}
  // expected-error @+1 {{'braid.attention_merge' op failed to infer returned types}}
  %o, %l = braid.attention_merge %o0 lse %l0 : (tensor<1x2x8x16xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x4xf32>)
  return %o, %l : tensor<1x2x8x16xf32>, tensor<1x2x4xf32>
}

// -----

// attention_merge of partial outputs of different types.
func.func @attention_merge_output_types(%o0: tensor<1x2x8x16xf32>, %o1: tensor<1x2x8x16xf16>, %l0: tensor<1x2x8xf32>, %l1: tensor<1x2x8xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) {
  // expected-error @+2 {{partial outputs have different types: 'tensor<1x2x8x16xf32>' and 'tensor<1x2x8x16xf16>'}}
  // expected-error @+1 {{'braid.attention_merge' op failed to infer returned types}}
  %o, %l = braid.attention_merge %o0, %o1 lse %l0, %l1 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf16>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %o, %l : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
}

// -----

// attention_merge of log-sum-exps of different types.
func.func @attention_merge_lse_types(%o0: tensor<1x2x8x16xf32>, %o1: tensor<1x2x8x16xf32>, %l0: tensor<1x2x8xf32>, %l1: tensor<1x2x4xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) {
  // expected-error @+2 {{log-sum-exps have different types: 'tensor<1x2x8xf32>' and 'tensor<1x2x4xf32>'}}
  // expected-error @+1 {{'braid.attention_merge' op failed to infer returned types}}
  %o, %l = braid.attention_merge %o0, %o1 lse %l0, %l1 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %o, %l : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

// router_topk of 3-D logits.
func.func @router_rank(%x: tensor<2x16x8xf32>) -> (tensor<2x16x2xf32>, tensor<2x16x2xi64>) {
  // expected-error @+2 {{expects logits [tokens, experts], got [2, 16, 8]}}
  // expected-error @+1 {{'braid.router_topk' op failed to infer returned types}}
  %w, %e = braid.router_topk %x k 2 : (tensor<2x16x8xf32>) -> (tensor<2x16x2xf32>, tensor<2x16x2xi64>)
  return %w, %e : tensor<2x16x2xf32>, tensor<2x16x2xi64>
}

// -----

// router_topk with k = 0.
func.func @router_k_zero(%x: tensor<16x8xf32>) -> (tensor<16x0xf32>, tensor<16x0xi64>) {
  // expected-error @+2 {{k = 0 must be in [1, 8]}}
  // expected-error @+1 {{'braid.router_topk' op failed to infer returned types}}
  %w, %e = braid.router_topk %x k 0 : (tensor<16x8xf32>) -> (tensor<16x0xf32>, tensor<16x0xi64>)
  return %w, %e : tensor<16x0xf32>, tensor<16x0xi64>
}

// -----

// moe_dispatch with a 2-D result.
func.func @dispatch_rank(%x: tensor<16x64xf32>, %e: tensor<16x2xi64>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'braid.moe_dispatch' op expects input [T, H], experts [T, k] and result [E, C, H]}}
  %d = braid.moe_dispatch %x, %e : (tensor<16x64xf32>, tensor<16x2xi64>) -> tensor<8x64xf32>
  return %d : tensor<8x64xf32>
}

// -----

// moe_dispatch whose experts cover another number of tokens.
func.func @dispatch_tokens(%x: tensor<16x64xf32>, %e: tensor<8x2xi64>) -> tensor<8x8x64xf32> {
  // expected-error @+1 {{'braid.moe_dispatch' op input has 16 tokens but experts has 8}}
  %d = braid.moe_dispatch %x, %e : (tensor<16x64xf32>, tensor<8x2xi64>) -> tensor<8x8x64xf32>
  return %d : tensor<8x8x64xf32>
}

// -----

// moe_dispatch whose result rows are not the input rows.
func.func @dispatch_rows(%x: tensor<16x64xf32>, %e: tensor<16x2xi64>) -> tensor<8x8x32xf32> {
  // expected-error @+1 {{'braid.moe_dispatch' op result rows of 32 elements cannot hold input rows of 64}}
  %d = braid.moe_dispatch %x, %e : (tensor<16x64xf32>, tensor<16x2xi64>) -> tensor<8x8x32xf32>
  return %d : tensor<8x8x32xf32>
}

// -----

// grouped_matmul of 2-D operands.
func.func @grouped_matmul_rank(%x: tensor<8x64xf32>, %w: tensor<8x64x128xf32>) -> tensor<8x8x128xf32> {
  // expected-error @+2 {{expects input [E, C, K] and weight [E, K, N], got ranks 2 and 3}}
  // expected-error @+1 {{'braid.grouped_matmul' op failed to infer returned types}}
  %y = braid.grouped_matmul %x, %w : (tensor<8x64xf32>, tensor<8x64x128xf32>) -> tensor<8x8x128xf32>
  return %y : tensor<8x8x128xf32>
}

// -----

// grouped_matmul with different expert counts.
func.func @grouped_matmul_experts(%x: tensor<8x8x64xf32>, %w: tensor<4x64x128xf32>) -> tensor<8x8x128xf32> {
  // expected-error @+2 {{input has 8 experts but weight has 4}}
  // expected-error @+1 {{'braid.grouped_matmul' op failed to infer returned types}}
  %y = braid.grouped_matmul %x, %w : (tensor<8x8x64xf32>, tensor<4x64x128xf32>) -> tensor<8x8x128xf32>
  return %y : tensor<8x8x128xf32>
}

// -----

// grouped_matmul with transpose_rhs, whose contraction is then the weight's
// last dimension.
func.func @grouped_matmul_contraction(%x: tensor<8x8x64xf32>, %w: tensor<8x64x128xf32>) -> tensor<8x8x64xf32> {
  // expected-error @+2 {{contraction sizes differ: input has 64, weight has 128}}
  // expected-error @+1 {{'braid.grouped_matmul' op failed to infer returned types}}
  %y = braid.grouped_matmul %x, %w transpose_rhs : (tensor<8x8x64xf32>, tensor<8x64x128xf32>) -> tensor<8x8x64xf32>
  return %y : tensor<8x8x64xf32>
}

// -----

// moe_combine with a 2-D input.
func.func @combine_rank(%h: tensor<8x64xf32>, %e: tensor<16x2xi64>, %w: tensor<16x2xf32>) -> tensor<16x64xf32> {
  // expected-error @+1 {{'braid.moe_combine' op expects input [E, C, H], experts and weights [T, k], and result [T, H]}}
  %y = braid.moe_combine %h, %e, %w : (tensor<8x64xf32>, tensor<16x2xi64>, tensor<16x2xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// moe_combine whose weights do not match the experts.
func.func @combine_weights(%h: tensor<8x8x64xf32>, %e: tensor<16x2xi64>, %w: tensor<16x1xf32>) -> tensor<16x64xf32> {
  // expected-error @+1 {{'braid.moe_combine' op weights shape [16, 1] differs from experts shape [16, 2]}}
  %y = braid.moe_combine %h, %e, %w : (tensor<8x8x64xf32>, tensor<16x2xi64>, tensor<16x1xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// moe_combine whose result is not [T, H].
func.func @combine_result(%h: tensor<8x8x64xf32>, %e: tensor<16x2xi64>, %w: tensor<16x2xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'braid.moe_combine' op result [8, 64] must be [T, H] = [16, 64]}}
  %y = braid.moe_combine %h, %e, %w : (tensor<8x8x64xf32>, tensor<16x2xi64>, tensor<16x2xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// moe_combine with weights of another element type.
func.func @combine_element_types(%h: tensor<8x8x64xf32>, %e: tensor<16x2xi64>, %w: tensor<16x2xf16>) -> tensor<16x64xf32> {
  // expected-error @+1 {{'braid.moe_combine' op input, weights and result must share an element type}}
  %y = braid.moe_combine %h, %e, %w : (tensor<8x8x64xf32>, tensor<16x2xi64>, tensor<16x2xf16>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// braid.cross_entropy
//===----------------------------------------------------------------------===//

// cross_entropy whose labels are not the logits without their class dimension.
func.func @cross_entropy_labels(%x: tensor<16x100xf32>, %l: tensor<100xi64>) -> tensor<f32> {
  // expected-error @+2 {{labels shape [100] must be the logits shape [16, 100] without its class dimension}}
  // expected-error @+1 {{'braid.cross_entropy' op failed to infer returned types}}
  %y = braid.cross_entropy %x, %l mean : (tensor<16x100xf32>, tensor<100xi64>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// cross_entropy of scalar logits.
func.func @cross_entropy_scalar(%x: tensor<f32>, %l: tensor<i64>) -> tensor<f32> {
  // expected-error @+2 {{logits need a class dimension, got a scalar}}
  // expected-error @+1 {{'braid.cross_entropy' op failed to infer returned types}}
  %y = braid.cross_entropy %x, %l sum : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// Collectives: mesh and axes
//===----------------------------------------------------------------------===//

// all_reduce on an undeclared mesh.
func.func @all_reduce_unknown_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.all_reduce' op 'nowhere' is not a braid.mesh}}
  %y = braid.all_reduce %x on @nowhere["tp"] sum : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// all_reduce on an axis the mesh does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_reduce_unknown_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.all_reduce' op mesh 'world' has no axis 'pp'}}
  %y = braid.all_reduce %x on @world["pp"] sum : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// all_reduce naming an axis twice.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_reduce_duplicate_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.all_reduce' op names axis 'tp' twice}}
  %y = braid.all_reduce %x on @world["tp", "dp", "tp"] max : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// all_gather on an undeclared mesh.
func.func @all_gather_unknown_mesh(%x: tensor<8x4xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'braid.all_gather' op 'nowhere' is not a braid.mesh}}
  %y = braid.all_gather %x on @nowhere["tp"] dim 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// all_gather on an axis the mesh does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_gather_unknown_axis(%x: tensor<8x4xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'braid.all_gather' op mesh 'world' has no axis 'ep'}}
  %y = braid.all_gather %x on @world["ep"] dim 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// all_gather naming an axis twice.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_gather_duplicate_axis(%x: tensor<8x4xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'braid.all_gather' op names axis 'tp' twice}}
  %y = braid.all_gather %x on @world["tp", "tp"] dim 1 : tensor<8x4xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// all_gather along a dimension the input does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_gather_dim(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'braid.all_gather' op gather dimension 2 is out of range for rank 2}}
  %y = braid.all_gather %x on @world["tp"] dim 2 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// all_gather whose gathered dimension is not scaled by the group size.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_gather_scaled(%x: tensor<8x4xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'braid.all_gather' op result dimension 1 has size 8, expected 16 for a group of 4}}
  %y = braid.all_gather %x on @world["tp"] dim 1 : tensor<8x4xf32> -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// all_gather that changes another dimension.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_gather_other_dim(%x: tensor<8x4xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'braid.all_gather' op result dimension 0 has size 4 but the input has 8}}
  %y = braid.all_gather %x on @world["tp"] dim 1 : tensor<8x4xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// reduce_scatter on an undeclared mesh.
func.func @reduce_scatter_unknown_mesh(%x: tensor<8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'braid.reduce_scatter' op 'nowhere' is not a braid.mesh}}
  %y = braid.reduce_scatter %x on @nowhere["tp"] sum dim 0 : tensor<8x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// reduce_scatter on an axis the mesh does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @reduce_scatter_unknown_axis(%x: tensor<8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'braid.reduce_scatter' op mesh 'world' has no axis 'TP'}}
  %y = braid.reduce_scatter %x on @world["TP"] sum dim 0 : tensor<8x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// reduce_scatter naming an axis twice.
braid.mesh @world(dp = 2, tp = 4)
func.func @reduce_scatter_duplicate_axis(%x: tensor<8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'braid.reduce_scatter' op names axis 'dp' twice}}
  %y = braid.reduce_scatter %x on @world["dp", "dp"] sum dim 0 : tensor<8x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// reduce_scatter along a dimension the input does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @reduce_scatter_dim(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'braid.reduce_scatter' op scatter dimension -1 is out of range for rank 2}}
  %y = braid.reduce_scatter %x on @world["tp"] sum dim -1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// reduce_scatter of a dimension that the group does not divide.
braid.mesh @world(dp = 2, tp = 4)
func.func @reduce_scatter_divisible(%x: tensor<6x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'braid.reduce_scatter' op dimension 0 of size 6 is not divisible by the group size 4}}
  %y = braid.reduce_scatter %x on @world["tp"] sum dim 0 : tensor<6x4xf32> -> tensor<1x4xf32>
  return %y : tensor<1x4xf32>
}

// -----

// reduce_scatter whose scattered dimension is not divided by the group size.
braid.mesh @world(dp = 2, tp = 4)
func.func @reduce_scatter_result(%x: tensor<8x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'braid.reduce_scatter' op result dimension 0 has size 4, expected 2 for a group of 4}}
  %y = braid.reduce_scatter %x on @world["tp"] sum dim 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// all_to_all on an undeclared mesh.
func.func @all_to_all_unknown_mesh(%x: tensor<8x4xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'braid.all_to_all' op 'nowhere' is not a braid.mesh}}
  %y = braid.all_to_all %x on @nowhere["tp"] split 0 concat 1 : tensor<8x4xf32> -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// all_to_all on an axis the mesh does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_to_all_unknown_axis(%x: tensor<8x4xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'braid.all_to_all' op mesh 'world' has no axis 'ep'}}
  %y = braid.all_to_all %x on @world["ep"] split 0 concat 1 : tensor<8x4xf32> -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// all_to_all naming an axis twice.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_to_all_duplicate_axis(%x: tensor<8x4xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'braid.all_to_all' op names axis 'tp' twice}}
  %y = braid.all_to_all %x on @world["tp", "tp"] split 0 concat 1 : tensor<8x4xf32> -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// all_to_all splitting a dimension the input does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_to_all_split_dim(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'braid.all_to_all' op split dimension 2 is out of range for rank 2}}
  %y = braid.all_to_all %x on @world["tp"] split 2 concat 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// all_to_all concatenating along a dimension the input does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_to_all_concat_dim(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'braid.all_to_all' op concat dimension -1 is out of range for rank 2}}
  %y = braid.all_to_all %x on @world["tp"] split 0 concat -1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// all_to_all splitting a dimension that the group does not divide.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_to_all_divisible(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  // expected-error @+1 {{'braid.all_to_all' op split dimension 0 of size 6 is not divisible by the group size 4}}
  %y = braid.all_to_all %x on @world["tp"] split 0 concat 1 : tensor<6x4xf32> -> tensor<6x4xf32>
  return %y : tensor<6x4xf32>
}

// -----

// all_to_all whose split dimension is not divided by the group size.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_to_all_split_result(%x: tensor<8x4xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'braid.all_to_all' op result dimension 0 has size 4, expected 2 for a group of 4}}
  %y = braid.all_to_all %x on @world["tp"] split 0 concat 1 : tensor<8x4xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// all_to_all whose concat dimension is not scaled by the group size.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_to_all_concat_result(%x: tensor<8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'braid.all_to_all' op result dimension 1 has size 4, expected 16 for a group of 4}}
  %y = braid.all_to_all %x on @world["tp"] split 0 concat 1 : tensor<8x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// all_to_all that changes a dimension it neither splits nor concatenates.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_to_all_other_dim(%x: tensor<8x4x3xf32>) -> tensor<2x16x6xf32> {
  // expected-error @+1 {{'braid.all_to_all' op result dimension 2 has size 6 but the input has 3}}
  %y = braid.all_to_all %x on @world["tp"] split 0 concat 1 : tensor<8x4x3xf32> -> tensor<2x16x6xf32>
  return %y : tensor<2x16x6xf32>
}

// -----

// all_to_all that splits and concatenates the same dimension keeps the shape.
braid.mesh @world(dp = 2, tp = 4)
func.func @all_to_all_same_dim(%x: tensor<8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'braid.all_to_all' op result dimension 0 has size 2 but the input has 8}}
  %y = braid.all_to_all %x on @world["tp"] split 0 concat 0 : tensor<8x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// collective_permute on an undeclared mesh.
func.func @permute_unknown_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.collective_permute' op 'nowhere' is not a braid.mesh}}
  %y = braid.collective_permute %x on @nowhere["tp"] shift 1 : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// collective_permute on an axis the mesh does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @permute_unknown_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.collective_permute' op mesh 'world' has no axis 'cp'}}
  %y = braid.collective_permute %x on @world["cp"] shift 1 : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// collective_permute naming an axis twice.
braid.mesh @world(dp = 2, tp = 4)
func.func @permute_duplicate_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.collective_permute' op names axis 'dp' twice}}
  %y = braid.collective_permute %x on @world["dp", "tp", "dp"] shift 1 : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// broadcast on an undeclared mesh.
func.func @broadcast_unknown_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.broadcast' op 'nowhere' is not a braid.mesh}}
  %y = braid.broadcast %x on @nowhere["dp"] root 0 : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// broadcast on an axis the mesh does not have.
braid.mesh @world(dp = 2, tp = 4)
func.func @broadcast_unknown_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.broadcast' op mesh 'world' has no axis 'pp'}}
  %y = braid.broadcast %x on @world["pp"] root 0 : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// broadcast naming an axis twice.
braid.mesh @world(dp = 2, tp = 4)
func.func @broadcast_duplicate_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.broadcast' op names axis 'dp' twice}}
  %y = braid.broadcast %x on @world["dp", "dp"] root 0 : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// broadcast from a root beyond the group.
braid.mesh @world(dp = 2, tp = 4)
func.func @broadcast_root(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'braid.broadcast' op root 2 is not a member of the group of 2}}
  %y = braid.broadcast %x on @world["dp"] root 2 : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Zero key/value heads cannot group query heads (no division by zero).
func.func @attention_zero_kv_heads(%q: tensor<1x2x8x16xf32>, %k: tensor<1x0x8x16xf32>) {
  // expected-error @+2 {{query heads (2) are not a multiple of key/value heads (0)}}
  // expected-error @+1 {{'braid.attention' op failed to infer returned types}}
  %0 = braid.attention %q, %k, %k scale 2.500000e-01 : (tensor<1x2x8x16xf32>, tensor<1x0x8x16xf32>, tensor<1x0x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// A stride so large that the extent overflows is out of bounds, not accepted.
func.func @slice_stride_overflow(%x: tensor<4xf32>) {
  // expected-error @+1 {{'braid.slice' op slice of dimension 0 (offset 0, size 3, stride 4611686018427387904) exceeds its size 4}}
  %0 = braid.slice %x offsets [0] sizes [3] strides [4611686018427387904] : tensor<4xf32> -> tensor<3xf32>
  return
}

// -----

// An offset at the top of the int64 range overflows the end: out of bounds.
func.func @slice_offset_overflow(%x: tensor<4xf32>) {
  // expected-error @+1 {{'braid.slice' op slice of dimension 0 (offset 9223372036854775807, size 1, stride 1) exceeds its size 4}}
  %0 = braid.slice %x offsets [9223372036854775807] sizes [1] strides [1] : tensor<4xf32> -> tensor<1xf32>
  return
}
