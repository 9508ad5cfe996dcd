"""`Shared`: the facts one rule records for others while migrating one module, as typed fields.

A rule's private state stays in ``m.store(self)``; what another rule or a family's helper reads lives here,
so that the writer and every reader name the same field. Keys are ``id()`` of original CST nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ast

    import libcst as cst


@dataclass
class Shared:
    """Facts shared between rules for one module.

    Args:
        idioms: availability idioms TP005 replaces (``"cuda" if torch.cuda.is_available() else "cpu"``),
            each with whether a ``torch.device`` is wanted and the device index expression (or None).
        held_idioms: idioms TP005 leaves because the project pass holds the module CUDA-or-CPU.
        guard_renames: ``torch.cuda.is_available``/``device_count`` references (the called expression) that
            TP110 turns into the runtime's name (``tp.is_available``...).
        cuda_flags: names assigned from a CUDA check (``use_cuda = torch.cuda.is_available()``), as
            ``(function, dotted name)`` with ``""`` for module level and ``"*"`` for everywhere (TP110).
        multi_device: whether the module names two or more fixed CUDA indices (TP002); None until asked.
        scaler_alone: whether no autocast of the module moves to the runtime's device type, so that its
            GradScaler keeps CUDA's (TP021, TP023); None until asked.
        staying_autocasts: the lines of the autocasts that stay for CUDA, their scaler made elsewhere (TP020,
            TP023); None until asked.
        followed: ids of the nodes TP024 rewrites whole (``x.cuda() if y.is_cuda else x``, its ``if``, the ``.cuda()``
            call and the ``.is_cuda`` in it): no other rule reads them as a CUDA guard or a move.
        own_objects: names bound to objects of another module's class that moves itself its own way, with the
            class as written (TP001 leaves their ``.cuda()``; TP110 keeps a guard around one); None until asked.
        scripted: the module's functions TorchScript compiles without a decorator of their own (handed to
            ``torch.jit.script(f)``, or called by a scripted function): left as written; None until asked.
        ifs: the module's ``if`` statements in CPython's tree, by line (TP009's exits without CUDA); None until
            asked.
        type_names: names bound to a legacy CUDA tensor type read only by ``.type(...)``, with its dtype.
        module_names: names bound only by ``import x`` or ``class X``, with what they are: modules and classes, whose
            ``.cuda()`` is their own (TP001); None until asked.
    """

    idioms: dict[int, tuple[bool, cst.BaseExpression | None]] = field(default_factory=dict)
    held_idioms: set[int] = field(default_factory=set)
    guard_renames: dict[int, str] = field(default_factory=dict)
    cuda_flags: set[tuple[str, str]] = field(default_factory=set)
    multi_device: bool | None = None
    scaler_alone: bool | None = None
    staying_autocasts: list[int] | None = None
    followed: set[int] = field(default_factory=set)
    own_objects: dict[str, str] | None = None
    scripted: frozenset[str] | None = None
    type_names: dict[str, str] | None = None
    ifs: dict[int, ast.If] | None = None
    module_names: dict[str, str] | None = None
