"""Writes one small module in every way PyTorch saves a model, for a
`torchscript` job's model.path (tests/crosscheck/model_files_test.cc).

  model_files.py DIR

DIR/cases lists them, one per line: "FILE EXPECTED", EXPECTED being "ok"
for TorchScript (torch.jit.script, torch.jit.trace) or the words the
trainer's refusal must hold, with "_" for spaces.
"""
import gzip
import os
import shutil
import sys

import torch
from safetensors.torch import save_file


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.ReLU(), torch.nn.Linear(12, 3))
    example = torch.randn(2, 6)
    cases = []

    def case(name, expected):
        cases.append(f"{name} {expected.replace(' ', '_')}")
        return os.path.join(out, name)

    torch.jit.save(torch.jit.script(net), case("scripted.pt", "ok"))
    torch.jit.save(torch.jit.trace(net, example), case("traced.pt", "ok"))
    torch.save(net.state_dict(), case("state_dict.pt", "a file torch.save wrote"))
    torch.save(net, case("module.pt", "a file torch.save wrote"))
    torch.save(net, case("legacy.pt", "torch.save's legacy format"),
               _use_new_zipfile_serialization=False)
    program = torch.export.export(net, (example,))
    torch.export.save(program, case("program.pt2", "a torch.export program"))
    save_file(net.state_dict(), case("weights.safetensors", "a safetensors file"))
    with open(os.path.join(out, "scripted.pt"), "rb") as src, \
            gzip.open(case("scripted.pt.gz", "gzip-compressed"), "wb") as dst:
        shutil.copyfileobj(src, dst)

    with open(os.path.join(out, "cases"), "w") as f:
        f.write("\n".join(cases) + "\n")


if __name__ == "__main__":
    main()
