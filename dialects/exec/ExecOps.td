//===- ExecOps.td - the lowered, executable dialect ------------*- tablegen -*-===//
//
// `exec` describes what one rank runs: tensors at fixed offsets of an arena,
// kernel calls and collectives on named streams, and events between streams.
// It maps one to one onto the plan file (runtime/plan/Plan.proto), which
// `braid-translate --exec-to-plan` writes.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_EXECOPS_TD
#define BRAID_DIALECT_EXECOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let cppNamespace = "::mlir::exec";
  let summary = "Buffers, kernels, collectives, streams and events of one rank";
  let description = [{
    The result of `braid-to-exec`. An `exec.plan` holds buffer declarations
    (a tensor type at an arena offset), the bindings of inputs, outputs,
    weights and constants to buffers, and one `exec.stream` per stream with
    its instructions in order. Streams run concurrently and synchronize only
    through `exec.record` / `exec.wait` on numbered events.
  }];
}

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

def Exec_PlanOp : Exec_Op<"plan", [Symbol, SymbolTable, NoTerminator,
    SingleBlock, IsolatedFromAbove]> {
  let summary = "the program of one rank";
  let description = [{
    ```mlir
    exec.plan @main mesh(tp = 2) arena 4096 events 2 {
      exec.buffer @b0 offset 0 : tensor<8x16xf32>
      exec.input "x" @b0
      exec.stream "compute" { ... }
    }
    ```

    A training plan (one run is one training step) names the inputs that
    `braid-run --steps` fills with token ids and labels, its loss output and
    the batch shape:

    ```mlir
    exec.plan @main mesh(["world"], [1]) arena 4096 events 0
        training {tokens = "input_ids", labels = "labels", loss = "loss",
                  batch = 4 : i64, sequence = 64 : i64} { ... }
    ```

    The tokens and labels inputs are `[batch, sequence]` tensors of i64 or
    i32; the loss output is a scalar f32. A plan that runs several steps per
    call (`steps = K`: braid-cocod-sgd's period, braid-acco's two rounds of
    micro-batches) has `[K * batch, sequence]` inputs and an f32 `[K]` loss;
    `algorithm = "cocod-sgd"` says that its ranks' parameters differ between
    averagings, `algorithm = "acco"` that a call is one optimizer step of
    ACCO.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$axis_sizes, I64Attr:$arena_bytes,
                       I64Attr:$num_events, OptionalAttr<I64Attr>:$comm_sms,
                       OptionalAttr<DictionaryAttr>:$training);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `mesh` `(` $axis_names `,` $axis_sizes `)` `arena` $arena_bytes
    `events` $num_events (`comm_sms` $comm_sms^)? (`training` $training^)?
    attr-dict-with-keyword $body
  }];
  let builders = [
    // A plan that is not a training plan.
    OpBuilder<(ins "::mlir::StringAttr":$sym_name,
                   "::mlir::ArrayAttr":$axis_names,
                   "::mlir::DenseI64ArrayAttr":$axis_sizes,
                   "::mlir::IntegerAttr":$arena_bytes,
                   "::mlir::IntegerAttr":$num_events,
                   "::mlir::IntegerAttr":$comm_sms), [{
      build($_builder, $_state, sym_name, axis_names, axis_sizes, arena_bytes,
            num_events, comm_sms, /*training=*/nullptr);
    }]>
  ];
  let hasVerifier = 1;
}

def Exec_BufferOp : Exec_Op<"buffer", [Symbol, HasParent<"PlanOp">]> {
  let summary = "a tensor at a fixed offset of the arena";
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$offset,
                       TypeAttrOf<AnyStaticShapeTensor>:$type);
  let assemblyFormat = "$sym_name `offset` $offset attr-dict `:` $type";
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// Bytes the buffer occupies (i1 as one byte per element).
    int64_t getNumBytes();
  }];
}

def Exec_InputOp : Exec_Op<"input", [HasParent<"PlanOp">]> {
  let summary = "binds a program input to a buffer";
  let arguments = (ins StrAttr:$name, FlatSymbolRefAttr:$buffer);
  let assemblyFormat = "$name $buffer attr-dict";
}

def Exec_OutputOp : Exec_Op<"output", [HasParent<"PlanOp">]> {
  let summary = "binds a program output to a buffer";
  let arguments = (ins StrAttr:$name, FlatSymbolRefAttr:$buffer);
  let assemblyFormat = "$name $buffer attr-dict";
}

def Exec_WeightOp : Exec_Op<"weight", [HasParent<"PlanOp">]> {
  let summary = "loads (this rank's slice of) a weight into a buffer";
  let description = [{
    `full_shape` is the shape of the weight in the weights file. With
    `block [sizes] at [offsets]` only that box of the weight is loaded
    (absent: the whole weight). `sharding` has one entry per dimension: the
    mesh axes that dimension of the block (of the whole weight) is split over
    (empty: replicated).

    `init "zeros"`: the buffer starts as zeros and the weights file is not
    read (optimizer moments, step counters); absent, the weight is read from
    the weights file. `state`: trained state, updated in place by the plan
    every step (a `copy` kernel into the buffer), kept between steps,
    written by `braid-run --save` and read by `--resume`.

    ```mlir
    exec.weight "c_attn.weight" @b3 full [64, 192] block [64, 64] at [0, 64] sharding [[], ["tp"]]
    exec.weight "c_attn.weight.exp_avg" @b9 full [64, 192] sharding [[], []] init "zeros" state
    ```
  }];
  let arguments = (ins StrAttr:$name, FlatSymbolRefAttr:$buffer,
                       DenseI64ArrayAttr:$full_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$block_offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$block_shape,
                       ArrayAttr:$sharding, OptionalAttr<StrAttr>:$init,
                       UnitAttr:$state);
  let assemblyFormat = [{
    $name $buffer `full` $full_shape
    (`block` $block_shape^ `at` $block_offsets)?
    `sharding` $sharding (`init` $init^)? (`state` $state^)? attr-dict
  }];
  let builders = [
    // A weight read from the weights file that is not state.
    OpBuilder<(ins "::mlir::StringAttr":$name,
                   "::mlir::FlatSymbolRefAttr":$buffer,
                   "::mlir::DenseI64ArrayAttr":$full_shape,
                   "::mlir::DenseI64ArrayAttr":$block_offsets,
                   "::mlir::DenseI64ArrayAttr":$block_shape,
                   "::mlir::ArrayAttr":$sharding), [{
      build($_builder, $_state, name, buffer, full_shape, block_offsets,
            block_shape, sharding, /*init=*/nullptr, /*state=*/nullptr);
    }]>
  ];
  let hasVerifier = 1;
}

def Exec_ConstantOp : Exec_Op<"constant", [HasParent<"PlanOp">]> {
  let summary = "initializes a buffer with a constant";
  let arguments = (ins FlatSymbolRefAttr:$buffer, ElementsAttr:$value);
  let assemblyFormat = "$buffer $value attr-dict";
}

def Exec_StreamOp : Exec_Op<"stream", [HasParent<"PlanOp">, NoTerminator,
    SingleBlock]> {
  let summary = "the instructions of one stream, in order";
  let arguments = (ins StrAttr:$name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$name attr-dict-with-keyword $body";
}

def Exec_KernelOp : Exec_Op<"kernel", [HasParent<"StreamOp">]> {
  let summary = "runs a compute kernel on buffers";
  let description = [{
    `op` is the braid op name without the dialect prefix; `attrs` keeps the
    braid op's attributes by name. `indices` are run-time integers (slice
    and causal offsets), each `[constant, axis, coefficient, ...]`: the
    constant plus coefficient times this rank's index along each axis.

    ```mlir
    exec.kernel "matmul" (@b0, @b1) -> (@b2) {transpose_rhs = true} flops 4096 bytes 2048
    ```
  }];
  let arguments = (ins StrAttr:$op, FlatSymbolRefArrayAttr:$inputs,
                       FlatSymbolRefArrayAttr:$outputs, DictionaryAttr:$attrs,
                       DefaultValuedAttr<ArrayAttr, "{}">:$indices,
                       I64Attr:$flops, I64Attr:$bytes);
  let assemblyFormat = [{
    $op `(` $inputs `)` `->` `(` $outputs `)` $attrs (`indices` $indices^)?
    `flops` $flops `bytes` $bytes attr-dict
  }];
}

def Exec_CollectiveOp : Exec_Op<"collective", [HasParent<"StreamOp">]> {
  let summary = "runs a collective over a mesh-axis group";
  let description = [{
    ```mlir
    exec.collective "all_reduce" @b2 -> @b3 on ["tp"] {reduction = "sum"}
    ```
  }];
  let arguments = (ins StrAttr:$kind, FlatSymbolRefAttr:$input,
                       FlatSymbolRefAttr:$output, StrArrayAttr:$axes,
                       DictionaryAttr:$attrs);
  let assemblyFormat = "$kind $input `->` $output `on` $axes $attrs attr-dict";
}

def Exec_RecordOp : Exec_Op<"record", [HasParent<"StreamOp">]> {
  let summary = "marks an event as reached on this stream";
  let arguments = (ins I64Attr:$event);
  let assemblyFormat = "$event attr-dict";
}

def Exec_WaitOp : Exec_Op<"wait", [HasParent<"StreamOp">]> {
  let summary = "blocks this stream until an event is recorded";
  let arguments = (ins I64Attr:$event);
  let assemblyFormat = "$event attr-dict";
}

#endif // BRAID_DIALECT_EXECOPS_TD
