//===- BadInputTest.cpp - strata on bad input: errors, no output ----------===//
//
// Each case runs the real binary in a fresh directory `$D` holding the case's
// files, and checks: exit code 1, stderr starting with the located prefix
// (`file:line:col: error:` where the input has lines), a fragment of the
// message, and that `$D/out.plan` was not written.
//
//===----------------------------------------------------------------------===//
#include "RunStrata.h"

#include "llvm/ADT/StringExtras.h"

using namespace strata::test;

namespace {

struct BadInput {
  const char *name;
  std::vector<std::pair<std::string, std::string>> files; // name -> contents()
  std::vector<std::string> args; // `$D` = the case's directory
  std::string prefix;            // stderr starts with this (`$D` expanded)
  std::string fragment;          // and contains this
};

std::string expand(std::string s, const std::string &dir) {
  for (size_t at; (at = s.find("$D")) != std::string::npos;)
    s.replace(at, 2, dir);
  return s;
}

/// Bytes of a valid plan, compiled once.
const std::string &validPlan() {
  static const std::string bytes = [] {
    TempDir dir;
    RunResult r =
        runStrata({"compile", example("gpt_tiny"), "-o", dir.path("ok.plan")});
    EXPECT_EQ(r.rc, 0) << r.err;
    return slurp(dir.path("ok.plan"));
  }();
  return bytes;
}

/// File contents: "@truncated-plan" and "@newer-plan" stand for a valid plan
/// cut in half and one whose header claims format version 99.
std::string contents(const std::string &spec) {
  if (spec == "@truncated-plan")
    return validPlan().substr(0, validPlan().size() / 2);
  if (spec == "@newer-plan") {
    std::string bytes = validPlan();
    bytes[8] = 99; // header format version (u32 little-endian at offset 8)
    return bytes;
  }
  return spec;
}

const char *kValidSpec = "family: GPT\nvocab_size: 65\nhidden: 64\nlayers: 2\n"
                         "heads: 4\nseq_len: 16\n";

std::vector<BadInput> cases() {
  std::string spec = kValidSpec;
  std::vector<std::string> compileBad = {"compile", "$D/bad.textproto", "-o",
                                         "$D/out.plan"};
  return {
      {"malformed_textproto",
       {{"bad.textproto", "family: GPT {\n"}},
       compileBad,
       "$D/bad.textproto:1:13: error: ",
       "Expected identifier"},
      {"unknown_field",
       {{"bad.textproto", spec + "hiden: 64\n"}},
       compileBad,
       "$D/bad.textproto:7:1: error: ",
       "unknown field 'hiden' (did you mean 'hidden'?)"},
      {"wrong_type",
       {{"bad.textproto", spec + "micro_batch: \"four\"\n"}},
       compileBad,
       "$D/bad.textproto:7:14: error: ",
       "Expected integer"},
      {"negative_size",
       {{"bad.textproto",
         "family: GPT\nvocab_size: 65\nhidden: -64\nlayers: 2\n"
         "heads: 4\nseq_len: 16\n"}},
       compileBad,
       "$D/bad.textproto:3:1: error: ",
       "hidden must be positive, got -64"},
      {"zero_layers",
       {{"bad.textproto", "family: GPT\nvocab_size: 65\nhidden: 64\nlayers: 0\n"
                          "heads: 4\nseq_len: 16\n"}},
       compileBad,
       "$D/bad.textproto:4:1: error: ",
       "layers must be positive, got 0"},
      {"heads_not_dividing_hidden",
       {{"bad.textproto", "family: GPT\nvocab_size: 65\nhidden: 64\nlayers: 2\n"
                          "heads: 5\nseq_len: 16\n"}},
       compileBad,
       "$D/bad.textproto:5:1: error: ",
       "heads (5) must divide hidden (64)"},
      {"kv_heads_not_dividing_heads",
       {{"bad.textproto",
         "family: LLAMA\nvocab_size: 65\nhidden: 64\nlayers: 2\n"
         "heads: 4\nkv_heads: 3\nseq_len: 16\n"}},
       compileBad,
       "$D/bad.textproto:6:1: error: ",
       "kv_heads (3) must divide heads (4)"},
      {"odd_head_dim_for_rope",
       {{"bad.textproto",
         "family: LLAMA\nvocab_size: 65\nhidden: 36\nlayers: 2\n"
         "heads: 4\nseq_len: 16\n"}},
       compileBad,
       "$D/bad.textproto:5:1: error: ",
       "head_dim = hidden / heads = 9 must be even"},
      {"missing_family",
       {{"bad.textproto", "vocab_size: 65\nhidden: 64\nlayers: 2\nheads: 4\n"
                          "seq_len: 16\n"}},
       compileBad,
       "$D/bad.textproto: error: ",
       "missing required field 'family'"},
      {"missing_file",
       {},
       compileBad,
       "$D/bad.textproto: error: ",
       "cannot read model spec: No such file or directory"},
      {"directory_instead_of_file",
       {{"dir.textproto/x", ""}},
       {"compile", "$D/dir.textproto", "-o", "$D/out.plan"},
       "$D/dir.textproto: error: ",
       "Is a directory"},
      {"truncated_plan",
       {{"t.plan", "@truncated-plan"}},
       {"inspect", "$D/t.plan"},
       "$D/t.plan: error: truncated plan",
       "recompile it"},
      {"garbage_plan",
       {{"g.plan", "\x7f"
                   "ELF garbage garbage garbage"}},
       {"inspect", "$D/g.plan"},
       "$D/g.plan: error: not a strata plan",
       "STRATAPL"},
      {"newer_version_plan",
       {{"n.plan", "@newer-plan"}},
       {"inspect", "$D/n.plan"},
       "$D/n.plan: error: plan format version 99 is newer than this strata "
       "reads (1; ",
       "recompile the plan"},
      {"bad_cli_flag",
       {{"ok.textproto", spec}},
       {"compile", "$D/ok.textproto", "-o", "$D/out.plan", "--frobnicate"},
       "strata: Unknown command line argument '--frobnicate'",
       ""},
      {"missing_output_flag",
       {{"ok.textproto", spec}},
       {"compile", "$D/ok.textproto"},
       "strata: for the -o option: must be "
       "specified at least once!",
       ""},
      {"no_verb", {}, {}, "strata: error: no verb given", "strata --help"},
      {"unknown_verb",
       {},
       {"frobnicate"},
       "strata: Unknown command line argument 'frobnicate'",
       ""},
      {"exclusive_inspect_modes",
       {},
       {"inspect", example("gpt_tiny"), "--ir", "--dot"},
       "strata inspect: error: --ir, --json and --dot are exclusive",
       ""},
      {"output_dir_missing",
       {{"ok.textproto", spec}},
       {"compile", "$D/ok.textproto", "-o", "$D/nodir/out.plan"},
       "$D/nodir/out.plan: error: cannot write plan",
       ""},
      {"output_is_a_directory",
       {{"ok.textproto", spec}, {"out.plan/x", ""}},
       {"compile", "$D/ok.textproto", "-o", "$D/out.plan"},
       "$D/out.plan: error: cannot write plan",
       ""},
  };
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, FailsCleanly) {
  const BadInput &c = GetParam();
  TempDir dir;
  std::string d = dir.path("");
  d.pop_back(); // no trailing '/'
  for (const auto &[name, content] : c.files) {
    llvm::StringRef parent = llvm::StringRef(name).rsplit('/').first;
    if (parent != name)
      llvm::sys::fs::create_directories(dir.path(parent));
    dir.write(name, contents(content));
  }
  bool outputWasDir = llvm::sys::fs::is_directory(dir.path("out.plan"));
  std::vector<std::string> args;
  for (const std::string &a : c.args)
    args.push_back(expand(a, d));

  RunResult r = runStrata(args);
  EXPECT_EQ(r.rc, 1) << r.err;
  std::string prefix = expand(c.prefix, d);
  EXPECT_TRUE(llvm::StringRef(r.err).startswith(prefix))
      << "stderr: " << r.err << "\nwanted prefix: " << prefix;
  EXPECT_NE(r.err.find(expand(c.fragment, d)), std::string::npos)
      << "stderr: " << r.err << "\nwanted fragment: " << c.fragment;
  EXPECT_TRUE(r.out.empty()) << r.out;
  if (!outputWasDir) {
    EXPECT_FALSE(llvm::sys::fs::exists(dir.path("out.plan")));
  }
  // No temporary plan left behind either.
  for (const std::string &e : dir.entries())
    EXPECT_EQ(e.find(".tmp-"), std::string::npos) << e;
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInputTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<BadInput> &info) {
                           return std::string(info.param.name);
                         });

TEST(BadInput, FailedCompileKeepsTheOldPlan) {
  TempDir dir;
  std::string out = dir.write("out.plan", "previous plan");
  std::string spec = dir.write("bad.textproto", "family: GPT\nlayers: 0\n");
  RunResult r = runStrata({"compile", spec, "-o", out});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(slurp(out), "previous plan");
}

} // namespace
