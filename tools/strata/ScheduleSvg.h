//===- ScheduleSvg.h - Pipeline schedule timelines as SVG
//------------------===//
//
// Draws a schedule like the figures of the Megatron-LM papers (Narayanan et
// al. 2021): one row per pipeline rank, time to the right, a box per forward
// (blue) and backward (green) program labelled with its microbatch (lighter
// and darker shades for the chunks of an interleaved schedule), the
// optimizer step (red), grey idle time (the bubble), and a thin line per
// message from the end of the sending program to the start of the receiving
// one. Times come from simulate() with the papers' unit costs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/Schedule.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace strata {

/// Writes the SVG of `s` laid out by `t`, with a two-line `title`.
void writeScheduleSvg(llvm::raw_ostream &os, const Schedule &s,
                      const Timeline &t, llvm::StringRef title,
                      llvm::StringRef subtitle);

} // namespace strata
