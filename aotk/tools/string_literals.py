"""Find a malformed string literal in `.mlir` text in linear time, before xDSL's lexer.

xDSL (0.74) lexes a string literal with a regex whose nested repetition backtracks
exponentially when the literal does not match: an unterminated `"aotk.neg(%e) : ...`
line, or an escape it does not know (`"a\\q"`), keeps `aotk-opt` busy for minutes. This
check accepts exactly the literals that regex accepts (one line; escapes `\\"`, `\\n`,
`\\t`, `\\\\` or two hex digits; no vertical tab or form feed) and names the first bad one.
"""

from __future__ import annotations

import re

# xDSL's literal, with single-character alternatives and a possessive repetition: the
# alternatives start with different characters, so a failing match stops at the bad one
_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')
_QUOTE_OR_COMMENT = re.compile(r'"|//')


def first_malformed(text: str) -> int | None:
    """The offset in `text` of the opening quote of the first malformed string literal."""
    pos = 0
    while (found := _QUOTE_OR_COMMENT.search(text, pos)) is not None:
        if found.group() == "//":  # a comment runs to the end of its line
            end = text.find("\n", found.end())
            if end < 0:
                return None
            pos = end + 1
            continue
        literal = _LITERAL.match(text, found.start())
        if literal is None:
            return found.start()
        pos = literal.end()
    return None
