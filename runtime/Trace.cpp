//===- Trace.cpp - A step timeline in Chrome's trace format ---------------===//
#include "runtime/Trace.h"

#include <map>
#include <set>

namespace strata {

llvm::json::Value Trace::toJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  llvm::json::Array events;
  // Thread ids per (rank, stream), in order of first use.
  std::map<std::pair<int64_t, std::string>, int64_t> tids;
  std::set<int64_t> ranks;
  for (const Event &e : events_) {
    auto key = std::make_pair(e.rank, e.stream);
    auto it = tids.find(key);
    if (it == tids.end())
      it = tids.emplace(key, int64_t(tids.size())).first;
    ranks.insert(e.rank);
    llvm::json::Object args;
    if (e.bytes >= 0)
      args["bytes"] = e.bytes;
    events.push_back(llvm::json::Object{{"name", e.name},
                                        {"cat", e.category},
                                        {"ph", "X"},
                                        {"ts", e.beginUs},
                                        {"dur", e.durationUs},
                                        {"pid", e.rank},
                                        {"tid", it->second},
                                        {"args", std::move(args)}});
  }
  for (int64_t r : ranks)
    events.push_back(llvm::json::Object{
        {"name", "process_name"},
        {"ph", "M"},
        {"pid", r},
        {"args", llvm::json::Object{{"name", "rank " + std::to_string(r)}}}});
  for (const auto &[key, tid] : tids)
    events.push_back(
        llvm::json::Object{{"name", "thread_name"},
                           {"ph", "M"},
                           {"pid", key.first},
                           {"tid", tid},
                           {"args", llvm::json::Object{{"name", key.second}}}});
  return llvm::json::Object{{"traceEvents", std::move(events)},
                            {"displayTimeUnit", "ms"}};
}

} // namespace strata
