//===- Recompute.cpp - The `recompute` pass
//--------------------------------===//
#include "passes/recompute/Recompute.h"

#include "passes/PassManager.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/memory/Activations.h"
#include "passes/pipeline/CostModel.h"
#include "passes/pipeline/GraphCopy.h"
#include "passes/pipeline/ModelUnits.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

namespace strata {

namespace {

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "recompute: " + msg);
}

/// Forward nodes cloned into the backward region; `readers` (backward
/// nodes) read the clones instead of the forward results.
struct CloneBlock {
  std::vector<int32_t> nodes; // in graph order
  llvm::DenseSet<int32_t> readers;
  /// Forward nodes of a recomputed block that no backward node reads: not
  /// cloned, but their state (a dropout mask) is not kept either; they are
  /// marked too.
  std::vector<int32_t> alsoMarked;
  /// If set, the clones' `reason` (for collectives: why they run again).
  std::string reason;
};

/// `hint`, or `hint.<k>`, unused in both graphs.
std::string uniqueName(const Graph &src, const Graph &dst,
                       const std::string &hint) {
  std::string name = hint;
  for (int k = 1; src.lookup(name) != kNoValue || dst.lookup(name) != kNoValue;
       ++k)
    name = hint + "." + std::to_string(k);
  return name;
}

/// `g` with every block's clones inserted before its first reader, its
/// readers rewired and its forward nodes marked `recompute`.
Graph applyClones(const Graph &g, llvm::ArrayRef<CloneBlock> blocks) {
  size_t numNodes = g.nodes().size();
  std::vector<llvm::SmallVector<size_t, 1>> insertAt(numNodes);
  std::vector<llvm::SmallVector<size_t, 1>> readsBlock(numNodes);
  std::vector<bool> marked(numNodes, false);
  for (size_t b = 0; b < blocks.size(); ++b) {
    llvm::DenseSet<ValueId> produced;
    for (int32_t n : blocks[b].nodes)
      for (ValueId r : g.node(n).results)
        produced.insert(r);
    int32_t at = INT32_MAX;
    for (int32_t r : blocks[b].readers)
      if (llvm::any_of(g.node(r).operands,
                       [&](ValueId v) { return produced.contains(v); })) {
        at = std::min(at, r);
        readsBlock[r].push_back(b);
      }
    if (at == INT32_MAX)
      continue;
    insertAt[at].push_back(b);
    for (int32_t n : blocks[b].nodes)
      marked[n] = true;
    for (int32_t n : blocks[b].alsoMarked)
      marked[n] = true;
  }

  Graph out = emptyLike(g);
  GraphCopier c(g, out);
  for (ValueId v : g.inputs())
    c.addInput(v);
  std::vector<llvm::DenseMap<ValueId, ValueId>> clones(blocks.size());
  for (size_t i = 0; i < numNodes; ++i) {
    for (size_t b : insertAt[i]) {
      for (int32_t m : blocks[b].nodes) {
        const Node &fn = g.node(m);
        llvm::SmallVector<ValueId, 4> operands;
        for (ValueId v : fn.operands) {
          auto it = clones[b].find(v);
          operands.push_back(it != clones[b].end() ? it->second : c.mapped(v));
        }
        llvm::SmallVector<std::string, 1> names;
        for (ValueId r : fn.results)
          names.push_back(uniqueName(g, out, g.value(r).name + ".recompute"));
        Attrs attrs = fn.attrs;
        attrs.set(kBackwardAttr, true);
        attrs.set(kRecomputeAttr, true);
        if (!blocks[b].reason.empty())
          attrs.set("reason", blocks[b].reason);
        int32_t k = c.copyNode(fn, operands, names, attrs);
        for (size_t j = 0; j < fn.results.size(); ++j)
          clones[b][fn.results[j]] = out.node(k).results[j];
      }
    }
    const Node &n = g.node(i);
    llvm::SmallVector<ValueId, 4> operands;
    for (ValueId v : n.operands) {
      ValueId to = c.mapped(v);
      for (size_t b : readsBlock[i])
        if (auto it = clones[b].find(v); it != clones[b].end())
          to = it->second;
      operands.push_back(to);
    }
    Attrs attrs = n.attrs;
    if (marked[i])
      attrs.set(kRecomputeAttr, true);
    int32_t k = c.copyNode(n, operands, {}, attrs);
    for (size_t j = 0; j < n.results.size(); ++j)
      c.setMapped(n.results[j], out.node(k).results[j]);
  }
  for (ValueId v : g.outputs())
    out.addOutput(c.mapped(v));
  return out;
}

/// Block `layer` recomputed in full: the forward nodes of the block that
/// produce what its backward reads.
CloneBlock layerBlock(const Graph &g, int64_t layer) {
  CloneBlock b;
  std::vector<bool> inLayer(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node &n = g.node(i);
    ModelUnit u = unitOfScope(n.scope);
    if (u.kind != ModelUnit::Layer || u.layer != layer)
      continue;
    if (isBackward(n))
      b.readers.insert(int32_t(i));
    else
      inLayer[i] = true;
  }
  std::vector<bool> needed(g.nodes().size(), false);
  std::vector<int32_t> work;
  auto need = [&](ValueId v) {
    int32_t d = g.value(v).defNode;
    if (d >= 0 && inLayer[d] && !needed[d]) {
      needed[d] = true;
      work.push_back(d);
    }
  };
  for (int32_t r : b.readers)
    for (ValueId v : g.node(r).operands)
      need(v);
  while (!work.empty()) {
    int32_t n = work.back();
    work.pop_back();
    for (ValueId v : g.node(n).operands)
      need(v);
  }
  auto users = g.users();
  for (size_t i = 0; i < needed.size(); ++i) {
    if (needed[i]) {
      b.nodes.push_back(int32_t(i));
    } else if (inLayer[i] && llvm::none_of(g.node(i).results, [&](ValueId r) {
                 return llvm::any_of(users[r], [&](int32_t u) {
                   return isBackward(g.node(u));
                 });
               })) {
      b.alsoMarked.push_back(int32_t(i));
    }
  }
  return b;
}

/// One block per forward all_gather that a backward node reads.
std::vector<CloneBlock> regatherBlocks(const Graph &g) {
  std::vector<CloneBlock> blocks;
  auto users = g.users();
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node &n = g.node(i);
    if (n.op != OpKind::AllGather || isBackward(n))
      continue;
    CloneBlock b;
    b.nodes.push_back(int32_t(i));
    b.reason = "recompute: gathered again for the backward, which keeps the "
               "sequence-split value instead of the gathered one";
    for (int32_t u : users[n.results[0]])
      if (isBackward(g.node(u)))
        b.readers.insert(u);
    if (!b.readers.empty())
      blocks.push_back(std::move(b));
  }
  return blocks;
}

llvm::Error checkInput(const Graph &g) {
  if (llvm::none_of(g.nodes(), [](const Node &n) { return isBackward(n); }))
    return err("the graph has no backward nodes (run autodiff first: "
               "recomputation chooses what the backward reads)");
  if (llvm::any_of(g.nodes(), [](const Node &n) { return isRecomputed(n); }))
    return err("the graph already has recompute markers (run the pass once)");
  return llvm::Error::success();
}

} // namespace

std::optional<RecomputeMode> parseRecomputeMode(llvm::StringRef name) {
  if (name == "none")
    return RecomputeMode::None;
  if (name == "selective")
    return RecomputeMode::Selective;
  if (name == "full")
    return RecomputeMode::Full;
  if (name == "auto")
    return RecomputeMode::Auto;
  return std::nullopt;
}

llvm::StringRef recomputeModeName(RecomputeMode m) {
  switch (m) {
  case RecomputeMode::None:
    return "none";
  case RecomputeMode::Selective:
    return "selective";
  case RecomputeMode::Full:
    return "full";
  case RecomputeMode::Auto:
    break;
  }
  return "auto";
}

std::vector<LayerRecomputeCost> layerRecomputeCosts(const Graph &g) {
  std::vector<LayerRecomputeCost> out;
  auto users = g.users();
  auto hasBackwardReader = [&](ValueId v, const CloneBlock *except) {
    return llvm::any_of(users[v], [&](int32_t u) {
      return isBackward(g.node(u)) && !(except && except->readers.contains(u));
    });
  };
  for (int64_t l = 0, e = countLayers(g); l < e; ++l) {
    CloneBlock b = layerBlock(g, l);
    LayerRecomputeCost cost;
    cost.layer = l;
    llvm::DenseSet<ValueId> inBlock;
    for (int32_t n : b.nodes) {
      cost.flops += nodeCost(g, g.node(n));
      for (ValueId r : g.node(n).results)
        inBlock.insert(r);
    }
    // Results the block's backward read stop being stashed unless another
    // backward node reads them; forward values the clones read start being
    // stashed unless they already are.
    for (ValueId r : inBlock)
      if (hasBackwardReader(r, nullptr) && !hasBackwardReader(r, &b))
        cost.savedBytes += g.type(r).bytes();
    llvm::DenseSet<ValueId> added;
    for (int32_t n : b.nodes)
      for (ValueId v : g.node(n).operands)
        if (!inBlock.contains(v) && !g.value(v).isInput() &&
            !hasBackwardReader(v, nullptr) && added.insert(v).second)
          cost.savedBytes -= g.type(v).bytes();
    if (!b.nodes.empty())
      out.push_back(cost);
  }
  return out;
}

llvm::Expected<llvm::SmallVector<int64_t, 8>>
chooseRecomputeLayers(llvm::ArrayRef<LayerRecomputeCost> costs,
                      llvm::ArrayRef<int64_t> candidates, int64_t bytes) {
  llvm::SmallVector<int64_t, 8> chosen;
  if (bytes <= 0)
    return chosen;
  std::vector<LayerRecomputeCost> useful;
  for (const LayerRecomputeCost &c : costs)
    if (c.savedBytes > 0 && llvm::is_contained(candidates, c.layer))
      useful.push_back(c);
  std::stable_sort(useful.begin(), useful.end(), [](auto &a, auto &b) {
    return a.flops / double(a.savedBytes) < b.flops / double(b.savedBytes);
  });
  int64_t saved = 0;
  for (const LayerRecomputeCost &c : useful) {
    if (saved >= bytes)
      break;
    chosen.push_back(c.layer);
    saved += c.savedBytes;
  }
  if (saved < bytes)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "recomputing every candidate block saves " + llvm::Twine(saved) +
            " bytes per microbatch, " + llvm::Twine(bytes - saved) +
            " bytes less than needed (raise the budget, or split the model "
            "further with tp, sp or pp)");
  llvm::sort(chosen);
  return chosen;
}

llvm::Error recompute(Graph &g, const RecomputeOptions &o) {
  if (auto e = checkInput(g))
    return e;
  llvm::SmallVector<int64_t, 8> layers;
  int64_t numLayers = countLayers(g);
  if (o.mode == RecomputeMode::Full) {
    layers = o.layers;
    if (layers.empty())
      for (int64_t l = 0; l < numLayers; ++l)
        layers.push_back(l);
    for (int64_t l : layers)
      if (l < 0 || l >= numLayers)
        return err("layer " + llvm::Twine(l) +
                   " does not exist (the graph has " + llvm::Twine(numLayers) +
                   " blocks)");
  } else if (!o.layers.empty()) {
    return err("`layers` selects the blocks of mode=full (got mode=" +
               recomputeModeName(o.mode) + ")");
  }
  if (o.mode == RecomputeMode::Auto) {
    if (o.budget < 0)
      return err("mode=auto needs budget=BYTES (the stash one microbatch may "
                 "keep per device)");
    Graph regathered = o.regather ? applyClones(g, regatherBlocks(g)) : g;
    int64_t need = stashBytes(regathered) - o.budget;
    llvm::SmallVector<int64_t, 8> all;
    for (int64_t l = 0; l < numLayers; ++l)
      all.push_back(l);
    auto chosen =
        chooseRecomputeLayers(layerRecomputeCosts(regathered), all, need);
    if (!chosen)
      return err("budget " + llvm::Twine(o.budget) +
                 " bytes: " + toString(chosen.takeError()));
    layers = *chosen;
  }

  Graph out = g;
  if (!layers.empty()) {
    std::vector<CloneBlock> blocks;
    for (int64_t l : layers)
      blocks.push_back(layerBlock(g, l));
    out = applyClones(g, blocks);
  }
  if (o.regather)
    out = applyClones(out, regatherBlocks(out));
  if (o.mode == RecomputeMode::Selective)
    for (size_t i = 0; i < out.nodes().size(); ++i)
      if (out.node(i).op == OpKind::Attention && !isBackward(out.node(i)))
        out.node(i).attrs.set(kRecomputeAttr, true);
  g = std::move(out);
  return llvm::Error::success();
}

std::optional<int64_t> parseBytes(llvm::StringRef text) {
  llvm::StringRef digits =
      text.take_while([](char c) { return std::isdigit(c); });
  llvm::StringRef unit = text.drop_front(digits.size());
  int64_t n;
  if (digits.empty() || digits.getAsInteger(10, n))
    return std::nullopt;
  static const std::pair<const char *, int64_t> kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KB", 1000},
      {"MB", 1000 * 1000},
      {"GB", int64_t(1000) * 1000 * 1000},
      {"TB", int64_t(1000) * 1000 * 1000 * 1000},
      {"KiB", int64_t(1) << 10},
      {"MiB", int64_t(1) << 20},
      {"GiB", int64_t(1) << 30},
      {"TiB", int64_t(1) << 40}};
  for (auto [name, scale] : kUnits)
    if (unit == name) {
      if (n > INT64_MAX / scale)
        return std::nullopt;
      return n * scale;
    }
  return std::nullopt;
}

std::string formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = double(bytes);
  int u = 0;
  while (std::abs(v) >= 1024 && u < 5)
    v /= 1024, ++u;
  if (u == 0)
    return std::to_string(bytes) + " B";
  char buf[32];
  snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

namespace {
class RecomputePass : public Pass {
public:
  explicit RecomputePass(RecomputeOptions o) : options_(std::move(o)) {}
  llvm::StringRef name() const override { return "recompute"; }
  llvm::Expected<bool> run(Graph &g) override {
    if (auto e = recompute(g, options_))
      return e;
    return true;
  }

private:
  RecomputeOptions options_;
};
} // namespace

std::unique_ptr<Pass> createRecomputePass(RecomputeOptions options) {
  return std::make_unique<RecomputePass>(std::move(options));
}

void registerRecomputePass() {
  registerPass(
      {"recompute",
       "choose recomputed vs stashed forward values (none, selective, full, "
       "auto under a byte budget)",
       [](const PassOptions &o) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions(
                 "recompute", o, {"mode", "layers", "budget", "regather"}))
           return e;
         RecomputeOptions options;
         if (auto it = o.find("mode"); it != o.end()) {
           auto mode = parseRecomputeMode(it->second);
           if (!mode)
             return err("mode must be none, selective, full or auto (got '" +
                        it->second + "')");
           options.mode = *mode;
         }
         auto layers = intListPassOption(o, "layers", "block indices");
         if (!layers)
           return err(llvm::toString(layers.takeError()));
         options.layers.assign(layers->begin(), layers->end());
         if (auto it = o.find("budget"); it != o.end()) {
           auto bytes = parseBytes(it->second);
           if (!bytes)
             return err("budget must be a byte count such as 4096, 512MiB or "
                        "40GB (got '" +
                        it->second + "')");
           options.budget = *bytes;
         }
         if (auto it = o.find("regather"); it != o.end()) {
           if (it->second != "0" && it->second != "1")
             return err("regather must be 0 or 1 (got '" + it->second + "')");
           options.regather = it->second == "1";
         }
         return createRecomputePass(std::move(options));
       }});
}

} // namespace strata
