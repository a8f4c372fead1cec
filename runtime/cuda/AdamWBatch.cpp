//===- AdamWBatch.cpp - Every AdamW update of a program in one launch -----===//
#include "runtime/cuda/AdamWBatch.h"

#include <algorithm>
#include <cstring>

namespace strata::cuda {

namespace {

/// Elements per chunk: a block's share of a tensor. Small enough that a
/// large tensor spreads over many blocks, large enough that the chunk
/// table stays small (16 bytes per chunk).
constexpr int64_t kChunk = 32768;
/// Tables kept uploaded; past this the stream is drained and they go.
constexpr size_t kMaxTables = 16;

/// Kernel parameters of adamw_multi are its table's pointers, not tensors:
/// the table lives in device memory.
static_assert(sizeof(AdamWTensor) == 8 * 8 + 5 * 8, "StrataAdamwTensor");
static_assert(sizeof(AdamWChunk) == 16, "StrataAdamwChunk");

} // namespace

llvm::DenseMap<const Node *, const Node *> foldableMuls(const Graph &g) {
  llvm::DenseMap<const Node *, const Node *> folds;
  auto users = g.users();
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::AdamWUpdate || n.operands.size() != 6)
      continue;
    ValueId grad = n.operands[1];
    const Value &v = g.value(grad);
    if (v.isInput() || users[grad].size() != 1 ||
        llvm::is_contained(g.outputs(), grad))
      continue;
    const Node &mul = g.node(v.defNode);
    if (mul.op != OpKind::Mul || mul.operands.size() != 2)
      continue;
    const TensorType &x = g.type(mul.operands[0]),
                     &s = g.type(mul.operands[1]);
    if (s.numElements() == 1 && s.dtype == x.dtype && x == v.type)
      folds[&mul] = &n;
  }
  return folds;
}

AdamWBatch::~AdamWBatch() {
  for (auto &t : tables_)
    llvm::consumeError(kernels_.driver().free(t.second));
}

static AdamWBatch::Range rangeOf(const void *p, int64_t bytes) {
  auto b = reinterpret_cast<uintptr_t>(p);
  return {b, b + uintptr_t(std::max<int64_t>(bytes, 1))};
}

bool AdamWBatch::overlaps(llvm::ArrayRef<Range> reads,
                          llvm::ArrayRef<Range> writes) const {
  auto hit = [](Range a, llvm::ArrayRef<Range> bs) {
    return llvm::any_of(
        bs, [&](Range b) { return a.begin < b.end && b.begin < a.end; });
  };
  for (const PendingMul &m : muls_) {
    for (Range r : reads)
      if (hit(r, m.write))
        return true;
    for (Range w : writes)
      if (hit(w, m.reads) || hit(w, m.write))
        return true;
  }
  for (Range r : reads)
    if (hit(r, writes_))
      return true;
  for (Range w : writes)
    if (hit(w, reads_) || hit(w, writes_))
      return true;
  return false;
}

bool AdamWBatch::conflicts(const Graph &g, const Node &node,
                           llvm::ArrayRef<const void *> operands,
                           llvm::ArrayRef<void *> results,
                           StreamHandle stream) const {
  if (empty())
    return false;
  if (stream != stream_)
    return true;
  llvm::SmallVector<Range, 8> reads, writes;
  for (size_t i = 0; i < operands.size(); ++i)
    reads.push_back(rangeOf(operands[i], g.type(node.operands[i]).bytes()));
  for (size_t i = 0; i < results.size(); ++i)
    writes.push_back(rangeOf(results[i], g.type(node.results[i]).bytes()));
  return overlaps(reads, writes);
}

llvm::Expected<bool>
AdamWBatch::take(const Graph &g, const Node &node,
                 llvm::ArrayRef<const void *> operands,
                 llvm::ArrayRef<void *> results, const LaunchContext &ctx,
                 StreamHandle stream,
                 const llvm::DenseMap<const Node *, const Node *> *folds) {
  if (node.op == OpKind::Mul) {
    if (!folds)
      return false;
    auto it = folds->find(&node);
    if (it == folds->end())
      return false;
    if (conflicts(g, node, operands, results, stream))
      if (auto e = flush())
        return e;
    stream_ = stream;
    const TensorType &x = g.type(node.operands[0]);
    PendingMul m{&node,
                 it->second,
                 operands[0],
                 operands[1],
                 results[0],
                 ctx,
                 {rangeOf(operands[0], x.bytes()),
                  rangeOf(operands[1], g.type(node.operands[1]).bytes())},
                 rangeOf(results[0], x.bytes())};
    muls_.push_back(std::move(m));
    return true;
  }
  if (node.op != OpKind::AdamWUpdate || node.operands.size() != 6 ||
      !opLauncher(g, node))
    return false;
  DType dt = g.type(node.operands[0]).dtype;
  for (ValueId v : node.operands)
    if (g.type(v).dtype != dt)
      return false;
  if ((!empty() && stream != stream_) ||
      (!members_.empty() &&
       (dt != dtype_ || operands[4] != lr_ || operands[5] != step_)))
    if (auto e = flush())
      return e;
  AdamWTensor t{operands[0], operands[1], operands[2], operands[3],
                results[0],  results[1],  results[2],  nullptr,
                g.type(node.operands[0]).numElements(),
                node.attrs.getFloat("beta1", 0.9),
                node.attrs.getFloat("beta2", 0.999),
                node.attrs.getFloat("eps", 1e-8),
                node.attrs.getFloat("weight_decay", 0.0)};
  int64_t bytes = g.type(node.operands[0]).bytes(),
          scalar = g.type(node.operands[4]).bytes();
  llvm::SmallVector<Range, 8> reads{
      rangeOf(t.p, bytes), rangeOf(t.m, bytes), rangeOf(t.v, bytes),
      rangeOf(operands[4], scalar), rangeOf(operands[5], scalar)};
  auto mine = llvm::find_if(
      muls_, [&](const PendingMul &m) { return m.update == &node; });
  if (mine != muls_.end()) { // the gradient's mul, folded
    t.g = mine->x;
    t.factor = mine->factor;
    reads.append(mine->reads.begin(), mine->reads.end());
    muls_.erase(mine);
  } else {
    reads.push_back(rangeOf(t.g, bytes));
  }
  Range writes[] = {rangeOf(t.pOut, bytes), rangeOf(t.mOut, bytes),
                    rangeOf(t.vOut, bytes)};
  if (!empty() && overlaps(reads, writes))
    if (auto e = flush())
      return e;
  stream_ = stream;
  dtype_ = dt;
  lr_ = operands[4];
  step_ = operands[5];
  members_.push_back(t);
  reads_.insert(reads_.end(), reads.begin(), reads.end());
  reads_.insert(reads_.end(), std::begin(writes), std::end(writes));
  writes_.insert(writes_.end(), std::begin(writes), std::end(writes));
  return true;
}

llvm::Error AdamWBatch::upload(llvm::ArrayRef<char> table, DevicePtr &ptr) {
  for (auto &t : tables_)
    if (llvm::ArrayRef<char>(t.first) == table) {
      ptr = t.second;
      return llvm::Error::success();
    }
  Driver &driver = kernels_.driver();
  if (tables_.size() >= kMaxTables) { // queued launches may still read them
    if (auto e = driver.synchronize(stream_))
      return e;
    for (auto &t : tables_)
      if (auto e = driver.free(t.second))
        return e;
    tables_.clear();
  }
  auto p = driver.allocate(int64_t(table.size()));
  if (!p)
    return p.takeError();
  tables_.emplace_back(std::vector<char>(table.begin(), table.end()), *p);
  ptr = *p;
  // The host copy lives with the table, until after the copy has run.
  return driver.copyToDevice(*p, tables_.back().first.data(),
                             int64_t(table.size()), stream_);
}

llvm::Error AdamWBatch::flush() {
  std::vector<PendingMul> muls = std::move(muls_);
  std::vector<AdamWTensor> members = std::move(members_);
  muls_.clear();
  members_.clear();
  reads_.clear();
  writes_.clear();
  for (const PendingMul &m : muls)
    if (auto e = runMul_(*m.mul, {m.x, m.factor}, m.result, m.ctx))
      return e;
  if (members.empty())
    return llvm::Error::success();
  std::vector<AdamWChunk> chunks;
  for (size_t i = 0; i < members.size(); ++i)
    for (int64_t b = 0; b < members[i].n; b += kChunk)
      chunks.push_back({int64_t(i), b});
  if (chunks.empty())
    return llvm::Error::success(); // every tensor is empty
  std::vector<char> table(members.size() * sizeof(AdamWTensor) +
                          chunks.size() * sizeof(AdamWChunk));
  std::memcpy(table.data(), members.data(),
              members.size() * sizeof(AdamWTensor));
  std::memcpy(table.data() + members.size() * sizeof(AdamWTensor),
              chunks.data(), chunks.size() * sizeof(AdamWChunk));
  DevicePtr dev = 0;
  if (auto e = upload(table, dev))
    return e;
  auto f = kernels_.kernel(dtype_ == DType::F64 ? "strata_adamw_multi_f64"
                                                : "strata_adamw_multi_f32");
  if (!f)
    return f.takeError();
  DevicePtr tensors = dev,
            chunkTable = dev + members.size() * sizeof(AdamWTensor);
  long long numChunks = (long long)chunks.size(), chunk = kChunk;
  const void *lr = lr_, *step = step_;
  void *params[] = {&tensors, &chunkTable, &numChunks, &chunk, &lr, &step};
  unsigned blocks = unsigned(std::min<int64_t>(numChunks, 65535));
  ++launches_;
  return kernels_.driver().launch(*f, {blocks, 1, 1}, {256, 1, 1}, 0, stream_,
                                  params);
}

} // namespace strata::cuda
