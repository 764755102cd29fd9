//===- BraidComputeOps.td - tensor compute ops -----------------*- tablegen -*-===//
//
// Enough to express GPT-2, LLaMA and Mixtral-class decoders and small training
// graphs. Every op here implements the dimension-mapping and cost interfaces.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAIDCOMPUTEOPS_TD
#define BRAID_DIALECT_BRAIDCOMPUTEOPS_TD

include "dialects/braid/BraidBase.td"
include "mlir/IR/OpAsmInterface.td"

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Elementwise ops share one mapping (numpy broadcasting: every result
/// dimension is a parallel factor; an operand dimension of size 1 that is
/// broadcast maps to no factor) and a cost of `flops` operations per result
/// element.
class Braid_ElementwiseOp<string mnemonic, int flops, list<Trait> traits = [],
                          string linear = "false">
    : Braid_ComputeOp<mnemonic, traits> {
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping() {
      return ::mlir::braid::getElementwiseMapping(getOperation());
    }
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return }] # linear # [{;
    }
    int64_t getFlops() {
      return }] # flops # [{ * ::mlir::braid::getNumElements(getOperation()->getResult(0));
    }
  }];
}

class Braid_UnaryOp<string mnemonic, int flops, Type operandType,
                    string formula, string linear = "false">
    : Braid_ElementwiseOp<mnemonic, flops, [SameOperandsAndResultType],
                          linear> {
  let summary = "elementwise " # formula;
  let description = [{
    Computes `}] # formula # [{` for every element.

    ```mlir
    %y = braid.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Braid_NegOp : Braid_UnaryOp<"neg", 1, Braid_Tensor, "-x", "true">;
def Braid_ExpOp : Braid_UnaryOp<"exp", 1, Braid_FloatTensor, "exp(x)">;
def Braid_LogOp : Braid_UnaryOp<"log", 1, Braid_FloatTensor, "log(x)">;
def Braid_SqrtOp : Braid_UnaryOp<"sqrt", 1, Braid_FloatTensor, "sqrt(x)">;
def Braid_RsqrtOp : Braid_UnaryOp<"rsqrt", 2, Braid_FloatTensor, "1 / sqrt(x)">;
def Braid_TanhOp : Braid_UnaryOp<"tanh", 1, Braid_FloatTensor, "tanh(x)">;
def Braid_ErfOp : Braid_UnaryOp<"erf", 1, Braid_FloatTensor, "erf(x)">;
def Braid_SigmoidOp : Braid_UnaryOp<"sigmoid", 3, Braid_FloatTensor,
                                    "1 / (1 + exp(-x))">;
def Braid_SiluOp : Braid_UnaryOp<"silu", 4, Braid_FloatTensor,
                                 "x / (1 + exp(-x))">;
def Braid_ReluOp : Braid_UnaryOp<"relu", 1, Braid_Tensor, "max(x, 0)">;

def Braid_GeluOp : Braid_ElementwiseOp<"gelu", 8, [SameOperandsAndResultType]> {
  let summary = "elementwise GELU, exact or tanh-approximated";
  let description = [{
    Exact: `0.5 x (1 + erf(x / sqrt(2)))`. With `tanh` (GPT-2's `gelu_new`):
    `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.

    ```mlir
    %y = braid.gelu %x tanh : tensor<4x3072xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, UnitAttr:$tanh);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input (`tanh` $tanh^)? attr-dict `:` type($result)";
}

class Braid_BinaryOp<string mnemonic, int flops, string formula,
                     list<Trait> traits = [], string linear = "false">
    : Braid_ElementwiseOp<mnemonic, flops, !listconcat([InferTypeOpAdaptor], traits),
                          linear> {
  let summary = "elementwise " # formula # " with numpy broadcasting";
  let description = [{
    Computes `}] # formula # [{` for every element of the numpy broadcast of
    the operand shapes. Both operands have the same element type.

    ```mlir
    %z = braid.}] # mnemonic # [{ %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$lhs, Braid_Tensor:$rhs);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
      return inferBroadcastResult(location, {adaptor.getLhs(), adaptor.getRhs()},
                                  /*elementType=*/nullptr, inferredReturnTypes);
    }
  }];
}

def Braid_AddOp : Braid_BinaryOp<"add", 1, "x + y", [Commutative],
                                 "partial[0] && partial[1]">;
def Braid_SubOp : Braid_BinaryOp<"sub", 1, "x - y", [],
                                 "partial[0] && partial[1]">;
def Braid_MulOp : Braid_BinaryOp<"mul", 1, "x * y", [Commutative],
                                 "partial[0] != partial[1]">;
def Braid_DivOp : Braid_BinaryOp<"div", 1, "x / y", [],
                                 "partial[0] && !partial[1]">;
def Braid_PowOp : Braid_BinaryOp<"pow", 2, "x ^ y">;
def Braid_MaxOp : Braid_BinaryOp<"max", 1, "max(x, y)", [Commutative]>;
def Braid_MinOp : Braid_BinaryOp<"min", 1, "min(x, y)", [Commutative]>;

def Braid_CompareOp : Braid_ElementwiseOp<"compare", 1, [InferTypeOpAdaptor]> {
  let summary = "elementwise comparison with numpy broadcasting";
  let description = [{
    Compares the operands elementwise (`eq`, `ne`, `lt`, `le`, `gt`, `ge`) after
    numpy broadcasting; the result is `i1`.

    ```mlir
    %m = braid.compare lt, %a, %b : (tensor<8x8xi64>, tensor<8x1xi64>) -> tensor<8x8xi1>
    ```
  }];
  let arguments = (ins Braid_CompareKindAttr:$kind, Braid_Tensor:$lhs,
                       Braid_Tensor:$rhs);
  let results = (outs Braid_BoolTensor:$result);
  let assemblyFormat = [{
    $kind `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Braid_SelectOp : Braid_ElementwiseOp<"select", 1, [InferTypeOpAdaptor]> {
  let summary = "elementwise choice between two tensors (ONNX Where)";
  let description = [{
    `result = condition ? true_value : false_value`, elementwise after numpy
    broadcasting of all three operands.

    ```mlir
    %y = braid.select %mask, %x, %neg_inf : (tensor<1x1x8x8xi1>, tensor<2x12x8x8xf32>, tensor<f32>) -> tensor<2x12x8x8xf32>
    ```
  }];
  let arguments = (ins Braid_BoolTensor:$condition, Braid_Tensor:$true_value,
                       Braid_Tensor:$false_value);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:` functional-type(operands, results)
  }];
}

def Braid_CastOp : Braid_ElementwiseOp<"cast", 1> {
  let summary = "elementwise conversion of the element type";
  let description = [{
    Converts every element to the result's element type (round to nearest
    even for floats, truncation toward zero for float to int, `x != 0` for
    int or float to i1). Shapes are equal.

    ```mlir
    %y = braid.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions, reductions, normalizations
//===----------------------------------------------------------------------===//

def Braid_MatmulOp : Braid_ComputeOp<"matmul", [InferTypeOpAdaptor]> {
  let summary = "batched matrix product with optional transposes";
  let description = [{
    `lhs` is `[batch..., M, K]` (`[batch..., K, M]` with `transpose_lhs`),
    `rhs` is `[batch..., K, N]` (`[batch..., N, K]` with `transpose_rhs`); the
    batch dimensions broadcast numpy-style and the result is
    `[batch..., M, N]`. Both operands are at least 2-D, with one element type.

    ```mlir
    %y = braid.matmul %x, %w : (tensor<2x8x768xf32>, tensor<768x2304xf32>) -> tensor<2x8x2304xf32>
    %s = braid.matmul %q, %k transpose_rhs : (tensor<2x12x8x64xf32>, tensor<2x12x8x64xf32>) -> tensor<2x12x8x8xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$lhs, Braid_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops();
  }];
}

class Braid_ReduceOp<string mnemonic, string combiner, int flops,
                     string linear = "false">
    : Braid_ComputeOp<mnemonic, [InferTypeOpAdaptor]> {
  let summary = "reduction (" # combiner # ") over some dimensions";
  let description = [{
    Reduces `input` over `dims` with }] # combiner # [{. With `keep_dims` the
    reduced dimensions stay as size 1, otherwise they are removed.

    ```mlir
    %m = braid.}] # mnemonic # [{ %x dims [2] keep_dims : tensor<2x8x768xf32> -> tensor<2x8x1xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims (`keep_dims` $keep_dims^)? attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
      return inferReductionResult(location, adaptor.getInput(), adaptor.getDims(),
                                  adaptor.getKeepDims(), inferredReturnTypes);
    }
  }];
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping() {
      return ::mlir::braid::getReductionMapping(getOperation(), getDims(),
          getKeepDims(), ::mlir::braid::ReductionKind::}] # combiner # [{);
    }
    int64_t getFlops() {
      return }] # flops # [{ * ::mlir::braid::getNumElements(getInput());
    }
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return }] # linear # [{;
    }
  }];
}

def Braid_ReduceSumOp : Braid_ReduceOp<"reduce_sum", "Sum", 1, "true">;
def Braid_ReduceMeanOp : Braid_ReduceOp<"reduce_mean", "Avg", 1, "true">;
def Braid_ReduceMaxOp : Braid_ReduceOp<"reduce_max", "Max", 1>;

def Braid_SoftmaxOp : Braid_ComputeOp<"softmax", [SameOperandsAndResultType]> {
  let summary = "softmax along one dimension";
  let description = [{
    `exp(x - max(x)) / sum(exp(x - max(x)))` along dimension `dim`.

    ```mlir
    %p = braid.softmax %s dim 3 : tensor<2x12x8x8xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_I64Attr:$dim);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    /// max, subtract, exp, sum, divide.
    int64_t getFlops() { return 5 * ::mlir::braid::getNumElements(getInput()); }
  }];
}

class Braid_NormOp<string mnemonic, int flops> : Braid_ComputeOp<mnemonic> {
  let results = (outs Braid_FloatTensor:$result);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping() {
      return ::mlir::braid::getNormalizationMapping(getOperation(), getAxis());
    }
    int64_t getFlops() {
      return }] # flops # [{ * ::mlir::braid::getNumElements(getInput());
    }
  }];
}

def Braid_LayerNormOp : Braid_NormOp<"layer_norm", 8> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes over dimensions `[axis, rank)`:
    `(x - mean) / sqrt(var + epsilon) * gamma + beta`, with the biased variance.
    `gamma` and the optional `beta` have the shape of those trailing dimensions.

    ```mlir
    %y = braid.layer_norm %x, %g, %b axis 2 eps 1.0e-05 : (tensor<2x8x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$gamma,
                       Optional<Braid_FloatTensor>:$beta, Braid_I64Attr:$axis,
                       F32Attr:$epsilon);
  let assemblyFormat = [{
    $input `,` $gamma (`,` $beta^)? `axis` $axis `eps` $epsilon attr-dict
    `:` functional-type(operands, results)
  }];
}

def Braid_RmsNormOp : Braid_NormOp<"rms_norm", 4> {
  let summary = "root-mean-square normalization over the trailing dimensions";
  let description = [{
    Normalizes over dimensions `[axis, rank)`:
    `x / sqrt(mean(x^2) + epsilon) * gamma` (LLaMA, Mixtral).

    ```mlir
    %y = braid.rms_norm %x, %g axis 2 eps 1.0e-06 : (tensor<2x8x512xf32>, tensor<512xf32>) -> tensor<2x8x512xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$gamma,
                       Braid_I64Attr:$axis, F32Attr:$epsilon);
  let assemblyFormat = [{
    $input `,` $gamma `axis` $axis `eps` $epsilon attr-dict
    `:` functional-type(operands, results)
  }];
}

def Braid_RotaryOp : Braid_ComputeOp<"rotary"> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates pairs of the last dimension of `input` (size D, even) by angles
    whose cosines and sines are given; `cos` and `sin` broadcast numpy-style to
    the input's shape. Pairs are `(i, i + D/2)` (the "rotate half" form of
    LLaMA), or `(2i, 2i + 1)` with `interleaved` (GPT-J):
    `out = x * cos + rotate(x) * sin`.

    ```mlir
    %q2 = braid.rotary %q, %cos, %sin : (tensor<1x8x8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<1x8x8x64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$cos,
                       Braid_FloatTensor:$sin, UnitAttr:$interleaved);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin (`interleaved` $interleaved^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tables come from positions: not differentiated.
    bool isDifferentiableIn(unsigned index) { return index == 0; }
    ::mlir::braid::DimensionMapping getDimensionMapping();
    /// Two multiplies and an add per element.
    int64_t getFlops() { return 3 * ::mlir::braid::getNumElements(getInput()); }
  }];
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Braid_GatherOp : Braid_ComputeOp<"gather", [InferTypeOpAdaptor]> {
  let summary = "gathers slices of a tensor by index (embedding lookup)";
  let description = [{
    ONNX `Gather`: the result is `input.shape[:axis] + indices.shape +
    input.shape[axis+1:]`, `result[..., i..., ...] = input[..., indices[i...], ...]`.
    Negative indices count from the end. An index out of range is a runtime
    error.

    ```mlir
    %e = braid.gather %wte[%ids] axis 0 : (tensor<50257x768xf32>, tensor<2x8xi64>) -> tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input, Braid_IndexTensor:$indices,
                       Braid_I64Attr:$axis);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` `axis` $axis attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
    /// Reads the indices and the gathered rows, writes the result.
    int64_t getMinBytes();
  }];
}

def Braid_ScatterAddOp : Braid_ComputeOp<"scatter_add"> {
  let summary = "adds slices into a zero tensor by index (gather's transpose)";
  let description = [{
    The transpose of `braid.gather`, and so the gradient of an embedding
    lookup: `result` starts as zeros and every slice of `updates` is added
    into the row of `result` along `axis` that its index names,
    `result[..., indices[i...], ...] += updates[..., i..., ...]`. Repeated
    indices accumulate. `updates` has the shape that gathering from a tensor
    of the result's type would give: `result.shape[:axis] + indices.shape +
    result.shape[axis+1:]`. Negative indices count from the end; an index out
    of range is a runtime error. 16-bit float types accumulate in f32.

    Partitioned, the indices' dimensions are a reduction (a block of tokens
    gives a partial sum of the result, completed by an all-reduce sum); the
    result's other dimensions are parallel with those of `updates`; the
    indexed dimension is needed whole.

    ```mlir
    %dwte = braid.scatter_add %dh[%ids] axis 0 : (tensor<2x8x768xf32>, tensor<2x8xi64>) -> tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$updates, Braid_IndexTensor:$indices,
                       Braid_I64Attr:$axis);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $updates `[` $indices `]` `axis` $axis attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    /// Linear in the updates: partial updates give a partial result.
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return partial[0] && !partial[1];
    }
    /// One add per update element.
    int64_t getFlops() { return ::mlir::braid::getNumElements(getUpdates()); }
  }];
}

def Braid_ReshapeOp : Braid_ComputeOp<"reshape"> {
  let summary = "reinterprets a tensor with another shape";
  let description = [{
    Same elements in row-major order, another shape with the same number of
    elements and the same element type.

    ```mlir
    %y = braid.reshape %x : tensor<2x8x768xf32> -> tensor<2x8x12x64xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return true;
    }
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
    /// A reshape is a view: it moves nothing.
    int64_t getMinBytes() { return 0; }
  }];
}

def Braid_TransposeOp : Braid_ComputeOp<"transpose", [InferTypeOpAdaptor]> {
  let summary = "permutes the dimensions of a tensor";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`.

    ```mlir
    %y = braid.transpose %x [0, 2, 1, 3] : tensor<2x8x12x64xf32> -> tensor<2x12x8x64xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let extraClassDeclaration = [{
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return true;
    }
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
  }];
}

def Braid_SliceOp : Braid_ComputeOp<"slice"> {
  let summary = "extracts a strided box from a tensor";
  let description = [{
    Takes `sizes[i]` elements along each dimension `i`, starting at
    `offsets[i]` with step `strides[i]` (positive). Offsets are constants or
    `index` values (for example computed from `braid.rank` to pick this rank's
    slice); static boxes must lie inside the input.

    ```mlir
    %r = braid.rank @world axis "tp"
    %c = arith.constant 384 : index
    %o = arith.muli %r, %c : index
    %y = braid.slice %x offsets [0, %o] sizes [8, 384] strides [1, 1] : tensor<8x768xf32> -> tensor<8x384xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input, Variadic<Index>:$offsets,
                       DenseI64ArrayAttr:$static_offsets,
                       DenseI64ArrayAttr:$static_sizes,
                       DenseI64ArrayAttr:$static_strides);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `offsets` custom<DynamicIndexList>($offsets, $static_offsets)
    `sizes` $static_sizes `strides` $static_strides attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return partial[0];
    }
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
    /// Reads only the box and writes it.
    int64_t getMinBytes() {
      return 2 * ::mlir::braid::getNumBytes(getResult());
    }
    /// The box's sizes follow the result type; a block of a sliced
    /// dimension (the result's own factor) also moves the box's offset to
    /// where the block starts.
    ::mlir::LogicalResult restrictToBlock(::mlir::OpBuilder &builder,
        const ::mlir::braid::DimensionMapping &mapping,
        const ::mlir::braid::FactorBlock &block);
    /// A block of a sliced dimension must be contiguous (it moves the box).
    bool canComputeBlock(const ::mlir::braid::DimensionMapping &mapping,
                         unsigned factor, int64_t within);
  }];
}

def Braid_ConcatOp : Braid_ComputeOp<"concat", [InferTypeOpAdaptor]> {
  let summary = "concatenates tensors along one dimension";
  let description = [{
    All inputs have the same rank, element type and sizes except along `dim`.

    ```mlir
    %y = braid.concat %a, %b dim 1 : (tensor<2x4x64xf32>, tensor<2x4x64xf32>) -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins Variadic<Braid_Tensor>:$inputs, Braid_I64Attr:$dim);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
  let extraClassDeclaration = [{
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return llvm::all_of(partial, [](bool p) { return p; });
    }
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
  }];
}

def Braid_SplitOp : Braid_ComputeOp<"split"> {
  let summary = "splits a tensor into consecutive pieces along one dimension";
  let description = [{
    The pieces' sizes along `dim` are those of the result types and add up to
    the input's size; all other dimensions are equal.

    ```mlir
    %q, %k, %v = braid.split %qkv dim 2 : tensor<2x8x2304xf32> -> tensor<2x8x768xf32>, tensor<2x8x768xf32>, tensor<2x8x768xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input, Braid_I64Attr:$dim);
  let results = (outs Variadic<Braid_Tensor>:$results);
  let assemblyFormat = [{
    $input `dim` $dim attr-dict `:` type($input) `->` type($results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return true;
    }
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
  }];
}

def Braid_BroadcastToOp : Braid_ComputeOp<"broadcast_to"> {
  let summary = "expands a tensor to a shape by numpy broadcasting";
  let description = [{
    The input's shape, aligned at the trailing dimensions, is numpy-broadcast
    to the result shape (ONNX `Expand`).

    ```mlir
    %y = braid.broadcast_to %x : tensor<8x1xf32> -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins Braid_Tensor:$input);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return true;
    }
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
  }];
}

def Braid_ConstantOp : Braid_ComputeOp<"constant", [ConstantLike,
    AllTypesMatch<["value", "result"]>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "a tensor constant";
  let description = [{
    A small constant (masks, scalars, shapes folded at import). Model weights
    are `braid.weight` symbols, never constants.

    ```mlir
    %c = braid.constant dense<0.125> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
    /// Writes the result once.
    int64_t getMinBytes() { return ::mlir::braid::getNumBytes(getResult()); }
  }];
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

class Braid_AttentionBase<string mnemonic>
    : Braid_ComputeOp<mnemonic, [InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let arguments = (ins Braid_FloatTensor:$query, Braid_FloatTensor:$key,
                       Braid_FloatTensor:$value, Optional<Braid_Tensor>:$mask,
                       Optional<Index>:$causal_offset, UnitAttr:$causal,
                       F32Attr:$scale);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? (`causal` $causal^)?
    (`offset` $causal_offset^)? `scale` $scale attr-dict
    `:` functional-type(operands, results)
  }];
  code attentionCommon = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops();
    /// Returns the number of (query, key) pairs that the masks leave, or
    /// all of them when it depends on runtime values.
    int64_t getNumScoredPairs();
    /// A block of queries starting at `offset` sees keys up to
    /// `offset + (old causal offset)`: the causal offset moves by `offset`.
    ::mlir::LogicalResult restrictToBlock(::mlir::OpBuilder &builder,
        const ::mlir::braid::DimensionMapping &mapping,
        const ::mlir::braid::FactorBlock &block);
    /// Causal attention's queries must be one contiguous block.
    bool canComputeBlock(const ::mlir::braid::DimensionMapping &mapping,
                         unsigned factor, int64_t within);
    /// Queries, keys and values; not the mask.
    bool isDifferentiableIn(unsigned index) { return index < 3; }
  }];
  let extraClassDeclaration = attentionCommon;
}

def Braid_AttentionOp : Braid_AttentionBase<"attention"> {
  let summary = "scaled dot-product attention";
  let description = [{
    `softmax(scale * Q K^T + mask) V` per batch and head. Shapes:
    `query [B, H, Sq, D]`, `key [B, Hkv, Sk, D]`, `value [B, Hkv, Sk, Dv]`,
    result `[B, H, Sq, Dv]`; `H` is a multiple of `Hkv` (grouped-query
    attention: query head `h` uses key/value head `h / (H / Hkv)`).

    `mask` broadcasts to `[B, H, Sq, Sk]`: `i1` keeps where true, a float mask
    is added to the scores. With `causal`, query `i` sees key `j` only when
    `j <= i + offset`; `offset` defaults to `Sk - Sq` (the queries are the last
    `Sq` positions of the keys' sequence, as in chunked prefill), and may be a
    runtime `index` (for example derived from `braid.rank`). A query that sees
    no key gets zeros.

    ```mlir
    %o = braid.attention %q, %k, %v causal scale 0.125 : (tensor<2x12x8x64xf32>, tensor<2x12x8x64xf32>, tensor<2x12x8x64xf32>) -> tensor<2x12x8x64xf32>
    ```
  }];
  let results = (outs Braid_FloatTensor:$result);
}

def Braid_AttentionPartialOp : Braid_AttentionBase<"attention_partial"> {
  let summary = "attention over a block of keys, with its log-sum-exp";
  let description = [{
    As `braid.attention`, but also returns the natural log of the softmax
    denominator per query, `lse [B, H, Sq]` in f32 (`-inf` where the query sees
    no key, with a zero output row). Partial results over disjoint key blocks
    combine exactly with `braid.attention_merge` (ring and 2-D attention).

    ```mlir
    %o, %lse = braid.attention_partial %q, %k, %v scale 0.125 : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> (tensor<1x8x16x64xf32>, tensor<1x8x16xf32>)
    ```
  }];
  let results = (outs Braid_FloatTensor:$result,
                      StaticShapeTensorOf<[F32]>:$lse);
}

def Braid_AttentionMergeOp : Braid_ComputeOp<"attention_merge", [
    InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "combines partial attention results exactly";
  let description = [{
    Given partial outputs `o_i [B, H, S, Dv]` and log-sum-exps `lse_i [B, H, S]`
    over disjoint key blocks, returns the attention over their union:
    `lse = log(sum_i exp(lse_i))`, `o = sum_i exp(lse_i - lse) * o_i`
    (computed stably; blocks with `lse_i = -inf` contribute nothing).

    ```mlir
    %o, %l = braid.attention_merge %o0, %o1 lse %l0, %l1 : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> (tensor<1x8x16x64xf32>, tensor<1x8x16xf32>)
    ```
  }];
  let arguments = (ins Variadic<Braid_FloatTensor>:$outputs,
                       Variadic<StaticShapeTensorOf<[F32]>>:$lses);
  let results = (outs Braid_FloatTensor:$result,
                      StaticShapeTensorOf<[F32]>:$lse);
  let assemblyFormat = [{
    $outputs `lse` $lses attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops();
  }];
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Braid_RouterTopKOp : Braid_ComputeOp<"router_topk", [InferTypeOpAdaptor]> {
  let summary = "MoE router: softmax over experts, then the top k";
  let description = [{
    For router logits `[T, E]`, computes `p = softmax(logits)` over experts and
    returns the `k` largest probabilities per token `[T, k]` (descending; ties
    to the lower expert index) with their expert indices `[T, k]` (i64). With
    `normalize` the k weights are rescaled to sum to 1 (Mixtral).

    ```mlir
    %w, %e = braid.router_topk %logits k 2 normalize : (tensor<16x8xf32>) -> (tensor<16x2xf32>, tensor<16x2xi64>)
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$logits, Braid_I64Attr:$k, UnitAttr:$normalize);
  let results = (outs Braid_FloatTensor:$weights,
                      StaticShapeTensorOf<[I64]>:$experts);
  let assemblyFormat = [{
    $logits `k` $k (`normalize` $normalize^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    /// Softmax plus k passes of selection over the experts.
    int64_t getFlops() {
      return (5 + getK()) * ::mlir::braid::getNumElements(getLogits());
    }
  }];
}

def Braid_MoeDispatchOp : Braid_ComputeOp<"moe_dispatch"> {
  let summary = "groups tokens by expert into a fixed-capacity buffer";
  let description = [{
    For tokens `x [T, H]` and their chosen experts `experts [T, k]`, returns
    `[E, C, H]`: expert `e`'s slot `c` holds the c-th (token, choice) pair
    routed to `e`, in order of token then choice. Pairs beyond capacity `C` are
    dropped; unused slots are zero. `E` and `C` are the result's first two
    dimensions. `braid.moe_combine` uses the same slot assignment.

    ```mlir
    %d = braid.moe_dispatch %x, %e : (tensor<16x64xf32>, tensor<16x2xi64>) -> tensor<8x8x64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_IndexTensor:$experts);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = "$input `,` $experts attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
  }];
}

def Braid_GroupedMatmulOp : Braid_ComputeOp<"grouped_matmul", [InferTypeOpAdaptor]> {
  let summary = "one matrix product per expert";
  let description = [{
    `input [E, C, K]` times `weight [E, K, N]` (`[E, N, K]` with
    `transpose_rhs`) gives `[E, C, N]`: expert `e`'s rows times expert `e`'s
    weight.

    ```mlir
    %h = braid.grouped_matmul %d, %w1 : (tensor<8x8x64xf32>, tensor<8x64x128xf32>) -> tensor<8x8x128xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_FloatTensor:$weight,
                       UnitAttr:$transpose_rhs);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`transpose_rhs` $transpose_rhs^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops();
  }];
}

def Braid_MoeCombineOp : Braid_ComputeOp<"moe_combine"> {
  let summary = "weighted sum of each token's expert outputs";
  let description = [{
    Inverse of `braid.moe_dispatch`: for expert outputs `[E, C, H]`, the
    experts `[T, k]` and router weights `[T, k]`, returns `[T, H]` with
    `out[t] = sum_j weights[t, j] * expert_out[experts[t, j], slot(t, j)]`,
    where a pair dropped for capacity contributes zero.

    ```mlir
    %y = braid.moe_combine %h, %e, %w : (tensor<8x8x64xf32>, tensor<16x2xi64>, tensor<16x2xf32>) -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$input, Braid_IndexTensor:$experts,
                       Braid_FloatTensor:$weights);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $experts `,` $weights attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool propagatesPartialSums(::llvm::ArrayRef<bool> partial) {
      return partial[0] && !partial[1] && !partial[2];
    }
    ::mlir::braid::DimensionMapping getDimensionMapping();
    /// One multiply-add per output element and choice.
    int64_t getFlops() {
      return 2 * ::mlir::braid::getNumElements(getResult()) *
             getExperts().getType().getDimSize(1);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def Braid_CrossEntropyOp : Braid_ComputeOp<"cross_entropy", [InferTypeOpAdaptor]> {
  let summary = "softmax cross-entropy against integer labels";
  let description = [{
    For `logits [..., C]` and `labels [...]` (class indices), the loss per
    sample is `logsumexp(logits) - logits[label]`. `reduction` is `none`
    (result `[...]`), `mean` or `sum` (result a scalar), in the logits'
    element type.

    ```mlir
    %l = braid.cross_entropy %logits, %labels mean : (tensor<16x100xf32>, tensor<16xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Braid_FloatTensor:$logits, Braid_IndexTensor:$labels,
                       Braid_LossReductionAttr:$reduction);
  let results = (outs Braid_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels $reduction attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    /// log-sum-exp (max, subtract, exp, sum) plus the pick and the reduction.
    int64_t getFlops() { return 5 * ::mlir::braid::getNumElements(getLogits()); }
  }];
}

#endif // BRAID_DIALECT_BRAIDCOMPUTEOPS_TD
