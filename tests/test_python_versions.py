"""Python 3.11's answers on 3.12 and 3.13, where PEP 701 changed f-strings: `generate_tokens` gives 3.11's tokens
(3.12 splits an f-string into FSTRING_START, FSTRING_MIDDLE, the fields' tokens and FSTRING_END), and `unparse`
writes f-strings as 3.11's `ast.unparse` (3.12 reuses the f-string's quotes in its fields, which 3.11 cannot parse).
The expected values are what Python 3.11 gives."""

from __future__ import annotations

import ast
import sys
import tokenize
import warnings

import pytest

from torchport.codemods.analysis.source import generate_tokens, parse
from torchport.codemods.api import migrate_code
from torchport.config import Settings
from torchport.emit.unparse import unparse

_LAYOUT = (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)


def _shape(code: str) -> list[tuple[str, str, tuple[int, int], tuple[int, int]]]:
    return [(tokenize.tok_name[t.type], t.string, t.start, t.end)
            for t in generate_tokens(code) if t.type not in _LAYOUT]


@pytest.mark.parametrize(("code", "expected"), [
    ("s = f'é{x!r:>{w}}' 'k'\n",  # a format spec with a field of its own; columns count characters
     [("NAME", "s", (1, 0), (1, 1)), ("OP", "=", (1, 2), (1, 3)), ("STRING", "f'é{x!r:>{w}}'", (1, 4), (1, 18)),
      ("STRING", "'k'", (1, 19), (1, 22))]),
    ("y = f\"{d['cuda']}\" + f\"{t.cuda()}\"\n",  # strings and names in a field are no tokens of their own
     [("NAME", "y", (1, 0), (1, 1)), ("OP", "=", (1, 2), (1, 3)), ("STRING", "f\"{d['cuda']}\"", (1, 4), (1, 18)),
      ("OP", "+", (1, 19), (1, 20)), ("STRING", 'f"{t.cuda()}"', (1, 21), (1, 34))]),
    ('z = f"""\n  {s} and {\n      w + 1\n  } {f"{s}{w}"}\n"""; q = rf"{w}\\n"\n',  # lines, nesting, a prefix
     [("NAME", "z", (1, 0), (1, 1)), ("OP", "=", (1, 2), (1, 3)),
      ("STRING", 'f"""\n  {s} and {\n      w + 1\n  } {f"{s}{w}"}\n"""', (1, 4), (5, 3)),
      ("OP", ";", (5, 3), (5, 4)), ("NAME", "q", (5, 5), (5, 6)), ("OP", "=", (5, 7), (5, 8)),
      ("STRING", 'rf"{w}\\n"', (5, 9), (5, 18))]),
    ('doc = """é…é…\nend"""\n',  # 3.12.1 ends it at a wrong column after the non-ASCII characters
     [("NAME", "doc", (1, 0), (1, 3)), ("OP", "=", (1, 4), (1, 5)), ("STRING", '"""é…é…\nend"""', (1, 6), (2, 6))]),
])
def test_an_f_string_is_one_string_token(code: str, expected: list[tuple[str, str, tuple[int, int], tuple[int, int]]]
                                         ) -> None:
    assert _shape(code) == expected


def test_a_joined_token_carries_the_lines_it_spans() -> None:
    code = 'x = 1\ny = f"""a\n{b}"""\n'
    strings = [t for t in generate_tokens(code) if t.type == tokenize.STRING]
    assert [t.line for t in strings] == ['y = f"""a\n{b}"""\n']


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 701 syntax")
def test_syntax_only_3_12_accepts_is_joined_too() -> None:
    # the same quotes inside a field, and a comment in a field that spans lines
    code = 'x = f"{d["cuda"]}"\ny = f"""{\n    a  # torchport: ignore\n}"""\n'
    assert _shape(code) == [
        ("NAME", "x", (1, 0), (1, 1)), ("OP", "=", (1, 2), (1, 3)), ("STRING", 'f"{d["cuda"]}"', (1, 4), (1, 18)),
        ("NAME", "y", (2, 0), (2, 1)), ("OP", "=", (2, 2), (2, 3)),
        ("STRING", 'f"""{\n    a  # torchport: ignore\n}"""', (2, 4), (4, 4)),
    ]


def test_code_that_does_not_tokenize_raises_as_tokenize_does() -> None:
    with pytest.raises((tokenize.TokenError, SyntaxError)):
        list(generate_tokens('x = f"""{a}\n'))


@pytest.mark.parametrize(("code", "expected"), [
    ("""f"{d['k']}\"""", """f"{d['k']}\""""),
    ("f'{x!r:>{w}} {y:.2f}'", "f'{x!r:>{w}} {y:.2f}'"),
    ("f'{\"a\"}{x}\\n'", "f\"{'a'}{x}\\n\""),
    ("f'''{x}\n{y}'''", r"f'{x}\n{y}'"),
    ("""f"{f'{a}' + 'b'}" + f'{ {1: 2}[1]}'""", """f"{f'{a}' + 'b'}" + f'{ {1: 2}[1]}'"""),
    ("g(f'\"{a}\\'')", "g(f\"\"\"\"{a}'\"\"\")"),  # both quotes in the text: triple quotes
])
def test_unparse_writes_f_strings_as_3_11(code: str, expected: str) -> None:
    written = unparse(ast.parse(code, mode="eval"))
    assert written == expected
    assert ast.dump(ast.parse(written, mode="eval")) == ast.dump(ast.parse(code, mode="eval"))


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 701 syntax")
def test_unparse_of_what_only_3_12_parses() -> None:
    assert unparse(ast.parse("""f"{d["k"]}\"""", mode="eval")) == """f"{d['k']}\""""
    newline = ast.parse("f\"{'\\n'.join(x)}\"", mode="eval")  # a backslash in a field: 3.11 writes a newline
    assert unparse(newline) == 'f\'\'\'{"""\n""".join(x)}\'\'\''
    assert ast.dump(ast.parse(unparse(newline), mode="eval")) == ast.dump(newline)
    nul = ast.parse("f\"{'\\x00'.join(x)}\"", mode="eval")  # 3.11 could not write it at all: 3.12's writing
    assert unparse(nul) == ast.unparse(nul)


def test_switching_modes_keeps_an_f_string_argument_that_3_11_parses() -> None:
    # the switch reads runtime calls' arguments back from an unparse of the native form
    source = """import torch\nd = {'k': 0}\ntorch.cuda.set_device(int(f"{d['k']}"))\nx = torch.zeros(2).cuda()\n"""
    native = migrate_code(source, Settings(runtime="native", torch_version=(2, 9))).code
    assert """set_device(int(f"{d['k']}"))""" in native
    assert """\ntp.set_device(int(f"{d['k']}"))\n""" in migrate_code(native, Settings(runtime="package")).code


def test_parse_prints_nothing_about_the_users_code() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tree = parse('import re\nx = re.compile("\\d+")\nassert (x, "always true")\n')  # an invalid escape
    assert isinstance(tree, ast.Module) and caught == []
    assert parse("def (:\n") is None
    assert parse("x = 1\0\n") is None
