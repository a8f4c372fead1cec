//===- ShardingUtil.h - Small helpers on shardings for the SPMD passes
//-----===//
//
// A sharding's `dims[d]` lists the mesh axes splitting dim d, major to minor:
// the shard index of a rank along dim d is its coordinate over those axes read
// as one mixed-radix number (first axis most significant). Collectives and
// rank-dependent ops over a list of axes use the same order.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Sharding.h"
#include "ir/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace strata::spmd {

/// The axes splitting one dim, major to minor.
using DimAxes = llvm::SmallVector<std::string, 1>;
/// Per-dim axes of a sharding (Sharding::dims).
using Dims = llvm::SmallVector<DimAxes, 4>;

/// Product of the sizes of `axes` on `mesh`.
int64_t groupSize(const Mesh &mesh, llvm::ArrayRef<std::string> axes);

/// The shard type of `global` under `s`: each split dim divided by its ways.
TensorType localType(const TensorType &global, const Sharding &s,
                     const Mesh &mesh);

/// A sharding with the given dims and no partial axes.
Sharding makeSharding(Dims dims);

/// Whether `axis` splits some dim of `dims`.
bool usesAxis(llvm::ArrayRef<DimAxes> dims, llvm::StringRef axis);

/// `dims` with every axis of size 1 on `mesh` removed (likewise `partial`).
Sharding dropTrivialAxes(const Sharding &s, const Mesh &mesh);

/// `tp`, `dp,tp`: for messages and provenance.
std::string axesStr(llvm::ArrayRef<std::string> axes);
/// `[dp,_,tp] partial=[tp]`: for messages.
std::string shardingStr(const Sharding &s);

} // namespace strata::spmd
