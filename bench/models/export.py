#!/usr/bin/env python3
"""Exports real architectures to ONNX with Debian's python3-torch and python3-torchvision
(random weights, seeded), each with the input it was exported on and torch's output:

    FOLDER/NAME/model.onnx, FOLDER/NAME/data/input_<i>.pb, FOLDER/NAME/data/output_0.pb

usage: export.py FOLDER [--opset N] [--dynamic] [--only NAME,NAME,...]

--dynamic exports with dynamic_axes (the batch, and the sequence of the transformers), as
nearly every BERT or GPT export is. A model torch cannot export at the opset (torch.triu
before opset 14) is left out, saying so. Without torch this says so and exits 77
(skipped)."""

import argparse
import os
import shutil
import sys

try:
    import torch
    import torchvision
    from onnx import numpy_helper
except ImportError as missing:
    print(f"export.py: {missing.name} is missing (apt-get install python3-torch "
          "python3-torchvision python3-onnx); no models exported")
    sys.exit(77)

# torchvision's classifiers of several families, at 224x224.
VISION = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
          "densenet121", "googlenet", "squeezenet1_0", "shufflenet_v2_x1_0", "regnet_y_400mf",
          "convnext_tiny", "vit_b_16", "swin_t"]


class Encoder(torch.nn.Module):
    """A BERT-like encoder: token and position embeddings, 2 post-norm layers of 4 heads
    (d 256, GELU), a pooled classifier. Tokens are int64."""

    def __init__(self, vocab=1000, d=256, layers=2, seq=128):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, d)
        self.positions = torch.nn.Embedding(seq, d)
        layer = torch.nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, activation="gelu",
                                                 batch_first=True)
        self.layers = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, 2)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        h = self.layers(self.tokens(ids) + self.positions(positions))
        return self.head(h[:, 0])


class Decoder(torch.nn.Module):
    """A GPT-like causal decoder: 2 pre-norm blocks of 4 heads (d 256), a causal mask from
    the sequence length, logits over the vocabulary. Tokens are int64."""

    def __init__(self, vocab=1000, d=256, layers=2, seq=128, heads=4):
        super().__init__()
        self.heads = heads
        self.tokens = torch.nn.Embedding(vocab, d)
        self.positions = torch.nn.Embedding(seq, d)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(torch.nn.ModuleDict({
                "norm1": torch.nn.LayerNorm(d), "qkv": torch.nn.Linear(d, 3 * d),
                "proj": torch.nn.Linear(d, d), "norm2": torch.nn.LayerNorm(d),
                "up": torch.nn.Linear(d, 4 * d), "down": torch.nn.Linear(4 * d, d)}))
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        b, s = ids.shape
        positions = torch.arange(s, device=ids.device).unsqueeze(0)
        h = self.tokens(ids) + self.positions(positions)
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        for block in self.blocks:
            q, k, v = block["qkv"](block["norm1"](h)).chunk(3, dim=-1)
            q, k, v = (t.reshape(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
            scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5) + mask
            a = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)
            h = h + block["proj"](a)
            h = h + block["down"](torch.nn.functional.gelu(block["up"](block["norm2"](h))))
        return self.head(self.norm(h))


def models():
    """(name, module, example inputs, input names, dynamic axes per input)."""
    for name in VISION:
        yield (name, getattr(torchvision.models, name)(weights=None),
               (torch.randn(1, 3, 224, 224),), ["input"], {"input": {0: "batch"}})
    for name, cls in (("bert_like_encoder", Encoder), ("gpt_like_decoder", Decoder)):
        yield (name, cls(), (torch.randint(0, 1000, (1, 128)),), ["input_ids"],
               {"input_ids": {0: "batch", 1: "sequence"}})


def save_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--dynamic", action="store_true")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    torch.manual_seed(0)
    for name, module, inputs, input_names, axes in models():
        if only and name not in only:
            continue
        module.eval()
        folder = os.path.join(args.folder, name)
        os.makedirs(os.path.join(folder, "data"), exist_ok=True)
        dynamic = {n: axes[n] for n in input_names} if args.dynamic else None
        if dynamic is not None:
            dynamic["output"] = {0: "batch"}
        # Exported with gradients on: under no_grad, torch's encoder layers take a fused
        # fast path that torch 1.13 cannot export.
        try:
            torch.onnx.export(module, inputs, os.path.join(folder, "model.onnx"),
                              opset_version=args.opset, input_names=input_names,
                              output_names=["output"], dynamic_axes=dynamic)
        except torch.onnx.errors.OnnxExporterError as error:
            print(f"not exported {name}: {str(error).splitlines()[0]}", flush=True)
            shutil.rmtree(folder)
            continue
        with torch.no_grad():
            output = module(*inputs)
        for i, (tensor, input_name) in enumerate(zip(inputs, input_names)):
            save_tensor(os.path.join(folder, "data", f"input_{i}.pb"), tensor.numpy(), input_name)
        save_tensor(os.path.join(folder, "data", "output_0.pb"), output.numpy(), "output")
        print(f"exported {name} (opset {args.opset}{', dynamic axes' if dynamic else ''})",
              flush=True)


if __name__ == "__main__":
    main()
