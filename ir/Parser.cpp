//===- Parser.cpp - IR text parser
//-----------------------------------------===//
//
// A recursive-descent parser for the grammar in ir/IRText.h. It stops at the
// first error. Syntax errors read `expected X (got Y)`; semantic errors name
// the input or node (`%h = matmul: ...`). A parsed graph satisfies the
// verifier: names are defined before use and unique, result types match
// shape inference and shardings fit their types and the mesh.
//
//===----------------------------------------------------------------------===//
#include "ir/IRLexer.h"
#include "ir/IRText.h"
#include "ir/Verifier.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdlib>

namespace strata {

namespace {

class Parser {
public:
  Parser(llvm::StringRef text, llvm::StringRef bufferName)
      : text_(text), bufferName_(bufferName), lex_(text) {
    consume();
  }
  llvm::Expected<Graph> parseFile();

private:
  void consume() { tok_ = lex_.next(); }
  bool consumeIf(TokKind k) {
    if (!tok_.is(k))
      return false;
    consume();
    return true;
  }
  bool atIdent(llvm::StringRef word) const {
    return tok_.is(TokKind::Ident) && tok_.text == word;
  }

  llvm::Error errorAt(const char *loc, const llvm::Twine &msg) const;
  /// `expected <what> (got <token>)` at the current token.
  llvm::Error expected(const llvm::Twine &what) const;
  llvm::Error expect(TokKind k, llvm::StringRef spelling);
  llvm::Expected<Token> expectToken(TokKind k, const llvm::Twine &what);

  llvm::Error parseHeader();
  llvm::Error parseMesh();
  llvm::Error parseInput();
  llvm::Expected<TensorType> parseType(llvm::StringRef owner);
  llvm::Expected<int64_t> parseInt(const Token &t) const;
  llvm::Expected<AttrValue> parseAttrValue();
  /// `{k=v, ...}` after an op. The current token is `{`.
  llvm::Error parseAttrDict(Attrs &attrs);
  /// `{param, std=0.02, shard=[..]}` after an input type, or, with
  /// `shardingOnly`, `{shard=[..], partial=[..]}` after a result type.
  llvm::Error parseValueDict(const TensorType &type, Attrs &attrs,
                             std::optional<Sharding> &sharding,
                             bool shardingOnly, llvm::StringRef owner);
  llvm::Expected<std::string> parseAxis(llvm::StringRef owner);
  llvm::Error parseNode();
  /// The body of a fused node: nodes and `return` up to the closing `}`, in
  /// a name scope of its own whose inputs are named after the operands.
  llvm::Expected<std::shared_ptr<Graph>>
  parseBody(llvm::ArrayRef<ValueId> operands,
            llvm::ArrayRef<const char *> operandLocs, llvm::StringRef kernel,
            llvm::StringRef owner);
  /// Whether the `{` at the current token opens a fused body rather than a
  /// result's sharding dictionary.
  bool braceOpensBody() const;
  llvm::Error parseReturn();
  /// Records a new value name; an existing one is an error naming `owner`.
  llvm::Error defineName(const Token &name, llvm::StringRef owner);
  llvm::Expected<ValueId> useName(const Token &name, llvm::StringRef owner);
  const Mesh *mesh() const { return g_.mesh ? &*g_.mesh : nullptr; }

  llvm::StringRef text_;
  llvm::StringRef bufferName_;
  Lexer lex_;
  Token tok_;
  Graph g_;
  llvm::StringMap<const char *> defLoc_; // value name -> where defined
};

std::pair<unsigned, unsigned> lineCol(llvm::StringRef text, const char *loc) {
  size_t off = loc - text.begin();
  llvm::StringRef before = text.take_front(off);
  unsigned line = 1 + before.count('\n');
  size_t lastNl = before.rfind('\n');
  unsigned col = lastNl == llvm::StringRef::npos ? off + 1 : off - lastNl;
  return {line, col};
}

llvm::Error Parser::errorAt(const char *loc, const llvm::Twine &msg) const {
  auto [line, col] = lineCol(text_, loc);
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 bufferName_ + ":" + llvm::Twine(line) + ":" +
                                     llvm::Twine(col) + ": error: " + msg);
}

llvm::Error Parser::expected(const llvm::Twine &what) const {
  if (tok_.is(TokKind::Error))
    return errorAt(tok_.loc, tok_.text);
  return errorAt(tok_.loc,
                 "expected " + what + " (got " + tok_.describe() + ")");
}

llvm::Error Parser::expect(TokKind k, llvm::StringRef spelling) {
  if (consumeIf(k))
    return llvm::Error::success();
  return expected("'" + spelling + "'");
}

llvm::Expected<Token> Parser::expectToken(TokKind k, const llvm::Twine &what) {
  if (!tok_.is(k))
    return expected(what);
  Token t = tok_;
  consume();
  return t;
}

llvm::Expected<int64_t> Parser::parseInt(const Token &t) const {
  int64_t v;
  if (llvm::StringRef(t.text).getAsInteger(10, v))
    return errorAt(t.loc, "integer " + t.text + " is out of range");
  return v;
}

llvm::Error Parser::defineName(const Token &name, llvm::StringRef owner) {
  auto [it, inserted] = defLoc_.try_emplace(name.text, name.loc);
  if (inserted)
    return llvm::Error::success();
  auto [line, col] = lineCol(text_, it->second);
  return errorAt(name.loc, owner + ": redefinition of %" + name.text +
                               " (first defined at " + llvm::Twine(line) + ":" +
                               llvm::Twine(col) + ")");
}

llvm::Expected<ValueId> Parser::useName(const Token &name,
                                        llvm::StringRef owner) {
  ValueId v = g_.lookup(name.text);
  if (v == kNoValue)
    return errorAt(name.loc, owner + ": use of undefined value %" + name.text);
  return v;
}

llvm::Error Parser::parseMesh() {
  consume(); // mesh
  if (auto e = expect(TokKind::Less, "<"))
    return e;
  Mesh m;
  do {
    auto name = expectToken(TokKind::Ident, "mesh axis name");
    if (!name)
      return name.takeError();
    if (m.axisIndex(name->text) >= 0)
      return errorAt(name->loc, "mesh axis '" + name->text + "' appears twice");
    if (auto e = expect(TokKind::Equal, "="))
      return e;
    auto size = expectToken(TokKind::Int, "mesh axis size");
    if (!size)
      return size.takeError();
    auto n = parseInt(*size);
    if (!n)
      return n.takeError();
    if (*n < 1)
      return errorAt(size->loc, "mesh axis '" + name->text +
                                    "' must have size >= 1 (got " + size->text +
                                    ")");
    m.axes.push_back({name->text, *n});
  } while (consumeIf(TokKind::Comma));
  if (auto e = expect(TokKind::Greater, ">"))
    return e;
  g_.mesh = std::move(m);
  return llvm::Error::success();
}

llvm::Error Parser::parseHeader() {
  if (!atIdent("graph"))
    return expected("'graph'");
  consume();
  auto name = expectToken(TokKind::GraphName, "graph name '@name'");
  if (!name)
    return name.takeError();
  g_.name = name->text;
  if (atIdent("mesh"))
    if (auto e = parseMesh())
      return e;
  if (atIdent("partitioned")) {
    consume();
    g_.partitioned = true;
  }
  if (auto e = expect(TokKind::LParen, "("))
    return e;
  if (!tok_.is(TokKind::RParen)) {
    do {
      if (auto e = parseInput())
        return e;
    } while (consumeIf(TokKind::Comma));
  }
  if (auto e = expect(TokKind::RParen, ")"))
    return e;
  return expect(TokKind::LBrace, "{");
}

llvm::Expected<TensorType> Parser::parseType(llvm::StringRef owner) {
  if (!tok_.is(TokKind::Ident))
    return expected("a tensor type like f32[8,64]");
  TensorType t;
  const char *typeLoc = tok_.loc;
  auto dt = parseDType(tok_.text);
  if (!dt)
    return errorAt(tok_.loc,
                   owner + ": unknown dtype '" + tok_.text +
                       "' (expected f32, bf16, f16, f64, i32, i64 or i1)");
  t.dtype = *dt;
  consume();
  if (auto e = expect(TokKind::LBracket, "["))
    return e;
  if (consumeIf(TokKind::RBracket))
    return t;
  do {
    auto dim = expectToken(TokKind::Int, "dimension size");
    if (!dim)
      return dim.takeError();
    auto n = parseInt(*dim);
    if (!n)
      return n.takeError();
    if (*n < 1)
      return errorAt(dim->loc, owner +
                                   ": dimension sizes must be positive (got " +
                                   dim->text + ")");
    t.shape.push_back(*n);
  } while (consumeIf(TokKind::Comma));
  if (auto e = expect(TokKind::RBracket, "]"))
    return e;
  if (!t.isValid())
    return errorAt(typeLoc, owner + ": type " + t.str() +
                                " has more than 2^63 - 1 bytes (element "
                                "counts and sizes must fit in 64 bits)");
  return t;
}

llvm::Expected<AttrValue> Parser::parseAttrValue() {
  Token t = tok_;
  switch (t.kind) {
  case TokKind::Int: {
    consume();
    auto v = parseInt(t);
    if (!v)
      return v.takeError();
    return AttrValue(*v);
  }
  case TokKind::Float:
    consume();
    return AttrValue(std::strtod(t.text.c_str(), nullptr));
  case TokKind::String:
    consume();
    return AttrValue(t.text);
  case TokKind::Ident:
    if (t.text == "true" || t.text == "false") {
      consume();
      return AttrValue(t.text == "true");
    }
    if (t.text == "inf" || t.text == "nan") {
      consume();
      return AttrValue(std::strtod(t.text.c_str(), nullptr));
    }
    break;
  case TokKind::LBracket: {
    consume();
    if (consumeIf(TokKind::RBracket))
      return AttrValue(IntList{});
    if (tok_.is(TokKind::String)) {
      StrList l;
      do {
        auto s = expectToken(TokKind::String, "a string list element");
        if (!s)
          return s.takeError();
        l.push_back(s->text);
      } while (consumeIf(TokKind::Comma));
      if (auto e = expect(TokKind::RBracket, "]"))
        return e;
      return AttrValue(std::move(l));
    }
    IntList l;
    do {
      auto i = expectToken(TokKind::Int, "an integer list element");
      if (!i)
        return i.takeError();
      auto v = parseInt(*i);
      if (!v)
        return v.takeError();
      l.push_back(*v);
    } while (consumeIf(TokKind::Comma));
    if (auto e = expect(TokKind::RBracket, "]"))
      return e;
    return AttrValue(std::move(l));
  }
  default:
    break;
  }
  return expected("an attribute value");
}

llvm::Error Parser::parseAttrDict(Attrs &attrs) {
  consume(); // {
  do {
    auto key = expectToken(TokKind::Ident, "attribute name");
    if (!key)
      return key.takeError();
    if (attrs.has(key->text))
      return errorAt(key->loc, "duplicate attribute '" + key->text + "'");
    if (auto e = expect(TokKind::Equal, "="))
      return e;
    auto v = parseAttrValue();
    if (!v)
      return v.takeError();
    attrs.set(key->text, std::move(*v));
  } while (consumeIf(TokKind::Comma));
  return expect(TokKind::RBrace, "}");
}

llvm::Expected<std::string> Parser::parseAxis(llvm::StringRef owner) {
  auto axis = expectToken(TokKind::Ident, "mesh axis name");
  if (!axis)
    return axis.takeError();
  if (!mesh())
    return errorAt(axis->loc, owner + ": sharding uses mesh axis '" +
                                  axis->text + "' but the graph has no mesh");
  if (mesh()->axisIndex(axis->text) < 0) {
    std::string m;
    llvm::raw_string_ostream os(m);
    printMesh(os, *mesh());
    return errorAt(axis->loc, owner + ": unknown mesh axis '" + axis->text +
                                  "' (the graph has " + m + ")");
  }
  return axis->text;
}

llvm::Error Parser::parseValueDict(const TensorType &type, Attrs &attrs,
                                   std::optional<Sharding> &sharding,
                                   bool shardingOnly, llvm::StringRef owner) {
  consume(); // {
  const char *shardLoc = nullptr;
  bool sawShard = false, sawPartial = false;
  Sharding s = Sharding::replicated(type.rank());
  do {
    Token key = tok_;
    bool isShard = atIdent("shard"), isPartial = atIdent("partial");
    if (!isShard && !isPartial && (shardingOnly || !key.is(TokKind::Ident)))
      return expected(shardingOnly ? "'shard' or 'partial'" : "attribute name");
    consume();
    if ((isShard && sawShard) || (isPartial && sawPartial) ||
        attrs.has(key.text))
      return errorAt(key.loc, "duplicate attribute '" + key.text + "'");
    if (!shardLoc && (isShard || isPartial))
      shardLoc = key.loc;
    if (!isShard && !isPartial) {
      AttrValue v = true; // a bare name is a true bool
      if (consumeIf(TokKind::Equal)) {
        auto parsed = parseAttrValue();
        if (!parsed)
          return parsed.takeError();
        v = std::move(*parsed);
      }
      attrs.set(key.text, std::move(v));
      continue;
    }
    if (auto e = expect(TokKind::Equal, "="))
      return e;
    if (auto e = expect(TokKind::LBracket, "["))
      return e;
    if (isShard) {
      sawShard = true;
      s.dims.clear();
    } else {
      sawPartial = true;
    }
    if (consumeIf(TokKind::RBracket))
      continue;
    do {
      if (isPartial) {
        auto axis = parseAxis(owner);
        if (!axis)
          return axis.takeError();
        s.partial.push_back(*axis);
        continue;
      }
      s.dims.emplace_back();
      if (atIdent("_")) {
        consume();
        continue;
      }
      do {
        auto axis = parseAxis(owner);
        if (!axis)
          return axis.takeError();
        s.dims.back().push_back(*axis);
      } while (consumeIf(TokKind::Star));
    } while (consumeIf(TokKind::Comma));
    if (auto e = expect(TokKind::RBracket, "]"))
      return e;
  } while (consumeIf(TokKind::Comma));
  if (auto e = expect(TokKind::RBrace, "}"))
    return e;
  if (!shardLoc)
    return llvm::Error::success();
  if (auto e = verifySharding(s, type, mesh(), g_.partitioned))
    return errorAt(shardLoc, owner + ": " + toString(std::move(e)));
  sharding = std::move(s);
  return llvm::Error::success();
}

llvm::Error Parser::parseInput() {
  auto name = expectToken(TokKind::ValueName, "input name '%name'");
  if (!name)
    return name.takeError();
  std::string owner = "input %" + name->text;
  if (auto e = defineName(*name, owner))
    return e;
  if (auto e = expect(TokKind::Colon, ":"))
    return e;
  auto type = parseType(owner);
  if (!type)
    return type.takeError();
  Attrs attrs;
  std::optional<Sharding> sharding;
  if (tok_.is(TokKind::LBrace)) {
    const char *loc = tok_.loc;
    if (auto e = parseValueDict(*type, attrs, sharding, false, owner))
      return e;
    if (auto e = verifyInputAttrs(attrs))
      return errorAt(loc, owner + ": " + toString(std::move(e)));
  }
  ValueId v = g_.addInput(name->text, std::move(*type), std::move(attrs));
  g_.value(v).sharding = std::move(sharding);
  return llvm::Error::success();
}

llvm::Error Parser::parseNode() {
  llvm::SmallVector<Token, 2> names;
  if (tok_.is(TokKind::ValueName)) {
    do {
      auto name = expectToken(TokKind::ValueName, "result name '%name'");
      if (!name)
        return name.takeError();
      names.push_back(*name);
    } while (consumeIf(TokKind::Comma));
    if (auto e = expect(TokKind::Equal, "="))
      return e;
  }
  if (!tok_.is(TokKind::Ident))
    return expected("an op name");
  Token opTok = tok_;
  consume();
  std::string owner;
  for (size_t i = 0; i < names.size(); ++i)
    owner += (i ? ", %" : "%") + names[i].text;
  owner += (names.empty() ? "" : " = ") + opTok.text;
  for (const Token &name : names)
    if (auto e = defineName(name, owner))
      return e;
  auto op = parseOpName(opTok.text);
  if (!op)
    return errorAt(opTok.loc, owner + ": unknown op '" + opTok.text + "'");

  bool fused = *op == OpKind::Fused;
  if (fused && names.empty())
    return errorAt(opTok.loc, owner + ": fused needs at least one result");
  llvm::SmallVector<ValueId, 4> operands;
  llvm::SmallVector<TensorType, 4> operandTypes;
  llvm::SmallVector<const char *, 4> operandLocs;
  if (auto e = expect(TokKind::LParen, "("))
    return e;
  if (!tok_.is(TokKind::RParen)) {
    do {
      auto name = expectToken(TokKind::ValueName, "operand '%name'");
      if (!name)
        return name.takeError();
      auto v = useName(*name, owner);
      if (!v)
        return v.takeError();
      if (fused && llvm::is_contained(operands, *v))
        return errorAt(name->loc, owner + ": operand %" + name->text +
                                      " appears twice (fused operands are "
                                      "the body's inputs)");
      operands.push_back(*v);
      operandTypes.push_back(g_.type(*v));
      operandLocs.push_back(name->loc);
    } while (consumeIf(TokKind::Comma));
  }
  if (auto e = expect(TokKind::RParen, ")"))
    return e;

  Attrs attrs;
  const char *attrLoc = tok_.loc;
  if (tok_.is(TokKind::LBrace))
    if (auto e = parseAttrDict(attrs))
      return e;

  llvm::SmallVector<TensorType, 1> types;
  llvm::SmallVector<const char *, 1> typeLocs;
  llvm::SmallVector<std::optional<Sharding>, 1> shardings;
  const char *colonLoc = tok_.loc;
  if (!names.empty()) {
    if (auto e = expect(TokKind::Colon, ":"))
      return e;
    do {
      typeLocs.push_back(tok_.loc);
      auto type = parseType(owner);
      if (!type)
        return type.takeError();
      types.push_back(*type);
      shardings.emplace_back();
      if (tok_.is(TokKind::LBrace) && !(fused && braceOpensBody())) {
        Attrs none;
        if (auto e = parseValueDict(*type, none, shardings.back(), true, owner))
          return e;
      }
    } while (consumeIf(TokKind::Comma));
  }
  const char *bodyLoc = tok_.loc;
  if (fused)
    if (auto e = expect(TokKind::LBrace, "{ (the fused body)"))
      return e;
  std::string scope;
  if (tok_.is(TokKind::Comment)) {
    scope = tok_.text;
    consume();
  }
  std::shared_ptr<Graph> body;
  if (fused) {
    auto parsed =
        parseBody(operands, operandLocs, attrs.getString("kernel"), owner);
    if (!parsed)
      return parsed.takeError();
    body = std::move(*parsed);
  }

  int numResults = opNumResults(*op);
  if (numResults >= 0 && int(names.size()) != numResults)
    return errorAt(opTok.loc, owner + ": " + opTok.text + " has " +
                                  llvm::Twine(numResults) + " result(s), got " +
                                  llvm::Twine(names.size()) + " name(s)");
  if (types.size() != names.size())
    return errorAt(colonLoc, owner + ": expected " + llvm::Twine(names.size()) +
                                 " result types (got " +
                                 llvm::Twine(types.size()) + ")");
  if (auto e = verifyNodeAttrs(*op, attrs))
    return errorAt(attrLoc, owner + ": " + toString(std::move(e)));
  auto inferred = fused ? verifyFusedNode(attrs, body.get(), operandTypes)
                        : inferResultTypes(*op, operandTypes, attrs, mesh());
  if (!inferred)
    return errorAt(fused ? bodyLoc : opTok.loc,
                   owner + ": " + toString(inferred.takeError()));
  if (inferred->size() != types.size())
    return errorAt(bodyLoc, owner + ": " + llvm::Twine(types.size()) +
                                " result(s), the body returns " +
                                llvm::Twine(inferred->size()));
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i] != (*inferred)[i])
      return errorAt(typeLocs[i], owner + ": result type " + types[i].str() +
                                      " does not match the inferred type " +
                                      (*inferred)[i].str());

  llvm::SmallVector<std::string, 2> nameStrs;
  for (const Token &name : names)
    nameStrs.push_back(name.text);
  int32_t n =
      g_.addNode(*op, operands, types, std::move(attrs), scope, nameStrs);
  g_.node(n).body = std::move(body);
  for (size_t i = 0; i < shardings.size(); ++i)
    g_.value(g_.node(n).results[i]).sharding = std::move(shardings[i]);
  return llvm::Error::success();
}

bool Parser::braceOpensBody() const {
  Lexer ahead = lex_;
  Token t = ahead.next();
  return !(t.is(TokKind::Ident) && (t.text == "shard" || t.text == "partial"));
}

llvm::Expected<std::shared_ptr<Graph>>
Parser::parseBody(llvm::ArrayRef<ValueId> operands,
                  llvm::ArrayRef<const char *> operandLocs,
                  llvm::StringRef kernel, llvm::StringRef owner) {
  auto body = std::make_shared<Graph>();
  body->name = kernel.str();
  llvm::StringMap<const char *> defs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Value &v = g_.value(operands[i]);
    body->addInput(v.name, v.type);
    defs[v.name] = operandLocs[i];
  }
  // Parse into the body with its own names; the outer graph comes back after.
  Graph &parsed = *body;
  std::swap(g_, parsed);
  std::swap(defLoc_, defs);
  auto restore = llvm::make_scope_exit([&] {
    std::swap(g_, parsed);
    std::swap(defLoc_, defs);
  });
  while (!atIdent("return")) {
    if (!tok_.is(TokKind::ValueName) && !tok_.is(TokKind::Ident))
      return expected("a body node or 'return' (in " + owner + ")");
    if (auto e = parseNode())
      return e;
  }
  if (auto e = parseReturn())
    return e;
  return body; // `restore` swaps the parsed body back into `parsed`
}

llvm::Error Parser::parseReturn() {
  consume(); // return
  if (tok_.is(TokKind::ValueName)) {
    do {
      auto name = expectToken(TokKind::ValueName, "output '%name'");
      if (!name)
        return name.takeError();
      auto v = useName(*name, "return");
      if (!v)
        return v.takeError();
      g_.addOutput(*v);
    } while (consumeIf(TokKind::Comma));
  }
  return expect(TokKind::RBrace, "}");
}

llvm::Expected<Graph> Parser::parseFile() {
  if (auto e = parseHeader())
    return e;
  while (!atIdent("return")) {
    if (!tok_.is(TokKind::ValueName) && !tok_.is(TokKind::Ident))
      return expected("a node or 'return'");
    if (auto e = parseNode())
      return e;
  }
  if (auto e = parseReturn())
    return e;
  if (!tok_.is(TokKind::Eof))
    return expected("end of file");
  return std::move(g_);
}

} // namespace

llvm::Expected<Graph> parseGraph(llvm::StringRef text,
                                 llvm::StringRef bufferName) {
  return Parser(text, bufferName).parseFile();
}

llvm::Expected<Graph> parseGraphFile(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!buf)
    return llvm::createStringError(buf.getError(),
                                   path + ": error: cannot open file (" +
                                       buf.getError().message() + ")");
  return parseGraph((*buf)->getBuffer(), path == "-" ? "<stdin>" : path);
}

} // namespace strata
