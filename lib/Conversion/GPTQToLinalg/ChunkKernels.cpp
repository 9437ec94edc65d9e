//===- ChunkKernels.cpp - Packed-code steps of the rows kernel ------------===//
//
// The inner step of KernelsCPU.mlir's __gptq_matmul_rows_qk for each width
// of 2 to 7 bits, written out here because its shifts, masks and lane
// shuffles are constants of the width: unrolled over a chunk's 32 columns,
// every code of a lane is one shift and mask of a register (two shifts and
// an or where it straddles two words), with no loop, table or memory
// access between the words' loads and the FMAs.
//
//===----------------------------------------------------------------------===//

#include "ChunkKernels.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <cstdint>

using namespace mlir;

namespace {

constexpr unsigned kLanes = 16;
constexpr unsigned kLaneColumns = 32;
constexpr unsigned kRows = 4;

/// The arguments of a kernel after %bits, and their types.
constexpr const char kArguments[] =
    "%xp, %mm, %ch, %qw, %row0, %row1, %row2, %row3, %xsum, %s0, %s1, %s2, "
    "%s3, %z0, %z1, %z2, %z3, %u0, %u1, %u2, %u3";
constexpr const char kArgumentTypes[] =
    "tensor<?x?x32x16xf32>, index, index, tensor<?x?xi32>, index, index, "
    "index, index, vector<16xf32>, vector<16xf32>, vector<16xf32>, "
    "vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, "
    "vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, "
    "vector<16xf32>, vector<16xf32>";
constexpr const char kResultTypes[] =
    "vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>";

/// Writes the first line of a kernel or of the dispatcher, `@<prefix><name>`
/// with the kernels' arguments after `leading`.
void emitKernelHeader(llvm::raw_ostream &os, StringRef name,
                      StringRef leading) {
  SmallVector<StringRef> names, types;
  StringRef(kArguments).split(names, ", ");
  StringRef(kArgumentTypes).split(types, ", ");
  assert(names.size() == types.size() && "an argument without its type");
  os << "func.func private @" << gptq::kChunkKernelPrefix << name << "("
     << leading;
  for (auto [i, argument] : llvm::enumerate(names))
    os << (i ? ", " : "") << argument << ": " << types[i];
  os << ") -> (" << kResultTypes << ") {\n";
}

/// Writes __gptq_chunk_b<bits>: see the header.
void emitChunkKernel(llvm::raw_ostream &os, unsigned bits) {
  unsigned words = kLanes * bits; // a chunk's words in one row
  os << llvm::formatv(
      "// The {0}-bit codes of chunk %ch (its {1} words in each of four rows;\n"
      "// lane i: columns 32 i .. 32 i + 31, words {0} i .. {0} i + {2}) times\n"
      "// the activations %xp[%mm, %ch], each lane's sum P dequantized with its\n"
      "// scale and zero (%s and %z of its row) and the sum of its activations\n"
      "// %xsum, s * (P - z * xsum), and added to %u0 .. %u3.\n",
      bits, words, bits - 1);
  emitKernelHeader(os, llvm::formatv("b{0}", bits).str(), "");
  os << "  %c0 = arith.constant 0 : index\n"
     << "  %zw = arith.constant 0 : i32\n"
     << "  %zero = arith.constant 0.0 : f32\n"
     << "  %zv = arith.constant dense<0.0> : vector<16xf32>\n"

     << "  %chunkwords = arith.constant " << words << " : index\n"
     << "  %base = arith.muli %ch, %chunkwords : index\n";
  for (unsigned shift = 1; shift < 32; ++shift)
    os << "  %sh" << shift << " = arith.constant dense<" << shift
       << "> : vector<16xi32>\n";
  // %mask<o>: a code's bits at bit o of a word.
  for (unsigned offset = 0; offset + bits <= 32; ++offset)
    os << "  %mask" << offset << " = arith.constant dense<"
       << static_cast<int32_t>(((1u << bits) - 1) << offset)
       << "> : vector<16xi32>\n";
  // The chunk's words of each row, as stored: vector j holds words
  // 16 j .. 16 j + 15 (zero past the row's end).
  for (unsigned j = 0; j < bits; ++j)
    os << "  %off" << j << " = arith.constant " << kLanes * j
       << " : index\n  %w" << j << " = arith.addi %base, %off" << j
       << " : index\n";
  for (unsigned r = 0; r < kRows; ++r)
    for (unsigned j = 0; j < bits; ++j)
      os << "  %v" << r << "_" << j << " = vector.transfer_read %qw[%row" << r
         << ", %w" << j << "], %zw : tensor<?x?xi32>, vector<16xi32>\n";
  // Lane i's words: d_j[i] = word bits * i + j of the chunk, gathered from
  // the stored vectors by shuffles (the first two, then one more each).
  std::string lanes[kRows][8];
  for (unsigned r = 0; r < kRows; ++r) {
    for (unsigned j = 0; j < bits; ++j) {
      unsigned last = (bits * (kLanes - 1) + j) / kLanes;
      std::string prev;
      for (unsigned src = 1; src <= last; ++src) {
        std::string name = llvm::formatv("%d{0}_{1}_{2}", r, j, src).str();
        os << "  " << name << " = vector.shuffle "
           << (src == 1 ? llvm::formatv("%v{0}_0", r).str() : prev) << ", %v"
           << r << "_" << src << " [";
        for (unsigned i = 0; i < kLanes; ++i) {
          unsigned e = bits * i + j, from = e / kLanes, lane = e % kLanes;
          unsigned pick;
          if (from == src)
            pick = kLanes + lane;
          else if (src == 1)
            pick = from == 0 ? lane : 0;
          else
            pick = i;
          os << (i ? ", " : "") << pick;
        }
        os << "] : vector<16xi32>, vector<16xi32>\n";
        prev = name;
      }
      lanes[r][j] = prev;
    }
  }
  // Column t of every lane, for t = 0 .. 31: its code at bit bits * t of
  // the lane's words.
  std::string acc[kRows];
  for (unsigned r = 0; r < kRows; ++r)
    acc[r] = "%zv";
  for (unsigned t = 0; t < kLaneColumns; ++t) {
    os << "  %ct" << t << " = arith.constant " << t << " : index\n"
       << "  %x" << t << " = vector.transfer_read %xp[%mm, %ch, %ct" << t
       << ", %c0], %zero {in_bounds = [true]} : tensor<?x?x32x16xf32>, "
          "vector<16xf32>\n";
    unsigned bit = bits * t, word = bit / 32, offset = bit % 32;
    for (unsigned r = 0; r < kRows; ++r) {
      std::string at = llvm::formatv("{0}_{1}", r, t).str();
      std::string code = lanes[r][word];
      if (offset + bits <= 32) {
        // Masked in place: code * 2^offset, which the column's activations
        // (scaled by 2^-offset) take back exactly.
        os << "  %q" << at << " = arith.andi " << code << ", %mask" << offset
           << " : vector<16xi32>\n";
      } else {
        // Straddling two words: shifted down and joined with the next.
        os << "  %lo" << at << " = arith.shrui " << code << ", %sh" << offset
           << " : vector<16xi32>\n"
           << "  %hi" << at << " = arith.shli " << lanes[r][word + 1]
           << ", %sh" << 32 - offset << " : vector<16xi32>\n"
           << "  %both" << at << " = arith.ori %lo" << at << ", %hi" << at
           << " : vector<16xi32>\n"
           << "  %q" << at << " = arith.andi %both" << at
           << ", %mask0 : vector<16xi32>\n";
      }
      code = "%q" + at;
      os << "  %f" << at << " = arith.uitofp " << code
         << " : vector<16xi32> to vector<16xf32>\n"
         << "  %a" << at << " = math.fma %x" << t << ", %f" << at << ", "
         << acc[r] << " : vector<16xf32>\n";
      acc[r] = "%a" + at;
    }
  }
  // s * (P - z * xsum) + u, each row.
  for (unsigned r = 0; r < kRows; ++r)
    os << "  %zx" << r << " = arith.mulf %z" << r
       << ", %xsum : vector<16xf32>\n"
       << "  %centred" << r << " = arith.subf " << acc[r] << ", %zx" << r
       << " : vector<16xf32>\n"
       << "  %out" << r << " = math.fma %s" << r << ", %centred" << r
       << ", %u" << r << " : vector<16xf32>\n";
  os << "  return %out0, %out1, %out2, %out3 : vector<16xf32>, "
        "vector<16xf32>, vector<16xf32>, vector<16xf32>\n}\n\n";
}

/// Writes __gptq_chunk_widths and __gptq_chunk_step for `widths`.
void emitDispatch(llvm::raw_ostream &os, ArrayRef<unsigned> widths) {
  os << "// Whether a chunk kernel of width %bits is written out.\n"
     << "func.func private @" << gptq::kChunkKernelPrefix
     << "widths(%bits: i64) -> i1 {\n"
     << "  %no = arith.constant false\n";
  std::string any = "%no";
  for (unsigned width : widths) {
    os << "  %w" << width << " = arith.constant " << width << " : i64\n"
       << "  %is" << width << " = arith.cmpi eq, %bits, %w" << width
       << " : i64\n"
       << "  %any" << width << " = arith.ori " << any << ", %is" << width
       << " : i1\n";
    any = llvm::formatv("%any{0}", width).str();
  }
  os << "  return " << any << " : i1\n}\n\n";
  os << "// The chunk kernel of width %bits (one of __gptq_chunk_widths').\n";
  emitKernelHeader(os, "step", "%bits: i64, ");
  os << "  %width = arith.index_cast %bits : i64 to index\n"
     << "  %r:4 = scf.index_switch %width -> " << kResultTypes << "\n";
  for (unsigned width : widths)
    os << "  case " << width << " {\n"
       << "    %v:4 = func.call @" << gptq::kChunkKernelPrefix << "b" << width
       << "(" << kArguments << ") : (" << kArgumentTypes << ") -> ("
       << kResultTypes << ")\n"
       << "    scf.yield %v#0, %v#1, %v#2, %v#3 : " << kResultTypes << "\n"
       << "  }\n";
  os << "  default {\n"
     << "    scf.yield %u0, %u1, %u2, %u3 : " << kResultTypes << "\n"
     << "  }\n"
     << "  return %r#0, %r#1, %r#2, %r#3 : " << kResultTypes << "\n}\n\n";
}

} // namespace

std::string gptq::chunkKernelsSource(ArrayRef<unsigned> widths) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// Generated by ChunkKernels.cpp.\n";
  for (unsigned bits : widths) {
    assert(bits >= kChunkKernelMinBits && bits <= kChunkKernelMaxBits &&
           "no chunk kernel of that width");
    emitChunkKernel(os, bits);
  }
  emitDispatch(os, widths);
  return text;
}
