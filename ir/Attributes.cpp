//===- Attributes.cpp - Typed op attributes -------------------------------===//
#include "ir/Attributes.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <charconv>

namespace strata {

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init) {
  for (auto &[k, v] : init)
    set(k, v);
}

void Attrs::set(llvm::StringRef name, AttrValue value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const auto &e, llvm::StringRef n) {
                               return llvm::StringRef(e.first) < n;
                             });
  if (it != entries_.end() && it->first == name)
    it->second = std::move(value);
  else
    entries_.insert(it, {name.str(), std::move(value)});
}

void Attrs::erase(llvm::StringRef name) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const auto &e) { return e.first == name; }),
                 entries_.end());
}

const AttrValue *Attrs::get(llvm::StringRef name) const {
  for (const auto &e : entries_)
    if (e.first == name)
      return &e.second;
  return nullptr;
}

bool Attrs::has(llvm::StringRef name) const { return get(name) != nullptr; }

template <typename T>
static const T &expectKind(const AttrValue &v, llvm::StringRef name,
                           const char *kind) {
  if (const T *p = std::get_if<T>(&v))
    return *p;
  llvm::report_fatal_error("attribute '" + name.str() + "' is not " + kind);
}

int64_t Attrs::getInt(llvm::StringRef name, int64_t def) const {
  const AttrValue *v = get(name);
  return v ? expectKind<int64_t>(*v, name, "an int") : def;
}

double Attrs::getFloat(llvm::StringRef name, double def) const {
  const AttrValue *v = get(name);
  if (!v)
    return def;
  if (const int64_t *i = std::get_if<int64_t>(v))
    return double(*i);
  return expectKind<double>(*v, name, "a float");
}

bool Attrs::getBool(llvm::StringRef name, bool def) const {
  const AttrValue *v = get(name);
  return v ? expectKind<bool>(*v, name, "a bool") : def;
}

std::string Attrs::getString(llvm::StringRef name, llvm::StringRef def) const {
  const AttrValue *v = get(name);
  return v ? expectKind<std::string>(*v, name, "a string") : def.str();
}

IntList Attrs::getInts(llvm::StringRef name) const {
  const AttrValue *v = get(name);
  if (!v)
    return {};
  if (const StrList *s = std::get_if<StrList>(v); s && s->empty())
    return {};
  return expectKind<IntList>(*v, name, "an int list");
}

StrList Attrs::getStrings(llvm::StringRef name) const {
  const AttrValue *v = get(name);
  if (!v)
    return {};
  if (const IntList *s = std::get_if<IntList>(v); s && s->empty())
    return {};
  return expectKind<StrList>(*v, name, "a string list");
}

static void printEscaped(llvm::raw_ostream &os, llvm::StringRef s) {
  os << '"';
  for (char c : s) {
    if (c == '"' || c == '\\')
      os << '\\' << c;
    else if (c == '\n')
      os << "\\n";
    else
      os << c;
  }
  os << '"';
}

void printAttrValue(llvm::raw_ostream &os, const AttrValue &v) {
  if (auto *i = std::get_if<int64_t>(&v)) {
    os << *i;
  } else if (auto *d = std::get_if<double>(&v)) {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), *d);
    llvm::StringRef s(buf, res.ptr - buf);
    os << s;
    if (s.find_first_of(".eEn") == llvm::StringRef::npos)
      os << ".0"; // keep it a float
  } else if (auto *b = std::get_if<bool>(&v)) {
    os << (*b ? "true" : "false");
  } else if (auto *s = std::get_if<std::string>(&v)) {
    printEscaped(os, *s);
  } else if (auto *l = std::get_if<IntList>(&v)) {
    os << '[';
    for (size_t k = 0; k < l->size(); ++k)
      os << (k ? ", " : "") << (*l)[k];
    os << ']';
  } else if (auto *l = std::get_if<StrList>(&v)) {
    os << '[';
    for (size_t k = 0; k < l->size(); ++k) {
      if (k)
        os << ", ";
      printEscaped(os, (*l)[k]);
    }
    os << ']';
  }
}

} // namespace strata
