//===- Passes.td - Codegen: GPU schedule passes ------------*- tablegen -*-===//

#ifndef GPTQ_CODEGEN_GPU_PASSES_TD
#define GPTQ_CODEGEN_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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
      for the partial tiles): 256 iterations per block for one dimension
      (`threads-1d`), 32 (`threads-long`) when an `scf.for` in it is marked
      `gptq.long_iterations` (each iteration runs long: the portable
      quantize-and-compensate loop, a row of W per iteration; small blocks
      spread a 4096-row layer over 128 multiprocessors, not 16); for more,
      8 x 32 over the last two dimensions and 1 over the others;
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
    Option<"threadsLong", "threads-long", "int64_t", /*default=*/"32",
           "Threads per block of a one-dimensional loop whose iterations run "
           "a loop marked gptq.long_iterations">,
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
    values, as the op's body receives them, and are stored once. Where a
    `linalg.fill` of the result's buffer comes just before the op (with
    only ops free of memory effects between) and no operand is a view of
    that buffer, the accumulators start from the fill's value instead and
    the fill is removed: a product into a fresh result is one launch, not
    two.

    Every result is the op's body applied in the order of `k`, as the
    loops that `convert-linalg-to-parallel-loops` make compute it: the
    values are the same bit for bit. Ops with `linalg.index`, other shapes,
    and ops inside parallel loops or launches are left alone.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::vector::VectorDialect"
  ];
  let options = [
    Option<"tensorCores", "tensor-cores", "std::string", /*default=*/"\"off\"",
           "Products on tensor cores: off (FP32 on the CUDA cores, as "
           "described above), tf32 (nvgpu.mma.sync with TF32 operands, "
           "sm_80 and later) or 3xtf32 (three TF32 products per multiply, "
           "an error near FP32's)">,
    Option<"threads", "threads", "int64_t", /*default=*/"16",
           "Threads per block along each dimension, and the reduction's "
           "chunk (1 to 32)">,
    Option<"results", "results", "int64_t", /*default=*/"4",
           "Results per thread along each dimension (1 to 8): blocks of "
           "threads x results squares">
  ];
}

def GPTQLaunchesToCPU : Pass<"gptq-launches-to-cpu", "ModuleOp"> {
  let summary = "Run gpu.launch kernels on the host CPU: a block at a time, "
                "its threads an OpenMP team, or, when the threads cannot see "
                "each other, the blocks shared among the host's threads";
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

    A launch whose threads cannot see each other (no `gpu.barrier`, no
    dynamic shared memory, no atomics, and no GPU operation but ids and
    sizes) needs no team: any order of its threads is one the GPU may run,
    one after another included. It becomes one `omp.parallel` region
    whose threads take the blocks in turn (thread `i` of `n` blocks `i`,
    `i + n`, ...; block `b` is `(b mod x, b / x mod y, b / (x y))`), each
    block's threads in loops `z`, `y`, `x` (each thread's stack
    allocations in a `memref.alloca_scope`). The values are the same;
    the host's cores are not spent switching between hundreds of OpenMP
    threads (the golden layers' emulated quantization: 24 s to 7 s on two
    cores).

    Each launch whose grid has blocks first calls the runtime's
    `gptq_runtime_count_launch` (`include/gptq/Runtime/LaunchCount.h`), as
    the CUDA runtime does for each kernel it launches: the launches that a
    computation makes are counted the same way emulated and on a device.
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

def GPTQEmulateWarpMMA : Pass<"gptq-emulate-warp-mma", "func::FuncOp"> {
  let summary = "Run nvgpu.mma.sync (m16n8k8, TF32) in a kernel that runs "
                "on the host, through shared memory";
  let description = [{
    For `gptq-launches-to-cpu`, whose GPU threads are OpenMP threads that
    cannot read each other's registers: each `nvgpu.mma.sync` of shape
    `[16, 8, 8]` with `tf32Enabled` in a `gpu.launch` becomes, in every
    thread, its fragments of A (16 x 8) and B (8 x 8) stored into its
    warp's part of the launch's dynamic shared memory (lane `l` holds
    A's rows `l / 4` and `l / 4 + 8`, columns `l % 4` and `l % 4 + 4`, and
    B's rows `l % 4` and `l % 4 + 4`, column `l / 4`, as on the GPU), a
    `gpu.barrier`, its four results of C computed from the whole tiles
    (each `c + sum over k of a b` in the order of `k`, the operands cut to
    TF32's 10 bits of fraction as the tensor cores read them), and a second
    barrier before the tiles are written again. Warps are runs of 32
    consecutive threads (`x` fastest). The launch's dynamic shared memory
    grows by 768 bytes per warp, after what it asked for.

    Every thread of the block must reach each `nvgpu.mma.sync` (as every
    lane of a warp must on the GPU); a launch whose block size or dynamic
    shared memory size is not a constant, or whose threads are not a
    multiple of 32, is an error. Results equal the tensor cores' up to the
    order and rounding of the additions inside the instruction.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect"
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
    (`sm_<digits>`, optionally with an `a` or `f` suffix) or is one that
    LLVM's NVPTX backend does not know or, when `format` is `bin` or
    `fatbin`, the toolkit's `ptxas` does not take, when `features`
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

#endif // GPTQ_CODEGEN_GPU_PASSES_TD
