"""`torchport.model.arity`: whether a call's arguments bind to the signature of what it calls."""

from __future__ import annotations

import ast

import pytest

from torchport.model.arity import refusal, signature


def _refusal(definition: str, call: str, method: bool = False) -> str | None:
    function = ast.parse(definition).body[0]
    assert isinstance(function, ast.FunctionDef)
    made = ast.parse(call, mode="eval").body
    assert isinstance(made, ast.Call)
    return refusal(signature(function, method), made)


@pytest.mark.parametrize(("definition", "call", "method", "why"), [
    ("def __init__(self, steps, channels): pass", "Denoiser(2, 4096, 48)", True, "too many positional arguments"),
    ("def __init__(self, steps, channels): pass", "Denoiser(2)", True, "missing a required argument: 'channels'"),
    ("def gradcam(model, layers): pass", "gradcam(m, l, use_cuda=True)", False,
     "got an unexpected keyword argument 'use_cuda'"),
    ("def predict(model, loader, use_amp, logger): pass", "predict(m, l, c, use_amp=True, logger=g)", False,
     "multiple values for argument 'use_amp'"),
    ("def f(a, /, b): pass", "f(a=1, b=2)", False, "'a' parameter is positional only, but was passed as a keyword"),
    ("def f(a, *, scale): pass", "f(1)", False, "missing a required argument: 'scale'"),
])
def test_arguments_a_signature_refuses_are_found(definition: str, call: str, method: bool, why: str) -> None:
    assert _refusal(definition, call, method) == why


@pytest.mark.parametrize(("definition", "call"), [
    ("def __init__(self, steps, channels=4): pass", "Denoiser(2)"),
    ("def f(a, *args, **kwargs): pass", "f(1, 2, 3, x=4)"),
    ("def f(a, b): pass", "f(*pair)"),  # spread: the number is not known
    ("def f(a, b): pass", "f(1, **rest)"),
    ("def f(a, *, scale=1.0): pass", "f(1, scale=2.0)"),
])
def test_arguments_that_bind_or_may_bind_are_not_refused(definition: str, call: str) -> None:
    assert _refusal(definition, call, method=definition.startswith("def __init__")) is None
