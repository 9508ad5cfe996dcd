"""A small training script written for one NVIDIA GPU, the way much real code is.

It does not run on a machine without CUDA. `torchport migrate examples/cuda_train --apply`
makes it run on whatever the machine has (CUDA, MPS, XPU or CPU).
"""

import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser(description="Train a tiny MLP on synthetic data")
parser.add_argument("--device", default="cuda", help="device to train on")
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--amp", action="store_true", help="use mixed precision")
args = parser.parse_args()

torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
torch.backends.cudnn.benchmark = True

print(f"training on {torch.cuda.get_device_name()}")

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scaler = torch.cuda.amp.GradScaler(enabled=args.amp)

weights = torch.randn(16, 4, device="cuda")
start = torch.cuda.Event(enable_timing=True)
end = torch.cuda.Event(enable_timing=True)

start.record()
for step in range(args.steps):
    x = torch.randn(32, 16).cuda(non_blocking=True)
    y = (x @ weights).argmax(dim=1)
    with torch.cuda.amp.autocast(enabled=args.amp):
        loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    if step % 20 == 0 or step == args.steps - 1:
        print(f"step {step:3d} loss {loss.item():.4f}")
end.record()
torch.cuda.synchronize()

print(f"{args.steps} steps in {start.elapsed_time(end):.1f} ms")
print(f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")

path = os.path.join(tempfile.mkdtemp(), "model.pt")
torch.save(model.state_dict(), path)
model.load_state_dict(torch.load(path, map_location="cuda"))
with torch.no_grad():
    x = torch.randn(256, 16, device=args.device)
    accuracy = (model(x).argmax(dim=1) == (x @ weights).argmax(dim=1)).float().mean().item()
print(f"accuracy {accuracy:.3f}")
