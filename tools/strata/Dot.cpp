//===- Dot.cpp - Graphviz rendering of a graph ----------------------------===//
#include "tools/strata/Dot.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace strata {

namespace {

/// "layers.3" for a scope or parameter name inside layer 3, else "".
llvm::StringRef layerOf(llvm::StringRef name) {
  if (!name.startswith("layers."))
    return "";
  size_t dot = name.find('.', strlen("layers."));
  return name.substr(0, dot);
}

std::string escape(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

} // namespace

void printGraphDot(llvm::raw_ostream &os, const Graph &g) {
  // Statements per cluster ("" = top level), clusters in first-seen order.
  llvm::MapVector<llvm::StringRef, std::vector<std::string>> clusters;
  clusters[""];
  std::vector<std::string> defOf(
      g.numValues()); // dot id of each value's source

  for (ValueId v : g.inputs()) {
    const Value &val = g.value(v);
    defOf[v] = "v" + std::to_string(v);
    clusters[layerOf(val.name)].push_back(
        defOf[v] + " [shape=ellipse, label=\"" + escape(val.name) + "\\n" +
        val.type.str() + "\"];");
  }
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    const Node &node = g.node(n);
    std::string id = "n" + std::to_string(n);
    std::string label = escape(opName(node.op));
    for (ValueId r : node.results) {
      defOf[r] = id;
      label += "\\n" + g.type(r).str();
    }
    clusters[layerOf(node.scope)].push_back(id + " [shape=box, label=\"" +
                                            label + "\", tooltip=\"" +
                                            escape(node.scope) + "\"];");
  }

  os << "digraph \"" << escape(g.name) << "\" {\n";
  os << "  node [fontname=\"Helvetica\", fontsize=10];\n";
  for (auto &[layer, stmts] : clusters) {
    std::string indent = layer.empty() ? "  " : "    ";
    if (!layer.empty()) {
      std::string id = layer.str();
      std::replace(id.begin(), id.end(), '.', '_');
      os << "  subgraph cluster_" << id << " {\n    label=\"" << layer
         << "\";\n";
    }
    for (const std::string &s : stmts)
      os << indent << s << '\n';
    if (!layer.empty())
      os << "  }\n";
  }
  for (size_t n = 0; n < g.nodes().size(); ++n)
    for (ValueId o : g.node(n).operands)
      os << "  " << defOf[o] << " -> n" << n << ";\n";
  for (ValueId v : g.outputs())
    os << "  " << defOf[v] << " -> out" << v << ";\n  out" << v
       << " [shape=doublecircle, label=\"" << escape(g.value(v).name)
       << "\"];\n";
  os << "}\n";
}

} // namespace strata
