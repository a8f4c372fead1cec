//===- VocabParallel.cpp - Embedding and cross-entropy over a split vocab
//--===//
//
// Megatron's vocab-parallel layers (Shoeybi et al. 2019, section 3):
//  - gather over a table whose rows are split over tp: each rank looks up the
//    ids it owns (the kernel masks the others to zero rows, its vocab_start
//    being its block of the table's dim 0), so the result is a partial sum
//    over tp, reduced by whoever needs it whole (the embedding all_reduce).
//  - scatter_add (the embedding gradient) into rows split as the consumers
//    want (the hint: the gradient output takes the table's layout): each
//    rank adds the ids it owns; ids split over dp make a partial sum over dp.
//  - cross_entropy over logits whose vocab dim is split over tp never gathers
//    the logits:  m = all_reduce_max(max_local(x));  z = x - m;
//    se = all_reduce_sum(sum_local(exp z));  t = all_reduce_sum(z[label]
//    picked by the rank owning the label);  loss = mean(log se - t).
//    Its gradient reuses z, exp z and se from the forward:
//    dx = (exp z / se - one_hot(label)) * dloss / N, one_hot local to the
//    rank's vocab block.
// A batch split over dp makes the mean loss a partial sum over dp (each rank
// contributes its mean over its rows divided by the ways).
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Handlers.h"

namespace strata::spmd {

namespace {
StrList list(const DimAxes &axes) { return StrList(axes.begin(), axes.end()); }

/// Every axis splitting some dim of `dims`.
DimAxes allAxes(const Dims &dims) {
  DimAxes out;
  for (const DimAxes &d : dims)
    out.append(d.begin(), d.end());
  return out;
}

/// The layout of a cross-entropy node: logits' (or labels') batch splits and
/// logits' vocab split; logits and labels are resharded to it.
struct CeLayout {
  Dims batch;
  DimAxes vocab;
  ValueId logits, labels;
};

llvm::Expected<CeLayout> ceLayout(Partitioner &p, unsigned logitsIdx) {
  ValueId lg = p.operand(logitsIdx), lb = p.operand(logitsIdx + 1);
  const Sharding &sl = p.sharding(lg), &sb = p.sharding(lb);
  CeLayout c;
  c.vocab = sl.dims.back();
  c.batch.assign(sl.dims.begin(), sl.dims.end() - 1);
  for (size_t d = 0; d < c.batch.size(); ++d) {
    bool taken = llvm::any_of(sb.dims[d], [&](const std::string &a) {
      return usesAxis(c.batch, a) || llvm::is_contained(c.vocab, a);
    });
    if (c.batch[d].empty() && !taken)
      c.batch[d] = sb.dims[d];
  }
  Dims full = c.batch;
  full.push_back(c.vocab);
  auto l = p.reshard(lg, makeSharding(full), "cross-entropy (logits)");
  if (!l)
    return l.takeError();
  auto b = p.reshard(lb, makeSharding(c.batch), "cross-entropy (labels)");
  if (!b)
    return b.takeError();
  c.logits = *l;
  c.labels = *b;
  return c;
}

/// z = x - max, e = exp z and se = sum exp z (keepdim) over the vocab
/// shards; memoized per (logits, labels) for the gradient.
llvm::Expected<llvm::SmallVector<ValueId, 3>>
softmaxStats(Partitioner &p, const CeLayout &c, unsigned logitsIdx) {
  const Node &n = p.node();
  auto key = std::make_pair(n.operands[logitsIdx], n.operands[logitsIdx + 1]);
  if (auto it = p.memo.find(key); it != p.memo.end())
    return it->second;
  Dims kept = c.batch;
  kept.emplace_back();
  Sharding rowsS = makeSharding(kept);
  Dims full = c.batch;
  full.push_back(c.vocab);
  Sharding fullS = makeSharding(full);
  Attrs lastDim{{"axes", IntList{-1}}, {"keepdim", true}};
  auto lmax = p.emit1(OpKind::ReduceMax, {c.logits}, lastDim, rowsS);
  if (!lmax)
    return lmax.takeError();
  auto gmax =
      p.emit1(OpKind::AllReduce, {*lmax},
              {{"axes", list(c.vocab)},
               {"reduce", std::string("max")},
               {"reason", std::string("vocab-parallel cross-entropy: max "
                                      "logit over the vocab shards")},
               {"src", n.scope}},
              rowsS);
  if (!gmax)
    return gmax.takeError();
  auto z = p.emit1(OpKind::Sub, {c.logits, *gmax}, {}, fullS);
  if (!z)
    return z.takeError();
  auto e = p.emit1(OpKind::Exp, {*z}, {}, fullS);
  if (!e)
    return e.takeError();
  auto lsum = p.emit1(OpKind::ReduceSum, {*e}, lastDim, rowsS);
  if (!lsum)
    return lsum.takeError();
  auto se =
      p.emit1(OpKind::AllReduce, {*lsum},
              {{"axes", list(c.vocab)},
               {"reduce", std::string("sum")},
               {"reason", std::string("vocab-parallel cross-entropy: sum of "
                                      "exp over the vocab shards")},
               {"src", n.scope}},
              rowsS);
  if (!se)
    return se.takeError();
  llvm::SmallVector<ValueId, 3> stats{*z, *e, *se};
  p.memo[key] = stats;
  return stats;
}
} // namespace

llvm::Error partitionGather(Partitioner &p) {
  const Node &n = p.node();
  ValueId table = p.operand(0), ids = p.operand(1);
  const Sharding &st = p.sharding(table);
  Sharding idsS = p.sharding(ids);
  idsS.partial.clear();
  for (DimAxes &axes : idsS.dims)
    if (llvm::any_of(
            axes, [&](const std::string &a) { return usesAxis(st.dims, a); }))
      axes.clear();
  auto r = p.reshard(ids, idsS, "gather (ids; the table's axes are taken)");
  if (!r)
    return r.takeError();
  Sharding result = idsS;
  result.dims.push_back(st.dims[1]);
  result.partial = st.partial;
  result.partial.append(st.dims[0].begin(), st.dims[0].end());
  auto out = p.emitResults(n.op, {table, *r}, n.attrs, {result});
  if (!out)
    return out.takeError();
  if (!st.dims[0].empty())
    p.setOrigin(out->front(), {"vocab-parallel embedding lookup (table rows "
                               "split over " +
                                   axesStr(st.dims[0]) + ")",
                               n.scope});
  else
    inheritOrigin(p, {table}, out->front());
  return llvm::Error::success();
}

llvm::Error partitionScatterAdd(Partitioner &p) {
  const Node &n = p.node();
  ValueId dy = p.operand(0), ids = p.operand(1);
  const Sharding &sd = p.sharding(dy), &si = p.sharding(ids);
  const TensorType &rt = p.resultType();
  DimAxes hidden = sd.dims.back();
  DimAxes rows;
  if (const Dims *h = p.hint()) {
    const DimAxes &want = (*h)[0];
    bool clash = llvm::any_of(want, [&](const std::string &a) {
      return llvm::is_contained(hidden, a);
    });
    if (!clash && rt.shape[0] % groupSize(p.mesh(), want) == 0)
      rows = want;
  }
  auto taken = [&](const DimAxes &axes, const Dims &batch) {
    return llvm::any_of(axes, [&](const std::string &a) {
      return llvm::is_contained(rows, a) || llvm::is_contained(hidden, a) ||
             usesAxis(batch, a);
    });
  };
  Dims batch(si.dims.size());
  for (size_t d = 0; d < batch.size(); ++d) {
    if (!taken(sd.dims[d], batch))
      batch[d] = sd.dims[d];
    else if (!taken(si.dims[d], batch))
      batch[d] = si.dims[d];
  }
  DimAxes pass = sd.partial;
  llvm::erase_if(pass, [&](const std::string &a) {
    return llvm::is_contained(rows, a) || llvm::is_contained(hidden, a) ||
           usesAxis(batch, a);
  });
  Dims dyDims = batch;
  dyDims.push_back(hidden);
  Sharding dyS = makeSharding(dyDims);
  dyS.partial = pass;
  auto x = p.reshard(dy, dyS, "scatter_add (dy)");
  if (!x)
    return x.takeError();
  auto i = p.reshard(ids, makeSharding(batch), "scatter_add (ids)");
  if (!i)
    return i.takeError();
  DimAxes summed = allAxes(batch);
  Sharding result = makeSharding({rows, hidden});
  result.partial = pass;
  result.partial.append(summed.begin(), summed.end());
  Attrs attrs = n.attrs;
  attrs.set("rows", rt.shape[0] / groupSize(p.mesh(), rows));
  auto out = p.emitResults(n.op, {*x, *i}, std::move(attrs), {result});
  if (!out)
    return out.takeError();
  if (!summed.empty())
    p.setOrigin(
        out->front(),
        {"scatter_add over ids split over " + axesStr(summed), n.scope});
  else
    inheritOrigin(p, {*x}, out->front());
  return llvm::Error::success();
}

llvm::Error partitionCrossEntropy(Partitioner &p) {
  const Node &n = p.node();
  auto c = ceLayout(p, 0);
  if (!c)
    return c.takeError();
  DimAxes batchAxes = allAxes(c->batch);
  Sharding scalar = Sharding::replicated(0);
  const std::string name = p.src().value(n.results[0]).name;
  ValueId loss;
  if (c->vocab.empty()) {
    auto r = p.emit(n.op, {c->logits, c->labels}, n.attrs, {scalar},
                    {batchAxes.empty() ? name : p.freshName(name + ".local")});
    if (!r)
      return r.takeError();
    loss = r->front();
  } else {
    auto stats = softmaxStats(p, *c, 0);
    if (!stats)
      return stats.takeError();
    Sharding rowsS = makeSharding(c->batch);
    Dims kept = c->batch;
    kept.emplace_back();
    Sharding keptS = makeSharding(kept);
    auto tl = p.emit1(OpKind::PickLabel, {(*stats)[0], c->labels}, {}, rowsS);
    if (!tl)
      return tl.takeError();
    auto t =
        p.emit1(OpKind::AllReduce, {*tl},
                {{"axes", list(c->vocab)},
                 {"reduce", std::string("sum")},
                 {"reason", std::string("vocab-parallel cross-entropy: "
                                        "target logit from the rank owning "
                                        "the label")},
                 {"src", n.scope}},
                rowsS);
    if (!t)
      return t.takeError();
    Shape keptShape = p.type((*stats)[2]).shape;
    auto t1 = p.emit1(OpKind::Reshape, {*t},
                      {{"shape", IntList(keptShape.begin(), keptShape.end())}},
                      keptS);
    if (!t1)
      return t1.takeError();
    auto lse = p.emit1(OpKind::Log, {(*stats)[2]}, {}, keptS);
    if (!lse)
      return lse.takeError();
    auto nll = p.emit1(OpKind::Sub, {*lse, *t1}, {}, keptS);
    if (!nll)
      return nll.takeError();
    auto mean =
        p.emit1(OpKind::ReduceMean, {*nll}, {}, scalar,
                batchAxes.empty() ? name : p.freshName(name + ".local"));
    if (!mean)
      return mean.takeError();
    loss = *mean;
  }
  if (!batchAxes.empty()) {
    Sharding partial = scalar;
    partial.partial = batchAxes;
    auto r = p.emit(OpKind::Scale, {loss},
                    {{"value", 1.0 / double(groupSize(p.mesh(), batchAxes))}},
                    {partial}, {name});
    if (!r)
      return r.takeError();
    loss = r->front();
    p.setOrigin(
        loss, {"the mean loss over the batch split over " + axesStr(batchAxes),
               n.scope});
  }
  return p.bind(0, loss);
}

llvm::Error partitionCrossEntropyGrad(Partitioner &p) {
  const Node &n = p.node();
  auto dloss = p.reshard(p.operand(0), Sharding::replicated(0),
                         "cross_entropy_grad (dloss)");
  if (!dloss)
    return dloss.takeError();
  auto c = ceLayout(p, 1);
  if (!c)
    return c.takeError();
  Dims full = c->batch;
  full.push_back(c->vocab);
  Sharding fullS = makeSharding(full), scalar = Sharding::replicated(0);
  DimAxes batchAxes = allAxes(c->batch);
  const std::string name = p.src().value(n.results[0]).name;
  if (c->vocab.empty()) {
    // The kernel divides by the local row count; the mean is over all rows.
    ValueId scaled = *dloss;
    if (!batchAxes.empty()) {
      auto r = p.emit(OpKind::Scale, {*dloss},
                      {{"value", 1.0 / double(groupSize(p.mesh(), batchAxes))}},
                      {scalar});
      if (!r)
        return r.takeError();
      scaled = r->front();
    }
    return p.emitResults(n.op, {scaled, c->logits, c->labels}, n.attrs, {fullS})
        .takeError();
  }
  auto stats = softmaxStats(p, *c, 1);
  if (!stats)
    return stats.takeError();
  auto sm = p.emit1(OpKind::Div, {(*stats)[1], (*stats)[2]}, {}, fullS);
  if (!sm)
    return sm.takeError();
  int64_t classes = p.type(c->logits).shape.back();
  auto oh = p.emit1(OpKind::OneHot, {c->labels},
                    {{"classes", classes},
                     {"dtype", dtypeName(p.type(c->logits).dtype).str()}},
                    fullS);
  if (!oh)
    return oh.takeError();
  auto d = p.emit1(OpKind::Sub, {*sm, *oh}, {}, fullS);
  if (!d)
    return d.takeError();
  double rows = double(p.src().type(n.operands[2]).numElements());
  auto scale =
      p.emit1(OpKind::Scale, {*dloss}, {{"value", 1.0 / rows}}, scalar);
  if (!scale)
    return scale.takeError();
  auto dx = p.emit1(OpKind::Mul, {*d, *scale}, {}, fullS, name);
  if (!dx)
    return dx.takeError();
  return p.bind(0, *dx);
}

} // namespace strata::spmd
