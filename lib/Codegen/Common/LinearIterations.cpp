//===- LinearIterations.cpp - A loop nest's iterations as one range -------===//

#include "gptq/Codegen/Common/LinearIterations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

SmallVector<Value> gptq::delinearizeIterations(OpBuilder &b, Location loc,
                                               Value linear,
                                               ArrayRef<Value> counts,
                                               ValueRange lowerBounds,
                                               ValueRange steps) {
  unsigned rank = counts.size();
  SmallVector<Value> ivs(rank);
  Value rest = linear;
  for (unsigned d = rank; d-- > 0;) {
    Value index = rest;
    if (d > 0) {
      index = arith::RemUIOp::create(b, loc, rest, counts[d]);
      rest = arith::DivUIOp::create(b, loc, rest, counts[d]);
    }
    Value scaled = arith::MulIOp::create(b, loc, index, steps[d]);
    ivs[d] = arith::AddIOp::create(b, loc, lowerBounds[d], scaled);
  }
  return ivs;
}

Value gptq::iterationCount(OpBuilder &b, Location loc, ArrayRef<Value> counts) {
  Value total = counts.front();
  for (Value count : counts.drop_front())
    total = arith::MulIOp::create(b, loc, total, count);
  return total;
}
