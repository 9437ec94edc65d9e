// RUN: gptq-opt %s --gptq-serialize-lone-iterations | FileCheck %s

// A worksharing loop's iteration count (each dimension's, inclusive or
// not, none below zero) decides the team: more than one forks it, one or
// none runs on the calling thread.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[LB:.*]]: index, %[[UB:.*]]: index, %[[S:.*]]: index, %[[N:.*]]: index)
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[SPAN:.*]] = arith.subi %[[UB]], %[[LB]] : index
// CHECK: %[[C:.*]] = arith.ceildivsi %[[SPAN]], %[[S]] : index
// CHECK: %[[M:.*]] = arith.maxsi %[[C]], %[[ZERO]]
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[MANY:.*]] = arith.cmpi sgt, %[[M]], %[[ONE]] : index
// CHECK: omp.parallel if(%[[MANY]])
// CHECK: %[[ONE2:.*]] = arith.constant 1 : index
// CHECK: %[[END0:.*]] = arith.addi %[[UB]], %[[ONE2]] : index
// CHECK: %[[SPAN0:.*]] = arith.subi %[[END0]], %[[LB]] : index
// CHECK: arith.ceildivsi %[[SPAN0]], %[[S]] : index
// CHECK: %[[T0:.*]] = arith.maxsi
// CHECK: %[[END1:.*]] = arith.addi %[[N]], %[[ONE2]] : index
// CHECK: %[[SPAN1:.*]] = arith.subi %[[END1]], %[[LB]] : index
// CHECK: arith.ceildivsi %[[SPAN1]], %[[S]] : index
// CHECK: %[[T1:.*]] = arith.maxsi
// CHECK: %[[T:.*]] = arith.muli %[[T0]], %[[T1]] : index
// CHECK: %[[ONE3:.*]] = arith.constant 1 : index
// CHECK: %[[MANY2:.*]] = arith.cmpi sgt, %[[T]], %[[ONE3]] : index
// CHECK: omp.parallel if(%[[MANY2]])
func.func @loop(%lb: index, %ub: index, %s: index, %n: index) {
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%lb) to (%ub) step (%s) {
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i, %j) : index = (%lb, %lb) to (%ub, %n) inclusive step (%s, %s) {
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// Regions of other shapes, and those that already have a clause, stay.
// CHECK-LABEL: func.func @others
// CHECK-NOT: arith.cmpi
// CHECK: omp.parallel {
// CHECK: omp.parallel if(%{{.*}})
// CHECK: omp.parallel {
func.func @others(%lb: index, %ub: index, %s: index, %c: i1) {
  omp.parallel {
    %x = arith.addi %ub, %ub : index
    omp.wsloop {
      omp.loop_nest (%i) : index = (%lb) to (%x) step (%s) {
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel if(%c) {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%lb) to (%ub) step (%s) {
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel {
    omp.barrier
    omp.terminator
  }
  return
}
