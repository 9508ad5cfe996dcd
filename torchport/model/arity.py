"""Whether a call's arguments bind to the signature of the function it calls: a call they do not bind raises a
TypeError on every device.

MusicDiffusion's notebooks build ``Denoiser(2, 4096, 48, 2.5e-5, 5e-3, [...], 16)`` while the class now takes
three arguments: the notebook stops there on CUDA as anywhere, so a port of it changes nothing anyone can run.
Read from CPython's tree of the definition and bound with the stdlib's `inspect.Signature.bind`, placeholders
standing for the values: only the number and the names of the arguments count. A call that spreads arguments
(``f(*args)``, ``f(**kw)``) settles nothing.
"""

from __future__ import annotations

import ast
import inspect

_KINDS = inspect.Parameter


def signature(function: ast.FunctionDef | ast.AsyncFunctionDef, method: bool = False) -> inspect.Signature:
    """The signature ``function`` declares (defaults stand for themselves); ``method``: its first parameter is
    ``self``, which the call does not pass."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    first_default = len(positional) - len(arguments.defaults)
    parameters = [_KINDS(a.arg, _KINDS.POSITIONAL_ONLY if i < len(arguments.posonlyargs)
                         else _KINDS.POSITIONAL_OR_KEYWORD, default=None if i >= first_default else _KINDS.empty)
                  for i, a in enumerate(positional)]
    if arguments.vararg is not None:
        parameters.append(_KINDS(arguments.vararg.arg, _KINDS.VAR_POSITIONAL))
    parameters.extend(_KINDS(a.arg, _KINDS.KEYWORD_ONLY, default=_KINDS.empty if d is None else None)
                      for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults))
    if arguments.kwarg is not None:
        parameters.append(_KINDS(arguments.kwarg.arg, _KINDS.VAR_KEYWORD))
    return inspect.Signature(parameters[1:] if method and parameters and parameters[0].kind in (
        _KINDS.POSITIONAL_ONLY, _KINDS.POSITIONAL_OR_KEYWORD) else parameters)


def refusal(declared: inspect.Signature, call: ast.Call) -> str | None:
    """Why ``call`` cannot bind to ``declared`` (`inspect.Signature.bind`'s words: ``missing a required argument:
    'steps'``, ``too many positional arguments``); None where it binds, or spreads its arguments."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    try:
        declared.bind(*(None for _ in call.args), **{k.arg: None for k in call.keywords if k.arg is not None})
    except TypeError as error:
        return str(error)
    return None
