//===- IRLexer.h - Tokens of the IR text format
//----------------------------===//
//
// Splits IR text into tokens for the parser (ir/Parser.cpp). A `#` that is the
// first thing on its line starts a comment line, which is skipped (lit RUN and
// CHECK lines live there); a `#` after other tokens on a line is a trailing
// comment token, which the parser reads as the node's scope.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"

#include <string>

namespace strata {

enum class TokKind {
  Eof,
  Error,     // a character or literal the lexer cannot read; text says why
  Ident,     // graph, f32, matmul, true, inf, dp, _
  ValueName, // %x (text excludes the sigil)
  GraphName, // @g (text excludes the sigil)
  Int,       // 42, -3
  Float,     // 1.5, 1e-05, -inf, nan
  String,    // "..." (text is the unescaped contents)
  Comment,   // # trailing comment (text is the trimmed comment)
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Less,
  Greater,
  Comma,
  Equal,
  Colon,
  Star,
};

struct Token {
  TokKind kind = TokKind::Eof;
  std::string text;          // see TokKind; the spelling for the other kinds
  const char *loc = nullptr; // first character in the buffer
  bool is(TokKind k) const { return kind == k; }
  /// How an error message shows this token: `'matmul'`, `end of file`, ...
  std::string describe() const;
};

class Lexer {
public:
  explicit Lexer(llvm::StringRef buffer) : buf_(buffer), cur_(buffer.begin()) {}
  Token next();

private:
  /// A token spelled by [start, cur_).
  Token make(TokKind k, const char *start);
  Token makeWith(TokKind k, const char *start, std::string text);
  Token lexNumber(const char *start);
  Token lexString(const char *start);
  void skipSpaceAndCommentLines();
  bool atLineStart(const char *p) const;

  llvm::StringRef buf_;
  const char *cur_;
};

} // namespace strata
