//===- Passes.td - Codegen: CPU schedule passes ------------*- tablegen -*-===//

#ifndef GPTQ_CODEGEN_CPU_PASSES_TD
#define GPTQ_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    touched; functions marked `gptq.library` (the library's kernels, and
    the microkernel library's wrappers, into which `gptq-build-ukernels`
    inlines them) are left alone too, so that a grid's `minimumf` keeps
    ordering -0 below +0.

    ```mlir
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
    // becomes
    %s = arith.addf %acc, %x fastmath<reassoc,contract> : f32
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
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

def GPTQBFloat16AsIntegers
    : Pass<"gptq-bf16-as-integers", "ModuleOp"> {
  let summary = "Move bfloat16 values in the LLVM dialect as 16-bit integers";
  let description = [{
    Runs on the LLVM dialect. Every bfloat16 value that ops only move
    (loads, stores, masked loads and stores, aggregates, vector lanes and
    shuffles, selects, bitcasts, branches and block arguments) becomes an
    `i16` value of the same shape; a bitcast gives an op that computes with
    it (`llvm.fpext`, a call) its bfloat16 back.

    x86 CPUs without AVX-512 BF16 have no bfloat16 vectors: LLVM widens
    them to float32 lanes and narrows them back through the libcall
    `__truncsfbf2`, one call per lane. A masked load of `vector<16xbf16>`
    (a bfloat16 weight read at a matrix's edge) so becomes a load and a
    call per lane; and `__truncsfbf2` is missing from GCC 12's libgcc, so
    an ahead-of-time executable did not link. The kernels widen bfloat16
    weights by shifting their bits (`arith.bitcast` to `i16`, then a shift
    into float32), so they read the same bits as `i16` and no call is left,
    on any CPU.

    ```mlir
    %v = llvm.intr.masked.load %p, %m, %zero {alignment = 2 : i32}
        : (!llvm.ptr, vector<16xi1>, vector<16xbf16>) -> vector<16xbf16>
    %b = llvm.bitcast %v : vector<16xbf16> to vector<16xi16>
    // becomes
    %zi = llvm.bitcast %zero : vector<16xbf16> to vector<16xi16>
    %v = llvm.intr.masked.load %p, %m, %zi {alignment = 2 : i32}
        : (!llvm.ptr, vector<16xi1>, vector<16xi16>) -> vector<16xi16>
    ```

    A function in which an aggregate of bfloat16 would need a bitcast (an
    array of bfloat16 vectors passed to a call) is left as it is.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def GPTQMatmulToUKernel : Pass<"gptq-matmul-to-ukernel", "ModuleOp"> {
  let summary = "Make float32 batch matmuls the CPU matrix microkernel op";
  let description = [{
    The CPU schedule of the contractions that `gptq-normalize-contractions`
    produces. Each float32 `linalg.batch_matmul` on tensors in that normal
    form (`[B, M, K]` or `[B, K, M]` times `[B, K, N]` or `[B, N, K]` into
    `[B, M, N]`) becomes a `gptq_ukernel.matmul`, whose variant (transposes,
    triangles, the weight's stored form) is in its attributes, and which
    `gptq-lower-ukernels` makes a call of the microkernel library once
    buffers are placed. The microkernel is the register-tiled kernel that
    quantize-and-compensate uses for its lazy batch updates (6 x 64 tiles of
    AVX-512 accumulators; A read in place, or packed into 6-row panels
    when it is given transposed; B packed in chunks of up to 1024 rows
    that stay in L2, so that each tile of C is read and written once per
    chunk; 64-column panels of C and ranges of rows as parallel tasks). A
    transposed operand is read transposed while it is packed, never
    copied. When the init is a `linalg.fill` with +0.0 the kernel does not
    read it (`zero_init`): the first chunk's tiles start from zero.

    With `fuse-dequantize` (the default), a right operand that is a
    quantized weight, `gptq.dequantize` of `gptq.unpack` (as
    `gptq-quantize-model` rewrites models), is fused: the kernel gets the
    packed words, scales, zeros, group map and bit width, and dequantizes
    each chunk of the weight (the op's `packed` operands), 128 x 64 at a time, while it packs it (the same
    operations as the two ops, so the same values, and the same results
    bit for bit). The float weight is never formed. For 16 columns at a
    time the words that hold the chunk's codes are transposed in registers,
    so that each code of the 16 columns is a shift and mask of one vector
    and its scale and zero one contiguous read of the grids, which the
    kernel transposes once per call: packing a chunk this way costs less
    than packing a float32 weight, which reads eight times the bytes at 4
    bits. Run `gptq-insert-runtime-checks` first: the checks of the two
    ops' operands stay when the ops go.

    A product marked by `gptq-normalize-contractions` with
    `gptq.lower_result` (only elements `C[b, m, n]` with `n <= m` are read,
    as a causal mask reads attention's scores) computes only the tiles that
    reach that triangle; one marked `gptq.lower_lhs` (`lower_lhs`: `A[b, m, k]` is zero
    for `k > m`, as the probabilities are) stops each tile's sum at its last
    row's diagonal and skips the chunks of B that no row reaches. The terms
    left out are products with zero; the results are the same bit for bit.

    With `fuse-widening` (the default), a right operand that is a weight
    stored in bfloat16 or float16 and widened to float32 (a `linalg.generic`
    whose body is `arith.extf` of its input, as `import-hf` modules widen a
    checkpoint's weights once `convert-elementwise-to-linalg` has run),
    with one batch and given transposed, is passed in its stored type: the
    kernel widens each 16 x 16 block while it packs B (exactly, so the
    results are those of the float32 copy bit for bit), and the float32
    copy, twice the stored weight, is never formed. For a classifier of
    128256 x 4096 that is 2 GiB less memory, and half the bytes read.

    Every product is still a sum over K in ascending order, one fused
    multiply-add per term; results agree with the loops of
    `convert-linalg-to-loops` to float32 rounding.

    ```mlir
    %r = linalg.batch_matmul indexing_maps = [...] ins(%a, %b : ...)
        outs(%zeros : tensor<1x?x172xf32>) -> tensor<1x?x172xf32>
    // becomes
    %r = gptq_ukernel.matmul ins(%a, %b : tensor<1x?x64xf32>, tensor<1x172x64xf32>)
        outs(%empty : tensor<1x?x172xf32>) {transpose_rhs, zero_init}
        -> tensor<1x?x172xf32>
    ```
  }];
  let options = [
    Option<"fuseDequantize", "fuse-dequantize", "bool", /*default=*/"true",
           "Dequantize a quantized weight (gptq.dequantize of gptq.unpack) "
           "inside the kernel's packing instead of forming it first">,
    Option<"fuseWidening", "fuse-widening", "bool", /*default=*/"true",
           "Widen a bfloat16 or float16 weight (linalg.generic of arith.extf) "
           "inside the kernel's packing instead of forming its float32 copy">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect",
    "::mlir::gptq::ukernel::UKernelDialect"
  ];
}

def GPTQLayerKernelsToUKernel
    : Pass<"gptq-layer-kernels-to-ukernel", "ModuleOp"> {
  let summary = "Make GPTQ's factorization and quantize-and-compensate the "
                "CPU's microkernel ops";
  let description = [{
    The CPU schedule of a layer's quantization: each `gptq.damped_cholesky`
    becomes a `gptq_ukernel.damped_cholesky` and each
    `gptq.quantize_blocks` a `gptq_ukernel.quantize_blocks` (their
    settings in the op's `config` and `block` attributes), which
    `gptq-lower-ukernels` makes calls of the microkernel library once
    buffers are placed: the kernels are compiled when the project is built,
    not with each module, and the module that quantizes a layer keeps only
    the small ops around them (grids, act-order, group index,
    dequantization).

    The data movement that `convert-gptq-to-linalg` folds into the
    kernels' passes is folded the same way (`DataMovementFolds.h`): a
    symmetric `gptq.permute` of the Hessian (`permuted`), the column
    permutation and dead-input mask of `W` (`permuted`, `masked`) and the
    inverse permutation of the codes (`permute_codes`). The results are
    those of the library's kernels inlined in a module, bit for bit.

    ```mlir
    %u, %ok = gptq.damped_cholesky %h percdamp(%d) : ...
    // becomes
    %e = tensor.empty(%n, %n) : tensor<?x?xf32>
    %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<?x?xf32>)
        percdamp(%d) outs(%e : tensor<?x?xf32>) {block = 128 : i64}
        -> tensor<?x?xf32>, i1
    ```
  }];
  let options = [
    Option<"choleskyBlock", "cholesky-block", "int64_t", /*default=*/"128",
           "The factorization's block size (>= 1)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect",
    "::mlir::gptq::ukernel::UKernelDialect"
  ];
}

def GPTQLowerUKernels : Pass<"gptq-lower-ukernels", "ModuleOp"> {
  let summary = "Call the prebuilt microkernel library for the microkernel ops";
  let description = [{
    Once buffers are placed, each `gptq_ukernel` op on buffers becomes a
    call of the microkernel library: `gptq_ukernel.matmul` of
    `gptq_uk_matmul_<isa>_<tables|dots>`, `gptq_ukernel.damped_cholesky`
    of `gptq_uk_damped_cholesky_<isa>` and `gptq_ukernel.quantize_blocks`
    of `gptq_uk_quantize_blocks_<isa>`: kernels compiled when the project
    was built, once for each instruction set (`generic`, `avx2`, `avx512`,
    `avx512_vnni`) and, for the matrix kernel, each form of its 4-bit
    decode step (table lookups or byte dot products), in
    `libGPTQUKernels.so` (and the static `libGPTQAotUKernels.a` that
    `gptq-compile` links). The module keeps only the declarations: code
    that calls them runs with that library loaded, as the JIT, the C API,
    `gptq-run` and `gptq-compile`'s executables do.

    The call's arguments are the library's calling convention
    (`include/gptq/Codegen/CPU/UKernelAbi.h`). The matrix kernel's
    (`lib/UKernels/Matmul.mlir`): the operands as buffers of dynamic
    shape (A and B with any strides but a unit inner one, the rest with the
    identity layout), then the variant's flags as one `i32` (bit 0
    `transpose_lhs`, 1 `transpose_rhs`, 2 `zero_init`, 3 `lower_result`,
    4 `lower_lhs`, bits 8 to 11 the width of a packed weight, 0 for none,
    bits 12 and 13 the stored type of a half-precision one, 1 bfloat16 and
    2 float16), then the packed weight's words, scales, zeros and group
    index, then the half-precision weight as bfloat16 or float16; an
    operand that the variant does not have is an empty buffer. An operand
    whose layout the convention does not take is copied into a new buffer
    first (and back, for the destination). The layer's kernels
    (`lib/UKernels/LayerKernels.mlir`) take their operands and outs as
    dense buffers, the variant as flags and the settings (group size,
    block size, the grid's settings, the dampening) as scalars, and return
    the scalar result (the factorization's success, the loss).

    ```mlir
    gptq_ukernel.matmul ins(%a, %b : memref<1x64x64xf32>, memref<1x172x64xf32>)
        outs(%c : memref<1x64x172xf32>) {transpose_rhs, zero_init}
    // becomes, on an AVX-512 VNNI host
    func.call @gptq_uk_matmul_avx512_vnni_dots(%a0, %b0, %c0, %c6_i32, ...)
    ```
  }];
  let options = [
    Option<"cpuIsa", "cpu-isa", "std::string", /*default=*/"\"host\"",
           "The instruction set whose build of the library is called: host "
           "(the CPU running the pass), generic, avx2, avx512 or avx512-vnni">,
    Option<"byteDots", "byte-dots", "std::string", /*default=*/"\"auto\"",
           "Which build's 4-bit decode step for groups of 128 columns: "
           "auto (byte dot products where cpu-isa has AVX-512 VNNI, table "
           "lookups elsewhere), on (byte dot products, in portable "
           "operations without VNNI: for testing them on any CPU) or off">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

#endif // GPTQ_CODEGEN_CPU_PASSES_TD
