/*===- gptq-c/Run.h - Compile a module once, call its entries in-process -===*\
|*                                                                            *|
|* The C interface of gptq-mlir's JIT: open an MLIR module (gptq, linalg or  *|
|* any dialect the project lowers, with its parameter archives), compile an  *|
|* entry once, and call it many times on the caller's buffers. Arguments are *|
|* read in place, and memref arguments written in place (a KV cache that   *|
|* each call updates); results are handed over as arrays the caller frees, *|
|* without a copy.                                                         *|
|* Errors are values: every function that can fail returns a GptqError (NULL *|
|* on success) whose message names what was wrong; no call aborts or exits. *|
|*                                                                            *|
|* A GptqModule may be shared by threads: its calls run one at a time (the  *|
|* compiled code itself runs on the project's thread pool). A handle is      *|
|* checked, not trusted: gptqModuleFree waits for the calls in progress and  *|
|* later calls with the freed handle are errors. A module's files (its text  *|
|* and parameter archives, read in place) are checked before and after each  *|
|* call: one cut short or rewritten is that call's error, never a signal.    *|
|* Compiled code that cannot allocate a buffer is the call's error too.      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GPTQ_C_RUN_H
#define GPTQ_C_RUN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GPTQ_CAPI_EXPORTED __attribute__((visibility("default")))
#else
#define GPTQ_CAPI_EXPORTED
#endif

/* Element types of arguments and results, as NumPy names them. */
typedef enum GptqDType {
  GPTQ_FLOAT32 = 0,
  GPTQ_FLOAT64 = 1,
  GPTQ_INT8 = 2,
  GPTQ_UINT8 = 3,
  GPTQ_INT16 = 4,
  GPTQ_INT32 = 5,
  GPTQ_INT64 = 6,
  GPTQ_BOOL = 7,
  GPTQ_FLOAT16 = 8,
  GPTQ_BFLOAT16 = 9
} GptqDType;

/* A dense C-order array that the caller owns: `rank` sizes at `shape`,
 * elements at `data` (a scalar argument has rank 0 and one element). */
typedef struct GptqBuffer {
  GptqDType dtype;
  int32_t rank;
  const int64_t *shape;
  void *data;
} GptqBuffer;

typedef struct GptqError GptqError;
typedef struct GptqModule GptqModule;
typedef struct GptqArray GptqArray;

/* The error's message: one line that names what and where (a file, an
 * entry, an argument), preceded by the parser's or verifier's diagnostics
 * when there were any. Valid until gptqErrorFree. */
GPTQ_CAPI_EXPORTED const char *gptqErrorMessage(const GptqError *error);
GPTQ_CAPI_EXPORTED void gptqErrorFree(GptqError *error);

/* Parses and verifies the MLIR file at `path` (text or bytecode), which
 * must be a regular file (a FIFO or a device is refused at once, without
 * blocking). Nothing is compiled yet. `cacheDir`: where compiled code is kept between
 * processes; NULL for the tools' default ($GPTQ_MLIR_CACHE_DIR, else
 * ~/.cache/gptq-mlir), "" for no cache. On success *module is set. */
GPTQ_CAPI_EXPORTED GptqError *
gptqModuleOpen(const char *path, const char *cacheDir, GptqModule **module);
/* Releases the module, its compiled entries and the weights they read,
 * once the calls other threads are making on it have returned (calls that
 * start later are refused). NULL, or a module already freed, is ignored.
 * Arrays it returned stay valid. */
GPTQ_CAPI_EXPORTED void gptqModuleFree(GptqModule *module);

/* What gptq-run --describe prints: the entry functions with their argument
 * and result dtypes and shapes, and the gptq.model attribute, as JSON.
 * With `entry` (NULL for every entry), only that function, and the error
 * when it cannot be called. The text stays valid until the next
 * gptqModuleDescribe or gptqModuleFree. */
GPTQ_CAPI_EXPORTED GptqError *
gptqModuleDescribe(GptqModule *module, const char *entry, const char **json);

/* What a reader of a model needs of its module, found by walking its IR,
 * as one JSON object:
 *   "attributes": the module's attributes as JSON values (strings, integers,
 *     floats, booleans, arrays and dictionaries as themselves, a unit
 *     attribute as true, any other as null): gptq.model, gptq.hf_names, ...
 *   "parameters": the archive names of gptq.parameters (relative to the
 *     module's folder), null without it, or {"error": "..."} for a value the
 *     archives cannot be loaded from.
 *   "functions": per func.func, in order, {"name", "constants", "layers"}:
 *     "constants" the arith.constant ops of dense_resource tensors, as
 *     {"name": resource key, "element": "f32", "shape": [64, 8], "inline":
 *     whether the module file holds the data (else a parameter archive
 *     does)}; "layers" each gptq.dequantize, as the indices in "constants"
 *     of the constants it reads ("qweight" through its gptq.unpack, "scales",
 *     "zeros", "g_idx"; null where the operand is not such a constant) and
 *     its gptq.unpack's "bits", "out" and "columns" (static sizes, else
 *     null; all three absent when the codes are not a gptq.unpack's).
 * Describes the module as its file is, also after an entry was compiled
 * (which attaches the archives' arrays). The text stays valid until the
 * next gptqModuleDescribeModel or gptqModuleFree. */
GPTQ_CAPI_EXPORTED GptqError *gptqModuleDescribeModel(GptqModule *module,
                                                      const char **json);

/* The bytes of the module's resource blob `key` (a constant's "name" in
 * gptqModuleDescribeModel): of a blob the module file holds, and after an
 * entry was compiled of an array of its parameter archives too. *data and
 * *size stay valid until gptqModuleFree. An error when no such blob is
 * attached. */
GPTQ_CAPI_EXPORTED GptqError *gptqModuleResource(GptqModule *module,
                                                 const char *key,
                                                 const void **data,
                                                 size_t *size);

/* Compiles `entry` (once; later calls return at once), mapping the
 * module's parameter archives on the first compilation. Optional: a call
 * compiles its entry when needed. *seconds (when not NULL) is set to the
 * time spent lowering and compiling, or loading cached code. */
GPTQ_CAPI_EXPORTED GptqError *
gptqModuleCompile(GptqModule *module, const char *entry, double *seconds);

/* The number of results of `entry` (compiled first if needed). */
GPTQ_CAPI_EXPORTED GptqError *
gptqModuleNumResults(GptqModule *module, const char *entry, size_t *count);

/* Calls `entry` on `numArgs` arguments, checked against its signature
 * (dtypes, ranks, static sizes) and by the code's own run-time checks. On
 * success results[0 .. *numResults) are set (the caller frees each with
 * gptqArrayFree); `capacity` is the room at `results`, which must hold
 * every result of the entry. On failure nothing is set: a failed check,
 * a buffer the code could not allocate ("out of memory allocating a buffer
 * of N bytes"), or a file of the module that changed (then every later call
 * fails too: open the module again). The module stays usable after the
 * others. */
GPTQ_CAPI_EXPORTED GptqError *
gptqModuleCall(GptqModule *module, const char *entry, const GptqBuffer *args,
               size_t numArgs, GptqArray **results, size_t capacity,
               size_t *numResults);

/* An array's dtype, shape and data; valid until gptqArrayFree. */
GPTQ_CAPI_EXPORTED GptqBuffer gptqArrayBuffer(const GptqArray *array);
/* Its size in bytes. */
GPTQ_CAPI_EXPORTED size_t gptqArrayByteSize(const GptqArray *array);
GPTQ_CAPI_EXPORTED void gptqArrayFree(GptqArray *array);

#ifdef __cplusplus
}
#endif

#endif /* GPTQ_C_RUN_H */
