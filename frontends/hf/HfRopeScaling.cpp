//===- HfRopeScaling.cpp - config.json "rope_scaling" <-> the spec's
//-------===//
#include "frontends/hf/HfRopeScaling.h"

#include "llvm/ADT/Twine.h"

#include <cmath>

namespace strata {

namespace {

std::string show(const llvm::json::Value &v) {
  std::string s;
  llvm::raw_string_ostream(s) << v;
  return s;
}

llvm::Error fail(llvm::StringRef path, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": field \"rope_scaling\": " + what);
}

} // namespace

llvm::Error readHfRopeScaling(const llvm::json::Value *v, llvm::StringRef path,
                              pb::ModelSpec &spec) {
  if (!v || v->kind() == llvm::json::Value::Null)
    return llvm::Error::success();
  const llvm::json::Object *o = v->getAsObject();
  if (!o)
    return fail(path, "expected null or an object, got " + show(*v));
  // "type" is the key of transformers before 4.43, "rope_type" after.
  const llvm::json::Value *type = o->get("rope_type");
  if (const llvm::json::Value *old = o->get("type")) {
    if (type && *type != *old)
      return fail(path, "\"rope_type\" " + show(*type) + " and \"type\" " +
                            show(*old) + " disagree");
    type = old;
  }
  if (!type)
    return fail(path, "has no \"rope_type\" (strata implements Llama-3.1's "
                      "\"llama3\")");
  if (*type != "llama3")
    return fail(path, "unsupported rope_type " + show(*type) +
                          " (strata's rope implements only Llama-3.1's "
                          "\"llama3\" frequency scaling; linear, dynamic, "
                          "yarn and longrope scaling are not implemented)");
  pb::RopeScaling &r = *spec.mutable_rope_scaling();
  r.set_type(pb::RopeScaling::LLAMA3);
  for (const auto &kv : *o) {
    llvm::StringRef key = kv.first;
    const llvm::json::Value &val = kv.second;
    if (key == "rope_type" || key == "type")
      continue;
    auto bad = [&](const char *want) {
      return fail(path, "key \"" + key + "\": expected " + want + ", got " +
                            show(val));
    };
    auto d = val.getAsNumber();
    if (key == "original_max_position_embeddings") {
      auto i = val.getAsInteger();
      if (!i || *i < 1)
        return bad("an integer >= 1");
      r.set_original_max_position_embeddings(*i);
    } else if (key == "factor" || key == "low_freq_factor" ||
               key == "high_freq_factor") {
      if (!d || !std::isfinite(*d) || *d <= 0)
        return bad("a positive number");
      if (key == "factor")
        r.set_factor(*d);
      else if (key == "low_freq_factor")
        r.set_low_freq_factor(*d);
      else
        r.set_high_freq_factor(*d);
    } else {
      return fail(path,
                  "key \"" + key +
                      "\" is not part of \"llama3\" "
                      "scaling (factor, low_freq_factor, high_freq_factor, "
                      "original_max_position_embeddings)");
    }
  }
  for (const char *k : {"factor", "low_freq_factor", "high_freq_factor",
                        "original_max_position_embeddings"})
    if (!o->get(k))
      return fail(path, llvm::Twine("missing \"") + k +
                            "\" (\"llama3\" scaling needs factor, "
                            "low_freq_factor, high_freq_factor and "
                            "original_max_position_embeddings)");
  if (r.high_freq_factor() <= r.low_freq_factor())
    return fail(path, "high_freq_factor " + show(*o->get("high_freq_factor")) +
                          " must be greater than low_freq_factor " +
                          show(*o->get("low_freq_factor")) +
                          " (the blend between them divides by their "
                          "difference)");
  return llvm::Error::success();
}

llvm::json::Value makeHfRopeScaling(const ModelConfig &c) {
  const RopeScaling &r = c.ropeScaling;
  if (r.factor <= 0)
    return nullptr;
  return llvm::json::Object{
      {"rope_type", "llama3"},
      {"factor", r.factor},
      {"low_freq_factor", r.lowFreqFactor},
      {"high_freq_factor", r.highFreqFactor},
      {"original_max_position_embeddings", r.originalMaxPositions}};
}

} // namespace strata
