//===- TorchParityTest.cpp - strata training vs an independent PyTorch model
//-===//
//
// test/reference/make_reference.py builds the same GPT / Llama in PyTorch from
// docs/models.md (written independently of strata), draws weights and a batch,
// and records logits, loss, every parameter gradient and the losses of 10
// AdamW steps (llm.c's test style). Here strata loads those weights, runs its
// own compiled programs, and must reproduce every number.
//
// Tolerance (f32 on both sides): |strata - torch| <= 1e-4 * max|torch| + 1e-9
// per tensor. Both compute in f32 with different summation orders (OpenBLAS
// vs torch's GEMM blocking, our double-accumulated norms), giving relative
// differences around 1e-7 (seen: 2e-7 on logits); 1e-4 leaves margin for error
// growth through two layers and 10 optimizer steps while any real bug (a wrong
// scale, a missing term, a transposed weight) is orders of magnitude larger.
// The absolute 1e-9 floor covers gradients that are zero in exact arithmetic
// (GPT's attention key bias, which softmax ignores), where both sides hold
// noise.
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/io/TensorArchive.h"
#include "runtime/parallel/TrainingSession.h"
#include "test/reference/ReferenceConfig.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata {
namespace {

constexpr double kRelTol = 1e-4, kAbsTol = 1e-9;

/// Worst |a - b| and where, against the tolerance scaled by max|b|.
::testing::AssertionResult closeTo(const HostTensor &a, const HostTensor &b,
                                   const std::string &what) {
  if (a.numElements() != b.numElements())
    return ::testing::AssertionFailure()
           << what << ": " << a.numElements() << " vs " << b.numElements()
           << " elements";
  double scale = 0, worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < b.numElements(); ++i)
    scale = std::max(scale, std::fabs(b.get(i)));
  for (int64_t i = 0; i < a.numElements(); ++i) {
    double d = std::fabs(a.get(i) - b.get(i));
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  if (worst <= kRelTol * scale + kAbsTol)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": worst |diff| " << worst << " at element " << at
         << " (strata " << a.get(at) << ", torch " << b.get(at)
         << "), max|torch| " << scale;
}

struct Reference {
  llvm::json::Object config;
  TensorArchive init, step0, train;
};

/// Loads the archives written by make_reference.py; skips when absent (the
/// CTest fixture that writes them reports the reason, e.g. no python3-torch).
std::optional<Reference> loadReference(const std::string &model) {
  std::string dir = std::string(STRATA_TORCH_REF_DIR) + "/" + model;
  auto buf = llvm::MemoryBuffer::getFile(dir + "/config.json");
  if (!buf)
    return std::nullopt;
  auto json = llvm::json::parse((*buf)->getBuffer());
  EXPECT_TRUE(bool(json)) << llvm::toString(json.takeError());
  Reference r;
  r.config = *json->getAsObject();
  for (auto [sub, archive] :
       {std::pair{"init", &r.init}, {"step0", &r.step0}, {"train", &r.train}}) {
    auto a = TensorArchive::read(dir + "/" + sub);
    EXPECT_TRUE(bool(a)) << llvm::toString(a.takeError());
    if (!a)
      return std::nullopt;
    *archive = std::move(*a);
  }
  return r;
}

TrainOptions optionsFrom(const llvm::json::Object &j) {
  TrainOptions o;
  o.schedule =
      LRSchedule{*j.getNumber("lr"), *j.getNumber("min_lr"),
                 *j.getInteger("warmup"), *j.getInteger("decay_iters")};
  o.optimizer.beta1 = *j.getNumber("beta1");
  o.optimizer.beta2 = *j.getNumber("beta2");
  o.optimizer.eps = *j.getNumber("eps");
  o.optimizer.weight_decay = *j.getNumber("weight_decay");
  o.optimizer.grad_clip = *j.getNumber("grad_clip");
  return o;
}

class TorchParity : public ::testing::TestWithParam<const char *> {};

TEST_P(TorchParity, LogitsLossGradsAndTenAdamWSteps) {
  auto ref = loadReference(GetParam());
  if (!ref)
    GTEST_SKIP() << "no PyTorch reference archives (python3-torch missing?)";
  ModelConfig cfg = test::configFrom(ref->config);
  Graph forward = buildModelGraph(cfg);
  CpuDevice dev;
  auto session = TrainingSession::create(
      forward, forward, optionsFrom(ref->config), ParallelConfig{});
  ASSERT_TRUE(bool(session)) << llvm::toString(session.takeError());
  Trainer &t = (*session)->trainer();

  // Every strata parameter comes from the reference, and vice versa.
  size_t numParams = forward.params().size();
  ASSERT_FALSE(bool(
      t.loadParams([&](llvm::StringRef n) { return ref->init.lookup(n); })));
  size_t refParams = 0;
  for (const NamedTensor &nt : ref->init.tensors())
    refParams += nt.name != "tokens" && nt.name != "labels";
  EXPECT_EQ(numParams, refParams);
  const int32_t *tokens = ref->init.lookup("tokens")->data<int32_t>();
  const int32_t *labels = ref->init.lookup("labels")->data<int32_t>();

  // Logits: the forward graph with the cross-entropy's input as its output.
  Graph logitsGraph = forward;
  const Node &ce =
      logitsGraph.node(logitsGraph.value(logitsGraph.outputs()[0]).defNode);
  ASSERT_EQ(ce.op, OpKind::CrossEntropy);
  logitsGraph.setOutputs({ce.operands[0]});
  auto logitsRun = Executable::create(logitsGraph, dev);
  ASSERT_TRUE(bool(logitsRun)) << llvm::toString(logitsRun.takeError());
  std::vector<const void *> ins;
  std::vector<void *> outs;
  for (ValueId v : logitsGraph.inputs()) {
    const std::string &n = logitsGraph.value(v).name;
    ins.push_back(ref->init.lookup(n)->raw());
  }
  ASSERT_FALSE(bool((*logitsRun)->run(ins, outs)));
  HostTensor logits(logitsGraph.type(logitsGraph.outputs()[0]));
  std::memcpy(logits.raw(), outs[0], logits.bytes());
  EXPECT_TRUE(closeTo(logits, *ref->step0.lookup("logits"), "logits"));

  // Loss and every gradient.
  auto lg = t.lossAndGrads(tokens, labels);
  ASSERT_TRUE(bool(lg)) << llvm::toString(lg.takeError());
  size_t grads = 0;
  for (auto &[name, tensor] : *lg) {
    const std::string &refName = name; // the trainer names the loss "loss"
    const HostTensor *want = ref->step0.lookup(refName);
    ASSERT_NE(want, nullptr) << "reference lacks " << refName;
    EXPECT_TRUE(closeTo(tensor, *want, refName));
    grads += llvm::StringRef(name).startswith("grad.");
  }
  EXPECT_EQ(grads, numParams);

  // Ten AdamW steps on the same batch: the loss before each update, then the
  // final parameters.
  const HostTensor &losses = *ref->train.lookup("losses");
  HostTensor ours(losses.type());
  for (int64_t s = 0; s < losses.numElements(); ++s) {
    auto st = t.step([&](int64_t, int32_t *tk, int32_t *lb) {
      std::memcpy(tk, tokens, cfg.microBatch * cfg.seq * 4);
      std::memcpy(lb, labels, cfg.microBatch * cfg.seq * 4);
    });
    ASSERT_TRUE(bool(st)) << llvm::toString(st.takeError());
    ours.set(s, st->loss);
    if (const HostTensor *norms = ref->train.lookup("grad_norm")) {
      EXPECT_NEAR(st->gradNorm, norms->get(s), 1e-4 * norms->get(s))
          << "step " << s;
    }
  }
  EXPECT_TRUE(closeTo(ours, losses, "losses of 10 AdamW steps"));
  auto state = t.gatherState();
  ASSERT_TRUE(bool(state)) << llvm::toString(state.takeError());
  size_t finals = 0;
  for (auto &[name, tensor] : *state) {
    if (llvm::StringRef(name).startswith("adam_"))
      continue;
    EXPECT_TRUE(
        closeTo(tensor, *ref->train.lookup("final." + name), "final." + name));
    ++finals;
  }
  EXPECT_EQ(finals, numParams);
}

INSTANTIATE_TEST_SUITE_P(Models, TorchParity,
                         ::testing::Values("gpt_tiny", "llama_tiny"));

} // namespace
} // namespace strata
