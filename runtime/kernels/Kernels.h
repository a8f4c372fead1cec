//===- Kernels.h - Umbrella header of the CPU kernel library
//---------------===//
//
// strata::kernels: pure compute functions on raw, contiguous, row-major
// buffers, templated on T = float or double (both explicitly instantiated).
// They know nothing of the IR; the CPU runtime maps each op onto one call.
// Conventions: outputs are overwritten unless a comment says ACCUMULATES;
// shapes are in `// x is (N, C)` comments; threading via Parallel.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/kernels/AdamW.h"
#include "runtime/kernels/Attention.h"
#include "runtime/kernels/Elementwise.h"
#include "runtime/kernels/Embedding.h"
#include "runtime/kernels/Float16.h"
#include "runtime/kernels/Layout.h"
#include "runtime/kernels/MatMul.h"
#include "runtime/kernels/Norms.h"
#include "runtime/kernels/Parallel.h"
#include "runtime/kernels/Philox.h"
#include "runtime/kernels/Reduce.h"
#include "runtime/kernels/Rope.h"
#include "runtime/kernels/Softmax.h"
#include "runtime/kernels/VocabParallel.h"
