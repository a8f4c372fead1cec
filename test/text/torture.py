"""A Unicode torture text for the tokenizer tests, spelled with escapes so
that every control and invisible character is visible in review."""

LINES = [
    "Hello, World! It's   a test\tof\t\ttabs and\nnewlines\n\n\nand trailing spaces   \n",
    "Emoji: \U0001F600\U0001F44D\U0001F3FD \U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 \U0001F1EB\U0001F1F7 \u2764\uFE0F\n",
    "CJK: \u6F22\u5B57\u304B\u306A\u30AB\u30CA \uD55C\uAD6D\uC5B4 \u4E2D\u6587\uFF0C\u6807\u70B9\u3002\n",
    "Combining: e\u0301 a\u0308 n\u0303 Z\u0335\u0321\u034E a\u20DD \u0915\u094D\u0937\n",
    "Whitespace: \u00A0nbsp \u2003em \u3000ideographic \u2028line\u2029para \u0085nel \u000Bvt \u000Cff\r\ncrlf \r \n",
    "Controls: \x00\x01\x07\x1B[31m\x7F \u200B zero-width \u200D joiner \uFEFF bom \uFFFE\uFFFF\n",
    "Numbers: 1234567 3.14159 \u0663\u0664\u0665 \u2167 \u00BD 10,000 007\n",
    "Contractions: I'm you're he'll we've they'd IT'S DON'T o'clock 'tis\n",
    "Scripts: \u0395\u03BB\u03BB\u03B7\u03BD\u03B9\u03BA\u03AC \u0420\u0443\u0441\u0441\u043A\u0438\u0439 \u05E2\u05D1\u05E8\u05D9\u05EA \u0627\u0644\u0639\u0631\u0628\u064A\u0629 \u0939\u093F\u0928\u094D\u0926\u0940 \u0E44\u0E17\u0E22\n",
    "Specials in text: <s> </s> <|endoftext|> <unk> <0x41> <|begin_of_text|>x\n",
    "Astral and private use: \uE000 \U00010348 \U0001D11E \U0010FFFD\n",
    "Long runs: " + "a" * 200 + " " * 50 + "end " + "\u00E9" * 40 + "\n" * 5,
    "Symbols: \u2122 \u00A9 \u00AE \u20AC \u00A3 \u00A5 \u2211 \u222B \u221A \u2260 \u2264 \u2192 \u21D2 \u221E \u00A7\u00B6\u2022\n",
    "   leading spaces, then a trailing space ",
]
TEXT = "".join(LINES)
