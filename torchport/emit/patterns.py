"""Text patterns the emitters and the pipeline share, kept free of LibCST so that a cached run, which
parses nothing, does not import it."""

from __future__ import annotations

import re

from torchport.model import torch_facts

# `sys.path.insert(...)`, `.append`, `.extend`, `sys.path += ...`, `sys.path[:0] = ...`, `sys.path = ...`,
# `site.addsitedir(...)`: what makes a module importable that was not.
PATH_CHANGE = torch_facts.text("path_change")

# Text a module in some runtime mode has (`torchport.emit.switch`): what makes a file worth parsing for a switch.
RUNTIME_TEXT = re.compile(r"torchport import runtime|torchport\.runtime|_torchport_runtime"
                          r"|accelerator\.current_accelerator\(\)")
RUNTIME_BYTES = re.compile(RUNTIME_TEXT.pattern.encode())
