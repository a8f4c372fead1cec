//===- GraphProto.h - ir::Graph <-> strata.pb.Graph -----------------------===//
//
// Lossless conversion between the in-memory IR and its protobuf form. The
// proto names ops by their text name and values by index (inputs, then node
// results in order); reading it back checks every name, index and type.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "proto/strata.pb.h"

#include "llvm/Support/Error.h"

namespace strata {

/// Serializes `g` into a proto.
pb::Graph graphToProto(const Graph &g);

/// Rebuilds a graph. Errors name the node or value at fault: unknown op or
/// dtype, operand index out of range or not yet defined, duplicate names,
/// attributes without a value. Result types are taken as written; run the
/// verifier to check them against shape inference.
llvm::Expected<Graph> graphFromProto(const pb::Graph &p);

/// Sharding conversions (also used by the Plan's binding tables).
pb::Sharding shardingToProto(const Sharding &s);
Sharding shardingFromProto(const pb::Sharding &p);

/// Mesh conversions (also used by the Plan). Axis names must be unique and
/// sizes positive.
pb::Mesh meshToProto(const Mesh &m);
llvm::Expected<Mesh> meshFromProto(const pb::Mesh &p);

} // namespace strata
