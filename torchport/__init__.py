"""torchport: port CUDA-only PyTorch code to any accelerator."""

__version__ = "0.1.0"
