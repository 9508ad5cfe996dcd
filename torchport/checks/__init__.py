"""Tools that check a port at run time, kept out of the runtime so it stays small and torch-only.

`trace` (which ops run on which device), `audit` (CUDA uses the static pass missed) and `debug`
(per-module value stats). Importing this package imports none of them.
"""
