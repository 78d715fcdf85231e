#!/usr/bin/env python3
"""The Character Transformer and char_lstm templates rebuilt in PyTorch, on
the same data: is the Transformer's higher validation loss on the bundled
12 KB corpus the engine's doing or the model's? (docs/BENCHMARKS.md,
"Character Transformer against the character LSTM").

The windows and the split are DeepCanvas's: one window of `--window`
characters before each target, zero-padded at the start; the last 10 % of the
text is the test set; 10 % of the training windows, drawn at random, are the
validation set. Each model predicts the character after its window (the
templates' LastStep → Dense, as the Character Transformer was before it
learned to predict every step: bench/char_every_step.py), trained with its template's optimizer and
batch 64. --targets every also trains the Transformer on the next character
at every position (GPT-style); its validation windows then overlap training
targets, so only its test loss means anything.

    /usr/bin/python3 bench/char_models_pytorch.py --model transformer
    /usr/bin/python3 bench/char_models_pytorch.py --model lstm
"""
import argparse
import time

import torch
import torch.nn as nn

ap = argparse.ArgumentParser()
ap.add_argument("--model", choices=["transformer", "lstm"], required=True)
ap.add_argument("--targets", choices=["last", "every"], default="last")
ap.add_argument("--corpus", default="sample_data/text/corpus.txt")
ap.add_argument("--window", type=int, default=40)
ap.add_argument("--positions", choices=["learned", "alibi"], default="learned",
                help="alibi: no position embedding; each head's scores get a "
                     "linear penalty for distance (Press et al., 2021)")
ap.add_argument("--epochs", type=int, default=12)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()
torch.manual_seed(args.seed)
torch.set_num_threads(args.threads)

text = open(args.corpus, encoding="utf-8").read()
vocab = [""] + sorted(set(text))
index = {c: i for i, c in enumerate(vocab)}
ids = torch.tensor([index[c] for c in text])
n, T, V = len(ids), args.window, len(vocab)
split = n - round(0.1 * (n - 1))
padded = torch.cat([torch.zeros(T, dtype=torch.long), ids])
targets = torch.arange(1, n)
X = torch.stack([padded[p : p + T] for p in targets.tolist()])
Y = torch.stack([padded[p + 1 : p + T + 1] for p in targets.tolist()])  # next char, every position
train = targets < split
Xtr, Ytr, Xte, Yte = X[train], Y[train], X[~train], Y[~train]
order = torch.randperm(len(Xtr), generator=torch.Generator().manual_seed(42))
nv = len(Xtr) // 10
Xv, Yv, Xt, Yt = Xtr[order[:nv]], Ytr[order[:nv]], Xtr[order[nv:]], Ytr[order[nv:]]


class CharTransformer(nn.Module):
    """resources/templates/char_transformer.dcproj: Embedding 64 + learned
    positions, 2 causal pre-norm blocks (4 heads, MLP 128, GELU), LayerNorm."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, 64, padding_idx=0)
        self.positions = nn.Parameter(torch.zeros(T, 64))
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(2))
        self.norm = nn.LayerNorm(64)
        self.fc = nn.Linear(64, V)
        causal = torch.triu(torch.full((T, T), float("-inf")), 1)
        if args.positions == "alibi":
            slopes = torch.tensor([2.0 ** (-8.0 * (k + 1) / 4) for k in range(4)])
            steps = torch.arange(T)
            distance = (steps[:, None] - steps[None, :]).clamp(min=0).float()
            causal = causal - slopes[:, None, None] * distance  # [heads, T, T]
        self.register_buffer("mask", causal)

    def forward(self, x):
        h = self.embed(x)
        mask = self.mask
        if args.positions == "alibi":  # one mask per (sample, head), sample-major
            mask = mask.unsqueeze(0).expand(len(x), -1, -1, -1).reshape(-1, T, T)
        else:
            h = h + self.positions
        for b in self.blocks:
            h = b(h, src_mask=mask)
        return self.fc(self.norm(h))


class CharLstm(nn.Module):
    """resources/templates/char_lstm.dcproj: Embedding 32 → LSTM 128."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, 32, padding_idx=0)
        self.lstm = nn.LSTM(32, 128, batch_first=True)
        self.fc = nn.Linear(128, V)

    def forward(self, x):
        return self.fc(self.lstm(self.embed(x))[0])


if args.model == "transformer":
    model = CharTransformer()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
else:
    model = CharLstm()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
ce = nn.CrossEntropyLoss()
every = args.targets == "every"
start, train_s = time.time(), 0.0
for epoch in range(1, args.epochs + 1):
    t0 = time.time()
    model.train()
    perm = torch.randperm(len(Xt))
    for i in range(0, len(Xt), 64):
        b = perm[i : i + 64]
        out = model(Xt[b])
        loss = ce(out.reshape(-1, V), Yt[b].reshape(-1)) if every else ce(out[:, -1], Yt[b, -1])
        opt.zero_grad()
        loss.backward()
        opt.step()
    train_s += time.time() - t0
    model.eval()
    with torch.no_grad():
        val = ce(model(Xv)[:, -1], Yv[:, -1]).item()
        test = ce(model(Xte)[:, -1], Yte[:, -1]).item()
    print(f"{args.model} ({args.targets}) epoch {epoch}: training {train_s:.1f} s, "
          f"val loss {val:.4f}, test loss {test:.4f}", flush=True)
