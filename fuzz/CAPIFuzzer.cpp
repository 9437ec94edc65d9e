//===- CAPIFuzzer.cpp - libFuzzer target: the C interface of the JIT ------===//
//
// Drives libGPTQCAPI.so (include/gptq-c/Run.h) through sequences of calls
// that an input spells out: which entry (known, unknown, empty, null), how
// many arguments, each argument's dtype (also invalid enum values), rank
// (also negative and huge), sizes (also negative, zero and overflowing
// products) and data (null, or a real buffer of exactly the stated size),
// the room for results, describe, compile and result-count calls, results
// held and freed later, calls from two threads at once, and opens of bad
// paths and of fuzzed module text (parsed only, never compiled).
//
// The library is the main build's, linked as it is: the JIT and the code it
// compiles are not instrumented, this harness is. So AddressSanitizer sees
// every byte the harness reads of a result, and guard bytes after each
// argument buffer catch writes past it by compiled code.
//
// Compiling is slow, so one module with a few entries is written and
// compiled once, in LLVMFuzzerInitialize. Every call must end one of two
// ways: no error and its results set, each as many bytes as its shape says
// (and, for the entries whose answer is cheap to recompute, that answer), or
// an error with a non-empty one-line message and nothing set. After an
// error the module must still give the known answer to a known call.
//
// GPTQ_FUZZ_CAPI_SEEDS=DIR writes the seed corpus (fuzz/corpus/capi) into
// DIR and exits: the seeds are spelled with the encoder below, so they stay
// in step with the decoder.
//
//===----------------------------------------------------------------------===//

#include "gptq-c/Run.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <signal.h>
#include <limits>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// The module and what the harness knows of its entries
//===----------------------------------------------------------------------===//

/// Each entry is safe for every argument that its signature accepts: where
/// a size or an index could reach past a buffer, the module checks it at
/// run time (gptq.dequantize's checks, the cf.asserts), so a wrong answer or
/// a stray write is the library's fault, never the module's.
const char *kModule = R"mlir(#id = affine_map<(i) -> (i)>
#id2 = affine_map<(i, j) -> (i, j)>
func.func @matmul(%x: tensor<?x4xf32>, %w: tensor<4x3xf32>) -> tensor<?x3xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x3xf32>) -> tensor<?x3xf32>
  %r = linalg.matmul ins(%x, %w : tensor<?x4xf32>, tensor<4x3xf32>) outs(%f : tensor<?x3xf32>) -> tensor<?x3xf32>
  return %r : tensor<?x3xf32>
}
func.func @scale(%x: tensor<?x?xf64>, %k: i64) -> tensor<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %kf = arith.sitofp %k : i64 to f64
  %n = tensor.dim %x, %c0 : tensor<?x?xf64>
  %m = tensor.dim %x, %c1 : tensor<?x?xf64>
  %e = tensor.empty(%n, %m) : tensor<?x?xf64>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x?xf64>) outs(%e : tensor<?x?xf64>) {
  ^bb0(%a: f64, %o: f64):
    %p = arith.mulf %a, %kf : f64
    linalg.yield %p : f64
  } -> tensor<?x?xf64>
  return %r : tensor<?x?xf64>
}
func.func @widen(%h: tensor<?xf16>, %b: tensor<?xbf16>, %s: tensor<3xi16>, %p: tensor<?xi1>) -> (tensor<?xf32>, tensor<?xf32>, tensor<3xi64>, tensor<?xi1>) {
  %c0 = arith.constant 0 : index
  %true = arith.constant true
  %nh = tensor.dim %h, %c0 : tensor<?xf16>
  %eh = tensor.empty(%nh) : tensor<?xf32>
  %rh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%h : tensor<?xf16>) outs(%eh : tensor<?xf32>) {
  ^bb0(%a: f16, %o: f32):
    %y = arith.extf %a : f16 to f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %nb = tensor.dim %b, %c0 : tensor<?xbf16>
  %eb = tensor.empty(%nb) : tensor<?xf32>
  %rb = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : tensor<?xbf16>) outs(%eb : tensor<?xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %y = arith.extf %a : bf16 to f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %es = tensor.empty() : tensor<3xi64>
  %rs = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%s : tensor<3xi16>) outs(%es : tensor<3xi64>) {
  ^bb0(%a: i16, %o: i64):
    %y = arith.extsi %a : i16 to i64
    linalg.yield %y : i64
  } -> tensor<3xi64>
  %np = tensor.dim %p, %c0 : tensor<?xi1>
  %ep = tensor.empty(%np) : tensor<?xi1>
  %rp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%p : tensor<?xi1>) outs(%ep : tensor<?xi1>) {
  ^bb0(%a: i1, %o: i1):
    %y = arith.xori %a, %true : i1
    linalg.yield %y : i1
  } -> tensor<?xi1>
  return %rh, %rb, %rs, %rp : tensor<?xf32>, tensor<?xf32>, tensor<3xi64>, tensor<?xi1>
}
func.func @dequant(%c: tensor<?x?xi8>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?xf32> {
  %w = gptq.dequantize %c, %s, %z, %g : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return %w : tensor<?x?xf32>
}
func.func @store(%v: tensor<2xf32>, %at: i64, %cache: memref<?x2xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i64
  %rows = memref.dim %cache, %c0 : memref<?x2xf32>
  %rows64 = arith.index_cast %rows : index to i64
  %ge = arith.cmpi sge, %at, %zero : i64
  %lt = arith.cmpi slt, %at, %rows64 : i64
  %ok = arith.andi %ge, %lt : i1
  cf.assert %ok, "store: row out of range"
  %c = bufferization.to_tensor %cache restrict writable : memref<?x2xf32> to tensor<?x2xf32>
  %i = arith.index_cast %at : i64 to index
  %row = tensor.expand_shape %v [[0, 1]] output_shape [1, 2] : tensor<2xf32> into tensor<1x2xf32>
  %u = tensor.insert_slice %row into %c[%i, 0] [1, 2] [1, 1] : tensor<1x2xf32> into tensor<?x2xf32>
  bufferization.materialize_in_destination %u in restrict writable %cache : (tensor<?x2xf32>, memref<?x2xf32>) -> ()
  return %v : tensor<2xf32>
}
func.func @alloc(%n: i64) -> tensor<?xi8> {
  %zero = arith.constant 0 : i64
  %small = arith.constant 65536 : i64
  %huge = arith.constant 1152921504606846976 : i64
  %ge = arith.cmpi sge, %n, %zero : i64
  %le = arith.cmpi sle, %n, %small : i64
  %big = arith.cmpi sge, %n, %huge : i64
  %either = arith.ori %le, %big : i1
  %ok = arith.andi %ge, %either : i1
  cf.assert %ok, "alloc: n must lie in [0, 65536] or be at least 2^60"
  %i = arith.index_cast %n : i64 to index
  %e = tensor.empty(%i) : tensor<?xi8>
  %seven = arith.constant 7 : i8
  %f = linalg.fill ins(%seven : i8) outs(%e : tensor<?xi8>) -> tensor<?xi8>
  return %f : tensor<?xi8>
}
func.func @clear(%m: memref<?xi32>) {
  %zero = arith.constant 0 : i32
  linalg.fill ins(%zero : i32) outs(%m : memref<?xi32>)
  return
}
)mlir";

constexpr int64_t kDyn = -1;

/// An argument or result of an entry: dtype, sizes (kDyn where dynamic), a
/// scalar (rank 0), a memref (written in place).
struct Param {
  int dtype;
  std::vector<int64_t> shape;
  bool memref = false;
};

struct Entry {
  const char *name;
  std::vector<Param> inputs, results;
};

const std::vector<Entry> &entries() {
  static const std::vector<Entry> table = {
      {"matmul",
       {{GPTQ_FLOAT32, {kDyn, 4}}, {GPTQ_FLOAT32, {4, 3}}},
       {{GPTQ_FLOAT32, {kDyn, 3}}}},
      {"scale",
       {{GPTQ_FLOAT64, {kDyn, kDyn}}, {GPTQ_INT64, {}}},
       {{GPTQ_FLOAT64, {kDyn, kDyn}}}},
      {"widen",
       {{GPTQ_FLOAT16, {kDyn}},
        {GPTQ_BFLOAT16, {kDyn}},
        {GPTQ_INT16, {3}},
        {GPTQ_BOOL, {kDyn}}},
       {{GPTQ_FLOAT32, {kDyn}},
        {GPTQ_FLOAT32, {kDyn}},
        {GPTQ_INT64, {3}},
        {GPTQ_BOOL, {kDyn}}}},
      {"dequant",
       {{GPTQ_INT8, {kDyn, kDyn}},
        {GPTQ_FLOAT32, {kDyn, kDyn}},
        {GPTQ_FLOAT32, {kDyn, kDyn}},
        {GPTQ_INT32, {kDyn}}},
       {{GPTQ_FLOAT32, {kDyn, kDyn}}}},
      {"store",
       {{GPTQ_FLOAT32, {2}},
        {GPTQ_INT64, {}},
        {GPTQ_FLOAT32, {kDyn, 2}, /*memref=*/true}},
       {{GPTQ_FLOAT32, {2}}}},
      {"alloc", {{GPTQ_INT64, {}}}, {{GPTQ_INT8, {kDyn}}}},
      {"clear", {{GPTQ_INT32, {kDyn}, /*memref=*/true}}, {}},
  };
  return table;
}
enum EntryIndex { kMatmul, kScale, kWiden, kDequant, kStore, kAlloc, kClear };

/// Names an input can choose: the entries, then names that are none (null,
/// empty, unknown, an entry's name with a space or a line break, the
/// packed wrapper the lowering makes, a long one, bytes that are not UTF-8).
constexpr size_t kNumNames = 16;
const char *entryName(uint8_t selector) {
  static const std::string longName(300, 'm');
  static const char *others[] = {nullptr,
                                 "",
                                 "nope",
                                 "mat\nmul",
                                 "_mlir_ciface_matmul",
                                 longName.c_str(),
                                 "\xff\xfe",
                                 "matmul ",
                                 "main"};
  size_t i = selector % kNumNames;
  if (i < entries().size())
    return entries()[i].name;
  return others[i - entries().size()];
}
/// The entry an input's name selects, or -1 for a name that is none.
int entryIndex(uint8_t selector) {
  size_t i = selector % kNumNames;
  return i < entries().size() ? int(i) : -1;
}

size_t dtypeSize(int dtype) {
  switch (dtype) {
  case GPTQ_FLOAT64:
  case GPTQ_INT64:
    return 8;
  case GPTQ_FLOAT32:
  case GPTQ_INT32:
    return 4;
  case GPTQ_INT16:
  case GPTQ_FLOAT16:
  case GPTQ_BFLOAT16:
    return 2;
  case GPTQ_INT8:
  case GPTQ_UINT8:
  case GPTQ_BOOL:
    return 1;
  default:
    return 0;
  }
}

//===----------------------------------------------------------------------===//
// Failures and coverage
//===----------------------------------------------------------------------===//

/// libFuzzer's SIGABRT handler, as it was when the first input ran. The
/// library installs LLVM's signal handlers when it registers a file for
/// removal on a signal (a compile cache entry being written); installed
/// before libFuzzer's (in LLVMFuzzerInitialize), they are left in place by
/// libFuzzer, which keeps a handler it finds, and hand SIGABRT on to the
/// default action: a broken invariant would end the run with no crash
/// file. (With the cache off, as here, the library installs none; this is
/// for the day it does.)
struct sigaction gFuzzerAbort;
bool gHaveFuzzerAbort = false;

[[noreturn]] void fail(const char *what, const std::string &detail = "") {
  std::fprintf(stderr, "CAPIFuzzer: invariant broken: %s%s%s\n", what,
               detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stderr);
  if (gHaveFuzzerAbort)
    sigaction(SIGABRT, &gFuzzerAbort, nullptr);
  std::abort();
}

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      fail(#cond, ##__VA_ARGS__);                                              \
  } while (0)

/// The library is not instrumented, so libFuzzer sees only the harness's
/// edges. These counters (libFuzzer's extra counters) add what happened
/// inside: one per operation, name and kind of outcome (the message with
/// its numbers and paths taken out), so that an input reaching a new error
/// or a success where there was none is kept.
constexpr size_t kCounters = 1 << 14;
__attribute__((section("__libfuzzer_extra_counters"))) uint8_t
    counters[kCounters];

std::string gModuleDir, gModulePath;

/// GPTQ_FUZZ_CAPI_VERBOSE=1 prints each operation's outcome (to see what an
/// input does).
bool gVerbose = false;

void feedback(unsigned op, uint8_t selector, const char *message) {
  if (gVerbose)
    std::fprintf(stderr, "op %u, name %zu: %s\n", op, selector % kNumNames,
                 message ? message : "ok");
  uint64_t h = 1469598103934665603ULL;
  if (message) {
    std::string text = message;
    for (size_t at; !gModuleDir.empty() &&
                    (at = text.find(gModuleDir)) != std::string::npos;)
      text.erase(at, gModuleDir.size());
    for (char c : text)
      if (!(c >= '0' && c <= '9'))
        h = (h ^ uint8_t(c)) * 1099511628211ULL;
  }
  size_t i = ((op * kNumNames + selector % kNumNames) * 64 + h % 64) % kCounters;
  if (counters[i] < 255)
    ++counters[i];
}

/// The error's message, after checking what every error must be; the error
/// freed. `name` is the entry named, whose line breaks a message may quote.
std::string takeError(GptqError *error, const char *name = nullptr) {
  const char *message = gptqErrorMessage(error);
  CHECK(message != nullptr);
  std::string text = message;
  gptqErrorFree(error);
  CHECK(!text.empty(), "an empty error message");
  size_t allowed = 0;
  if (name)
    allowed = size_t(std::count(name, name + std::strlen(name), '\n'));
  CHECK(size_t(std::count(text.begin(), text.end(), '\n')) <= allowed,
        "a message of several lines: " + text);
  return text;
}

//===----------------------------------------------------------------------===//
// Reading an input, and writing one (for the seeds)
//===----------------------------------------------------------------------===//

class Reader {
public:
  Reader(const uint8_t *data, size_t size) : p(data), end(data + size) {}
  bool done() const { return p == end; }
  uint8_t u8() { return p < end ? *p++ : 0; }
  uint16_t u16() { return uint16_t(u8() | (u8() << 8)); }
  std::string bytes(size_t n) {
    n = std::min(n, size_t(end - p));
    std::string s(reinterpret_cast<const char *>(p), n);
    p += n;
    return s;
  }

private:
  const uint8_t *p, *end;
};

/// Values of a field: a byte chooses a plain one or a special one.
int32_t dtypeValue(uint8_t v) {
  static const int32_t special[] = {-1, 10, 11, 255, 256, INT32_MIN, INT32_MAX};
  return v < 10 ? int32_t(v) : special[v % 7];
}
int32_t rankValue(uint8_t v) {
  static const int32_t special[] = {-1, -2, INT32_MIN, 6, 8, 33, 1 << 16,
                                    (1 << 16) + 1, INT32_MAX};
  return v % 16 < 6 ? int32_t(v % 16) : special[v % 9];
}
int64_t sizeValue(uint8_t v) {
  static const int64_t special[] = {-1,
                                    -2,
                                    INT64_MIN,
                                    INT64_MIN + 1,
                                    INT64_MAX,
                                    int64_t(1) << 31,
                                    int64_t(1) << 32,
                                    int64_t(1) << 61,
                                    (int64_t(1) << 61) + 1,
                                    int64_t(1) << 62,
                                    int64_t(3) << 61,
                                    1 << 20,
                                    65536,
                                    1000};
  return v % 32 < 18 ? int64_t(v % 32) : special[v % 14];
}
/// A scalar i64 argument: small values, the edges of the entries' checks,
/// and the extremes.
int64_t scalarValue(uint8_t v) {
  static const int64_t special[] = {-1,
                                    INT64_MIN,
                                    INT64_MAX,
                                    int64_t(1) << 60,
                                    (int64_t(1) << 60) - 1,
                                    int64_t(1) << 62,
                                    65536,
                                    65537,
                                    4096,
                                    int64_t(1) << 31};
  return v % 32 < 22 ? int64_t(v % 32) : special[v % 10];
}

constexpr size_t kMaxBytes = size_t(1) << 20;
constexpr size_t kGuardBytes = 64;
constexpr uint8_t kGuard = 0xa5;
constexpr int32_t kMaxRealRank = 1 << 16;

/// One argument as the harness holds it: what the GptqBuffer says, and the
/// storage its pointers point into (the data followed by guard bytes).
struct Arg {
  int32_t dtype = GPTQ_FLOAT32;
  int32_t rank = 0;
  std::vector<int64_t> shape;
  bool shapeNull = false;
  bool dataNull = false;
  enum Fill : uint8_t { Zeros, Random, SmallInts, Null, NumFills };
  Fill fill = Zeros;
  uint8_t fillSeed = 0;
  /// For a scalar i64: its value, chosen by the input when hasScalar.
  bool hasScalar = false;
  int64_t scalar = 0;
  std::vector<uint8_t> storage;
  size_t bytes = 0;
  bool real = false;

  /// The byte count the buffer's fields say, if it is defined and small
  /// enough to allocate. Defined as the library defines it: every stride
  /// must fit in int64_t, so each size counts as at least 1 even where
  /// another is 0 (gptq::checkedByteCount).
  bool byteCount(size_t &out) const {
    size_t element = dtypeSize(dtype);
    if (!element || rank < 0 || rank > kMaxRealRank || shapeNull)
      return false;
    int64_t bound = int64_t(element);
    bool zero = false;
    for (int64_t s : shape) {
      if (s < 0 || __builtin_mul_overflow(bound, std::max<int64_t>(s, 1),
                                          &bound))
        return false;
      zero |= s == 0;
    }
    if (!zero && uint64_t(bound) > kMaxBytes)
      return false;
    out = zero ? 0 : size_t(bound);
    return true;
  }

  /// Makes the storage: a real buffer of exactly the stated size when it
  /// is defined and small, else a null data pointer.
  void materialize() {
    size_t n = 0;
    real = !dataNull && byteCount(n);
    storage.clear();
    bytes = 0;
    if (!real)
      return;
    bytes = n;
    storage.assign(n + kGuardBytes, kGuard);
    uint64_t state = 0x9e3779b97f4a7c15ULL ^ (uint64_t(fillSeed) << 17 | 1);
    auto next = [&state] {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      return state;
    };
    size_t element = dtypeSize(dtype);
    for (size_t i = 0; i < n; i += element) {
      uint8_t *e = storage.data() + i;
      switch (fill) {
      case Zeros:
      case Null:
        std::memset(e, 0, element);
        break;
      case Random:
        for (size_t b = 0; b < element; ++b)
          e[b] = uint8_t(next());
        break;
      case SmallInts:
        writeSmallInt(e, int(next() % 4));
        break;
      case NumFills:
        break;
      }
    }
    // A scalar i64 is the value the input chose, or whatever the fill
    // made of it; the checks read it here.
    if (rank == 0 && dtype == GPTQ_INT64) {
      if (hasScalar)
        std::memcpy(storage.data(), &scalar, 8);
      else
        std::memcpy(&scalar, storage.data(), 8);
    }
  }

  void writeSmallInt(uint8_t *e, int v) const {
    switch (dtype) {
    case GPTQ_FLOAT32: {
      float f = float(v);
      std::memcpy(e, &f, 4);
      break;
    }
    case GPTQ_FLOAT64: {
      double d = v;
      std::memcpy(e, &d, 8);
      break;
    }
    case GPTQ_FLOAT16: {
      static const uint16_t halves[] = {0x0000, 0x3c00, 0x4000, 0x4200};
      std::memcpy(e, &halves[v], 2);
      break;
    }
    case GPTQ_BFLOAT16: {
      static const uint16_t halves[] = {0x0000, 0x3f80, 0x4000, 0x4040};
      std::memcpy(e, &halves[v], 2);
      break;
    }
    case GPTQ_BOOL:
      e[0] = uint8_t(v & 1);
      break;
    default: {
      int64_t x = v;
      std::memcpy(e, &x, dtypeSize(dtype)); // little-endian
      break;
    }
    }
  }

  /// Whether the call has the data: a real buffer, or none where the
  /// array is empty.
  bool present() const {
    size_t n = 0;
    return real || (byteCount(n) && n == 0);
  }

  GptqBuffer buffer() const {
    GptqBuffer b;
    b.dtype = GptqDType(dtype);
    b.rank = rank;
    b.shape = shapeNull ? nullptr : shape.data();
    b.data = real ? const_cast<uint8_t *>(storage.data()) : nullptr;
    return b;
  }

  bool guardIntact() const {
    for (size_t i = bytes; i < storage.size(); ++i)
      if (storage[i] != kGuard)
        return false;
    return true;
  }
};

/// How a call is made beyond its arguments.
struct CallFlags {
  size_t capacity = 0;
  bool resultsNull = false, countNull = false, argsNull = false;
};

void readFlags(Reader &r, size_t numResults, CallFlags &flags) {
  uint8_t f = r.u8();
  switch (f % 4) {
  case 0:
    flags.capacity = numResults;
    break;
  case 1:
    flags.capacity = numResults + 1 + (f >> 6);
    break;
  case 2:
    flags.capacity = numResults ? numResults - 1 : 0;
    break;
  case 3:
    flags.capacity = 0;
    break;
  }
  switch ((f >> 2) % 16) {
  case 13:
    flags.resultsNull = true;
    break;
  case 14:
    flags.countNull = true;
    break;
  case 15:
    flags.argsNull = true;
    break;
  default:
    break;
  }
}

/// An argument built from a template parameter: its dtype and rank, its
/// dynamic sizes chosen by the input.
Arg templateArg(Reader &r, const Param &param) {
  Arg a;
  a.dtype = param.dtype;
  a.rank = int32_t(param.shape.size());
  for (int64_t s : param.shape)
    a.shape.push_back(s == kDyn ? int64_t(r.u8() % 9) : s);
  if (a.rank == 0 && param.dtype == GPTQ_INT64) {
    a.hasScalar = true;
    a.scalar = scalarValue(r.u8());
    a.fill = Arg::Zeros;
    return a;
  }
  uint8_t fill = r.u8();
  a.fill = Arg::Fill(fill % Arg::NumFills);
  a.dataNull = a.fill == Arg::Null;
  a.fillSeed = uint8_t(fill >> 2);
  return a;
}

/// An argument whose every field the input chooses.
Arg rawArg(Reader &r) {
  Arg a;
  a.dtype = dtypeValue(r.u8());
  a.rank = rankValue(r.u8());
  uint8_t flags = r.u8();
  a.shapeNull = a.rank != 0 && (flags % 8 == 7 || a.rank > kMaxRealRank);
  if (a.rank > 0 && a.rank <= kMaxRealRank) {
    a.shape.assign(size_t(a.rank), 1);
    for (int32_t i = 0; i < std::min(a.rank, 8); ++i)
      a.shape[size_t(i)] = sizeValue(r.u8());
  }
  a.fill = Arg::Fill((flags >> 3) % Arg::NumFills);
  a.dataNull = a.fill == Arg::Null;
  a.fillSeed = uint8_t(flags >> 5);
  if (a.rank == 0 && a.dtype == GPTQ_INT64) {
    a.hasScalar = true;
    a.scalar = scalarValue(r.u8());
  }
  return a;
}

/// Changes one field of one argument, or adds or drops an argument.
void mutate(Reader &r, std::vector<Arg> &args) {
  uint8_t target = r.u8();
  uint8_t field = r.u8();
  uint8_t value = r.u8();
  size_t n = args.size();
  size_t which = target % (n + 2);
  if (which == n) {
    args.push_back(n ? args[0] : Arg());
    return;
  }
  if (which == n + 1) {
    if (n)
      args.pop_back();
    return;
  }
  Arg &a = args[which];
  switch (field % 6) {
  case 0:
    a.dtype = dtypeValue(value);
    break;
  case 1:
    a.rank = rankValue(value);
    a.shape.clear();
    if (a.rank > 0 && a.rank <= kMaxRealRank)
      a.shape.assign(size_t(a.rank), 1);
    a.shapeNull = a.rank > kMaxRealRank;
    a.hasScalar = false;
    break;
  case 2:
    if (!a.shape.empty())
      a.shape[(value >> 5) % a.shape.size()] = sizeValue(value & 31);
    break;
  case 3:
    a.dataNull = true;
    break;
  case 4:
    a.shapeNull = a.rank != 0;
    break;
  case 5:
    a.fill = Arg::Fill(value % Arg::NumFills);
    a.fillSeed = uint8_t(value >> 2);
    break;
  }
}

//===----------------------------------------------------------------------===//
// The state of a run
//===----------------------------------------------------------------------===//

GptqModule *gModule = nullptr;
std::string gFifoPath;

/// A result kept across operations, with the checksum of its bytes when it
/// was returned: freeing it later must find the same bytes.
struct Held {
  GptqArray *array;
  uint64_t checksum;
};
std::vector<Held> gHeld;
constexpr size_t kMaxHeld = 16;

uint64_t checksum(const void *data, size_t bytes) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < bytes; ++i)
    h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

void freeHeld(size_t i) {
  GptqBuffer b = gptqArrayBuffer(gHeld[i].array);
  CHECK(checksum(b.data, gptqArrayByteSize(gHeld[i].array)) ==
            gHeld[i].checksum,
        "a held result changed under its owner");
  gptqArrayFree(gHeld[i].array);
  gHeld.erase(gHeld.begin() + long(i));
}

/// Checks what every returned array must be, and its bytes: each one is
/// read, so AddressSanitizer would see an array shorter than its shape.
void checkArray(GptqArray *array, const Param *spec) {
  CHECK(array != nullptr);
  GptqBuffer b = gptqArrayBuffer(array);
  size_t element = dtypeSize(b.dtype);
  CHECK(element != 0, "a result of unknown dtype " + std::to_string(b.dtype));
  CHECK(b.rank >= 0 && (b.rank == 0 || b.shape));
  uint64_t n = element;
  for (int32_t i = 0; i < b.rank; ++i) {
    CHECK(b.shape[i] >= 0, "a negative result size");
    CHECK(!__builtin_mul_overflow(n, uint64_t(b.shape[i]), &n));
  }
  CHECK(gptqArrayByteSize(array) == n,
        "byte size " + std::to_string(gptqArrayByteSize(array)) +
            " for a shape of " + std::to_string(n) + " bytes");
  CHECK(n == 0 || b.data != nullptr, "null data for a non-empty result");
  if (spec) {
    CHECK(int(b.dtype) == spec->dtype, "a result of another dtype");
    CHECK(size_t(b.rank) == spec->shape.size(), "a result of another rank");
    for (int32_t i = 0; i < b.rank; ++i)
      CHECK(spec->shape[size_t(i)] == kDyn ||
                spec->shape[size_t(i)] == b.shape[i],
            "a result of another static size");
  }
  volatile uint64_t sink = checksum(b.data, n);
  (void)sink;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31;
  int exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(float(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
  else
    magnitude = std::ldexp(float(mantissa | 0x400), exponent - 25);
  return sign ? -magnitude : magnitude;
}

bool sameFloat(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

template <typename T> T element(const Arg &a, size_t i) {
  T v;
  std::memcpy(&v, a.storage.data() + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T> T resultElement(GptqArray *r, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char *>(gptqArrayBuffer(r).data) + i * sizeof(T),
              sizeof(T));
  return v;
}

/// Whether every element of a float32 argument is an integer in [-8, 8]
/// (then a product of a few of them is exact in any order).
bool smallIntegers(const Arg &a) {
  for (size_t i = 0; i < a.bytes / 4; ++i) {
    float v = element<float>(a, i);
    if (!(v == std::floor(v) && std::fabs(v) <= 8))
      return false;
  }
  return true;
}

/// The answer of a successful call of a known entry, where it is cheap to
/// recompute. `before` holds the arguments' bytes before the call.
void checkAnswer(int entry, const std::vector<Arg> &args,
                 const std::vector<std::vector<uint8_t>> &before,
                 GptqArray **results) {
  auto dims = [](GptqArray *r) {
    GptqBuffer b = gptqArrayBuffer(r);
    return std::vector<int64_t>(b.shape, b.shape + b.rank);
  };
  switch (entry) {
  case kMatmul: {
    int64_t rows = args[0].shape[0];
    CHECK(dims(results[0]) == (std::vector<int64_t>{rows, 3}));
    if (!smallIntegers(args[0]) || !smallIntegers(args[1]))
      break;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        float sum = 0;
        for (int64_t k = 0; k < 4; ++k)
          sum += element<float>(args[0], size_t(i * 4 + k)) *
                 element<float>(args[1], size_t(k * 3 + j));
        CHECK(resultElement<float>(results[0], size_t(i * 3 + j)) == sum,
              "a wrong product");
      }
    break;
  }
  case kScale: {
    CHECK(dims(results[0]) == args[0].shape);
    double k = double(args[1].scalar);
    for (size_t i = 0; i < args[0].bytes / 8; ++i)
      CHECK(sameFloat(resultElement<double>(results[0], i),
                      element<double>(args[0], i) * k),
            "a wrong scaled element");
    break;
  }
  case kWiden: {
    CHECK(dims(results[0]) == args[0].shape);
    CHECK(dims(results[1]) == args[1].shape);
    CHECK(dims(results[3]) == args[3].shape);
    for (size_t i = 0; i < args[0].bytes / 2; ++i)
      CHECK(sameFloat(resultElement<float>(results[0], i),
                      halfToFloat(element<uint16_t>(args[0], i))),
            "a wrong float16 -> float32");
    for (size_t i = 0; i < args[1].bytes / 2; ++i) {
      uint32_t bits = uint32_t(element<uint16_t>(args[1], i)) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      CHECK(sameFloat(resultElement<float>(results[1], i), f),
            "a wrong bfloat16 -> float32");
    }
    for (size_t i = 0; i < 3; ++i)
      CHECK(resultElement<int64_t>(results[2], i) ==
                int64_t(element<int16_t>(args[2], i)),
            "a wrong int16 -> int64");
    // A byte other than 0 or 1 is no bool: nothing is promised for it.
    for (size_t i = 0; i < args[3].bytes; ++i)
      if (args[3].storage[i] <= 1)
        CHECK(resultElement<uint8_t>(results[3], i) == (args[3].storage[i] ^ 1),
              "a wrong negated bool");
    break;
  }
  case kDequant: {
    CHECK(dims(results[0]) == args[0].shape);
    if (!smallIntegers(args[1]) || !smallIntegers(args[2]))
      break;
    int64_t cols = args[0].shape[1];
    int64_t groups = args[1].shape[1];
    for (int64_t i = 0; i < args[0].shape[0]; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        int32_t g = element<int32_t>(args[3], size_t(j));
        CHECK(g >= 0 && g < groups, "an accepted g_idx entry out of range");
        float s = element<float>(args[1], size_t(i * groups + g));
        float z = element<float>(args[2], size_t(i * groups + g));
        float c = float(element<uint8_t>(args[0], size_t(i * cols + j)));
        CHECK(resultElement<float>(results[0], size_t(i * cols + j)) ==
                  s * (c - z),
              "a wrong dequantized weight");
      }
    break;
  }
  case kStore: {
    for (size_t i = 0; i < 2; ++i)
      CHECK(resultElement<float>(results[0], i) == element<float>(args[0], i));
    int64_t at = args[1].scalar;
    CHECK(at >= 0 && at < args[2].shape[0], "an accepted row out of range");
    for (size_t i = 0; i < args[2].bytes / 4; ++i) {
      float expected = size_t(at) * 2 <= i && i < size_t(at) * 2 + 2
                           ? element<float>(args[0], i - size_t(at) * 2)
                           : [&] {
                               float f;
                               std::memcpy(&f, before[2].data() + i * 4, 4);
                               return f;
                             }();
      float got = element<float>(args[2], i);
      CHECK(std::memcmp(&got, &expected, 4) == 0, "a wrong cache after store");
    }
    break;
  }
  case kAlloc: {
    CHECK(dims(results[0]) == (std::vector<int64_t>{args[0].scalar}));
    for (size_t i = 0; i < size_t(args[0].scalar); ++i)
      CHECK(resultElement<int8_t>(results[0], i) == 7);
    break;
  }
  case kClear:
    for (size_t i = 0; i < args[0].bytes; ++i)
      CHECK(args[0].storage[i] == 0, "a memref not cleared");
    break;
  }
}

/// Whether the arguments are those the entry's signature takes, with data
/// present: then the call must succeed, but for the entries' own checks.
bool matchesSignature(int entry, const std::vector<Arg> &args) {
  const Entry &e = entries()[size_t(entry)];
  if (args.size() != e.inputs.size())
    return false;
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg &a = args[i];
    const Param &p = e.inputs[i];
    if (a.dtype != p.dtype || size_t(a.rank) != p.shape.size() ||
        a.shapeNull || !a.present())
      return false;
    for (size_t d = 0; d < p.shape.size(); ++d)
      if (p.shape[d] != kDyn && p.shape[d] != a.shape[d])
        return false;
  }
  return true;
}

/// Whether the entry's own run-time checks pass for these arguments.
bool entryChecksPass(int entry, const std::vector<Arg> &args) {
  switch (entry) {
  case kDequant: {
    const auto &c = args[0].shape, &s = args[1].shape, &z = args[2].shape,
               &g = args[3].shape;
    if (s != z || s[0] != c[0] || g[0] != c[1])
      return false;
    for (size_t j = 0; j < size_t(g[0]); ++j) {
      int32_t v = element<int32_t>(args[3], j);
      if (v < 0 || v >= s[1])
        return false;
    }
    return true;
  }
  case kStore:
    return args[1].scalar >= 0 && args[1].scalar < args[2].shape[0];
  case kAlloc:
    return args[0].scalar >= 0 && args[0].scalar <= 65536;
  default:
    return true;
  }
}

/// The arguments as a failure message shows them.
std::string describe(const std::vector<Arg> &args) {
  std::string text;
  for (const Arg &a : args) {
    text += text.empty() ? "(" : ", ";
    text += "dtype " + std::to_string(a.dtype) + " [";
    if (a.shapeNull)
      text += "null shape of rank " + std::to_string(a.rank);
    else
      for (size_t i = 0; i < a.shape.size() && i < 8; ++i)
        text += (i ? " " : "") + std::to_string(a.shape[i]);
    text += "]";
    if (a.rank == 0 && a.dtype == GPTQ_INT64 && a.real)
      text += " = " + std::to_string(a.scalar);
    text += a.real ? "" : " null data";
  }
  return text + ")";
}

/// One call of the module on `args`, and every check of its outcome.
/// Returns whether it failed.
bool callAndCheck(unsigned op, uint8_t selector, std::vector<Arg> &args,
                  const CallFlags &flags) {
  const char *name = entryName(selector);
  int entry = entryIndex(selector);
  for (Arg &a : args)
    a.materialize();
  std::vector<GptqBuffer> buffers;
  std::vector<std::vector<uint8_t>> before;
  for (const Arg &a : args) {
    buffers.push_back(a.buffer());
    before.push_back(a.storage);
  }
  // The room for results, and past it a few slots that must stay as they
  // were.
  static GptqArray *const kUnset = reinterpret_cast<GptqArray *>(&gHeld);
  std::vector<GptqArray *> slots(flags.capacity + 4, kUnset);
  size_t count = 12345;
  GptqError *error = gptqModuleCall(
      gModule, name, flags.argsNull ? nullptr : buffers.data(), buffers.size(),
      flags.resultsNull ? nullptr : slots.data(), flags.capacity,
      flags.countNull ? nullptr : &count);

  for (size_t i = 0; i < args.size(); ++i) {
    CHECK(args[i].guardIntact(),
          std::string("a write past argument ") + std::to_string(i) +
              " of @" + (name ? name : "(null)"));
    bool writable =
        entry >= 0 && i < entries()[size_t(entry)].inputs.size() &&
        entries()[size_t(entry)].inputs[i].memref;
    if (!writable)
      CHECK(args[i].storage == before[i],
            "a tensor argument written, argument " + std::to_string(i));
  }
  if (error) {
    std::string message = takeError(error, name);
    feedback(op, selector, message.c_str());
    for (GptqArray *slot : slots)
      CHECK(slot == kUnset, "a result set by a failed call: " + message);
    CHECK(count == 12345, "a result count set by a failed call: " + message);
    CHECK(!(entry >= 0 && !flags.argsNull && !flags.resultsNull &&
            !flags.countNull &&
            flags.capacity >= entries()[size_t(entry)].results.size() &&
            matchesSignature(entry, args) && entryChecksPass(entry, args)),
          "a good call failed: " + message + " for @" + name + describe(args));
    return true;
  }
  feedback(op, selector, nullptr);
  CHECK(entry >= 0, std::string("a call of no entry succeeded: ") +
                        (name ? name : "(null)"));
  CHECK(!flags.countNull, "a call without room for the count succeeded");
  CHECK(!flags.argsNull || args.empty(), "a call without its arguments");
  CHECK(!flags.resultsNull || flags.capacity == 0);
  const Entry &e = entries()[size_t(entry)];
  CHECK(count == e.results.size(), "a wrong result count");
  CHECK(count <= flags.capacity, "more results than room");
  CHECK(matchesSignature(entry, args),
        "a call that does not match the signature succeeded: @" +
            std::string(name) + describe(args));
  CHECK(entryChecksPass(entry, args),
        "a call that fails the module's checks succeeded: @" +
            std::string(name) + describe(args));
  for (size_t i = 0; i < slots.size(); ++i) {
    if (i < count)
      checkArray(slots[i], &e.results[i]);
    else
      CHECK(slots[i] == kUnset, "a slot past the results was written");
  }
  checkAnswer(entry, args, before, slots.data());
  for (size_t i = 0; i < count; ++i) {
    if (gHeld.size() >= kMaxHeld)
      freeHeld(0);
    GptqBuffer b = gptqArrayBuffer(slots[i]);
    gHeld.push_back({slots[i], checksum(b.data, gptqArrayByteSize(slots[i]))});
  }
  return false;
}

/// A call whose answer is known: the module must give it whatever came
/// before.
void knownCall() {
  static const float x[8] = {1, 2, 3, 4, -1, 0, 2, 5};
  static const float w[12] = {1, 0, 2, -1, 3, 1, 0, 2, 2, 4, -2, 1};
  float expected[6];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      expected[i * 3 + j] = 0;
      for (int k = 0; k < 4; ++k)
        expected[i * 3 + j] += x[i * 4 + k] * w[k * 3 + j];
    }
  int64_t xShape[] = {2, 4}, wShape[] = {4, 3};
  GptqBuffer args[] = {{GPTQ_FLOAT32, 2, xShape, const_cast<float *>(x)},
                       {GPTQ_FLOAT32, 2, wShape, const_cast<float *>(w)}};
  GptqArray *result = nullptr;
  size_t count = 0;
  GptqError *error =
      gptqModuleCall(gModule, "matmul", args, 2, &result, 1, &count);
  if (error)
    fail("the known call failed", takeError(error));
  CHECK(count == 1);
  checkArray(result, &entries()[kMatmul].results[0]);
  CHECK(std::memcmp(gptqArrayBuffer(result).data, expected, sizeof expected) ==
            0,
        "the known call gave another answer");
  gptqArrayFree(result);
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

/// An input is a sequence of operations, each a byte (opOf) followed by
/// its fields, one byte each unless said (missing bytes read as 0):
///   call (template)  name; per input of the named entry (for a name that
///                    is none, of entry name % 7): a byte per dynamic size
///                    (% 9), then its fill (Arg::Fill in the low 2 bits, a
///                    seed above), or for an i64 scalar its value
///                    (scalarValue); a mutation count (% 4), each mutation
///                    3 bytes (argument, field, value: mutate); flags
///                    (readFlags: room for results, null pointers)
///   call (raw)       name; argument count (% 7); per argument: dtype
///                    (dtypeValue), rank (rankValue), a byte of flags (null
///                    shape, fill, seed), up to 8 sizes (sizeValue), for a
///                    scalar i64 its value; flags
///   describe         name; flags (1 % 4: every entry; 15 % 16: null result)
///   num results      name; flags (15 % 16: null result)
///   compile          name; flags (odd: no seconds)
///   free held        which (with none held: the functions handed null)
///   known            a call whose answer is known
///   open             mode (opOpen: fuzzed text as 2 bytes of length and
///                    the text, a bad path, the module whole or cut short)
///   concurrent       two threads call while this one describes
///   lifetime         mode (even: free, then use the handle; odd: free it
///                    while a thread calls it)
/// Names are entryName's: the entries, then null, "", unknown ones.
enum Op : uint8_t {
  kCallTemplate,
  kCallRaw,
  kDescribe,
  kNumResults,
  kCompile,
  kFreeHeld,
  kKnown,
  kOpen,
  kConcurrent,
  kLifetime,
  kNumOps
};

/// The operation a byte selects: the values of Op select themselves (the
/// seeds are spelled with them), and so do their values + 32k but for the
/// two that open a module, which take a new MLIR context with every
/// dialect (20 ms, a hundred calls) and so only their own byte; the others
/// are calls, the common case.
Op opOf(uint8_t byte) {
  uint8_t v = byte % 32;
  if ((v == kOpen || v == kLifetime) && byte != v)
    return kCallTemplate;
  if (v < kNumOps)
    return Op(v);
  return v % 4 == 0 ? kCallRaw : kCallTemplate;
}

void opCall(Reader &r, bool raw) {
  uint8_t selector = r.u8();
  int entry = entryIndex(selector);
  // A name that is no entry still gets the arguments of one.
  const Entry &shape = entries()[size_t(entry >= 0 ? entry : selector % 7)];
  std::vector<Arg> args;
  if (raw) {
    size_t n = r.u8() % 7;
    for (size_t i = 0; i < n; ++i)
      args.push_back(rawArg(r));
  } else {
    for (const Param &p : shape.inputs)
      args.push_back(templateArg(r, p));
    size_t mutations = r.u8() % 4;
    for (size_t i = 0; i < mutations; ++i)
      mutate(r, args);
  }
  CallFlags flags;
  readFlags(r, shape.results.size(), flags);
  if (callAndCheck(raw ? kCallRaw : kCallTemplate, selector, args, flags))
    knownCall();
}

void opDescribe(Reader &r) {
  uint8_t selector = r.u8();
  uint8_t flags = r.u8();
  const char *name = entryName(selector);
  // NULL asks for every entry, except where the input says to pass a name.
  if (flags % 4 == 1)
    name = nullptr;
  const char *json = nullptr;
  bool jsonNull = flags % 16 == 15;
  GptqError *error =
      gptqModuleDescribe(gModule, name, jsonNull ? nullptr : &json);
  bool known = name == nullptr || entryIndex(selector) >= 0;
  if (error) {
    std::string message = takeError(error, name);
    feedback(kDescribe, selector, message.c_str());
    CHECK(!known || jsonNull, "describing an entry failed: " + message);
    return;
  }
  feedback(kDescribe, selector, nullptr);
  CHECK(known && !jsonNull, "describing no entry succeeded");
  CHECK(json && json[0] == '{', "a description that is no JSON object");
  if (name)
    CHECK(std::strstr(json, (std::string("\"") + name + "\"").c_str()),
          "a description without its entry's name");
}

void opNumResults(Reader &r) {
  uint8_t selector = r.u8();
  bool countNull = r.u8() % 16 == 15;
  const char *name = entryName(selector);
  int entry = entryIndex(selector);
  size_t count = 12345;
  GptqError *error =
      gptqModuleNumResults(gModule, name, countNull ? nullptr : &count);
  if (error) {
    std::string message = takeError(error, name);
    feedback(kNumResults, selector, message.c_str());
    CHECK(entry < 0 || countNull, "counting the results failed: " + message);
    CHECK(count == 12345);
    knownCall();
    return;
  }
  feedback(kNumResults, selector, nullptr);
  CHECK(entry >= 0 && !countNull, "counting the results of no entry");
  CHECK(count == entries()[size_t(entry)].results.size());
}

void opCompile(Reader &r) {
  uint8_t selector = r.u8();
  bool secondsNull = r.u8() % 2;
  const char *name = entryName(selector);
  int entry = entryIndex(selector);
  double seconds = -1;
  GptqError *error =
      gptqModuleCompile(gModule, name, secondsNull ? nullptr : &seconds);
  if (error) {
    std::string message = takeError(error, name);
    feedback(kCompile, selector, message.c_str());
    CHECK(entry < 0, "compiling an entry failed: " + message);
    knownCall();
    return;
  }
  feedback(kCompile, selector, nullptr);
  CHECK(entry >= 0, "compiling no entry succeeded");
  CHECK(secondsNull || seconds >= 0);
}

/// Frees a held result; or, with none held, hands the array and error
/// functions null, which they must take.
void opFreeHeld(Reader &r) {
  uint8_t which = r.u8();
  if (!gHeld.empty()) {
    freeHeld(which % gHeld.size());
    return;
  }
  GptqBuffer b = gptqArrayBuffer(nullptr);
  CHECK(b.rank == 0 && b.data == nullptr && b.shape == nullptr);
  CHECK(gptqArrayByteSize(nullptr) == 0);
  gptqArrayFree(nullptr);
  gptqErrorFree(nullptr);
  const char *message = gptqErrorMessage(nullptr);
  CHECK(message && *message);
}

/// Two threads call the module at once, while this one describes it.
void opConcurrent() {
  std::thread a(knownCall), b(knownCall);
  const char *json = nullptr;
  GptqError *error = gptqModuleDescribe(gModule, "matmul", &json);
  if (error)
    fail("describing during calls failed", takeError(error));
  a.join();
  b.join();
}

/// Opens a module: fuzzed text written to a file, a path that is no module
/// file, or the module's own file whole or cut short. Opening parses only;
/// nothing here compiles.
void opOpen(Reader &r) {
  uint8_t mode = r.u8();
  std::string path;
  bool expectError = true, nullPath = false, nullResult = false;
  switch (mode % 12) {
  case 0:
  case 1:
  case 2:
  case 3: {
    size_t length = r.u8() * 16u + r.u8() % 16u;
    path = gModuleDir + "/fuzzed.mlir";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << r.bytes(length);
    expectError = false; // either
    break;
  }
  case 4:
    nullPath = true;
    break;
  case 5:
    nullResult = true;
    path = gModulePath;
    break;
  case 6:
    path = "";
    break;
  case 7:
    path = "/nonexistent/m.mlir";
    break;
  case 8:
    // A directory, a device, a FIFO: none is a module file, and none may
    // block or be read for ever.
    switch ((mode >> 4) % 4) {
    case 0:
      path = gModuleDir;
      break;
    case 1:
      path = "/dev/null";
      break;
    case 2:
      path = "/dev/zero";
      break;
    case 3:
      path = gFifoPath;
      break;
    }
    break;
  case 9:
    path = gModulePath;
    expectError = false;
    break;
  default: {
    // The module cut short.
    size_t length = r.u16() % std::strlen(kModule);
    path = gModuleDir + "/cut.mlir";
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        << std::string(kModule, length);
    expectError = false;
    break;
  }
  }
  GptqModule *module = reinterpret_cast<GptqModule *>(&gHeld);
  GptqError *error = gptqModuleOpen(nullPath ? nullptr : path.c_str(), "",
                                    nullResult ? nullptr : &module);
  if (error) {
    const char *message = gptqErrorMessage(error);
    CHECK(message && *message, "an empty error message");
    // The parser's many messages for fuzzed text are the IR fuzzer's
    // business: counted as one outcome here, so that inputs are not kept
    // for them (each open costs a hundred calls).
    feedback(kOpen, mode, expectError ? message : "a parse error");
    gptqErrorFree(error);
    // (A null path is refused before the result is reset.)
    CHECK(nullResult || nullPath || module == nullptr,
          "a module set by a failed open");
    return;
  }
  feedback(kOpen, mode, nullptr);
  CHECK(!expectError, "opening '" + path + "' succeeded");
  CHECK(module != nullptr);
  const char *json = nullptr;
  error = gptqModuleDescribe(module, nullptr, &json);
  if (error)
    takeError(error);
  else
    CHECK(json && json[0] == '{');
  gptqModuleFree(module);
}

std::string gSmallPath;

/// A handle's life: one freed and then used is refused, as is a null one;
/// one freed while another thread calls it ends that thread's calls
/// cleanly. (A small module of its own: parsing is cheap, compiling not.)
void opLifetime(Reader &r) {
  uint8_t mode = r.u8();
  auto notOpen = [](GptqError *error) {
    CHECK(error != nullptr, "a module that is not open was used");
    std::string message = takeError(error);
    CHECK(message.find("not an open module") != std::string::npos, message);
  };
  GptqModule *module = nullptr;
  GptqError *error = gptqModuleOpen(gSmallPath.c_str(), "", &module);
  if (error)
    fail("the small module does not open", takeError(error));
  if (mode % 2 == 0) {
    gptqModuleFree(module);
    for (GptqModule *stale : {module, static_cast<GptqModule *>(nullptr)}) {
      const char *json = nullptr;
      size_t count = 0;
      double seconds = 0;
      GptqArray *result = nullptr;
      notOpen(gptqModuleDescribe(stale, nullptr, &json));
      notOpen(gptqModuleNumResults(stale, "f", &count));
      notOpen(gptqModuleCompile(stale, "f", &seconds));
      notOpen(gptqModuleCall(stale, "f", nullptr, 0, &result, 1, &count));
      CHECK(json == nullptr && result == nullptr && count == 0);
      gptqModuleFree(stale); // nothing to do
    }
    feedback(kLifetime, 0, nullptr);
    return;
  }
  // Free it while a thread calls it (no compilation: describing, and
  // asking for entries it has not got, hold the module as calls do).
  unsigned calls = 1 + (mode >> 1) % 64;
  std::atomic<bool> started{false};
  std::string broken;
  std::thread caller([&] {
    bool freed = false;
    for (unsigned i = 0; i < calls || !freed; ++i) {
      const char *json = nullptr;
      size_t count = 0;
      GptqError *e = i % 2 ? gptqModuleNumResults(module, "nope", &count)
                           : gptqModuleDescribe(module, nullptr, &json);
      started = true;
      if (!e) {
        if (freed)
          broken = "a call succeeded after the module was freed";
        continue;
      }
      std::string message = gptqErrorMessage(e);
      gptqErrorFree(e);
      if (message.find("not an open module") != std::string::npos)
        freed = true;
      else if (freed || message.find("no function 'nope'") == std::string::npos)
        broken = "a call during the free failed otherwise: " + message;
    }
  });
  while (!started)
    std::this_thread::yield();
  gptqModuleFree(module);
  caller.join();
  CHECK(broken.empty(), broken);
  feedback(kLifetime, 1, nullptr);
}

void removeModuleDir() {
  std::remove(gModulePath.c_str());
  std::remove((gModuleDir + "/fuzzed.mlir").c_str());
  std::remove((gModuleDir + "/cut.mlir").c_str());
  std::remove(gFifoPath.c_str());
  std::remove(gSmallPath.c_str());
  rmdir(gModuleDir.c_str());
}

//===----------------------------------------------------------------------===//
// The seeds
//===----------------------------------------------------------------------===//

/// The seed corpus: each file a few operations spelled as the decoder
/// above reads them.
void writeSeeds(const std::string &dir) {
  using Bytes = std::vector<uint8_t>;
  auto cat = [](std::initializer_list<Bytes> parts) {
    Bytes all;
    for (const Bytes &p : parts)
      all.insert(all.end(), p.begin(), p.end());
    return all;
  };
  // A template call: entry, per input its dynamic sizes then its fill (or
  // a scalar's value byte), mutations, flags.
  auto call = [](uint8_t entry, Bytes inputs, Bytes mutations = {},
                 uint8_t flags = 0) {
    Bytes b = {kCallTemplate, entry};
    b.insert(b.end(), inputs.begin(), inputs.end());
    b.push_back(uint8_t(mutations.size() / 3));
    b.insert(b.end(), mutations.begin(), mutations.end());
    b.push_back(flags);
    return b;
  };
  const uint8_t smallInts = Arg::SmallInts | (5 << 2), random = Arg::Random;
  std::vector<std::pair<std::string, Bytes>> seeds = {
      {"matmul", call(kMatmul, {3, smallInts, smallInts})},
      {"matmul-random", call(kMatmul, {5, random, random})},
      {"matmul-empty-batch", call(kMatmul, {0, smallInts, smallInts})},
      {"scale", call(kScale, {2, 3, random, 7})},
      {"scale-extremes", call(kScale, {4, 1, random, 23})},
      {"widen", call(kWiden, {4, random, 3, random, random, 5, smallInts})},
      {"dequant",
       cat({{kCallTemplate, kDequant},
            {2, 4, smallInts, 2, 1, smallInts, 2, 1, Arg::Zeros, 4, Arg::Zeros},
            {0, 0}})},
      {"dequant-bad-gidx", call(kDequant, {2, 4, random, 2, 2, random, 2, 2,
                                           random, 4, random})},
      {"store", call(kStore, {smallInts, 1, 3, random})},
      {"store-out-of-range", call(kStore, {smallInts, 3, 3, random})},
      {"alloc", call(kAlloc, {8})},
      {"alloc-huge", call(kAlloc, {23})},
      {"alloc-negative", call(kAlloc, {30})},
      {"clear", call(kClear, {6, random})},
      {"unknown-entries",
       cat({call(7, {3, smallInts, smallInts}), call(8, {2, 2, random, 3}),
            call(9, {1, random, 1, random, random, 1, random}),
            call(10, {1, 1, random, 1, 1, random, 1, 1, random, 1, 0}),
            call(11, {smallInts, 0, 1, random}), call(12, {1}),
            call(13, {2, random}), call(14, {1, random, random}),
            call(15, {1, 1, random, 2})})},
      {"wrong-dtype", call(kMatmul, {3, random, random}, {1, 0, GPTQ_INT32})},
      {"wrong-rank", call(kMatmul, {3, random, random}, {0, 1, 3})},
      {"negative-size", call(kMatmul, {3, random, random}, {0, 2, 28})},
      {"overflowing-sizes",
       call(kScale, {2, 2, random, 1}, {0, 2, 23, 0, 2, 32 + 23})},
      {"null-data", call(kMatmul, {3, random, random}, {1, 3, 0})},
      {"null-shape", call(kMatmul, {3, random, random}, {0, 4, 0})},
      {"extra-argument", call(kMatmul, {3, random, random}, {2, 0, 0})},
      {"missing-argument", call(kMatmul, {3, random, random}, {3, 0, 0})},
      {"no-room", call(kMatmul, {3, random, random}, {}, 3)},
      {"null-results", call(kMatmul, {3, random, random}, {}, 13 << 2)},
      {"null-count", call(kMatmul, {3, random, random}, {}, 14 << 2)},
      {"null-args", call(kMatmul, {3, random, random}, {}, 15 << 2)},
      {"raw",
       {kCallRaw, kMatmul, 2, GPTQ_FLOAT32, 2, 0, 3, 4, GPTQ_FLOAT32, 2,
        Arg::Random << 3, 4, 3, 0}},
      {"raw-invalid",
       {kCallRaw, kScale, 3, 200, 2, 0, 1, 1, GPTQ_INT64, 6, 0, 1, 1, 1, 1, 1,
        1, 1, 1, GPTQ_INT64, 0, 0, 5, 0}},
      {"describe",
       {kDescribe, 0, 1, kDescribe, kStore, 0, kDescribe, 9, 0, kDescribe, 0,
        15}},
      {"num-results",
       {kNumResults, kWiden, 0, kNumResults, kClear, 0, kNumResults, 7, 0,
        kNumResults, 0, 15}},
      {"compile", {kCompile, kDequant, 0, kCompile, 9, 1, kCompile, 7, 0}},
      {"held",
       cat({call(kWiden, {1, random, 1, random, random, 1, random}),
            {kFreeHeld, 2, kFreeHeld, 0}, call(kMatmul, {1, random, random}),
            {kKnown, kFreeHeld, 1}})},
      {"concurrent", {kConcurrent, kConcurrent}},
      {"null-functions", {kFreeHeld, 0}},
      // One open (or handle's life) per input: an input's later ones are
      // skipped.
      {"freed-handle", {kLifetime, 0}},
      {"free-while-called", {kLifetime, 1}},
      {"free-while-called-40", {kLifetime, 2 * 40 + 1}},
      {"open-text-head", cat({{kOpen, 0, 2, 0}, Bytes(kModule, kModule + 32)})},
      {"open-text-bad",
       cat({{kOpen, 1, 0, 15},
            Bytes({'f', 'u', 'n', 'c', '.', 'f', 'u', 'n', 'c', ' ', '@', 'f',
                   '(', ' ', '{'})})},
      {"open-null-path", {kOpen, 4}},
      {"open-null-result", {kOpen, 5}},
      {"open-empty-path", {kOpen, 6}},
      {"open-missing", {kOpen, 7}},
      {"open-directory", {kOpen, 8}},
      {"open-dev-null", {kOpen, 20}},
      {"open-dev-zero", {kOpen, 44}},
      {"open-fifo", {kOpen, 56}},
      {"open-module", {kOpen, 9}},
      {"open-cut", {kOpen, 10, 0x40, 0x01}},
      {"open-cut-short", {kOpen, 11, 0x00, 0x05}},
  };
  for (const auto &[name, bytes] : seeds) {
    std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(bytes.data()),
              std::streamsize(bytes.size()));
    if (!out)
      fail("cannot write the seed", dir + "/" + name);
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") +
                        "/gptq-fuzz-capi-XXXXXX";
  if (!mkdtemp(pattern.data()))
    fail("cannot make a temporary directory", pattern);
  gModuleDir = pattern;
  gModulePath = gModuleDir + "/m.mlir";
  gFifoPath = gModuleDir + "/fifo";
  gSmallPath = gModuleDir + "/small.mlir";
  std::atexit(removeModuleDir);
  gVerbose = std::getenv("GPTQ_FUZZ_CAPI_VERBOSE") != nullptr;
  if (const char *seeds = std::getenv("GPTQ_FUZZ_CAPI_SEEDS")) {
    writeSeeds(seeds);
    std::exit(0);
  }
  std::ofstream(gModulePath) << kModule;
  std::ofstream(gSmallPath)
      << "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
         "  return %a : tensor<2xf32>\n}\n";
  if (mkfifo(gFifoPath.c_str(), 0600) != 0)
    fail("cannot make a FIFO", gFifoPath);
  // No compile cache: the module's path (a new directory each run) is in
  // its locations, so each run's code would be a new cache entry; the
  // entries compile in about a second.
  GptqError *error = gptqModuleOpen(gModulePath.c_str(), "", &gModule);
  if (error)
    fail("the module does not open", gptqErrorMessage(error));
  for (const Entry &e : entries()) {
    error = gptqModuleCompile(gModule, e.name, nullptr);
    if (error)
      fail("an entry does not compile", gptqErrorMessage(error));
  }
  knownCall();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!gHaveFuzzerAbort)
    gHaveFuzzerAbort = sigaction(SIGABRT, nullptr, &gFuzzerAbort) == 0;
  Reader r(data, size);
  // At most one open per input: each costs as much as a hundred calls.
  bool opened = false;
  for (unsigned ops = 0; !r.done() && ops < 64; ++ops) {
    Op op = opOf(r.u8());
    if (op == kOpen || op == kLifetime) {
      if (opened)
        continue;
      opened = true;
    }
    switch (op) {
    case kCallTemplate:
      opCall(r, /*raw=*/false);
      break;
    case kCallRaw:
      opCall(r, /*raw=*/true);
      break;
    case kDescribe:
      opDescribe(r);
      break;
    case kNumResults:
      opNumResults(r);
      break;
    case kCompile:
      opCompile(r);
      break;
    case kFreeHeld:
      opFreeHeld(r);
      break;
    case kKnown:
      knownCall();
      break;
    case kOpen:
      opOpen(r);
      break;
    case kConcurrent:
      opConcurrent();
      break;
    case kLifetime:
      opLifetime(r);
      break;
    case kNumOps:
      break;
    }
  }
  // Nothing carries over to the next input.
  while (!gHeld.empty())
    freeHeld(gHeld.size() - 1);
  return 0;
}
