//===- BraidStructureOps.td - meshes, weights, async/await -----*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAIDSTRUCTUREOPS_TD
#define BRAID_DIALECT_BRAIDSTRUCTUREOPS_TD

include "dialects/braid/BraidBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Braid_MeshOp : Braid_Op<"mesh", [Symbol]> {
  let summary = "a named grid of devices with named axes";
  let description = [{
    Declares a mesh of devices as a symbol. Each axis has a name and a size;
    the mesh holds the product of the sizes. Collectives and `braid.rank` name
    a mesh and some of its axes. Axis names are unique and sizes positive.

    ```mlir
    braid.mesh @world(dp = 2, tp = 4)
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$shape);
  let assemblyFormat = [{
    $sym_name `(` custom<MeshAxes>($axis_names, $shape) `)` attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Returns the position of `axis` among the mesh axes, if it is one.
    std::optional<unsigned> getAxisIndex(::llvm::StringRef axis);
    /// Returns the number of devices in the group spanned by `axes` (the
    /// product of their sizes); 1 for no axes.
    int64_t getGroupSize(::mlir::ArrayAttr axes);
    /// Returns the number of devices in the whole mesh.
    int64_t getNumDevices();
  }];
}

def Braid_RankOp : Braid_Op<"rank", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "this rank's index along one mesh axis";
  let description = [{
    In an SPMD function, returns the index of the running rank along `axis`
    of `mesh`, in [0, size of the axis). Used to pick this rank's slice of a
    tensor or to offset a causal mask.

    ```mlir
    %r = braid.rank @world axis "tp"
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrAttr:$axis);
  let results = (outs Index:$result);
  let assemblyFormat = "$mesh `axis` $axis attr-dict";
}

def Braid_WeightOp : Braid_Op<"weight", [Symbol]> {
  let summary = "a named model parameter, resolved from a weights file";
  let description = [{
    Declares a weight tensor as a symbol. Its values live in the weights file
    (`.safetensors`) next to the plan, under the same name; they never appear
    in the IR. `braid.get_weight` reads it inside a function.

    Training makes weights *state*: `state` weights keep their value across
    calls of the program, `braid.set_weight` gives them their next value,
    and checkpoints save them. A `zeros` weight is not in the weights file:
    it starts as zeros (optimizer moments, the step count).

    With `part of "name" [shape] at [offsets]` the weight is a block of a
    tensor stored under another name (of that full shape), starting at
    those offsets: a fused projection trained as separate weights
    (braid-split-fused-projections `parts`) is still loaded from, and saved
    to checkpoints as, the one tensor the model stores. Parts of one stored
    tensor do not overlap.

    ```mlir
    braid.weight @h0.attn.c_attn.weight : tensor<768x2304xf32>
    braid.weight @h0.attn.c_attn.weight.exp_avg zeros state : tensor<768x2304xf32>
    braid.weight @"h0.attn.c_attn.weight#1" state part of "h0.attn.c_attn.weight" [768, 2304] at [0, 768] : tensor<768x768xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<Braid_Tensor>:$type,
                       UnitAttr:$zeros, UnitAttr:$state,
                       OptionalAttr<StrAttr>:$part_of,
                       OptionalAttr<DenseI64ArrayAttr>:$part_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$part_offsets);
  let assemblyFormat = [{
    $sym_name (`zeros` $zeros^)? (`state` $state^)?
    (`part` `of` $part_of^ $part_shape `at` $part_offsets)? attr-dict `:` $type
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::StringAttr":$sym_name, "::mlir::TypeAttr":$type,
                   CArg<"::mlir::UnitAttr", "{}">:$zeros,
                   CArg<"::mlir::UnitAttr", "{}">:$state), [{
      build($_builder, $_state, sym_name, type, zeros, state,
            /*part_of=*/nullptr, /*part_shape=*/nullptr,
            /*part_offsets=*/nullptr);
    }]>
  ];
  let extraClassDeclaration = [{
    /// Returns the declared tensor type of the weight.
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// The name the weight's values are stored under: the tensor it is a
    /// part of, or its own.
    ::llvm::StringRef getStoredName() {
      return getPartOf() ? *getPartOf() : getSymName();
    }
    /// The full shape of the stored tensor.
    ::llvm::ArrayRef<int64_t> getStoredShape() {
      return getPartShape() ? *getPartShape() : getTensorType().getShape();
    }
    /// The box (offsets, sizes) of the stored tensor that a read of this
    /// weight covers, given the read's block (none: the whole weight);
    /// std::nullopt when that is the whole stored tensor.
    std::optional<std::pair<::llvm::SmallVector<int64_t>,
                            ::llvm::SmallVector<int64_t>>>
    getStoredBox(std::optional<::llvm::ArrayRef<int64_t>> offsets,
                 std::optional<::llvm::ArrayRef<int64_t>> sizes);
  }];
}

def Braid_GetWeightOp : Braid_ComputeOp<"get_weight", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a weight declared by braid.weight, or a block of it";
  let description = [{
    Returns the value of the weight `name`. With `block [sizes] at [offsets]`
    it returns only the rectangular block of the weight that starts at
    `offsets` and has the (unsharded) shape `sizes`: one weight stored once
    (GPT-2's fused QKV projection) can then be read as several weights that
    are sharded independently. Blocks lie inside the declared weight.

    With `sharded on @mesh [...]` the op returns this rank's slice of the
    block (of the whole weight without a block): one entry per dimension
    lists the mesh axes the dimension is split over (row-major over the
    listed axes), and the result type is the block shape with those
    dimensions divided. The runtime slices the weight at load.

    ```mlir
    braid.weight @h0.attn.c_attn.weight : tensor<64x192xf32>
    %w = braid.get_weight @h0.attn.c_attn.weight : tensor<64x192xf32>
    %s = braid.get_weight @h0.attn.c_attn.weight sharded on @world [[], ["tp"]] : tensor<64x96xf32>
    // The key projection: columns 64..127, split over "tp".
    %k = braid.get_weight @h0.attn.c_attn.weight block [64, 64] at [0, 64] sharded on @world [[], ["tp"]] : tensor<64x32xf32>
    ```

    When every use of a `braid.get_weight` of a weight that is not `state`
    is a `braid.slice` with constant offsets and unit strides that cuts only
    dimensions the read does not shard (Domino's column chunks of a
    row-parallel weight), canonicalization turns each slice into a read of a
    block: the runtime cuts it once at load, not with a copy every run.
  }];
  let arguments = (ins FlatSymbolRefAttr:$name,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$block,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<ArrayAttr>:$sharding);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = [{
    $name (`block` $block^ `at` $offsets)?
    (`sharded` `on` $mesh^ $sharding)? attr-dict `:` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$type, "::mlir::FlatSymbolRefAttr":$name), [{
      build($_builder, $_state, type, name, nullptr, nullptr, nullptr, nullptr);
    }]>
  ];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    ::mlir::braid::DimensionMapping getDimensionMapping();
    int64_t getFlops() { return 0; }
    /// Weights are resident: reading one moves no bytes by itself.
    int64_t getMinBytes() { return 0; }
  }];
}

def Braid_SetWeightOp : Braid_Op<"set_weight", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemWrite]>]> {
  let summary = "gives a state weight its value for the next call";
  let description = [{
    When the function returns, the `state` weight `name` holds `value` (the
    whole weight; its type). Reads of the weight in the same call see the
    value it had when the call began, wherever they are. A training step
    ends with one `braid.set_weight` per parameter and optimizer moment.

    With `sharded on @mesh [...]` (as on `braid.get_weight`) `value` is this
    rank's slice of the weight: the partitioner stores a state weight split
    over ranks where the step reads it split (tensor-parallel parameters and
    their optimizer moments), and every read and set of the weight then
    agree on that split.

    ```mlir
    braid.weight @w state : tensor<64x64xf32>
    ...
    braid.set_weight @w, %next : tensor<64x64xf32>
    braid.set_weight @w, %mine sharded on @world [[], ["tp"]] : tensor<64x32xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name, Braid_Tensor:$value,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<ArrayAttr>:$sharding);
  let assemblyFormat = [{
    $name `,` $value (`sharded` `on` $mesh^ $sharding)? attr-dict `:`
    type($value)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::FlatSymbolRefAttr":$name, "::mlir::Value":$value), [{
      build($_builder, $_state, name, value, nullptr, nullptr);
    }]>
  ];
}

def Braid_AsyncOp : Braid_Op<"async", [SingleBlock, NoRegionArguments,
    RecursiveMemoryEffects]> {
  let summary = "runs a region on a named stream";
  let description = [{
    Runs its region on stream `stream` (a CUDA stream, a CPU worker thread, or
    a simulated lane after lowering) and returns one `!braid.future` per value
    the region yields. The region may use values defined above it; those are
    ready when the async starts. Work placed between the async and the
    `braid.await` of its futures overlaps with it. Ops outside any async
    region run on the main stream, `"compute"`, which an async region
    cannot name; asyncs on one stream run in program order.

    ```mlir
    %f = braid.async on "comm" {
      %r = braid.all_reduce %x on @world["tp"] sum : tensor<8x1024xf32>
      braid.yield %r : tensor<8x1024xf32>
    } : !braid.future<tensor<8x1024xf32>>
    %y = braid.await %f : tensor<8x1024xf32>
    ```
  }];
  let arguments = (ins StrAttr:$stream);
  let results = (outs Variadic<Braid_AnyFuture>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "`on` $stream attr-dict-with-keyword $body `:` type($results)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// Returns the terminator of the body.
    YieldOp getYield();
    /// The stream of the ops outside any async region (the main flow).
    static constexpr ::llvm::StringLiteral getMainStream() {
      return "compute";
    }
  }];
}

def Braid_AwaitOp : Braid_Op<"await", [Pure,
    TypesMatchWith<"future wraps the result type", "result", "future",
      "::mlir::braid::FutureType::get(::llvm::cast<::mlir::RankedTensorType>($_self))">]> {
  let summary = "waits for a future and returns its value";
  let description = [{
    Blocks the current stream until the async region that produced `future`
    has finished, then returns the value. Moving an await later (closer to the
    first use) widens the window in which communication overlaps computation.

    ```mlir
    %y = braid.await %f : tensor<8x1024xf32>
    ```
  }];
  let arguments = (ins Braid_AnyFuture:$future);
  let results = (outs Braid_Tensor:$result);
  let assemblyFormat = "$future attr-dict `:` type($result)";
}

def Braid_YieldOp : Braid_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"AsyncOp">]> {
  let summary = "returns the values of a braid.async region";
  let description = [{
    Terminates the body of `braid.async`; each operand becomes the value of the
    corresponding future.
  }];
  let arguments = (ins Variadic<Braid_Tensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // BRAID_DIALECT_BRAIDSTRUCTUREOPS_TD
