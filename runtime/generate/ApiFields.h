//===- ApiFields.h - Typed, checked reads of a JSON request's fields ------===//
//
// Internal to the API parsers. A Fields reader wraps a request object: each
// get* reads one optional field into its out-parameter (left as it is when
// the field is absent or null) and fails with a message naming the field
// and the type or range it needs; unknown() names the first field no get*
// asked about. Integers must be JSON integers (5.0 counts; 5.5 does not).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace strata::generate {

/// Whether `body` nests arrays and objects at most `maxDepth` deep (outside
/// strings). Checked before parsing: llvm::json's parser recurses once per
/// level, so a body of a million '[' would overflow a thread's stack.
inline bool nestingWithin(llvm::StringRef body, int maxDepth) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char ch = body[i];
    if (inString) {
      if (ch == '\\')
        ++i;
      else if (ch == '"')
        inString = false;
    } else if (ch == '"') {
      inString = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > maxDepth)
        return false;
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return true;
}

class Fields {
public:
  explicit Fields(const llvm::json::Object &o) : o_(o) {}

  /// The first error met, or empty.
  const std::string &error() const { return error_; }
  bool ok() const { return error_.empty(); }
  void fail(const std::string &msg) {
    if (error_.empty())
      error_ = msg;
  }
  /// Whether `key` is present and not null.
  bool has(llvm::StringRef key) {
    seen_.insert(key);
    const llvm::json::Value *v = o_.get(key);
    return v && v->kind() != llvm::json::Value::Null;
  }

  void getBool(llvm::StringRef key, bool &out) {
    if (!has(key))
      return;
    if (auto b = o_.get(key)->getAsBoolean())
      out = *b;
    else
      fail(key.str() + " must be a boolean value");
  }
  void getInt(llvm::StringRef key, int64_t &out, int64_t lo, int64_t hi,
              llvm::StringRef what = "") {
    if (!has(key))
      return;
    auto i = o_.get(key)->getAsInteger();
    if (!i || *i < lo || *i > hi)
      fail(key.str() + " must be an integer in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]" +
           (what.empty() ? "" : " (" + what.str() + ")"));
    else
      out = *i;
  }
  void getNumber(llvm::StringRef key, double &out, double lo, double hi,
                 llvm::StringRef what = "") {
    if (!has(key))
      return;
    auto d = o_.get(key)->getAsNumber();
    if (!d || !std::isfinite(*d) || *d < lo || *d > hi)
      fail(key.str() + " must be a number in [" + fmt(lo) + ", " + fmt(hi) +
           "]" + (what.empty() ? "" : " (" + what.str() + ")"));
    else
      out = *d;
  }
  /// A string, or (when `allowList`) a list of 1..maxItems strings.
  void getStrings(llvm::StringRef key, std::vector<std::string> &out,
                  bool allowList, size_t maxItems) {
    if (!has(key))
      return;
    const llvm::json::Value &v = *o_.get(key);
    if (auto s = v.getAsString()) {
      out = {s->str()};
      return;
    }
    const llvm::json::Array *a = allowList ? v.getAsArray() : nullptr;
    std::string need = key.str() + " must be a string" +
                       (allowList ? " or a list of 1 to " +
                                        std::to_string(maxItems) + " strings"
                                  : "");
    if (!a || a->empty() || a->size() > maxItems)
      return fail(need);
    out.clear();
    for (const llvm::json::Value &e : *a) {
      auto s = e.getAsString();
      if (!s)
        return fail(need);
      out.push_back(s->str());
    }
  }
  /// Fails naming the first field that was never asked about.
  void checkUnknown(llvm::StringRef known) {
    for (const auto &kv : o_)
      if (!seen_.count(kv.first))
        return fail("unknown field " + llvm::StringRef(kv.first).str() +
                    " (the fields are: " + known.str() + ")");
  }

private:
  static std::string fmt(double d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    return buf;
  }
  const llvm::json::Object &o_;
  llvm::StringSet<> seen_;
  std::string error_;
};

} // namespace strata::generate
