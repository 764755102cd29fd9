//===- BraidCollectiveOps.td - collectives on mesh axes --------*- tablegen -*-===//
//
// Every collective names a mesh and the axes of its group through one base
// class. The group of a rank is the set of ranks that differ from it only in
// those axes; an empty axis list is the trivial group of one rank.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAIDCOLLECTIVEOPS_TD
#define BRAID_DIALECT_BRAIDCOLLECTIVEOPS_TD

include "dialects/braid/BraidBase.td"
include "mlir/IR/SymbolInterfaces.td"

class Braid_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Braid_Op<mnemonic, !listconcat([Pure, Braid_CollectiveOpInterface,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        Braid_DimensionMappingOpInterface, Braid_CostOpInterface,
        DeclareOpInterfaceMethods<Braid_GradientOpInterface>], traits)> {
  dag commonArgs = (ins FlatSymbolRefAttr:$mesh,
                        DefaultValuedAttr<StrArrayAttr, "{}">:$mesh_axes);
  code commonDecls = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    /// Collectives do no arithmetic in the cost model's compute roofline;
    /// their time comes from the communication model.
    int64_t getFlops() { return 0; }
    /// Checks the shapes against the group size of the mesh axes.
    ::llvm::LogicalResult verifyGroupShapes(int64_t groupSize);
  }];
  let extraClassDeclaration = commonDecls;
  let hasCanonicalizer = 1;
}

def Braid_AllReduceOp : Braid_CollectiveOp<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "combines a tensor across a group; every member gets the result";
  let description = [{
    Every rank of the group contributes `input` and receives the elementwise
    `sum`, `max`, `min` or `avg` of all contributions.

    ```
    ranks 0 1 on axis tp        after all_reduce sum
      [1 2]  [10 20]              [11 22]  [11 22]
    ```

    ```mlir
    %y = braid.all_reduce %x on @world["tp"] sum : tensor<8x1024xf32>
    ```
  }];
  let arguments = !con(commonArgs, (ins Braid_Tensor:$input,
                                        Braid_ReductionKindAttr:$reduction));
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `` $mesh_axes `` $reduction attr-dict `:` type($result)
  }];
}

def Braid_AllGatherOp : Braid_CollectiveOp<"all_gather", [
    SameOperandsAndResultElementType, SameOperandsAndResultRank]> {
  let summary = "concatenates the group's tensors along one dimension";
  let description = [{
    Every rank receives the concatenation along `dim` of all group members'
    inputs, in group order; the result's `dim` is the group size times the
    input's.

    ```
    ranks 0 1, dim 0            after all_gather
      [1 2]  [3 4]                [[1 2] [3 4]] on both
    ```

    ```mlir
    %y = braid.all_gather %x on @world["tp"] dim 1 : tensor<8x512xf32> -> tensor<8x1024xf32>
    ```
  }];
  let arguments = !con(commonArgs, (ins Braid_Tensor:$input, Braid_I64Attr:$dim));
  let results = (outs Braid_Tensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `on` $mesh `` $mesh_axes `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
}

def Braid_ReduceScatterOp : Braid_CollectiveOp<"reduce_scatter", [
    SameOperandsAndResultElementType, SameOperandsAndResultRank]> {
  let summary = "combines across a group and leaves each member one slice";
  let description = [{
    Reduces the group's inputs elementwise like `all_reduce`, then rank `i` of
    the group keeps the `i`-th of `group size` equal slices along `dim`.

    ```mlir
    %y = braid.reduce_scatter %x on @world["tp"] sum dim 0 : tensor<8x1024xf32> -> tensor<4x1024xf32>
    ```
  }];
  let arguments = !con(commonArgs, (ins Braid_Tensor:$input,
                                        Braid_ReductionKindAttr:$reduction,
                                        Braid_I64Attr:$dim));
  let results = (outs Braid_Tensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `on` $mesh `` $mesh_axes `` $reduction `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
}

def Braid_AllToAllOp : Braid_CollectiveOp<"all_to_all", [
    SameOperandsAndResultElementType, SameOperandsAndResultRank]> {
  let summary = "exchanges slices between all members of a group";
  let description = [{
    Each rank splits its input into `group size` equal slices along
    `split_dim`, sends slice `j` to group member `j`, and concatenates what it
    receives along `concat_dim` in group order (expert-parallel dispatch and
    combine, Ulysses-style sequence/head exchange).

    ```mlir
    %y = braid.all_to_all %x on @world["ep"] split 0 concat 1 : tensor<8x4x64xf32> -> tensor<4x8x64xf32>
    ```
  }];
  let arguments = !con(commonArgs, (ins Braid_Tensor:$input,
                                        Braid_I64Attr:$split_dim, Braid_I64Attr:$concat_dim));
  let results = (outs Braid_Tensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `on` $mesh `` $mesh_axes `split` $split_dim `concat` $concat_dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Braid_CollectivePermuteOp : Braid_CollectiveOp<"collective_permute", [
    SameOperandsAndResultType]> {
  let summary = "shifts tensors around a ring of the group";
  let description = [{
    Group member `i` sends its input to member `(i + shift) mod group size`
    and receives the input of member `(i - shift) mod group size`: one step of
    a ring (Ring Attention's K/V rotation).

    ```mlir
    %kv2 = braid.collective_permute %kv on @world["cp"] shift 1 : tensor<1x8x16x64xf32>
    ```
  }];
  let arguments = !con(commonArgs, (ins Braid_Tensor:$input, Braid_I64Attr:$shift));
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `` $mesh_axes `shift` $shift attr-dict `:` type($result)
  }];
}

def Braid_BroadcastOp : Braid_CollectiveOp<"broadcast", [SameOperandsAndResultType]> {
  let summary = "copies one member's tensor to the whole group";
  let description = [{
    Every member of the group receives the input of group member `root`.

    ```mlir
    %y = braid.broadcast %x on @world["dp"] root 0 : tensor<768xf32>
    ```
  }];
  let arguments = !con(commonArgs, (ins Braid_Tensor:$input, Braid_I64Attr:$root));
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `` $mesh_axes `root` $root attr-dict `:` type($result)
  }];
}

#endif // BRAID_DIALECT_BRAIDCOLLECTIVEOPS_TD
