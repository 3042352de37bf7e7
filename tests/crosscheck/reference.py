"""Independent reference for accumulus's engine: Python PyTorch (the torch
whose LibTorch the engine links) running the plain full-batch loop.

  export-mlp  --out net.pt ...        a TorchScript MLP, as a user would export it
  check       --kind ... --trained T  trains the reference from the same start
                                      on the same windows and compares with T
  noise       --kind ... --engine E   trains the same way and measures each
                                      window's gradient noise (McCandlish et
                                      al. 2018, appendix A.1) its own way;
                                      compares with the engine's values in E

`check` reads what the C++ test exported with torch::pickle_save: the data
set ({"inputs", "targets"}), the windows ({"0": indices, "1": ...}) and, for
the charlm, the initial state dict. It exits 0 when every parameter agrees
within --tolerance (relative to the tensor's largest value) and prints the
largest difference either way.
"""
import argparse
import sys

import torch
import torch.jit._pickle  # noqa: F401 (restore_type_tag, for load)
from torch import nn
import torch.nn.functional as F


class CharLM(nn.Module):
    """The same architecture as accumulus's built-in charlm (parameter names included)."""

    def __init__(self, vocabulary, max_length, d_model, heads, layers):
        super().__init__()
        self.tokens = nn.Embedding(vocabulary, d_model)
        self.positions = nn.Embedding(max_length, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model,
                                           dropout=0.0, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocabulary)

    def forward(self, tokens):
        length = tokens.shape[1]
        x = self.tokens(tokens) + self.positions(torch.arange(length)).unsqueeze(0)
        causal = torch.full((length, length), float("-inf")).triu(1)
        x = self.encoder(x.transpose(0, 1), mask=causal).transpose(0, 1)
        return self.head(self.norm(x))


def export_mlp(args):
    torch.manual_seed(args.seed)
    net = nn.Sequential(nn.Linear(args.features, args.hidden), nn.ReLU(),
                        nn.Linear(args.hidden, args.classes))
    torch.jit.save(torch.jit.script(net), args.out)


def load(path):
    """What the C++ side wrote with torch::pickle_save: tensors in a typed
    Dict, whose type tags torch.load's weights-only unpickler must be allowed
    to restore (nothing else is)."""
    with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag]):
        return torch.load(path, weights_only=True)


def build(args):
    """The model at the engine's initial weights, and what it trained to."""
    if args.kind == "torchscript":
        model = torch.jit.load(args.initial)
        trained = dict(torch.jit.load(args.trained).named_parameters())
    else:
        model = CharLM(args.vocabulary, args.max_length, args.d_model, args.heads, args.layers)
        model.load_state_dict(load(args.initial))
        trained = load(args.trained)  # accumulus's state-dict archive
    model.train()
    return model, trained


def window_loss(model, inputs, targets):
    """The window's loss as a sum over its items, and the item count: one
    item per sample, or per target token that is not ignore_index."""
    outputs = model(inputs)
    loss = F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1),
                           ignore_index=-100, reduction="sum")
    return loss, int((targets != -100).sum())


def check(args):
    data = load(args.data)
    windows = load(args.windows)
    model, trained = build(args)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    for step in range(len(windows)):
        index = windows[str(step)]
        outputs = model(data["inputs"][index])
        targets = data["targets"][index]
        # One big batch: PyTorch's mean over the window's items (tokens that
        # are not ignore_index for the charlm).
        loss = F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1),
                               ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    worst = 0.0
    for name, reference in model.named_parameters():
        if name not in trained:
            print(f"missing parameter {name} in {args.trained}")
            return 1
        scale = max(reference.detach().abs().max().item(), 1e-12)
        worst = max(worst, (trained[name] - reference.detach()).abs().max().item() / scale)
    print(f"max relative difference {worst:.3g} over {len(windows)} steps")
    return 0 if worst <= args.tolerance else 1


def mean_gradient_sq_norm(model, inputs, targets):
    """|g|² of the mean gradient over the batch (float64 sum of squares),
    and the batch's items; the gradient stays in .grad."""
    model.zero_grad(set_to_none=True)
    loss, items = window_loss(model, inputs, targets)
    (loss / items).backward()
    sq = sum(p.grad.double().square().sum() for p in model.parameters() if p.grad is not None)
    return float(sq), items


def noise(args):
    """Each window: the first micro-batch and the whole window at the
    current weights, the A.1 estimates, their bias-corrected moving
    averages; then the SGD step on the window's mean gradient."""
    data = load(args.data)
    windows = load(args.windows)
    engine = load(args.engine)
    model, _ = build(args)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    averages = [0.0, 0.0]
    worst = 0.0
    for step in range(len(windows)):
        index = windows[str(step)]
        inputs, targets = data["inputs"][index], data["targets"][index]
        small_sq, small = mean_gradient_sq_norm(model, inputs[:args.micro], targets[:args.micro])
        big_sq, big = mean_gradient_sq_norm(model, inputs, targets)
        g2 = (big * big_sq - small * small_sq) / (big - small)
        trace = (small_sq - big_sq) / (1 / small - 1 / big)
        for i, value in enumerate([g2, trace]):
            averages[i] = args.decay * averages[i] + (1 - args.decay) * value
        correction = 1 - args.decay ** (step + 1)
        # The estimates are differences of nearly equal terms: each is
        # compared relative to the size of its terms.
        g2_scale = (big * big_sq + small * small_sq) / (big - small)
        trace_scale = (small_sq + big_sq) / (1 / small - 1 / big)
        pairs = [("small_batch", small, small), ("big_batch", big, big),
                 ("small_sq_norm", small_sq, small_sq), ("big_sq_norm", big_sq, big_sq),
                 ("gradient_sq_norm", g2, g2_scale), ("noise_trace", trace, trace_scale),
                 ("smoothed_gradient_sq_norm", averages[0] / correction, g2_scale),
                 ("smoothed_noise_trace", averages[1] / correction, trace_scale)]
        for name, reference, scale in pairs:
            difference = abs(float(engine[name][step]) - reference) / max(abs(scale), 1e-30)
            if difference > worst:
                worst = difference
                print(f"step {step + 1} {name}: engine {float(engine[name][step]):.9g}, "
                      f"reference {reference:.9g} (relative {difference:.3g})")
        optimizer.step()  # .grad holds the window's mean gradient
    print(f"max relative difference {worst:.3g} over {len(windows)} windows")
    return 0 if worst <= args.tolerance else 1


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export-mlp")
    e.add_argument("--out", required=True)
    e.add_argument("--features", type=int, required=True)
    e.add_argument("--hidden", type=int, required=True)
    e.add_argument("--classes", type=int, required=True)
    e.add_argument("--seed", type=int, default=0)
    for command in ["check", "noise"]:
        c = sub.add_parser(command)
        c.add_argument("--kind", choices=["torchscript", "charlm"], required=True)
        c.add_argument("--initial", required=True)
        c.add_argument("--data", required=True)
        c.add_argument("--windows", required=True)
        c.add_argument("--trained", required=True)
        c.add_argument("--lr", type=float, required=True)
        c.add_argument("--momentum", type=float, default=0.0)
        c.add_argument("--tolerance", type=float, default=1e-5)
        for name in ["vocabulary", "max_length", "d_model", "heads", "layers"]:
            c.add_argument("--" + name.replace("_", "-"), dest=name, type=int, default=0)
        if command == "noise":
            c.add_argument("--engine", required=True)
            c.add_argument("--micro", type=int, required=True)
            c.add_argument("--decay", type=float, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.command == "export-mlp":
        export_mlp(args)
        return 0
    return check(args) if args.command == "check" else noise(args)


if __name__ == "__main__":
    sys.exit(main())
