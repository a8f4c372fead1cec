# lit configuration for strata's IR tests. RUN lines are `# RUN:` comments in
# .ir files (`#` is the IR comment character); cases in one file are split by
# `# -----` and run with `strata-opt --split-input-file`.
import os
import re

import lit.formats

config.name = "strata"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".ir", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.strata_obj_root


def tool_pattern(name):
    # Only whole words: not inside paths such as %s or other tool names.
    return r"(?<![\w/.-])" + re.escape(name) + r"(?![\w/.-])"


tools = dict(config.strata_tools)
for name in ["FileCheck", "not", "count"]:
    tools[name] = os.path.join(config.llvm_tools_dir, name)
for name, path in tools.items():
    config.substitutions.append((tool_pattern(name), path))
