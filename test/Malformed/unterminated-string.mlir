// RUN: not gptq-opt %s 2>&1 | FileCheck %s

// A string literal without its closing quote.

// CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: expected '"' in string literal
func.func @f() attributes {name = "gptq
