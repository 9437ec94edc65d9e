//===- Passes.td - GPTQ transformation passes --------------*- tablegen -*-===//

#ifndef GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_TD
#define GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GPTQDecomposeQuantizeLayer
    : Pass<"gptq-decompose-quantize-layer"> {
  let summary = "Expand gptq.quantize_layer into the finer gptq ops";
  let description = [{
    Rewrites each `gptq.quantize_layer` into the steps of the reference
    procedure, in its order:

    1. per-row grids from the original weights (`group_size = -1`);
    2. `gptq.mask_dead_inputs`;
    3. static group grids from the masked weights in original order;
    4. with `act_order`: `gptq.act_order` and `gptq.permute` of the weights'
       columns and the Hessian's rows and columns;
    5. `gptq.damped_cholesky`;
    6. `gptq.quantize_blocks`, with fixed grids for per-row and static
       groups (mapped to the processing order) or dynamic ones;
    7. codes back to the original column order, and `gptq.group_index`.

    ```mlir
    %codes, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h
        {config = #gptq.config<group_size = 128, act_order = true>} : ...
    ```

    becomes `gptq.act_order`, two `gptq.permute`, `gptq.damped_cholesky`,
    `gptq.quantize_blocks`, an inverse `gptq.permute` of the codes and
    `gptq.group_index`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def GPTQExportEntryPoints : Pass<"gptq-export-entry-points", "ModuleOp"> {
  let summary = "Mark public functions as entry points callable with arrays";
  let description = [{
    Gives every public `func.func` with a body the attribute
    `llvm.emit_c_interface` (so that lowering to LLVM adds the C interface
    `_mlir_ciface_<name>` that takes memref descriptors) and records its
    signature as `gptq.signature = <function type>`, which survives lowering
    to the LLVM dialect. `gptq-run` uses the recorded signature to call
    functions of modules that are already in the LLVM dialect. Tensor
    arguments get `bufferization.writable = false` (unless they have the
    attribute already): callers pass arrays they keep, so bufferization
    copies where the function would write into one. The CPU pipeline runs
    this pass first.

    ```mlir
    func.func @f(%x: tensor<?xf32>) -> tensor<?xf32>
    // becomes
    func.func @f(%x: tensor<?xf32> {bufferization.writable = false})
        -> tensor<?xf32> attributes
        {gptq.signature = (tensor<?xf32>) -> tensor<?xf32>, llvm.emit_c_interface}
    ```
  }];
}

def GPTQNormalizeContractions
    : Pass<"gptq-normalize-contractions", "func::FuncOp"> {
  let summary = "Rewrite float32 contractions as linalg.batch_matmul";
  let description = [{
    The target-independent half of the model codegen. Every float32 linalg
    op on tensors that is a contraction (two inputs, a multiply-add body,
    operand maps that are permutations of their loops, as
    `linalg::inferContractionDims` classifies them into batch, M, N and K
    loops, each class non-empty but batch) becomes one
    `linalg.batch_matmul` on 3-D operands: `[B, M, K]` (or `[B, K, M]`)
    times `[B, K, N]` (or `[B, N, K]`) into `[B, M, N]`, with the transposed
    forms expressed by the op's `indexing_maps`, so that neither a
    transposed activation nor a weight stored `out x in` is copied. Loops of
    a class are collapsed into one dimension (`tensor.collapse_shape`); an
    operand whose loops are in another order is transposed first
    (`linalg.transpose`), and the result is expanded (and transposed) back
    to the op's layout. A zero-filled init stays a `linalg.fill` of the new
    shape. Other ops, and contractions over other element types, are left
    alone.

    The loops of a class take the output's order, unless the output has to
    be transposed back anyway (its batch, M and N loops interleave, as in
    attention's mixing of values): then batch and M loops take the left
    operand's order and N loops the right one's, so that those are not
    copied. An operand that must be copied goes to whichever of its two
    layouts keeps its innermost loop innermost (keys become `[B, N, K]`,
    read transposed, rather than being scattered into `[B, K, N]`). A
    transpose that moves only loops of static size 1 becomes a
    `tensor.collapse_shape` and `tensor.expand_shape`, not a copy.

    Causal masks are recognized on the original op, from the ops around it,
    and recorded as unit attributes of the `linalg.batch_matmul` for the
    per-target schedule (`gptq-matmul-to-kernel`):
    - `gptq.lower_result` when N is one loop t and some M loop s is such
      that every reader of the result is a `linalg.generic` input whose
      value (through single-result arithmetic) reaches only the true side
      of an `arith.select` on `t <= s` (or `t < s`, `s >= t`, `s > t`) of
      the `linalg.index` of the loops that read those dimensions; shape
      queries are allowed. Attention's scores, read by the row maximum and
      the exponentials under the mask, are marked. Since the normal form's
      row index is at least s, the result's elements column <= row hold
      all that is read.
    - `gptq.lower_lhs` when K is one loop t and the left operand is zero
      wherever t > s for an M loop s: it is a `linalg.generic` (all loops
      parallel) that yields a causal select of +0.0, a quotient whose
      numerator is such a value, or an input that is zero past the same
      loops. Attention's probabilities (exponentials selected under the
      mask, divided by their sums) are marked. A row whose divisor is zero
      or NaN is not finite either way; a key past the mask with a value
      that is Inf or NaN no longer turns an earlier query's output to NaN.

    The importers' linear layers (`y[b, s, n] = sum_k x[b, s, k] W[n, k]`),
    attention scores and the mixing of values all take this form; so do
    `linalg.matmul` and `linalg.batch_matmul` with any of their maps.

    ```mlir
    %y = linalg.generic {indexing_maps = [(b, s, n, k) -> (b, s, k),
        (b, s, n, k) -> (n, k), (b, s, n, k) -> (b, s, n)], ...}
        ins(%x, %w : tensor<?x?x64xf32>, tensor<172x64xf32>) ...
    // becomes, on %x collapsed to tensor<1x?x64xf32> and %w expanded
    // to tensor<1x172x64xf32>
    linalg.batch_matmul indexing_maps = [(d0, d1, d2, d3) -> (d0, d1, d3),
        (d0, d1, d2, d3) -> (d0, d2, d3), (d0, d1, d2, d3) -> (d0, d1, d2)]
        ins(...) outs(... : tensor<1x?x172xf32>)
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def GPTQParallelizeLinalg : Pass<"gptq-parallelize-linalg", "func::FuncOp"> {
  let summary = "Lower linalg ops outside parallel regions to parallel loops";
  let description = [{
    The CPU schedule of the elementwise ops and reductions of models
    (normalization, rotary embedding, softmax, SwiGLU, residual sums): each
    linalg op on buffers that is not already inside a parallel region
    (`scf.forall`, `scf.parallel`, `omp.*`) becomes an `scf.parallel` over
    its parallel loops but the innermost one, which `convert-scf-to-openmp`
    then runs on all cores. The innermost parallel loop stays an `scf.for`
    along the op's last dimension (contiguous for the importers' layouts),
    where LLVM vectorizes it. When that loop is short (a static extent
    under 16, as rotary embedding's pairs), the loops around it join the
    sequential ones until they span at least 16 elements: LLVM unrolls the
    short loop and vectorizes the one around it (for rotary embedding,
    11x faster than a loop of two). When the parallel loops come first, the
    reductions follow as `scf.for` loops whose accumulators are loop-carried
    values: each output element is loaded once before them and stored once
    after them. The loops keep the op's order within each reduction, so
    results are unchanged.

    Ops inside parallel regions (the tiles of the gptq kernels) are left for
    `convert-linalg-to-loops`.

    ```mlir
    linalg.generic {iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x : memref<?x?x64xf32>) outs(%sum : memref<?x?xf32>) ...
    // becomes
    scf.parallel (%b, %s) = (%c0, %c0) to (%B, %S) step (%c1, %c1) {
      scf.for %k = %c0 to %c64 step %c1 { ... }
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect", "::mlir::affine::AffineDialect"
  ];
}

def GPTQReassociateReductions
    : Pass<"gptq-reassociate-reductions", "func::FuncOp"> {
  let summary = "Let the reductions of linalg.generic ops be reassociated";
  let description = [{
    Marks the float operations that combine a value into the accumulator of
    a `linalg.generic` reduction (`arith.addf`, `arith.mulf`,
    `arith.maximumf`, `arith.minimumf`, `arith.maxnumf`, `arith.minnumf`
    whose result the body yields) with `fastmath<reassoc, contract>`, so
    that LLVM may split a sum or maximum along a row into vector lanes. The
    result of a sum then differs from the sequential one by float32
    rounding. A maximum or minimum (`arith.maximumf`, `arith.minimumf`)
    becomes `arith.maxnumf` or `arith.minnumf`, the form LLVM vectorizes
    when elements are masked (softmax's causal row maximum): a NaN element
    is then skipped by the reduction instead of making its result NaN. In
    the importers' softmax the NaN still reaches every probability of its
    row through the exponential and the row sum.

    The CPU pipeline runs it on the module's own ops (models: RMSNorm, the
    softmax's maximum and sum) before the gptq ops are lowered, so the code
    of the gptq ops, whose sums follow the reference's order, is not
    touched.

    ```mlir
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
    // becomes
    %s = arith.addf %acc, %x fastmath<reassoc,contract> : f32
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def GPTQApproximateMath : Pass<"gptq-approximate-math"> {
  let summary = "Polynomial approximations of math.exp that vectorize";
  let description = [{
    Replaces float32 `math.exp` (scalar or vector) with upstream's
    polynomial approximation in `arith` ops (range reduction to
    `[-ln 2 / 2, ln 2 / 2]` and a polynomial, exact to a few ulp), which
    LLVM vectorizes with the loop around it. The libm call it replaces runs
    one element at a time; softmax over attention scores and SiLU call it
    once per element.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def GPTQExpandStridedCopies : Pass<"gptq-expand-strided-copies"> {
  let summary = "Turn copies between strided memrefs into linalg.copy";
  let description = [{
    The LLVM lowering of `memref.copy` calls `memcpy` when both sides are
    contiguous, and otherwise the runtime function `memrefCopy`, which copies
    one element at a time. Bufferization leaves such copies where a slice of
    a matrix is written into another (block rows of a factor, panels of a
    transpose). This pass rewrites every `memref.copy` whose source or target
    has a layout other than the identity into `linalg.copy`, which
    `convert-linalg-to-loops` turns into loops whose innermost one runs
    along unit-stride rows and vectorizes. Copies between identity layouts
    are left for `memcpy`.

    ```mlir
    memref.copy %a, %b : memref<?x?xf32, strided<[?, 1], offset: ?>>
                    to memref<?x?xf32, strided<[?, 1], offset: ?>>
    // becomes
    linalg.copy ins(%a : ...) outs(%b : ...)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let options = [
    Option<"identity", "identity", "bool", /*default=*/"false",
           "Also rewrite copies between identity layouts">
  ];
}

def GPTQMapParallelLoopsToGPU
    : Pass<"gptq-map-parallel-loops-to-gpu", "func::FuncOp"> {
  let summary = "Tile the outermost parallel loops into GPU blocks and threads";
  let description = [{
    The GPU schedule of the loops that linalg and `scf.forall` become. Every
    outermost `scf.parallel` of the function (one not nested in another, nor
    already on the GPU) becomes one kernel launch:

    - parallel loops nested in it, at any depth, run sequentially in each
      thread (`scf.for` nests): with the portable kernels every row is a
      task of its own, so the outer loop carries the parallelism;
    - it is tiled (`scf::tileParallelLoop`, constant tile bounds with a guard
      for the partial tiles): 256 iterations per block for one dimension;
      for more, 8 x 32 over the last two dimensions and 1 over the others;
    - the tile loop is mapped to the grid and the loop in a tile to the
      threads of a block, the last dimension to `x` (consecutive threads take
      consecutive elements of a row), the one before to `y`, the third last
      to `z`, the others sequential.

    `convert-parallel-loops-to-gpu` then makes each mapped loop a
    `gpu.launch`; run it right after this pass (canonicalization in between
    would merge the two loops of a tiling and drop their mapping). Parallel
    loops with reductions (results), or with such loops inside, are left
    alone and run on the host.

    A sequential `scf.for` marked `gptq.one_block` (the portable kernels
    mark the steps of a diagonal block's factorization so) runs whole in
    one launch of a single block of `threads-1d` threads, instead of a
    kernel per parallel loop per step with the loop on the host:

    - every op outside its parallel loops runs in every thread alike, so
      these may only compute and read (no stores, allocations or calls),
      and the loop may have no results;
    - each parallel loop in it (outermost) gives each thread every
      `threads-1d`-th iteration of its linearized iteration space, the last
      dimension fastest; loops nested in it run sequentially in the thread;
    - a `gpu.barrier` precedes each such loop, so that no thread writes what
      another has still to read (none where only pure ops follow the last
      barrier), and one follows it, so that every thread sees its writes.

    A marked loop that does not qualify gets a remark saying why and the
    usual mapping; the marker is removed either way.

    ```mlir
    scf.for %j = %c0 to %n step %c1 {
      %d = memref.load %v[%j] : memref<?xf32>
      scf.parallel (%k) = (%j) to (%n) step (%c1) {
        memref.store %d, %w[%k] : memref<?xf32>
      }
    } {gptq.one_block}
    // becomes
    gpu.launch blocks(...) in (... = %c1, ... = %c1, ... = %c1)
               threads(%tx, ...) in (... = %c256, ... = %c1, ... = %c1) {
      scf.for %j = %c0 to %n step %c1 {
        %d = memref.load %v[%j] : memref<?xf32>
        gpu.barrier
        scf.for %l = %tx to %trips step %c256 {
          memref.store %d, %w[%j + %l] : memref<?xf32>
        }
        gpu.barrier
      }
      gpu.terminator
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect"
  ];
  let options = [
    Option<"threads1D", "threads-1d", "int64_t", /*default=*/"256",
           "Threads per block of a one-dimensional loop">,
    Option<"threadsX", "threads-x", "int64_t", /*default=*/"32",
           "Threads along the last dimension of a loop of two or more">,
    Option<"threadsY", "threads-y", "int64_t", /*default=*/"8",
           "Threads along the dimension before the last">
  ];
}

def GPTQGPUTileContractions
    : Pass<"gptq-gpu-tile-contractions", "func::FuncOp"> {
  let summary = "Matrix products on buffers as register-tiled GPU kernels "
                "with shared-memory operand tiles";
  let description = [{
    The GPU schedule of the matrix products: the lazy batch update of the
    quantize loop, the factorization's trailing updates, the Hessian's
    accumulation (the portable kernels' `__gptq_gemm_sub`), and any other
    linalg op on buffers, outside parallel loops, with two parallel loops
    and one reduction whose result reads `(m, n)` and whose operands read
    `(m, k)` and `(k, n)` (in either order), all of one float type; and
    the same with a batch loop that all three read (the model's
    `linalg.batch_matmul`s and contractions in their normal form), each
    batch a `z` of the grid.

    Each becomes a `gpu.launch` of blocks of `threads x threads` threads,
    each thread computing `results x results` results in registers: rows
    `y + a threads` and columns `x + b threads` of the block's
    `threads results` square, so that for each `(a, b)` consecutive threads
    store consecutive elements. The reduction runs in chunks of `threads`:
    the block's threads copy the chunk's tile of each operand
    (`threads results x threads` elements, each row padded by one so that
    a tile stored across its rows meets no bank conflicts) into dynamic
    shared memory,
    consecutive threads reading consecutive elements of the operand's rows
    (whichever of its indices is last), none outside the operand;
    `gpu.barrier`; each thread applies the op's body to each of its results
    for the chunk's `k` in order, reading each operand element from shared
    memory once per `results` products; a second barrier guards the tiles
    until all have read them. The accumulators start from the result's
    values, as the op's body receives them, and are stored once.

    Every result is the op's body applied in the order of `k`, as the
    loops that `convert-linalg-to-parallel-loops` make compute it: the
    values are the same bit for bit. Ops with `linalg.index`, other shapes,
    and ops inside parallel loops or launches are left alone.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"
  ];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"16",
           "Threads per block along each dimension, and the reduction's "
           "chunk (1 to 32)">,
    Option<"results", "results", "int64_t", /*default=*/"4",
           "Results per thread along each dimension (1 to 8): blocks of "
           "threads x results squares">
  ];
}

def GPTQLaunchesToCPU : Pass<"gptq-launches-to-cpu", "ModuleOp"> {
  let summary = "Run gpu.launch kernels on the host CPU, a block at a time, "
                "its threads an OpenMP team";
  let description = [{
    For checking the GPU schedule's kernels on machines without a GPU: each
    `gpu.launch` (synchronous, without attributions) becomes loops over its
    blocks (`z`, `y`, `x`, one block after another), each block an
    `omp.parallel` team of as many threads as the block has (thread `t` is
    `(t mod x, t / x mod y, t / (x y))`), in which:

    - `gpu.barrier` is the team's barrier (a call of the OpenMP runtime's
      `GOMP_barrier`, which libomp provides as well): the team's threads
      wait for each other, as a block's threads do;
    - `gpu.dynamic_shared_memory` is one host buffer of the launch's
      dynamic shared memory size (16-byte aligned), which each block uses
      in turn, allocated before the blocks and freed after them (after
      buffer deallocation, as the NVVM pipeline's `emulate` option runs
      the pass; with `free-shared=false`, left to a buffer deallocation
      that runs later), and memrefs in GPU address spaces are host
      memrefs;
    - thread and block ids and sizes are the team's and the loops'.

    Values private to a GPU thread are private to its OpenMP thread, so a
    kernel's results are those the GPU computes for every kernel that
    uses only these operations (the order of floating-point operations in
    each thread is the kernel's own). The CPU pipeline then lowers the
    teams (`convert-openmp-to-llvm`), and `gptq-run` runs them. Blocks of
    many threads run on a few cores: small inputs are the point.
  }];
  let dependentDialects = [
    "::mlir::omp::OpenMPDialect", "::mlir::scf::SCFDialect",
    "::mlir::func::FuncDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let options = [
    Option<"freeShared", "free-shared", "bool", /*default=*/"true",
           "Free the shared-memory buffer after the launch's blocks (false: "
           "for IR that buffer deallocation has yet to see)">
  ];
}

def GPTQStageUniformReads
    : Pass<"gptq-stage-uniform-reads", "func::FuncOp"> {
  let summary = "Copy the matrices that all threads of a kernel read alike "
                "into shared memory";
  let description = [{
    For each `gpu.launch`, finds the memrefs defined outside it that its
    threads only read (`memref.load`, through any `memref.subview`s) and
    always at indices that are the same in every thread of a block: values
    computed from outside the launch, block ids, sizes and the induction
    variables of loops with such bounds. The thread ids are the only
    difference between threads. Such a matrix is read by every thread
    alike; U's block in the quantize-and-compensate column loop is one:
    each thread (a row of W) reads U's row for each column. Nothing in the
    launch may write memory that the matrix may share: a view of the same
    buffer, or any buffer that is not a fresh allocation when the matrix
    is not one either (function arguments may alias).

    Each one is copied into the launch's dynamic shared memory (workgroup
    memory) when the launch starts, by all the threads of a block in turn
    (consecutive threads take consecutive elements), followed by a
    `gpu.barrier`, and the loads read the copy. When the matrices'
    bytes (each aligned to 16) exceed `max-bytes`, a run-time check keeps
    the launch as it was: the body is there twice, staged and not, and the
    launch asks for shared memory only when staged. Loads read the same
    values either way.

    Memrefs of rank 1 to 3 with integer or float elements of whole bytes
    and the identity or a strided layout are staged; others, and launches
    that already use dynamic shared memory, are left alone.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"
  ];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"232448",
           "Dynamic shared memory per block that a launch may ask for (the "
           "default is sm_90's: 227 KiB)">
  ];
}

def GPTQExternDynamicSharedMemory
    : Pass<"gptq-extern-dynamic-shared-memory", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Declare the kernels' dynamic shared memory as PTX extern "
                "arrays";
  let description = [{
    `convert-gpu-to-nvvm` lowers `gpu.dynamic_shared_memory` to an internal
    zero-size array in address space 3, which the NVPTX backend demotes to a
    one-byte `.shared` variable of the kernel: the kernel's accesses then run
    past a static variable into the dynamic part of the block's shared
    memory, which works only because the two are laid out in that order.
    This pass makes each such array (a `llvm.mlir.global` in address space 3
    of type `!llvm.array<0 x ...>` without an initializer) an external
    declaration, which PTX prints as `.extern .shared .align 16 .b8
    name[];`, the declaration of the launch's dynamic shared memory.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def GPTQCheckGPUTarget : Pass<"gptq-check-gpu-target", "ModuleOp"> {
  let summary = "Refuse a GPU target that the NVVM pipeline cannot build for";
  let description = [{
    The first step of `gptq-lower-to-nvvm-pipeline`: fails, with one error
    naming the option, when `chip` is not an NVIDIA architecture name
    (`sm_<digits>`, optionally with an `a` or `f` suffix), when `features`
    is not a list of `+ptx<digits>` features, or when the CUDA toolkit
    (`toolkit`) lacks what the kernels need: `nvvm/libdevice` for the math
    functions, and `bin/ptxas` when `format` is `bin` or `fatbin`. Without
    it the later stages print warnings from LLVM, or an error and a module
    compiled without libdevice, and succeed. It changes nothing.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "The GPU architecture">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx80\"",
           "PTX features">,
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "The CUDA toolkit directory">,
    Option<"needPtxas", "need-ptxas", "bool", /*default=*/"true",
           "Whether the kernels are assembled by ptxas (format bin or fatbin)">
  ];
}

def GPTQManagedMemory : Pass<"gptq-managed-memory", "ModuleOp"> {
  let summary = "Put the host code's buffers in CUDA managed memory";
  let description = [{
    The GPU pipeline's memory placement, after kernel outlining: every
    buffer that host code makes or reads is one that both the host and the
    device can address, so kernels may read anything and host code (the
    scalar steps between kernels, the results) sees what kernels wrote.

    - `memref.alloc` in host functions becomes `gpu.alloc host_shared`
      (CUDA managed memory, `mgpuMemAlloc` with `isHostShared`), and
      `memref.dealloc` becomes `gpu.dealloc` on a stream that is then
      synchronized; except buffers that only host code stores to and loads
      from to give a `memref.reshape` its shape, which stay on the host.
    - The memref arguments of public functions, and the `memref.get_global`
      constants of every host function, are copied into such buffers once
      at the function's entry (the constants are hoisted there first), and
      those copies are freed before each return.

    Results are therefore managed memory that the caller owns: it frees
    them with `mgpuMemFree` (the tools' CUDA calling convention does). The
    pass expects what the buffer deallocation pipeline leaves: every result
    an allocation of the function (arguments and constants are cloned
    before they are returned). Allocations inside kernels are left as they
    are.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def GPTQForwardArgumentResults
    : Pass<"gptq-forward-argument-results", "ModuleOp"> {
  let summary = "Drop a private function's results that return an argument's "
                "buffer; callers read the argument they passed";
  let description = [{
    Run after bufferization, before buffer deallocation. A kernel that is
    called rather than inlined (the matrix kernel, `__gptq_matmul`) writes
    its output into the buffer of its output argument and returns it. The
    deallocation pipeline gives each returned buffer an owner, so a
    returned argument, which the callee does not own, would be cloned on
    every return: a copy of the whole output per call (262 MB for the
    classifier of a 32000-word vocabulary on 2048 tokens). This pass
    removes such results (the returned value is the argument, or a
    `memref.cast` of it) from private functions whose every use is a
    `func.call`, and each call's result becomes the call's own operand
    (cast back to the result's type where the types differ). Public
    functions keep their signatures.

    ```mlir
    func.func private @kernel(%a: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
      ...
      return %out : memref<?xf32>
    }
    %r = call @kernel(%a, %buf) : (memref<?xf32>, memref<?xf32>) -> memref<?xf32>
    "use"(%r) : (memref<?xf32>) -> ()
    // becomes
    func.func private @kernel(%a: memref<?xf32>, %out: memref<?xf32>) {
      ...
      return
    }
    call @kernel(%a, %buf) : (memref<?xf32>, memref<?xf32>) -> ()
    "use"(%buf) : (memref<?xf32>) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def GPTQHoistDeallocs : Pass<"gptq-hoist-deallocs"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    Buffer deallocation places `memref.dealloc` at the end of the block that
    allocated the buffer, so every temporary of a function lives until the
    function returns. This pass moves each `memref.dealloc` of a
    `memref.alloc` result in the same block up to just after the last
    operation of that block that uses the buffer or any of its aliases
    (subviews, casts, loop-carried and region results, found with the
    bufferization's buffer view flow analysis). The buffer is then free for
    later allocations of the same function: after a layer's Cholesky factor
    and transposed weights die, dequantization reuses their memory instead of
    mapping fresh pages. Buffers with an alias that a terminator of the
    block uses (returned or yielded) are left alone.

    ```mlir
    %a = memref.alloc(%n) : memref<?xf32>
    "use"(%a) : (memref<?xf32>) -> ()
    %b = memref.alloc(%n) : memref<?xf32>
    "use"(%b) : (memref<?xf32>) -> ()
    memref.dealloc %a : memref<?xf32>
    memref.dealloc %b : memref<?xf32>
    // becomes
    %a = memref.alloc(%n) : memref<?xf32>
    "use"(%a) : (memref<?xf32>) -> ()
    memref.dealloc %a : memref<?xf32>
    %b = memref.alloc(%n) : memref<?xf32>
    ...
    ```
  }];
}

def GPTQSerializeLoneIterations : Pass<"gptq-serialize-lone-iterations"> {
  let summary = "Run OpenMP parallel loops of one iteration without a team";
  let description = [{
    Gives each `omp.parallel` whose worksharing loop (`omp.wsloop` of one
    `omp.loop_nest`, its bounds defined outside the region) has at most one
    iteration an `if` clause that is false then: the region runs on the
    calling thread, without waking the team and waiting for it at the end.
    A decode step's elementwise ops (RMSNorm, rotary embedding, SwiGLU,
    residual sums over one token) are parallel loops over the batch and
    sequence, one iteration for one token: forking a team for each cost
    about 290 forks and joins a token on the 1B shape. Loops of more
    iterations, and regions of any other shape, are left alone. Runs after
    `convert-scf-to-openmp`.

    ```mlir
    omp.parallel {
      omp.wsloop {
        omp.loop_nest (%i) : index = (%lb) to (%ub) step (%s) { ... }
      }
      omp.terminator
    }
    // becomes
    %n = ... (%ub - %lb) ceildiv %s, each dimension's multiplied
    %many = arith.cmpi sgt, %n, %c1 : index
    omp.parallel if(%many) { ... }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def GPTQPartitionWorksharingLoops
    : Pass<"gptq-partition-worksharing-loops", "::mlir::ModuleOp"> {
  let summary = "Share OpenMP loops out by thread number, without the "
                "runtime's scheduler";
  let description = [{
    Replaces each `omp.wsloop` that `convert-scf-to-openmp` made of an
    `scf.parallel` (the only op of its `omp.parallel`, one `omp.loop_nest`
    with its bounds defined outside the region, the static schedule without
    a chunk, no reduction, privatization, `ordered`, `linear` or `allocate`
    clause) by an `scf.for` over the calling thread's share of the
    iterations: the nest's iterations in order, the last dimension fastest,
    split into as many contiguous runs as the team has threads, run t
    taken by thread t (libomp's `__kmpc_bound_num_threads` and
    `__kmpc_bound_thread_num`: not `omp_get_thread_num`, which a process
    that loaded another OpenMP runtime first, libgomp with PyTorch, binds
    to that runtime's). Each thread runs the iterations the static schedule
    would give it, up to where the runs split, without calling the
    runtime's scheduler (`__kmpc_for_static_init`) and without the barrier
    at the loop's end: the region's end joins the team. A decode step runs
    about 170 such loops a token; the scheduler costs 1-2 us a loop on
    libomp 22. A region that runs on one thread (an `if` clause that is
    false, or nested in another region) gets all the iterations.

    Declares `func.func private @__kmpc_bound_thread_num(!llvm.ptr) -> i32`
    and `@__kmpc_bound_num_threads` when the module has a loop to share
    (called with a null ident, which libomp does not read); a module that
    defines either name otherwise is an error. Runs after
    `convert-scf-to-openmp` (and `gptq-serialize-lone-iterations`).

    ```mlir
    omp.parallel {
      omp.wsloop {
        omp.loop_nest (%i) : index = (%lb) to (%ub) step (%s) { ... }
      }
      omp.terminator
    }
    // becomes
    omp.parallel {
      %n = ... (%ub - %lb) ceildiv %s
      %t = call @__kmpc_bound_thread_num(%null) : (!llvm.ptr) -> i32
      %nt = call @__kmpc_bound_num_threads(%null) : (!llvm.ptr) -> i32
      scf.for %l = (%t * %n / %nt) to ((%t + 1) * %n / %nt) step %c1 {
        %i = %lb + %l * %s
        ...
      }
      omp.terminator
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_TD
