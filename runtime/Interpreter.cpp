//===- Interpreter.cpp - Runs one graph on one device ----------------------===//
#include "runtime/Interpreter.h"

#include <algorithm>

namespace strata {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Expected<std::unique_ptr<Interpreter>>
Interpreter::create(const Graph &g, Device &device) {
  for (const Node &n : g.nodes())
    if (!device.supports(g, n))
      return err("device " + device.name() + " has no kernel for '" +
                 opName(n.op) + "' (" + n.scope + ")");
  if (auto e = device.prepare(g)) return e;
  std::unique_ptr<Interpreter> interp(new Interpreter(g, device));
  interp->planArena();
  return interp;
}

Interpreter::~Interpreter() {
  if (arena_) dev_.deallocate(arena_);
}

void Interpreter::planArena() {
  // A reshape's result is its operand's bytes: it aliases the operand's
  // storage (root_) and is never launched. Values are written once, by their
  // node, so sharing storage between a value and its reshapes is safe.
  root_.resize(g_.numValues());
  for (ValueId v = 0; v < ValueId(g_.numValues()); ++v) root_[v] = v;
  for (const Node &n : g_.nodes())
    if (n.op == OpKind::Reshape) root_[n.results[0]] = root_[n.operands[0]];
  // Live interval [def node, last use node] of every stored value, over the
  // uses of all its aliases; outputs live to the end. Intervals are
  // inclusive, so a result never shares memory with an operand of its node.
  const int64_t end = static_cast<int64_t>(g_.nodes().size());
  struct Interval { ValueId v; int64_t first, last, bytes; };
  std::vector<int64_t> last(g_.numValues(), -1);
  for (int64_t n = 0; n < end; ++n)
    for (ValueId v : g_.node(n).operands) last[root_[v]] = n;
  for (ValueId v : g_.outputs()) last[root_[v]] = end;
  std::vector<Interval> intervals;
  for (int64_t n = 0; n < end; ++n)
    for (ValueId v : g_.node(n).results) {
      if (root_[v] != v) continue;
      int64_t bytes = (g_.type(v).bytes() + 63) / 64 * 64;
      intervals.push_back({v, n, std::max(last[v], n), bytes});
    }
  std::sort(intervals.begin(), intervals.end(), [](auto &a, auto &b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.first < b.first;
  });
  offset_.assign(g_.numValues(), -1);
  std::vector<const Interval *> placed;
  for (const Interval &iv : intervals) {
    // Offsets taken by overlapping placed intervals, sorted; first fit.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Interval *p : placed)
      if (p->first <= iv.last && iv.first <= p->last)
        busy.push_back({offset_[p->v], offset_[p->v] + p->bytes});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto [lo, hi] : busy) {
      if (off + iv.bytes <= lo) break;
      off = std::max(off, hi);
    }
    offset_[iv.v] = off;
    arenaBytes_ = std::max(arenaBytes_, off + iv.bytes);
    placed.push_back(&iv);
  }
  if (arenaBytes_) arena_ = dev_.allocate(arenaBytes_);
}

llvm::Error Interpreter::run(llvm::ArrayRef<const void *> inputs,
                             std::vector<void *> &outputs,
                             const LaunchContext &ctx) {
  if (inputs.size() != g_.inputs().size())
    return err("graph @" + g_.name + " takes " +
               llvm::Twine(g_.inputs().size()) + " inputs, got " +
               llvm::Twine(inputs.size()));
  std::vector<void *> ptr(g_.numValues(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    ptr[g_.inputs()[i]] = const_cast<void *>(inputs[i]);
  for (size_t v = 0; v < ptr.size(); ++v)
    if (offset_[v] >= 0) ptr[v] = static_cast<char *>(arena_) + offset_[v];
  for (size_t v = 0; v < ptr.size(); ++v) ptr[v] = ptr[root_[v]];
  llvm::SmallVector<const void *, 8> ops;
  llvm::SmallVector<void *, 4> res;
  for (const Node &n : g_.nodes()) {
    if (n.op == OpKind::Reshape) continue;  // aliases its operand
    ops.clear();
    res.clear();
    for (ValueId v : n.operands) ops.push_back(ptr[v]);
    for (ValueId v : n.results) res.push_back(ptr[v]);
    dev_.launch(g_, n, ops, res, ctx);
  }
  if (auto e = dev_.synchronize()) return e;
  outputs.clear();
  for (ValueId v : g_.outputs()) outputs.push_back(ptr[v]);
  return llvm::Error::success();
}

llvm::Expected<std::vector<HostTensor>>
Interpreter::runHost(llvm::ArrayRef<HostTensor> inputs,
                     const LaunchContext &ctx) {
  if (inputs.size() != g_.inputs().size())
    return err("graph @" + g_.name + " takes " +
               llvm::Twine(g_.inputs().size()) + " inputs, got " +
               llvm::Twine(inputs.size()));
  std::vector<void *> bufs;
  auto freeAll = [&] {
    for (void *b : bufs) dev_.deallocate(b);
  };
  std::vector<const void *> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value &v = g_.value(g_.inputs()[i]);
    if (inputs[i].type() != v.type) {
      freeAll();
      return err("input %" + v.name + " wants " + v.type.str() + ", got " +
                 inputs[i].type().str());
    }
    void *b = dev_.allocate(std::max<int64_t>(v.type.bytes(), 1));
    bufs.push_back(b);
    dev_.copyFromHost(b, inputs[i].raw(), v.type.bytes());
    ins.push_back(b);
  }
  std::vector<void *> outs;
  if (auto e = run(ins, outs, ctx)) {
    freeAll();
    return e;
  }
  std::vector<HostTensor> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    HostTensor t(g_.type(g_.outputs()[i]));
    dev_.copyToHost(t.raw(), outs[i], t.bytes());
    result.push_back(std::move(t));
  }
  llvm::Error e = dev_.synchronize();
  freeAll();
  if (e) return e;
  return result;
}

} // namespace strata
