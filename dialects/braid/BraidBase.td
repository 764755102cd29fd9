//===- BraidBase.td - braid dialect, enums, types, base classes -*- tablegen -*-===//
//
// The `braid` dialect: tensor-level compute ops, collectives on device meshes,
// and async/await for overlapping communication with computation.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAIDBASE_TD
#define BRAID_DIALECT_BRAIDBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinTypes.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "dialects/braid/BraidInterfaces.td"

def Braid_Dialect : Dialect {
  let name = "braid";
  let cppNamespace = "::mlir::braid";
  let summary = "Distributed deep-learning graphs with overlappable communication";
  let description = [{
    The `braid` dialect describes deep-learning graphs on ranked, statically
    shaped tensors with value semantics, spread over named device meshes.

    * **Values** are `tensor<...>` of f32, f16, bf16, i64, i32 or i1.
    * **SPMD**: a module may declare meshes (`braid.mesh @world(dp = 2, tp = 4)`).
      After partitioning, a function body is the program of one rank; all ranks
      run it, and `braid.rank` reads this rank's index along a mesh axis.
    * **Compute ops** implement two interfaces that every transformation is
      written against: *dimension mapping* (how each dimension of each operand
      and result relates to a shared iteration space of factors) and *cost*
      (FLOPs and minimum bytes moved).
    * **Collectives** name a mesh and the axes of their group.
    * **Async**: `braid.async on "stream" { ... }` runs a region on a named
      stream and returns `!braid.future<T>` values; `braid.await` waits for
      one. Overlap is expressed only by moving asyncs earlier and awaits later.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// Registers the type(s) of this dialect; called from initialize().
    void registerTypes();
    /// Registers the attribute(s) of this dialect; called from initialize().
    void registerAttributes();
  }];
}

//===----------------------------------------------------------------------===//
// Element and tensor types
//===----------------------------------------------------------------------===//

def Braid_ElementType : AnyTypeOf<[F32, F16, BF16, I64, I32, I1]>;
def Braid_FloatType : AnyTypeOf<[F32, F16, BF16]>;
def Braid_IndexElementType : AnyTypeOf<[I64, I32]>;

/// A statically shaped tensor of a braid element type.
def Braid_Tensor : StaticShapeTensorOf<[F32, F16, BF16, I64, I32, I1]>;
def Braid_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16]>;
def Braid_IndexTensor : StaticShapeTensorOf<[I64, I32]>;
def Braid_BoolTensor : StaticShapeTensorOf<[I1]>;

/// A signed 64-bit integer attribute (dimensions, shifts, roots, k): the
/// upstream I64Attr reads back as uint64_t.
def Braid_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                                 "64-bit signed integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Braid_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the values of its group", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Max", 1, "max">,
  I32EnumAttrCase<"Min", 2, "min">,
  I32EnumAttrCase<"Avg", 3, "avg">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::braid";
}
def Braid_ReductionKindAttr : EnumAttr<Braid_Dialect, Braid_ReductionKind, "reduction"> {
  let assemblyFormat = "$value";
}

def Braid_CompareKind : I32EnumAttr<"CompareKind", "elementwise comparison", [
  I32EnumAttrCase<"EQ", 0, "eq">,
  I32EnumAttrCase<"NE", 1, "ne">,
  I32EnumAttrCase<"LT", 2, "lt">,
  I32EnumAttrCase<"LE", 3, "le">,
  I32EnumAttrCase<"GT", 4, "gt">,
  I32EnumAttrCase<"GE", 5, "ge">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::braid";
}
def Braid_CompareKindAttr : EnumAttr<Braid_Dialect, Braid_CompareKind, "compare"> {
  let assemblyFormat = "$value";
}

def Braid_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss is reduced over the samples", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Mean", 1, "mean">,
  I32EnumAttrCase<"Sum", 2, "sum">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::braid";
}
def Braid_LossReductionAttr : EnumAttr<Braid_Dialect, Braid_LossReduction, "loss_reduction"> {
  let assemblyFormat = "$value";
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Braid_FutureType : TypeDef<Braid_Dialect, "Future"> {
  let mnemonic = "future";
  let summary = "a tensor value that an async region is still computing";
  let description = [{
    The result of `braid.async`: a handle to a value that becomes available on
    the stream that computes it. Only `braid.await` reads it.

    ```mlir
    !braid.future<tensor<8x1024xf32>>
    ```
  }];
  let parameters = (ins "::mlir::RankedTensorType":$valueType);
  let assemblyFormat = "`<` $valueType `>`";
  let builders = [
    TypeBuilderWithInferredContext<(ins "::mlir::RankedTensorType":$valueType), [{
      return $_get(valueType.getContext(), valueType);
    }]>
  ];
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Braid_ShardingAttr : AttrDef<Braid_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "how a tensor is distributed over the axes of a mesh";
  let description = [{
    One entry per tensor dimension listing the mesh axes it is split over,
    major to minor (empty: that dimension is whole on every rank), and the
    axes over which the value is a partial sum that an all-reduce would
    complete. An axis appears at most once.

    As an annotation (`braid.sharding` on a function argument or on an op),
    it asks `braid-partition` for that distribution: an argument is sliced
    that way, an op computes its result that way.

    ```mlir
    func.func @main(%x: tensor<8x16xf32> {braid.sharding = #braid.sharding<@world, [["dp"], []]>})
    %y = braid.matmul %x, %w {braid.sharding = #braid.sharding<@world, [[], ["tp"]]>} : ...
    #braid.sharding<@world, [[], []], partial = ["tp"]>
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        "::mlir::ArrayAttr":$dims,
                        OptionalParameter<"::mlir::ArrayAttr">:$partial);
  let assemblyFormat = "`<` $mesh `,` $dims (`,` `partial` `=` $partial^)? `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The axes splitting dimension `dim`, major to minor.
    ::llvm::SmallVector<::llvm::StringRef> getAxes(unsigned dim) const;
  }];
}

def Braid_AnyFuture : Type<CPred<"::llvm::isa<::mlir::braid::FutureType>($_self)">,
                           "braid future", "::mlir::braid::FutureType">;

//===----------------------------------------------------------------------===//
// Op base classes
//===----------------------------------------------------------------------===//

class Braid_Op<string mnemonic, list<Trait> traits = []>
    : Op<Braid_Dialect, mnemonic, traits>;

/// A tensor computation: side-effect free, and described to transformations
/// only through the dimension-mapping and cost interfaces.
class Braid_ComputeOp<string mnemonic, list<Trait> traits = []>
    : Braid_Op<mnemonic, !listconcat([Pure, Braid_DimensionMappingOpInterface,
                                      Braid_CostOpInterface,
                                      DeclareOpInterfaceMethods<Braid_GradientOpInterface>],
                                     traits)>;

#endif // BRAID_DIALECT_BRAIDBASE_TD
