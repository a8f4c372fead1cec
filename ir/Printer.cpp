//===- Printer.cpp - IR text printer
//---------------------------------------===//
//
// Prints the canonical text of a graph (grammar in ir/IRText.h). The output
// depends only on the graph, so print -> parse -> print is the identity. The
// inputs go on the header line while it stays within kMaxHeaderWidth columns,
// otherwise one per line.
//
//===----------------------------------------------------------------------===//
#include "ir/IRText.h"

namespace strata {

namespace {

constexpr size_t kMaxHeaderWidth = 120;

void printAttrs(llvm::raw_ostream &os, const Attrs &attrs, bool bareTrue) {
  bool first = true;
  for (const auto &[name, value] : attrs) {
    os << (first ? "" : ", ") << name;
    first = false;
    const bool *b = std::get_if<bool>(&value);
    if (bareTrue && b && *b)
      continue;
    os << '=';
    printAttrValue(os, value);
  }
}

// `%x: f32[8,64] {param, init="normal", shard=[dp,_]}`.
std::string inputText(const Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '%' << v.name << ": " << v.type;
  if (v.attrs.empty() && !v.sharding)
    return s;
  os << " {";
  printAttrs(os, v.attrs, /*bareTrue=*/true);
  if (v.sharding) {
    if (!v.attrs.empty())
      os << ", ";
    printSharding(os, *v.sharding);
  }
  os << '}';
  return s;
}

void printReturn(llvm::raw_ostream &os, const Graph &g,
                 llvm::StringRef indent) {
  os << indent << "return";
  for (size_t i = 0; i < g.outputs().size(); ++i)
    os << (i ? ", %" : " %") << g.value(g.outputs()[i]).name;
  os << '\n';
}

// One node per line; a fused node's body follows in braces, indented, with
// the node's scope after the opening brace.
void printNode(llvm::raw_ostream &os, const Graph &g, const Node &n,
               llvm::StringRef indent) {
  os << indent;
  for (size_t i = 0; i < n.results.size(); ++i)
    os << (i ? ", %" : "%") << g.value(n.results[i]).name;
  if (!n.results.empty())
    os << " = ";
  os << opName(n.op) << '(';
  for (size_t i = 0; i < n.operands.size(); ++i)
    os << (i ? ", %" : "%") << g.value(n.operands[i]).name;
  os << ')';
  if (!n.attrs.empty()) {
    os << " {";
    printAttrs(os, n.attrs, /*bareTrue=*/false);
    os << '}';
  }
  for (size_t i = 0; i < n.results.size(); ++i) {
    const Value &r = g.value(n.results[i]);
    os << (i ? ", " : " : ") << r.type;
    if (r.sharding) {
      os << " {";
      printSharding(os, *r.sharding);
      os << '}';
    }
  }
  if (n.body)
    os << " {";
  if (!n.scope.empty())
    os << "  # " << n.scope;
  os << '\n';
  if (!n.body)
    return;
  std::string inner = indent.str() + "  ";
  for (const Node &m : n.body->nodes())
    printNode(os, *n.body, m, inner);
  printReturn(os, *n.body, inner);
  os << indent << "}\n";
}

} // namespace

void printGraph(llvm::raw_ostream &os, const Graph &g) {
  std::string head;
  llvm::raw_string_ostream hs(head);
  hs << "graph @" << g.name;
  if (g.mesh) {
    hs << ' ';
    printMesh(hs, *g.mesh);
  }
  if (g.partitioned)
    hs << " partitioned";
  hs << '(';
  llvm::SmallVector<std::string> inputs;
  size_t width = head.size() + 3; // + ") {"
  for (ValueId v : g.inputs()) {
    inputs.push_back(inputText(g.value(v)));
    width += inputs.back().size() + 2;
  }
  bool oneLine = width <= kMaxHeaderWidth;
  os << head;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i)
      os << ',';
    if (!oneLine)
      os << "\n    ";
    else if (i)
      os << ' ';
    os << inputs[i];
  }
  os << ") {\n";
  for (const Node &n : g.nodes())
    printNode(os, g, n, "  ");
  printReturn(os, g, "  ");
  os << "}\n";
}

std::string graphToString(const Graph &g) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printGraph(os, g);
  return s;
}

} // namespace strata
