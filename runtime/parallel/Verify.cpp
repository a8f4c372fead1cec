//===- Verify.cpp - A parallel plan against the serial plan, numerically
//---===//
//
// Tolerance. Both plans compute the same f32 math; the parallel one splits
// sums differently (a matmul's contraction in tp partial sums plus a
// reduction over tp, the vocab-parallel softmax's sums over vocab shards,
// gradients as partial sums over dp) and changes nothing else: the dropout
// masks, RoPE positions and embedding rows are those of the global indices.
// Reordering an n-term f32 sum moves it by at most about n * 2^-24 of the sum
// of |terms| (typically sqrt(n) times less): about 1e-7 to 1e-6 of the
// largest element for the contractions of the tiny test models (n <= 256).
// The backward pass and five AdamW steps compound this a few times (AdamW's
// m / sqrt(v) is scale-free, so a relative gradient error passes through at
// most unchanged). Observed differences are 1e-8 to 1e-6; 1e-5 leaves a
// margin of 10x, while a wrong shard, a missing reduction or a different
// dropout mask shows up at 1e-3 to 1.
//
//===----------------------------------------------------------------------===//
#include "runtime/parallel/Verify.h"

#include "frontends/Models.h"
#include "runtime/parallel/RunPartitioned.h"
#include "runtime/parallel/Trainer.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <cstring>
#include <random>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Random token ids for (step, microbatch): labels are the next tokens.
BatchFn randomBatches(int64_t batch, int64_t seq, int64_t vocab, uint64_t seed,
                      const int64_t &step) {
  return [=, &step](int64_t micro, int32_t *tokens, int32_t *labels) {
    std::mt19937_64 rng(seed * 1000003 + uint64_t(step) * 1009 +
                        uint64_t(micro));
    std::uniform_int_distribution<int32_t> id(0, int32_t(vocab - 1));
    for (int64_t b = 0; b < batch; ++b) {
      int32_t next = id(rng);
      for (int64_t s = 0; s < seq; ++s) {
        tokens[b * seq + s] = next;
        next = id(rng);
        labels[b * seq + s] = next;
      }
    }
  };
}

} // namespace

/// Tensors below this fraction of their group's largest element are
/// numerically zero (see Verify.h). An analytically zero gradient (the key
/// bias's) is the rounding noise of sums over batch x sequence terms; with
/// one sequence per microbatch that noise reaches 1e-5 of the largest
/// gradient, so 1e-5 was too low a floor (verify of gpt_tiny, micro batch 1,
/// tp 2: grad.layers.1.attn.k.b at 1.05e-5). Against 1e-3 of the largest
/// element, a tolerance of 1e-5 still asks such tensors to agree to 1e-8 of
/// it, below f32's resolution (6e-8) of that element.
const double kVerifyZeroFloor = 1e-3;

namespace {

/// Compares got[i] with want[i] for every i, each against kVerifyZeroFloor of
/// the largest element of the whole group.
void compareGroup(llvm::ArrayRef<std::string> names,
                  llvm::ArrayRef<HostTensor> got,
                  llvm::ArrayRef<HostTensor> want, double tol,
                  VerifyReport &report) {
  double top = 0;
  for (const HostTensor &w : want)
    for (int64_t i = 0; i < w.numElements(); ++i)
      top = std::max(top, std::abs(w.get(i)));
  for (size_t i = 0; i < names.size(); ++i)
    report.diffs.push_back(
        compareTensors(names[i], got[i], want[i], tol, kVerifyZeroFloor * top));
}

/// A copy of `g` whose outputs are `values` (by name, in that order).
Graph withOutputs(const Graph &g, llvm::ArrayRef<std::string> values) {
  Graph c = g;
  llvm::SmallVector<ValueId, 64> outs;
  for (const std::string &n : values)
    outs.push_back(c.lookup(n));
  c.setOutputs(outs);
  return c;
}

/// Every value both microbatch programs compute under one name, in serial
/// program order, compared after the first microbatch.
llvm::Error compareValues(Trainer &serial, DeviceGroup &serialGroup,
                          Trainer &par, DeviceGroup &group,
                          const int32_t *tokens, const int32_t *labels,
                          uint64_t seed, double tol, VerifyReport &report) {
  const Graph &sg = serial.compiled().micro;
  const Graph &pg = par.compiled().micro;
  std::vector<std::string> names;
  for (const Node &n : sg.nodes())
    for (ValueId v : n.results)
      if (pg.lookup(sg.value(v).name) != kNoValue)
        names.push_back(sg.value(v).name);
  Graph s = withOutputs(sg, names), p = withOutputs(pg, names);

  auto state = serial.gatherState();
  if (!state)
    return state.takeError();
  llvm::StringMap<const HostTensor *> params;
  for (auto &[name, t] : *state)
    params[name] = &t;
  std::vector<HostTensor> inputs;
  for (ValueId v : sg.inputs()) {
    const Value &val = sg.value(v);
    if (params.count(val.name)) {
      inputs.push_back(*params[val.name]);
      continue;
    }
    HostTensor t(val.type);
    std::memcpy(t.raw(), val.name == "tokens" ? tokens : labels, t.bytes());
    inputs.push_back(std::move(t));
  }
  LaunchContext ctx;
  ctx.seed = seed;
  auto want = runPartitioned(s, serialGroup, inputs, ctx);
  if (!want)
    return want.takeError();
  auto got = runPartitioned(p, group, inputs, ctx);
  if (!got)
    return got.takeError();
  std::vector<std::string> same;
  std::vector<HostTensor> g, w;
  for (size_t i = 0; i < names.size(); ++i)
    if ((*got)[i].type() == (*want)[i].type()) {
      same.push_back(names[i]);
      g.push_back((*got)[i]);
      w.push_back((*want)[i]);
    }
  compareGroup(same, g, w, tol, report);
  return llvm::Error::success();
}
} // namespace

const TensorDiff *VerifyReport::firstFailure() const {
  for (const TensorDiff &d : diffs)
    if (!d.ok)
      return &d;
  return nullptr;
}

TensorDiff compareTensors(llvm::StringRef name, const HostTensor &got,
                          const HostTensor &want, double tolerance,
                          double floor) {
  TensorDiff d;
  d.name = name.str();
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double a = got.get(i), b = want.get(i);
    d.maxAbsDiff = std::isnan(a) != std::isnan(b)
                       ? INFINITY
                       : std::max(d.maxAbsDiff, std::abs(a - b));
    d.scale = std::max(d.scale, std::abs(b));
  }
  d.relDiff =
      d.maxAbsDiff == 0 ? 0 : d.maxAbsDiff / std::max({d.scale, floor, 1e-30});
  d.ok = d.relDiff <= tolerance;
  return d;
}

namespace {
/// AdamW's moments m and v after the first step (two groups, each against
/// its own floor): what ZeRO-1 shards, put back together. Neither the
/// parameters after a step nor the moments after a second one are compared
/// element by element: AdamW's first update is lr * g / |g| per element (its
/// bias correction makes m^ = g and v^ = g^2), so an element whose gradient
/// is within its rounding noise of zero (the key bias's, analytically zero;
/// a few of attn.o.w's) moves by +-lr in either plan and the two differ by
/// 2 lr (observed: parameters 1e-3 to 3e-3 of the largest one, tp 2 x dp 2
/// GPT, lr 1e-2; step 2's moments then 1e-5 to 7e-4). That is AdamW's
/// conditioning, not a wrong layout; each step's parameters enter the next
/// step's loss, which is compared.
llvm::Error compareMoments(Trainer &s, Trainer &p, double tol,
                           VerifyReport &report) {
  auto want = s.gatherState();
  if (!want)
    return want.takeError();
  auto got = p.gatherState();
  if (!got)
    return got.takeError();
  if (got->size() != want->size())
    return err("the plans have different parameters");
  for (llvm::StringRef prefix : {"adam_m.", "adam_v."}) {
    std::vector<std::string> names;
    std::vector<HostTensor> g, w;
    for (size_t i = 0; i < want->size(); ++i) {
      llvm::StringRef name = (*want)[i].first;
      if (!name.startswith(prefix))
        continue;
      if ((*got)[i].first != name)
        return err("the parallel plan's %" + (*got)[i].first +
                   " is in the place of the serial %" + name);
      names.push_back("step 1 " + name.str());
      g.push_back((*got)[i].second);
      w.push_back((*want)[i].second);
    }
    // v is (1 - beta2) g^2: twice the gradient's relative rounding.
    compareGroup(names, g, w, prefix == "adam_v." ? 2 * tol : tol, report);
  }
  return llvm::Error::success();
}

/// The loss and gradients of one microbatch, then the losses of o.steps
/// AdamW steps, of the serial trainer `s` and the parallel one `p` from the
/// same weights and batches.
llvm::Error compareTraining(
    Trainer &s, Trainer &p, const ModelConfig &model, const VerifyOptions &o,
    VerifyReport &report,
    llvm::function_ref<llvm::Error(const int32_t *, const int32_t *)>
        activations) {
  if (auto e = s.initParams())
    return e;
  if (auto e = p.initParams())
    return e;
  int64_t step = 0;
  BatchFn batch =
      randomBatches(model.microBatch, model.seq, model.vocab, o.dataSeed, step);
  HostTensor tk(TensorType{DType::I32, {model.microBatch, model.seq}}),
      lb = tk.clone();
  batch(0, tk.data<int32_t>(), lb.data<int32_t>());
  if (o.activations)
    if (auto e = activations(tk.data<int32_t>(), lb.data<int32_t>()))
      return e;

  auto want = s.lossAndGrads(tk.data<int32_t>(), lb.data<int32_t>());
  if (!want)
    return want.takeError();
  auto got = p.lossAndGrads(tk.data<int32_t>(), lb.data<int32_t>());
  if (!got)
    return got.takeError();
  if (got->size() != want->size())
    return err("the plans have different outputs");
  report.diffs.push_back(
      compareTensors("loss", (*got)[0].second, (*want)[0].second, o.tolerance));
  std::vector<std::string> names;
  std::vector<HostTensor> g, w;
  for (size_t i = 1; i < want->size(); ++i) {
    if ((*got)[i].first != (*want)[i].first)
      return err("the parallel plan's gradient %" + (*got)[i].first +
                 " is in the place of the serial %" + (*want)[i].first);
    names.push_back((*want)[i].first);
    g.push_back((*got)[i].second);
    w.push_back((*want)[i].second);
  }
  compareGroup(names, g, w, o.tolerance, report);

  for (step = 0; step < o.steps; ++step) {
    auto ws = s.step(batch);
    if (!ws)
      return ws.takeError();
    auto gs = p.step(batch);
    if (!gs)
      return gs.takeError();
    HostTensor w = HostTensor::scalar(ws->loss, DType::F64),
               g = HostTensor::scalar(gs->loss, DType::F64);
    report.diffs.push_back(compareTensors(
        "step " + std::to_string(step + 1) + " loss", g, w, o.tolerance));
    if (step == 0)
      if (auto e = compareMoments(s, p, o.tolerance, report))
        return e;
  }
  return llvm::Error::success();
}
} // namespace

llvm::Expected<VerifyReport> verifyParallel(const ModelConfig &model,
                                            const TrainOptions &training,
                                            const VerifyOptions &o) {
  if (o.activations && o.parallel.pipelined())
    return err("--activations compares one microbatch program; a pipelined "
               "plan has a program per stage (drop --activations, or "
               "--pp and --recompute)");
  Graph forward = buildModelGraph(model);
  ModelConfig evalModel = model;
  evalModel.dropout = 0;
  Graph eval = buildModelGraph(evalModel);
  // The serial plan: the same compiler and trainer on a mesh of one device,
  // accumulating as many microbatches.
  ParallelConfig one;
  DeviceGroupOptions cpu = o.devices;
  cpu.backend = Backend::Cpu; // the reference is always the CPU device
  auto serialGroup = DeviceGroup::inProcess(trainingMesh(one), cpu);
  if (!serialGroup)
    return serialGroup.takeError();
  auto serial = Trainer::create(forward, eval, training, one, **serialGroup);
  if (!serial)
    return serial.takeError();
  auto group =
      o.env ? DeviceGroup::multiProcess(trainingMesh(o.parallel), *o.env,
                                        o.devices)
            : DeviceGroup::inProcess(trainingMesh(o.parallel), o.devices);
  if (!group)
    return group.takeError();
  auto par = Trainer::create(forward, eval, training, o.parallel, **group);
  if (!par)
    return par.takeError();
  VerifyReport report;
  if (auto e =
          compareTraining(**serial, **par, model, o, report,
                          [&](const int32_t *tokens, const int32_t *labels) {
                            return compareValues(
                                **serial, **serialGroup, **par, **group, tokens,
                                labels, training.seed, o.tolerance, report);
                          }))
    return e;
  return report;
}

} // namespace strata
