"""Public value-debugging API: ``torchport.debug.inspect`` for any tensor, ``watch`` for every module.

The same objects as :mod:`torchport.checks.debug` (which this imports, and with it torch)::

    import torchport.debug as tpd

    h = tpd.inspect(h, tag="block3.attn")      # stats now, and of its gradient in backward
    with tpd.watch(model, level=tpd.Level.SAVE, run_dir="runs/cpu", grads=True, names="encoder.*"):
        model(x).sum().backward()

``torchport compare RUN_A RUN_B`` compares two saved runs.
"""

from torchport.checks.debug import (
                                     ENV_DIR,
                                     ENV_LEVEL,
                                     ENV_NAMES,
                                     FORMAT,
                                     MAX_VALUES,
                                     Level,
                                     Watch,
                                     flush,
                                     inspect,
                                     level_from_env,
                                     load,
                                     name_filter,
                                     tensor_stats,
                                     watch,
)

__all__ = ["ENV_DIR", "ENV_LEVEL", "ENV_NAMES", "FORMAT", "Level", "MAX_VALUES", "Watch", "flush", "inspect",
           "level_from_env", "load", "name_filter", "tensor_stats", "watch"]
