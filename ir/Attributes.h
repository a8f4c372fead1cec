//===- Attributes.h - Typed op attributes --------------------------------===//
//
// An attribute is a named value: int, float, bool, string, int list or string
// list. Attrs keep their entries sorted by name so printing is canonical.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace strata {

using IntList = std::vector<int64_t>;
using StrList = std::vector<std::string>;
/// Int, float, bool, string, int list, string list.
using AttrValue =
    std::variant<int64_t, double, bool, std::string, IntList, StrList>;

/// A sorted, name-unique list of attributes.
class Attrs {
public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init);

  /// Sets (or replaces) an attribute.
  void set(llvm::StringRef name, AttrValue value);
  void erase(llvm::StringRef name);
  bool has(llvm::StringRef name) const;
  const AttrValue *get(llvm::StringRef name) const;

  /// Typed getters with a default for a missing attribute. An int attribute
  /// reads as a float too. A present attribute of another kind is a bug.
  int64_t getInt(llvm::StringRef name, int64_t def = 0) const;
  double getFloat(llvm::StringRef name, double def = 0.0) const;
  bool getBool(llvm::StringRef name, bool def = false) const;
  std::string getString(llvm::StringRef name, llvm::StringRef def = "") const;
  IntList getInts(llvm::StringRef name) const;
  StrList getStrings(llvm::StringRef name) const;

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  bool operator==(const Attrs &o) const { return entries_ == o.entries_; }

private:
  std::vector<std::pair<std::string, AttrValue>> entries_;
};

/// Prints one value as IR text: 3, 1e-05, true, "tanh", [1, 2], ["tp", "dp"].
/// Floats print in the shortest form that parses back to the same double and
/// always carry a '.' or an exponent, so they never read back as ints.
void printAttrValue(llvm::raw_ostream &os, const AttrValue &v);

} // namespace strata
