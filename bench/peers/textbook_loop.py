#!/usr/bin/env python3
"""The textbook gradient-accumulation loop in Python PyTorch: the peer most
users would write (loss / k, backward, step every k micro-batches).

Usage: textbook_loop.py MODEL MICRO [--windows N] [--threads T]
                        [--device cuda] [--precision bf16]
  MODEL: mlp (784-1024-1024-10), cnn (two conv+BatchNorm blocks on 3x32x32)
         or charlm (2 layers, d_model 128, 4 heads, sequences of 128) -- the
         architectures of accumulus's built-in models.
  --threads T: accumulus's settings (T intra-op threads, one inter-op
         thread; run with OPENBLAS_NUM_THREADS=1). Without it: PyTorch's
         defaults, as a user would run it.
  --device cuda: the model and the global batch on the GPU (the data lives
         there, as the engine's GPU bench keeps it), timed to the end of the
         GPU's work; --precision bf16 runs the forward under torch.autocast.
Prints one JSON line: samples per second over the timed windows (and, on
CUDA, the peak of allocated memory in a window).
"""
import argparse
import json
import time

import torch
from torch import nn

GLOBAL_BATCH = 256


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        layers, width = [], 3
        for channels in (16, 32):
            layers += [nn.Conv2d(width, channels, 3, padding=1, bias=False),
                       nn.BatchNorm2d(channels), nn.ReLU(), nn.MaxPool2d(2)]
            width = channels
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


class CharLm(nn.Module):
    def __init__(self, vocabulary=257, d_model=128, heads=4, layers=2, length=128):
        super().__init__()
        self.tokens = nn.Embedding(vocabulary, d_model)
        self.positions = nn.Embedding(length, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0,
                                           activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocabulary)

    def forward(self, tokens):
        length = tokens.size(1)
        x = self.tokens(tokens) + self.positions(
            torch.arange(length, device=tokens.device)).unsqueeze(0)
        causal = torch.full((length, length), float("-inf"), device=tokens.device).triu(1)
        x = self.encoder(x.transpose(0, 1), causal).transpose(0, 1)
        return self.head(self.norm(x))


def build(model):
    """The model and one global batch of random data of its shape."""
    if model == "mlp":
        net = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                            nn.Linear(1024, 10))
        return net, torch.randn(GLOBAL_BATCH, 784), torch.randint(0, 10, (GLOBAL_BATCH,))
    if model == "cnn":
        return Cnn(), torch.randn(GLOBAL_BATCH, 3, 32, 32), torch.randint(0, 10, (GLOBAL_BATCH,))
    tokens = torch.randint(0, 256, (GLOBAL_BATCH, 129))
    return CharLm(), tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["mlp", "cnn", "charlm"])
    parser.add_argument("micro", type=int)
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    net, inputs, targets = build(args.model)
    net, inputs, targets = net.to(device), inputs.to(device), targets.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    k = GLOBAL_BATCH // args.micro

    def window():
        for b in range(0, GLOBAL_BATCH, args.micro):
            with torch.autocast(args.device, dtype=torch.bfloat16,
                                enabled=args.precision == "bf16"):
                out = net(inputs[b:b + args.micro])
            out = out.float()
            loss = criterion(out.reshape(-1, out.size(-1)), targets[b:b + args.micro].reshape(-1)) / k
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    cuda = device.type == "cuda"
    window()  # optimizer state, allocator warm-up
    peak = 0
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.windows):
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        window()
        if cuda:
            peak = max(peak, torch.cuda.max_memory_allocated())
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    result = {
        "peer": "python", "model": args.model, "micro": args.micro, "accumulation": k,
        "settings": "accumulus" if args.threads > 0 else "default",
        "threads": torch.get_num_threads(), "torch": torch.__version__,
        "device": args.device, "precision": args.precision,
        "samples_per_second": args.windows * GLOBAL_BATCH / seconds,
    }
    if cuda:
        result["gpu"] = torch.cuda.get_device_name(0)
        result["window_peak_bytes"] = peak
    print(json.dumps(result))


if __name__ == "__main__":
    main()
