//===- SendCompletion.cpp - When an eager send has surely been received ---===//
#include "runtime/parallel/SendCompletion.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace strata {

std::vector<std::vector<std::vector<int32_t>>>
completedSends(const Schedule &s,
               const std::vector<std::vector<Instr>> &streams) {
  const int64_t P = s.pp, S = s.numStages();
  // Where each (kind, microbatch, stage) runs: rank and index.
  std::map<std::tuple<int, int32_t, int64_t>, std::pair<int64_t, int32_t>> at;
  for (int64_t r = 0; r < P; ++r)
    for (size_t i = 0; i < streams[r].size(); ++i) {
      const Instr &in = streams[r][i];
      at[{in.kind, in.microbatch, s.stageOf(r, in.chunk)}] = {r, int32_t(i)};
    }
  // The instruction a message goes to (or from): F to stage j+1, B to j-1.
  auto peerOf = [&](const Instr &in, int64_t r,
                    bool sends) -> std::optional<std::pair<int64_t, int32_t>> {
    int64_t j = s.stageOf(r, in.chunk);
    int64_t k = (in.kind == Instr::Forward) == sends ? j + 1 : j - 1;
    if (k < 0 || k >= S)
      return std::nullopt;
    auto it = at.find({in.kind, in.microbatch, k});
    if (it == at.end())
      return std::nullopt;
    return it->second;
  };

  // Vector clocks: clock[r][i][q] = the last instruction of rank q that rank
  // r knows ran once it finished instruction i (-1: none).
  std::vector<std::vector<std::vector<int32_t>>> clock(P);
  std::vector<size_t> next(P, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < P; ++r) {
      if (next[r] == streams[r].size())
        continue;
      size_t i = next[r];
      std::vector<int32_t> c =
          i ? clock[r][i - 1] : std::vector<int32_t>(P, -1);
      if (auto from = peerOf(streams[r][i], r, /*sends=*/false)) {
        auto [q, z] = *from;
        if (int32_t(clock[q].size()) <= z)
          continue; // the sender has not run yet
        for (int64_t x = 0; x < P; ++x)
          c[x] = std::max(c[x], clock[q][z][x]);
      }
      c[r] = int32_t(i);
      clock[r].push_back(std::move(c));
      ++next[r];
      progress = true;
    }
  }

  std::vector<std::vector<std::vector<int32_t>>> completed(P);
  for (int64_t r = 0; r < P; ++r) {
    completed[r].resize(streams[r].size());
    for (size_t e = 0; e < streams[r].size(); ++e) {
      auto to = peerOf(streams[r][e], r, /*sends=*/true);
      if (!to)
        continue;
      auto [q, z] = *to;
      for (size_t i = e; i < clock[r].size(); ++i)
        if (clock[r][i][q] >= z) {
          completed[r][i].push_back(int32_t(e));
          break;
        }
    }
  }
  return completed;
}

} // namespace strata
