"""The program model: what code does on each target, computed from CPython's ``ast`` (no LibCST, no torch).

`evaluate` runs a module's code abstractly with the device queries answered as each target (cuda, mps, xpu, cpu)
would answer them, and yields its paths: the lines each runs and where it stops (a CUDA-only call, a placement on a
CUDA device, a gate). `check` uses that on a port before it is written: a rewrite stays only where some path that
runs it runs clean off CUDA after the port. `torch_facts` holds what no evaluation can know: how torch answers.
"""
