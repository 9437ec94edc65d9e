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

#endif // GPTQ_CODEGEN_CPU_PASSES_TD
