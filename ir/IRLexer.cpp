//===- IRLexer.cpp - Tokens of the IR text format
//--------------------------===//
#include "ir/IRLexer.h"

#include <cctype>

namespace strata {

namespace {
bool isIdentStart(char c) { return std::isalpha(uint8_t(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(uint8_t(c)) || c == '_'; }
// Characters of %value and @graph names.
bool isNameChar(char c) { return isIdentChar(c) || c == '.'; }
} // namespace

std::string Token::describe() const {
  switch (kind) {
  case TokKind::Eof:
    return "end of file";
  case TokKind::Comment:
    return "comment '# " + text + "'";
  case TokKind::ValueName:
    return "'%" + text + "'";
  case TokKind::GraphName:
    return "'@" + text + "'";
  case TokKind::String:
    return "string";
  default:
    return "'" + text + "'";
  }
}

bool Lexer::atLineStart(const char *p) const {
  while (p != buf_.begin() && (p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\r'))
    --p;
  return p == buf_.begin() || p[-1] == '\n';
}

void Lexer::skipSpaceAndCommentLines() {
  while (cur_ != buf_.end()) {
    char c = *cur_;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++cur_;
    } else if (c == '#' && atLineStart(cur_)) {
      while (cur_ != buf_.end() && *cur_ != '\n')
        ++cur_;
    } else {
      return;
    }
  }
}

Token Lexer::make(TokKind k, const char *start) {
  return makeWith(k, start, std::string(start, cur_));
}

Token Lexer::makeWith(TokKind k, const char *start, std::string text) {
  Token t;
  t.kind = k;
  t.text = std::move(text);
  t.loc = start;
  return t;
}

Token Lexer::lexNumber(const char *start) {
  // start points at '-' or a digit; cur_ is one past it.
  if (*start == '-') {
    llvm::StringRef rest(cur_, buf_.end() - cur_);
    for (llvm::StringRef word : {"inf", "nan"}) {
      if (rest.startswith(word) &&
          (rest.size() == 3 || !isIdentChar(rest[3]))) {
        cur_ += 3;
        return make(TokKind::Float, start);
      }
    }
    if (cur_ == buf_.end() || !std::isdigit(uint8_t(*cur_)))
      return makeWith(TokKind::Error, start, "expected a number after '-'");
  }
  auto digits = [&] {
    while (cur_ != buf_.end() && std::isdigit(uint8_t(*cur_)))
      ++cur_;
  };
  digits();
  bool isFloat = false;
  if (cur_ != buf_.end() && *cur_ == '.') {
    isFloat = true;
    ++cur_;
    digits();
  }
  if (cur_ != buf_.end() && (*cur_ == 'e' || *cur_ == 'E')) {
    const char *p = cur_ + 1;
    if (p != buf_.end() && (*p == '+' || *p == '-'))
      ++p;
    if (p != buf_.end() && std::isdigit(uint8_t(*p))) {
      isFloat = true;
      cur_ = p;
      digits();
    }
  }
  return make(isFloat ? TokKind::Float : TokKind::Int, start);
}

Token Lexer::lexString(const char *start) {
  std::string out;
  while (cur_ != buf_.end() && *cur_ != '\n') {
    char c = *cur_++;
    if (c == '"')
      return makeWith(TokKind::String, start, std::move(out));
    if (c != '\\') {
      out += c;
      continue;
    }
    if (cur_ == buf_.end())
      break;
    char e = *cur_++;
    if (e == '"' || e == '\\')
      out += e;
    else if (e == 'n')
      out += '\n';
    else
      return makeWith(TokKind::Error, cur_ - 2,
                      std::string("unknown escape '\\") + e + "' in string");
  }
  return makeWith(TokKind::Error, start, "unterminated string");
}

Token Lexer::next() {
  skipSpaceAndCommentLines();
  const char *start = cur_;
  if (cur_ == buf_.end())
    return make(TokKind::Eof, start);
  char c = *cur_++;
  switch (c) {
  case '(':
    return make(TokKind::LParen, start);
  case ')':
    return make(TokKind::RParen, start);
  case '{':
    return make(TokKind::LBrace, start);
  case '}':
    return make(TokKind::RBrace, start);
  case '[':
    return make(TokKind::LBracket, start);
  case ']':
    return make(TokKind::RBracket, start);
  case '<':
    return make(TokKind::Less, start);
  case '>':
    return make(TokKind::Greater, start);
  case ',':
    return make(TokKind::Comma, start);
  case '=':
    return make(TokKind::Equal, start);
  case ':':
    return make(TokKind::Colon, start);
  case '*':
    return make(TokKind::Star, start);
  case '"':
    return lexString(start);
  case '#': {
    while (cur_ != buf_.end() && *cur_ != '\n')
      ++cur_;
    return makeWith(TokKind::Comment, start,
                    llvm::StringRef(start + 1, cur_ - start - 1).trim().str());
  }
  case '%':
  case '@': {
    while (cur_ != buf_.end() && isNameChar(*cur_))
      ++cur_;
    if (cur_ == start + 1)
      return makeWith(TokKind::Error, start,
                      std::string("expected a name after '") + c + "'");
    return makeWith(c == '%' ? TokKind::ValueName : TokKind::GraphName, start,
                    std::string(start + 1, cur_));
  }
  default:
    break;
  }
  if (c == '-' || std::isdigit(uint8_t(c)))
    return lexNumber(start);
  if (isIdentStart(c)) {
    while (cur_ != buf_.end() && isIdentChar(*cur_))
      ++cur_;
    return make(TokKind::Ident, start);
  }
  return makeWith(TokKind::Error, start,
                  std::string("unexpected character '") + c + "'");
}

} // namespace strata
