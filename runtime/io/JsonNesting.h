//===- JsonNesting.h - Refuse JSON nested deeper than a reader needs ------===//
//
// llvm::json::parse recurses once per nesting level, without a limit, so a
// file holding 100,000 '[' overflows the stack (a fuzz finding in
// checkpoint headers, docs/fuzzing.md). Readers of untrusted JSON call
// jsonNestingError first; strata's files nest a few levels.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <optional>
#include <string>

namespace strata {

/// Deepest nesting of arrays and objects a reader accepts.
constexpr int kMaxJsonNesting = 64;

/// "nests JSON N levels deep at byte B (...)" when `text` opens more than
/// kMaxJsonNesting arrays or objects at once (outside strings); else none.
inline std::optional<std::string> jsonNestingError(llvm::StringRef text) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonNesting)
        return ("nests JSON more than " + llvm::Twine(kMaxJsonNesting) +
                " levels deep at byte " + llvm::Twine(i) +
                " (strata's files nest a few levels)")
            .str();
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

} // namespace strata
