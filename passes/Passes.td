//===- Passes.td - braid passes --------------------------------*- tablegen -*-===//

#ifndef BRAID_PASSES_PASSES_TD
#define BRAID_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def BraidCostReport : Pass<"braid-cost-report", "::mlir::ModuleOp"> {
  let summary = "Reports FLOPs and minimum bytes moved per op and per function";
  let description = [{
    Asks every op that implements the cost interface for its FLOPs and minimum
    bytes moved, and reports them as remarks: one per op (unless
    `per-op=false`) and one total per function with its arithmetic intensity
    (FLOPs per byte). Ops inside `braid.async` regions count toward the
    function. The IR is not changed.

    ```
    braid-opt --braid-cost-report=per-op=false model.mlir
    ```
  }];
  let options = [
    Option<"perOp", "per-op", "bool", /*default=*/"true",
           "Report every op, not only the function totals">
  ];
}

def BraidPrintDimensionMapping
    : Pass<"braid-print-dimension-mapping", "::mlir::ModuleOp"> {
  let summary = "Prints and checks the dimension mapping of every op";
  let description = [{
    For every op that implements the dimension-mapping interface, emits a
    remark with its factor mapping, e.g.
    `([f0, f2], [f2, f1]) -> ([f0, f1]) {f0 = 8, f1 = 32, f2 = 16 sum}`, and
    an error where the mapping contradicts the op's types (then the pass
    fails). For inspecting what partitioning and the overlap passes see.
  }];
}

def BraidRaiseAttention : Pass<"braid-raise-attention"> {
  let summary = "Raises scaled dot-product attention subgraphs to braid.attention";
  let description = [{
    Finds `softmax(scale * Q K^T + mask) V` written with matmul, transpose,
    scalar multiplies or divides, an additive mask and/or a select with a very
    negative fill, and a softmax over the key dimension, and replaces it with
    one `braid.attention`. A constant mask that is exactly causal becomes the
    `causal` attribute; any other mask is kept as the op's mask operand, with
    its semantics unchanged. The raised op computes the same values: nothing
    is raised when that cannot be shown from the IR (for example a select
    mask computed at run time, whose fully masked rows would differ).

    ```mlir
    %s = braid.matmul %q, %k transpose_rhs : ...
    %t = braid.mul %s, %c : ...          // scale
    %u = braid.add %t, %causal : ...     // constant causal mask
    %p = braid.softmax %u dim 3 : ...
    %o = braid.matmul %p, %v : ...
    // becomes
    %o = braid.attention %q, %k, %v causal scale ... : ...
    ```
  }];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidRaiseFusedOps : Pass<"braid-raise-fused-ops"> {
  let summary = "Raises exporters' GELU, SiLU, norm and rotary decompositions to fused ops";
  let description = [{
    The ONNX exporters (dynamo and TorchScript) write these as chains of
    elementwise ops; each chain becomes one op, one pass over memory:

    - `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (x^3 as `pow(x, 3)`
      or `x x x`) becomes `braid.gelu %x tanh`;
    - `0.5 x (1 + erf(x / sqrt(2)))` becomes `braid.gelu %x`;
    - `x * sigmoid(x)` becomes `braid.silu %x`;
    - `gamma * (x * r)` or `gamma * (x / s)`, with `s = sqrt(mean(x^2) + eps)`
      and `r = 1 / s` or `rsqrt(mean(x^2) + eps)`, the mean (`pow(x, 2)` or
      `x * x`, reduced over trailing dimensions with `keep_dims`) becomes
      `braid.rms_norm %x, %gamma`, gamma holding exactly those dimensions;
    - `x * cos + rotate_half(x) * sin`, with `rotate_half(x)` the concat of
      `-x[..., D/2:]` and `x[..., :D/2]` along the last dimension (LLaMA's
      rotary embedding, as both exporters write it) and tables of x's last
      dimension that broadcast to x, becomes `braid.rotary %x, %cos, %sin`.

    Products are read as a scalar times factors, so operand order and where
    the constant factors sit do not matter. Every intermediate must feed
    only the chain, and every constant must be the formula's to within
    float rounding (relative 1e-6); anything else is left unchanged. The
    raised ops compute the same function; the CPU kernels compute it in
    float in one pass (tests bound the difference).

    ```mlir
    %s = braid.sigmoid %x : tensor<2x16x128xf32>
    %y = braid.mul %x, %s : (tensor<2x16x128xf32>, tensor<2x16x128xf32>) -> tensor<2x16x128xf32>
    // becomes
    %y = braid.silu %x : tensor<2x16x128xf32>
    ```

    braidc runs it on import; for a training step it raises the norms
    after partitioning instead: a partitioner that shards a norm's dimension
    (in training, a fused projection it cannot split Megatron's way) can
    still compute the decomposed norm from partial means, where the fused op
    needs its dimension whole.
  }];
  let options = [
    Option<"activations", "activations", "bool", /*default=*/"true",
           "Raise GELU (tanh and erf) and SiLU">,
    Option<"norms", "norms", "bool", /*default=*/"true",
           "Raise RMSNorm and LayerNorm">,
    Option<"rotary", "rotary", "bool", /*default=*/"true",
           "Raise rotate-half rotary embeddings">,
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidSplitFusedProjections : Pass<"braid-split-fused-projections"> {
  let summary = "Splits a fused projection into one projection per piece";
  let description = [{
    `split(reshape(x @ W + b))` along the last dimension, as GPT-2 computes q,
    k and v from one `c_attn` weight, becomes one projection per piece, each
    reading its block of `W` and `b` (`braid.get_weight ... block`). The split
    moves toward the producers through reshapes that keep the last dimension,
    elementwise add/sub/mul/div (an operand broadcast along it is shared),
    and matmul (the weight's columns are split). Nothing changes unless every
    op on the way feeds only the next one. The values are the same; the point
    is that `braid-partition` can then shard every piece by its own columns
    (Megatron's layout), which a fused weight split in contiguous blocks
    cannot give. `braidc --parallel` runs it before partitioning.

    ```mlir
    %y = braid.matmul %x, %w : (tensor<32x64xf32>, tensor<64x192xf32>) -> tensor<32x192xf32>
    %q, %k, %v = braid.split %y dim 1 : ...
    // becomes
    %wq = braid.get_weight @w block [64, 64] at [0, 0] : tensor<64x64xf32>
    %q = braid.matmul %x, %wq : ...      // and likewise k, v
    ```

    With `parts=true` (braidc runs it so before differentiating a training
    step under tp) a weight read only in disjoint blocks becomes one weight
    per block, declared `part of` the stored tensor: each piece is then its
    own trained parameter, with its own optimizer state, which the
    partitioner stores split by its own columns. The plan still loads each
    part from, and checkpoints save it into, the one stored tensor, and the
    optimizer state of the parts forms one state tensor per moment.

    ```mlir
    braid.weight @"w#1" part of "w" [64, 192] at [0, 64] : tensor<64x64xf32>
    %wk = braid.get_weight @"w#1" : tensor<64x64xf32>
    ```
  }];
  let options = [
    Option<"parts", "parts", "bool", /*default=*/"false",
           "Declare each block of a weight read only in disjoint blocks as a "
           "weight of its own (part of the stored tensor)">,
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidAutodiff : Pass<"braid-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of a function computing a loss";
  let description = [{
    `@main` (option `function`) returns a scalar float loss as its result
    `loss` (default 0). The pass appends the gradient of the loss with
    respect to every trained weight (option `wrt=weights`, the default) or
    every float argument (`wrt=arguments`), one result each, marked
    `braid.gradient_of = @weight` (or the argument number). It walks the
    function backwards and asks each op for its vector-Jacobian product
    through `GradientOpInterface`; forward values the rules read stay live
    until the backward pass uses them. The gradient of a weight read twice
    is the sum; that of a trained weight the loss does not depend on is
    zero.

    Trained weights (`trainable=auto`): float weights that the loss depends
    on through a differentiable operand, of rank 1 or less, or of higher
    rank when some use (through layout ops: reshape, transpose, slice,
    concat, broadcast, cast) contracts or normalizes them (a reduction or
    whole factor of the operand: matmul weights, embedding tables, norm
    scales). Masks and rotary tables stay frozen. `trainable=all` trains
    every float weight the loss depends on; `frozen` and `train` list names
    to override the choice.

    Memory: with `recompute=none` every forward value a rule reads stays
    live until the rule runs. `recompute=elementwise` (selective activation
    recomputation) re-emits cheap forward ops (only parallel factors, at
    most 8 operations per element: activations, scalings, residual adds,
    layout changes) right before their first backward use, so their results
    need not live from the forward pass to the backward one; contractions,
    norms, softmax and attention are kept.

    Differentiate the single-device program, before partitioning and the
    overlap passes (regions are refused): the partitioner then treats
    forward and backward alike.

    ```
    braid-opt --braid-autodiff loss.mlir
    ```
  }];
  let options = [
    Option<"functionName", "function", "std::string", /*default=*/"\"main\"",
           "The function to differentiate">,
    Option<"lossIndex", "loss", "unsigned", /*default=*/"0",
           "The result holding the scalar loss">,
    Option<"wrt", "wrt", "std::string", /*default=*/"\"weights\"",
           "Differentiate with respect to 'weights' or 'arguments'">,
    Option<"trainable", "trainable", "std::string", /*default=*/"\"auto\"",
           "Which weights are trained: 'auto' or 'all'">,
    ListOption<"frozen", "frozen", "std::string",
               "Weights never trained (overrides trainable)">,
    ListOption<"train", "train", "std::string",
               "Weights always trained (overrides trainable)">,
    Option<"recompute", "recompute", "std::string", /*default=*/"\"none\"",
           "Forward values the backward pass recomputes instead of keeping: "
           "'none' or 'elementwise' (cheap elementwise and layout ops)">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidMixedPrecision : Pass<"braid-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Computes in bf16 or f16 while weights stay f32 (mixed precision)";
  let description = [{
    Every f32 value of `@main` becomes a `type` value (`bf16` or `f16`):
    each read of an f32 weight (`braid.get_weight`) and each f32 argument
    is cast once where it enters, f32 constants are converted (a finite
    value past the type's range saturates to its largest finite value, so
    that a mask of `-FLT_MAX` stays finite and `0 * mask` stays 0), and
    every result is cast back to f32 where it leaves, so the function's
    signature does not change. Weights stay f32 in storage (the "master
    weights" of mixed-precision training), so under `--train` the
    gradients arrive in f32 through the casts' gradients, and the
    optimizer's state and update stay f32; the loss is taken of the f32
    logits. This is Megatron-LM's `--bf16` scheme (the model in bf16, fp32
    main parameters, gradients and optimizer), not PyTorch autocast's
    per-op lists: norms, softmax and reductions run in `type`, the kernels
    accumulating in f32 inside.

    f16 training needs loss scaling (its gradients underflow), which braidc
    does not do: `braidc --train --precision f16` is refused.
  }];
  let options = [
    Option<"type", "type", "std::string", /*default=*/"\"bf16\"",
           "The element type computed in: bf16 or f16">,
    Option<"functionName", "function", "std::string", /*default=*/"\"main\"",
           "The function to convert">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidNextTokenLoss : Pass<"braid-next-token-loss", "::mlir::ModuleOp"> {
  let summary = "Replaces a language model's logits by its training loss";
  let description = [{
    `@main(tokens [B, S]) -> logits [B, S, V]` becomes
    `@main(tokens, labels [B, S]) -> loss`: next-token cross entropy of the
    logits against `labels`, the mean over all `B x S` positions (PyTorch's
    `F.cross_entropy(logits.view(-1, V), labels.view(-1))`). The labels are
    the tokens shifted by one, which the runtime's data loader provides
    (`braid-run --data`), so the model is not changed. The new argument is
    named `labels` and the result `loss` (`braid.name`). A function whose
    first result is not `[B, S, V]` logits over an integer `[B, S]` tokens
    argument, or with other arguments, is refused.

    `vocab-parallel=true` writes the loss as the ops it is made of instead
    of one `braid.cross_entropy` (Megatron-LM's vocab-parallel cross
    entropy): `m = max_v x` (marked `braid.stop_gradient`: the loss does
    not depend on it), `lse = log(sum_v exp(x - m))`, the label's
    `x - m` picked by a one-hot product and summed, and their difference
    averaged. Each is an elementwise op or a reduction over the
    vocabulary, which braid-partition splits with the LM head's columns
    (three all-reduces of one value per position), where the fused op
    needs the whole vocabulary on every rank; braidc sets it under tensor
    parallelism. The backward pass braid-autodiff derives from them is
    `exp(x - m) / s - onehot`, again split.
  }];
  let options = [
    Option<"vocabParallel", "vocab-parallel", "bool", /*default=*/"false",
           "The loss as elementwise ops and reductions over the vocabulary, "
           "which tensor parallelism splits">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidTrainingStep : Pass<"braid-training-step", "::mlir::ModuleOp"> {
  let summary = "Turns loss and gradients into one optimizer step on state";
  let description = [{
    Runs after `braid-autodiff`. Every weight with a gradient result
    (`braid.gradient_of`) becomes a `state` weight; the optimizer's moments
    become `zeros state` weights named after PyTorch's state
    (`<weight>.momentum_buffer`, `<weight>.exp_avg`, `<weight>.exp_avg_sq`;
    AdamW's step count is `braid.step`); the update is appended as braid
    ops ending in `braid.set_weight`, and the function returns the loss
    only. The program is then one training step: each call reads a batch,
    returns the loss of the weights it started with, and leaves the updated
    weights for the next call.

    * `optimizer=sgd`: `buf = momentum * buf + g` (with `momentum` > 0),
      `w -= lr * buf` (PyTorch's SGD, no dampening or Nesterov);
      `weight-decay` adds `weight-decay * w` to `g` first.
    * `optimizer=adamw`: PyTorch's AdamW: `w *= 1 - lr * weight-decay`,
      moments `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`, bias
      corrections `1 - b^t`, `w -= lr / (1 - b1^t) * m /
      (sqrt(v) / sqrt(1 - b2^t) + eps)`.
    * `clip-norm=C` > 0 scales every gradient by
      `min(1, C / (total norm + 1e-6))` first (`clip_grad_norm_`).

    `mark-gradients=true` leaves the attribute `braid.gradient_of` on the op
    that computes each gradient, for `braid-acco`, which splits the step
    there (and removes the marks).
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd or adamw">,
    Option<"lr", "lr", "double", /*default=*/"0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum (0: none)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Weight decay (decoupled for AdamW, added to g for SGD)">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Clip the gradients' global norm to this (0: off)">,
    Option<"markGradients", "mark-gradients", "bool", /*default=*/"false",
           "Mark the op computing each gradient (braid.gradient_of), for "
           "braid-acco">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidPartition : Pass<"braid-partition", "::mlir::ModuleOp"> {
  let summary = "Partitions a single-device program over a mesh (SPMD)";
  let description = [{
    Turns `@main` into the program of one rank of a device mesh. With presets
    the pass creates `braid.mesh @world(dp = .., ep = .., cp = .., tp = ..)`
    from the axes given (outermost first; `tp` innermost, within a node);
    without presets, the program declares one mesh and annotates function
    arguments and ops with `#braid.sharding` (see the attribute).

    The mesh axes are partitioned one after another. Along one axis, every
    value is whole, sharded on one dimension, or a partial sum; shardings
    propagate forward through every op's dimension mapping, with no per-op
    cases: an op is computed in blocks of the factor that leads a sharded
    operand's dimension, when that factor is parallel, a reduction or routed
    tokens, divides by the axis size and leads every dimension it is in.
    Reshardings, cheapest first: an operand already sharded right is kept;
    one sharded on another dimension is exchanged with `braid.all_to_all`; a
    weight read only there is loaded sharded (`braid.get_weight ... sharded
    on`); anything else is sliced locally from `braid.rank`; a partial sum is
    completed by `braid.all_reduce` (or `braid.reduce_scatter` with `sp`);
    an operand the op needs whole is gathered with `braid.all_gather`. Ops
    that depend on absolute positions (causal attention's diagonal) learn
    where their block starts. Results of the function are whole on every
    rank.

    Presets:
    * `tp=N` (Megatron): a matmul or grouped matmul of a weight read only
      there is column parallel unless its contraction is already split (row
      parallel, followed by the all-reduce).
    * `sp=true` with `tp` (Megatron sequence parallelism): partial sums are
      reduce-scattered along the token dimension; column-parallel matmuls
      gather it back.
    * `dp=N`: every input is split along dimension 0 (batch).
    * `ep=N`: inputs are split along dimension 0, MoE dispatch routes this
      rank's tokens, grouped matmuls of expert weights are split by expert
      (an all-to-all before the experts and one before the combine).
    * `cp=N`: every input is split along dimension 1 (sequence); causal
      attention computes its block of queries against gathered keys/values
      (the ring and 2-D attention passes refine this). A partial sum of
      activations (a backward pass's key/value gradients) is
      reduce-scattered along the sequence; weight gradients are
      all-reduced whole.

    With several axes, a value partial on more than one (a weight gradient
    under dp and cp) is completed by one all-reduce over all of them.

    ```
    braid-opt --braid-partition="dp=2 tp=2" model.mlir
    ```
  }];
  let options = [
    Option<"tpSize", "tp", "int64_t", /*default=*/"0",
           "Ranks along the tensor-parallel axis 'tp' (Megatron)">,
    Option<"sequenceParallel", "sp", "bool", /*default=*/"false",
           "Sequence parallelism on the tp axis (reduce-scatter/all-gather)">,
    Option<"dpSize", "dp", "int64_t", /*default=*/"0",
           "Ranks along the data-parallel axis 'dp' (inputs split on dim 0)">,
    Option<"epSize", "ep", "int64_t", /*default=*/"0",
           "Ranks along the expert-parallel axis 'ep'">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage on the dp axis of a training step: 1 stores the "
           "optimizer state (zero-initialized state weights) split over the "
           "dp ranks, reduce-scatters the gradients into the update, which "
           "runs on this rank's slice, and all-gathers the parameters; 2 is "
           "the same (gradients are kept only as shards already); 3 stores "
           "the parameters split too and all-gathers each before its first "
           "forward use and again before its first backward use">,
    Option<"cpSize", "cp", "int64_t", /*default=*/"0",
           "Ranks along the context-parallel axis 'cp' (inputs split on dim 1)">,
    Option<"functionName", "function", "std::string", /*default=*/"\"main\"",
           "The function to partition">,
    Option<"allowReplicated", "allow-replicated", "bool", /*default=*/"false",
           "Accept a mesh axis that partitions nothing (every rank computes "
           "the whole program) with a warning instead of an error">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidPrintChunkRuns : Pass<"braid-print-chunk-runs", "::mlir::ModuleOp"> {
  let summary = "Prints the dependency analysis behind the overlap passes";
  let description = [{
    Seeds each function's inputs (`function`, default every function) split along dimension `dim` into `chunks` chunks
    and reports, for every op the split reaches, a remark: the run it belongs
    to, the factor it is chunked along, and what chunk i needs of each
    operand (`chunk` along a dimension, `prefix` 0..i along a dimension for
    keys/values of causal attention, or `whole`). Ops that need a chunked
    value whole end a run. The IR is not changed.
  }];
  let options = [
    Option<"dim", "dim", "int64_t", /*default=*/"0",
           "The input dimension to split (0: batch, 1: sequence)">,
    Option<"chunks", "chunks", "int64_t", /*default=*/"2", "Number of chunks">,
    Option<"functionName", "function", "std::string", /*default=*/"\"\"",
           "The function to transform (default: every function with a body)">
  ];
}

def BraidDomino : Pass<"braid-domino", "::mlir::ModuleOp"> {
  let summary = "Splits rows and/or columns into chunks whose collectives overlap (Domino)";
  let description = [{
    DeepSpeed Domino's tensor slicing for a tensor-parallel program: with
    `split=rows` the batch (dimension 0 of every input of `@main`) is split
    into `chunks` chunks and every op the split reaches (through all layers,
    collectives included) is computed once per chunk; with `split=columns`
    the output columns of every row-parallel matmul (one whose result is
    all-reduced) are split, up to the next op that needs them whole (the
    layer norm); `split=both` does rows, then columns within each row chunk.
    Chunks need not be equal (a batch of 3 in 2 chunks gives 2 and 1). Each
    chunk's collective is independent of the other chunks' compute;
    `braid-schedule` then issues it as soon as its chunk is done and awaits
    it as late as possible, across layer boundaries.

    `chunks=auto` (or `0`) tries 1, 2, 4 and 8 chunks and keeps the count
    whose scheduled program the cost model (hardware profile `hw`) says is
    fastest (one chunk is the input; with `force=true` only 2, 4 and 8
    compete). A fixed count is estimated too: when the cost model says the
    chunked program is slower than its input, the input is kept with a
    warning (`force=true` applies it anyway). Column chunks of a
    row-parallel weight are read as blocks at load, not sliced every run.
    Its input must not be scheduled yet: a function that already holds
    `braid.async` regions is rejected with one error (run it before
    `braid-schedule`).
  }];
  let options = [
    Option<"chunks", "chunks", "::mlir::braid::AutoCount", /*default=*/"2",
           "Number of chunks, or auto: chosen by the cost model">,
    Option<"split", "split", "std::string", /*default=*/"\"rows\"",
           "rows (batch), columns (row-parallel outputs) or both">,
    Option<"force", "force", "bool", /*default=*/"false",
           "Apply even when the cost model estimates the result slower "
           "than the input (otherwise the input is kept, with a warning)">,
    Option<"hw", "hw", "std::string", /*default=*/"\"dgx-h100\"",
           "Hardware profile of the cost model (chunks=auto, and the check "
           "that the result is not slower than the input)">,
    Option<"functionName", "function", "std::string", /*default=*/"\"\"",
           "The function to transform (default: every function with a body)">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidSeqPipeline : Pass<"braid-seq-pipeline", "::mlir::ModuleOp"> {
  let summary = "Pipelines sequence chunks of a causal prefill (ISO)";
  let description = [{
    ISO's sequence pipelining for prefill: the sequence (dimension 1 of every
    input of each function: `function`, or every function with a body) is split into chunks and every op is computed once per
    chunk; causal attention of chunk i reads the keys and values of chunks
    0..i (with its causal diagonal at the chunk's start). Chunk i's
    all-reduce can then overlap chunk i+1's compute, and one chunk's MLP the
    other's collective (`braid-schedule` does the placing).

    Split points come from `split-points` (sequence positions, e.g. `11` for
    [0, 11) and [11, 16)), from `chunks` (even split), or, with `chunks=auto`
    (or `0`), from the cost model (`hw`): it tries split points for two chunks
    and the input itself (unless `force=true`), and keeps the fastest
    scheduled program (`braid.seq_split_point` on the module: the point, or 0
    for no split). Attention cost grows with the square of the
    prefix, so the balanced point sits near L/sqrt(2) when attention
    dominates and near L/2 when linear layers do.
    Whichever way the chunks are given, when the cost model says the
    pipelined program is slower than its input, the input is kept with a
    warning (`force=true` applies it anyway).
    Its input must not be scheduled yet: a function that already holds
    `braid.async` regions is rejected with one error (run it before
    `braid-schedule`).
  }];
  let options = [
    Option<"chunks", "chunks", "::mlir::braid::AutoCount", /*default=*/"2",
           "Number of equal chunks, or auto: two chunks split where the cost "
           "model says">,
    ListOption<"splitPoints", "split-points", "int64_t",
               "Sequence positions where chunks start (overrides chunks)">,
    Option<"force", "force", "bool", /*default=*/"false",
           "Apply even when the cost model estimates the result slower "
           "than the input (otherwise the input is kept, with a warning)">,
    Option<"hw", "hw", "std::string", /*default=*/"\"dgx-h100\"",
           "Hardware profile of the cost model (chunks=auto, and the check "
           "that the result is not slower than the input)">,
    Option<"functionName", "function", "std::string", /*default=*/"\"\"",
           "The function to transform (default: every function with a body)">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidCocodSgd : Pass<"braid-cocod-sgd", "::mlir::ModuleOp"> {
  let summary = "One period of CoCoD-SGD: local steps on each data-parallel "
                "rank while the parameters' average moves in the background";
  let description = [{
    Turns a one-rank training step (braid-training-step's @main) into one
    period of CoCoD-SGD (Shen et al., IJCAI'19) on a new mesh
    `@world(dp = ranks)`: each rank runs `period` copies of the step on its
    own batches (local SGD or AdamW; the optimizer state stays local), and
    at the end sets every parameter to
    `mean over ranks(x_start) + (x_end - x_start)`, where `x_start` is the
    parameter when the call began. The average of `x_start` depends on
    nothing the local steps compute, so braid-schedule starts it first and
    awaits it at the end: the communication of a period hides behind its
    compute (time max(K t_step, T_allreduce) instead of the sum).

    Not an exact rewrite: the ranks' parameters differ between averagings
    (documented in docs/training.md). The data contract becomes
    `steps = period` steps of `batch = ranks * B` rows per call: tokens and
    labels `[period * ranks * B, S]`, rank r reading rows
    `[r * period * B, (r + 1) * period * B)`, local step k the B rows from
    `k * B` of them; the loss result is `[period]`, each step's loss
    averaged over the ranks.

    `period=0` (braidc's `cocod-sgd=auto`) picks the fewest local steps whose
    estimated compute, on hardware profile `hw`, covers the estimated
    all-reduces of the average (at most 64), and says so in a remark.
  }];
  let options = [
    Option<"period", "period", "int64_t", /*default=*/"1",
           "Local steps per averaging (K); 0: auto, the fewest whose "
           "compute covers the averaging on the cost model">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "Data-parallel ranks (P)">,
    Option<"hw", "hw", "std::string", /*default=*/"\"dgx-h100\"",
           "Hardware profile of the cost model (period=0)">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidAcco : Pass<"braid-acco", "::mlir::ModuleOp"> {
  let summary = "One optimizer step of ACCO: the sharded optimizer step "
                "and its collectives beside the next micro-batches' "
                "gradients";
  let description = [{
    Turns a one-rank training step (braid-training-step's @main, run with
    `mark-gradients=true`) into one optimizer step of ACCO (Nabli et al.,
    arXiv 2406.02613; the authors' trainer_decoupled.py) on a new mesh
    `@world(dp = ranks)`. A call runs two rounds of `micro` micro-batches
    on every rank:

    1. *estimate*: `t~ = opt(t, state; pending)`, from the gradients the
       previous call left pending (reduce-scattered, the optimizer on this
       rank's shard, the parameters all-gathered; the optimizer state is
       not kept), while the rank computes the gradients `B1` of `micro`
       micro-batches at `t`;
    2. *real*: `t = opt(t, state; pending + B1)`, the step that is kept,
       while the rank computes the gradients `B2` of `micro` micro-batches
       at `t~`, which become the pending gradients of the next call.

    Gradients are averaged over the ranks and micro-batches in them. The
    first call has no pending gradients: its estimate is the optimizer on
    a zero gradient. Neither round's communication reads what its round
    computes, so braid-schedule overlaps them. The optimizer state (moments,
    momentum buffers) is stored split over the ranks as ZeRO-1 splits it
    (first dimension divisible by `ranks`), the optimizer runs on shards
    (global-norm clipping's sum of squares: a shard's, all-reduced), and
    each rank's pending gradient sums are the state weights
    `<parameter>.acco_pending` (`[ranks, ...]`, stored split) with their
    count `braid.acco.count`, so a checkpoint holds the whole run.

    Not an exact rewrite of synchronous training (documented in
    docs/training.md). The data contract becomes `steps = 2 * micro` steps
    of `batch = ranks * B` rows per call: tokens and labels
    `[2 * micro * ranks * B, S]`; step k reads rows `[k P B, (k + 1) P B)`,
    rank r the B rows from `k P B + r B`; the loss result is `[2 * micro]`,
    each micro-batch's loss averaged over the ranks.

    `micro=0` (braidc's `acco=auto`) picks the fewest micro-batches per
    round whose estimated compute, on hardware profile `hw`, covers the
    round's estimated communication (at most 16), and says so in a remark.

    `synchronous=true` (braidc's `accumulate=N`) builds the baseline ACCO
    is measured against instead: synchronous data parallelism with the same
    split optimizer (ZeRO-1) and gradient accumulation, `micro`
    micro-batches at `t` and one step on their mean per call (`steps =
    micro`, no pending state). An exact rewrite of synchronous training at
    batch `micro * ranks * B`.

    `max-micro=N` with N > micro (braidc's `acco=M:N`) makes the count a run
    decides, as the authors' compute thread does: each round has room for
    N micro-batches; the first `micro` always run, and each later one
    (an optional group, `braid.optional`) runs only if the round's
    communication (its collectives, `braid.round`) is still in flight when
    the rank's compute stream reaches it, and else reads as zeros. A fast
    rank thus computes more micro-batches per round than a slow one, and no
    rank waits for the slowest one's extra work. The gradient counts are
    run-time values: each rank's count of the pending sum is state
    (`braid.acco.counts`, `[P]` stored split) and the counts are summed by
    an all-reduce in the round that needs them. The loss result is
    `[2 N]`, each micro-batch's loss averaged over the ranks that ran it,
    and a second result `ran` `[2 N]` counts those ranks (0: the
    micro-batch ran nowhere). A plan run with every group run computes
    what `micro=N` does; with none, what `micro=M` does, on windows with
    gaps.
  }];
  let options = [
    Option<"maxMicro", "max-micro", "int64_t", /*default=*/"0",
           "Room for this many micro-batches per round, the ones beyond "
           "micro run only while the round's communication is in flight "
           "(0: exactly micro)">,
    Option<"micro", "micro", "int64_t", /*default=*/"1",
           "Micro-batches per round (two rounds per call); 0: auto, the "
           "fewest whose compute covers the round's communication on the "
           "cost model">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "Data-parallel ranks (P)">,
    Option<"hw", "hw", "std::string", /*default=*/"\"dgx-h100\"",
           "Hardware profile of the cost model (micro=0)">,
    Option<"synchronous", "synchronous", "bool", /*default=*/"false",
           "Gradient accumulation over micro micro-batches and one "
           "synchronous step (the baseline), not ACCO">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidBuckets : Pass<"braid-buckets", "::mlir::ModuleOp"> {
  let summary = "Groups all-reduces into buckets in the order their operands "
                "are produced (DDP's gradient buckets, at compile time)";
  let description = [{
    Takes the all-reduces of a function in the order their operands are
    produced (in a training step under `dp`: the weight gradients, which the
    backward pass produces last layer first, while the partitioner places
    their all-reduces where the update reads them) and groups them, in that
    order, into buckets of at most `mib` MiB: all-reduces of one mesh axis
    group, reduction and element type, whose results are all read after the
    bucket's last operand exists. Each bucket becomes one all-reduce of the
    concatenated (flattened) operands, right after its last operand is
    produced, and slices of its result; a bucket of one is only moved there.
    Reduce-scatters (ZeRO's gradients) move to right after their operand's
    producer too, without fusion.
    `braid-schedule` then issues every bucket as soon as it is complete and
    awaits it where the update reads it, so the gradients of the last layers
    move while the backward pass computes the first layers'. The result is
    the same values (the reduction is elementwise).

    `mib=auto` (or `0`) weighs, on the cost model of hardware profile `hw`,
    no fusion (each all-reduce alone, in production order), 64 KiB, 256
    KiB, 1, 4, 16 and 64 MiB, and one bucket for everything, and keeps the
    fastest scheduled result (recorded as `braid.bucket_bytes` and for
    `--explain`). A fixed size is estimated too: when the cost model says
    the result is slower than the input, the input is kept with a warning
    (`force=true` applies it anyway). Its input must not be scheduled yet.
  }];
  let options = [
    Option<"mib", "mib", "::mlir::braid::AutoCount", /*default=*/"0",
           "Bucket size in MiB, or auto: chosen by the cost model">,
    Option<"force", "force", "bool", /*default=*/"false",
           "Apply a fixed size even when the cost model estimates the "
           "result slower than the input">,
    Option<"hw", "hw", "std::string", /*default=*/"\"dgx-h100\"",
           "Hardware profile of the cost model">,
    Option<"functionName", "function", "std::string", /*default=*/"\"\"",
           "The function to transform (default: every function with a body)">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidSchedule : Pass<"braid-schedule", "::mlir::ModuleOp"> {
  let summary = "Issues collectives early and awaits them late (latency hiding)";
  let description = [{
    Turns every synchronous collective of every function into a
    `braid.async on "comm"` issued as soon as its operands exist, with its
    `braid.await` right before the first op that reads the result, and
    reorders the compute in between: a list scheduler in estimated time (the
    cost model of hardware profile `hw`) runs, among the ops whose operands
    are available, the earliest in program order, and waits for a collective
    only when no other work is left, across layer boundaries. All collectives
    go to one stream in one order, so every rank issues them identically.
    Ops are timed as the kernels braid-to-exec will run: a matmul with the
    epilogue it will fuse, an elementwise tree as its one kernel
    (dialects/braid/Fusion.h). Each such fusion is scheduled as one unit,
    so that no collective is issued and no await placed between its ops
    (which would part them).
    With `gather-stream=NAME` (braidc `--comm-streams 2`), gathers
    (collectives whose result is larger than their operands) run on a
    second stream when the body also has other collectives: a parameter
    gather then does not wait behind a gradient's reduce-scatter (FSDP2's
    known problem); the runtime gives the two streams separate
    communicators. Not the default: measured 7% slower for ZeRO-3 over the
    veth link on two cores, and equal in the simulator on GPT-2 small, dp=16
    (docs/results.md). The time estimate treats the two streams as
    independent (braid-run's simulator shares the link between them).

    Collectives issue in program order per stream, except that one whose operands
    exist passes earlier ones still waiting for theirs (a gradient's
    reduce-scatter need not wait for the embedding's, which backward
    produces last), unless it continues a chain of collectives (ring
    shifts keep their order); compute that feeds a collective runs first
    among the ops available.

    Gathers (collectives whose result is larger than their operands:
    ZeRO-3's parameter gathers) issue at most a window of W ops (program
    order) ahead of their first reader. `prefetch=auto` takes the smallest
    W whose estimated makespan is within 1% of unbounded prefetch's
    (`prefetch=all`: no window). `memory-limit` (bytes; 0: none) bounds
    the plan's peak memory per rank: the arena braid-to-exec will build
    (weights, optimizer state, inputs, outputs and every intermediate,
    with the same live ranges and packing); the pass takes the largest W
    (up to auto's) whose arena fits, reports the bytes in a remark, and
    fails naming the bytes needed when even W = 0 does not fit (it does
    not reorder compute to save memory). A gather issued later than it
    would be without a window is marked `braid.held_by_memory_limit`
    (braid-overlap-report explains it). Under `memory-limit` the pass first
    drops the second gathers (`braid.regather`: ZeRO-3's backward
    parameter gathers, Megatron-SP's backward activation gathers) whose
    forward copy fits, the backward pass reading that copy instead: the
    forward's latest first, as many as keep the tightest plan's arena
    within the limit (a remark gives the count and the bytes).
  }];
  let options = [
    Option<"hw", "hw", "std::string", /*default=*/"\"dgx-h100\"",
           "Hardware profile (runtime/profiles) the schedule is timed on">,
    Option<"memoryLimit", "memory-limit", "int64_t", /*default=*/"0",
           "Peak bytes of the plan's arena per rank (0: no limit)">,
    Option<"stream", "stream", "std::string", /*default=*/"\"comm\"",
           "The stream collectives run on">,
    Option<"gatherStream", "gather-stream", "std::string",
           /*default=*/"\"\"",
           "The stream gathers run on when the body also has other "
           "collectives (empty, the default, or the same as `stream`: one "
           "stream)">,
    Option<"prefetch", "prefetch", "std::string", /*default=*/"\"auto\"",
           "How far ahead gathers may issue: auto (the smallest window of "
           "ops within 1% of the unbounded estimated time) or all (as soon "
           "as their operands exist)">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidOverlapReport : Pass<"braid-overlap-report", "::mlir::ModuleOp"> {
  let summary = "Reports, per collective, how much of it is hidden and why not";
  let description = [{
    Estimates the timeline of every function (the cost model of hardware
    profile `hw`; see passes/OverlapModel.h) and reports a remark per
    collective: its time, the part of it that compute on the compute stream
    hides, and when not all of it is hidden, why: `synchronous` (not in an
    async; run braid-schedule), `memory limit` (braid-schedule held it back),
    `no independent work` (its result is awaited before any other op runs),
    or `dependency` (the independent work between issue and await is shorter
    than the collective). A last remark per function gives the makespan, the
    compute and communication totals, the exposed communication and the
    overlap efficiency against the bound max(compute, communication). When
    overlap passes chose something by their cost model on the way here
    (`braid.explain`), a remark on the module lists each decision's
    candidates with their estimates. The IR is not changed.
  }];
  let options = [
    Option<"hw", "hw", "std::string", /*default=*/"\"dgx-h100\"",
           "Hardware profile (runtime/profiles) the estimate uses">
  ];
}

def BraidOverlapAuto : Pass<"braid-overlap-auto", "::mlir::ModuleOp"> {
  let summary = "Chooses between Domino, ISO and plain scheduling with the cost model";
  let description = [{
    Tries, on copies of the module, no chunking, `braid-domino` with 2, 4 and
    8 row chunks and with 2 and 4 column chunks, `braid-seq-pipeline` with
    two chunks split at L/2 and near L/sqrt(2), and where they apply
    `braid-ring-attention`, every `braid-attention-2d` grid of the `cp` axis
    and `braid-comet`; schedules each copy like `braid-schedule` and applies
    the one the cost model (hardware profile `hw`) times fastest. The choice
    is recorded as `braid.overlap_choice` on the module, and every candidate
    with its estimated makespan, or why it does not apply, in `braid.explain`
    (`braidc --explain` and `braid-overlap-report` print it as a table). Run `braid-schedule`
    after it (`braidc --overlap auto` does).
    Its input must not be scheduled yet: a function that already holds
    `braid.async` regions is rejected with one error (run it before
    `braid-schedule`).
  }];
  let options = [
    Option<"hw", "hw", "std::string", /*default=*/"\"dgx-h100\"",
           "Hardware profile the candidates are timed on">,
    Option<"functionName", "function", "std::string", /*default=*/"\"\"",
           "The function to transform (default: every function with a body)">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidVerifyCollectives
    : Pass<"braid-verify-collectives", "::mlir::ModuleOp"> {
  let summary = "Checks that every rank issues its collectives in one order";
  let description = [{
    Rejects SPMD programs that can deadlock because of `braid.async`: every
    rank runs the same program, so collectives issued by one stream keep
    the same order on every rank, but two streams that nothing orders may
    issue their collectives in different orders on different ranks, and
    collectives on one communicator must be issued in the same order by
    every member (the runtime's `Communicator` contract, as in MPI and
    NCCL).

    Ordering, as `braid-to-exec` lowers streams and events: ops outside any
    async run on the main stream ("compute") in program order; the body of
    `braid.async on "S"` runs on stream S, after everything before the
    async on the stream that reaches it and after every earlier async on S;
    a `braid.await` makes its stream wait until the awaited async's body is
    done. Collective A *happens before* B if a chain of these edges leads
    from A to B: for example A sits in the main flow before B's async, or
    A's async is awaited before B (or B's async) is reached, or both are on
    one stream. Ops inside other regions count at their place in program
    order.

    Two collectives that neither happens before the other run on different
    streams. The runtime gives every stream whose collectives share a mesh
    axis (longer than 1) with an earlier stream's its own communicators
    (runtime/exec/PlanSteps.h, collectiveChannels: MPI_Comm_dup, ncclCommSplit,
    a separate rendezvous channel for in-process ranks), so they are never
    matched against each other and are accepted: a schedule may put a dp
    group's gathers and reduce-scatters on two streams. NCCL on one GPU per
    rank does not promise progress for that: NCCL kernels block while they
    wait for their peers, and NCCL's guide ("Using multiple NCCL
    communicators concurrently") asks for operations on different
    communicators to be issued in the same order on every rank.
    `serialized-collectives` checks for such a backend: then any two
    unordered collectives that involve other ranks (their group, spanned by
    the mesh axes longer than 1, has more than one rank) conflict, and the
    error says whether they use the same group (same mesh and set of axes
    longer than 1: `["dp", "tp"]` and `["tp", "dp"]` are one group, so are
    `["tp"]` and `["dp", "tp"]` when `dp` has size 1) or share an axis.

    Each conflict is an error on the later collective in program order,
    with a note on the other; the pass fails. It also rejects what the
    ordering above does not cover (and `braid-to-exec` does not run): an
    async nested in another, and an async on the main stream's name. The
    IR is not changed.

    ```mlir
    %a = braid.async on "a" {
      %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
      braid.yield %r : tensor<8xf32>
    } : !braid.future<tensor<8xf32>>
    %b = braid.async on "b" {
      // serialized-collectives: may be issued in different orders on
      // different ranks
      %r = braid.all_reduce %y on @world["tp"] sum : tensor<8xf32>
      braid.yield %r : tensor<8xf32>
    } : !braid.future<tensor<8xf32>>
    ```
    Putting both on one stream, or awaiting `%a` before the second async,
    orders them.
  }];
  let options = [
    Option<"serializedCollectives", "serialized-collectives", "bool",
           /*default=*/"false",
           "Assume a rank runs one collective at a time (NCCL on one GPU): "
           "any two unordered collectives conflict">
  ];
}

def BraidRingAttention : Pass<"braid-ring-attention", "::mlir::ModuleOp"> {
  let summary = "Context-parallel attention as a ring of K/V shifts (Ring Attention)";
  let description = [{
    Rewrites every attention whose keys and values are all-gathered along the
    sequence (what `braid-partition` with `cp=N` produces) into P partial
    attentions (`braid.attention_partial`, with log-sum-exp) over this rank's
    K/V block and the P - 1 blocks that arrive by `braid.collective_permute`
    (shift 1) around the group, merged exactly by `braid.attention_merge`.
    Causal attention stays exact: each K/V block travels with its keys'
    sequence positions and a query sees a key whose position is not larger;
    a block wholly in a query block's future contributes nothing.
    `braid-schedule` then overlaps each shift with the previous block's
    partial attention.
    Its input must not be scheduled yet: a function that already holds
    `braid.async` regions is rejected with one error (run it before
    `braid-schedule`).
  }];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidAttention2D : Pass<"braid-attention-2d", "::mlir::ModuleOp"> {
  let summary = "Context-parallel attention on an R x C grid of ranks (ATTENTION2D)";
  let description = [{
    Splits mesh axis `axis` (P ranks) into `axis`_r (R) and `axis`_c (C),
    rewriting every collective, rank index and weight sharding that used it
    (ranks are row-major, so old groups are the same groups). Then every
    attention whose keys and values are all-gathered along the sequence over
    that axis becomes: queries all-gathered along the grid row; K/V blocks
    passed around the grid column in R ring steps, a partial attention with
    log-sum-exp on each; the row's partial results exchanged with one
    all-to-all and merged exactly, so each rank again holds its own block.
    Communication per rank shrinks from the whole K/V (ring: P - 1 blocks)
    to R - 1 K/V blocks plus C - 1 query blocks and the exchange of partial
    outputs. `grid=RxC`, or `auto`: the cost model (`hw`) picks the
    factorization of P. Causal masking is exact through key positions, as in
    `braid-ring-attention`.
    Its input must not be scheduled yet: a function that already holds
    `braid.async` regions is rejected with one error (run it before
    `braid-schedule`).
  }];
  let options = [
    Option<"grid", "grid", "std::string", /*default=*/"\"auto\"",
           "RxC (R*C = the axis size) or auto">,
    Option<"axis", "axis", "std::string", /*default=*/"\"cp\"",
           "The context-parallel mesh axis">,
    Option<"hw", "hw", "std::string", /*default=*/"\"dgx-a100\"",
           "Hardware profile for grid=auto">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidComet : Pass<"braid-comet", "::mlir::ModuleOp"> {
  let summary = "Fine-grained MoE overlap under expert parallelism (COMET)";
  let description = [{
    For every MoE layer partitioned with `ep=N` (dispatch, all-to-all,
    expert GEMMs, all-to-all, combine), cuts both all-to-alls into one piece
    per source rank: this rank's own slots first, then those of the ranks
    1, 2, ... steps around the ring (`braid.collective_permute`); the expert
    GEMMs run once per piece, so the GEMM on rows that have arrived runs while
    the rest are in flight, and each piece's result returns while the next
    computes. With `combine-chunks=K` each returning piece is also cut along
    its output columns. Expert blocks are routed with a rank-dependent
    rotation (`braid.gather` with this rank's row of a constant index
    table). `combine-chunks=auto` (the default; `0` too) lets the cost model
    choose; the pass also records `braid.comm_sms` on the module: the SMs the
    communication may hold, balancing one piece's GEMMs (slowed by the SMs
    they lose) against its transfer, as COMET's adaptive workload assignment
    does. The plan
    carries it to the runtime (the simulator applies it; the CUDA backend
    caps NCCL's thread blocks with it).
    Its input must not be scheduled yet: a function that already holds
    `braid.async` regions is rejected with one error (run it before
    `braid-schedule`).
  }];
  let options = [
    Option<"combineChunks", "combine-chunks", "::mlir::braid::AutoCount",
           /*default=*/"::mlir::braid::AutoCount::automatic()",
           "Column chunks per returning piece, or auto: chosen by the cost "
           "model">,
    Option<"hw", "hw", "std::string", /*default=*/"\"h800-node\"",
           "Hardware profile the choices are made for">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

def BraidBalanceSequence : Pass<"braid-balance-sequence", "::mlir::ModuleOp"> {
  let summary = "Reorders the sequence so causal work balances over cp ranks (zigzag)";
  let description = [{
    Run on the single-device program before `braid-partition cp=P`: reorders
    the sequence (dimension 1 of the inputs and everything the chunk
    analysis finds carrying it) so that the P contiguous blocks the
    partitioner cuts hold the original chunks r and 2P-1-r of 2P. Under a
    causal mask every rank then sees about as many (query, key) pairs (with
    contiguous blocks the last rank does about twice the average). The
    permutation is applied where the sequence enters (inputs and
    sequence-indexed constants, `braid.gather` with pi) and undone where
    the natural order is needed (outputs and ops that need the sequence
    whole); causal attention becomes attention with the mask
    `pi(query) >= pi(key)`, which `braid-ring-attention` and
    `braid-attention-2d` turn into per-block masks from positions that travel
    with the key/value blocks. Values are unchanged.
  }];
  let options = [
    Option<"parts", "parts", "int64_t", /*default=*/"2",
           "Ranks the sequence will be split over (cp=N)">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

#endif // BRAID_PASSES_PASSES_TD
