"""The rewrite rules, one module per family, and `api.migrate_code`, which runs them on one module.

Families: `device` (TP001-TP008, TP102-TP106), `cuda_api` (TP010-TP018, TP101, TP109),
`amp` (TP020-TP023), `distributed` (TP030-TP032, TP105), `pinned` (TP040-TP041),
`unported` (TP009, TP107, TP108, TP2xx: what needs a person; TP3xx: what breaks on one target),
`guards` (TP110: CUDA guards and CUDA-only regions). Each rule is a `Rule` class (see `core.rule`).
`analysis` holds the facts read with CPython's `ast` alone; importing this package loads nothing else, so a
run the cache answers can read those facts without LibCST or the rules.
"""
