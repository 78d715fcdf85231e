

class SamePadConv2d(nn.Conv2d):
    """Conv2d with DeepCanvas's padding_mode 'same' for any stride: the output
    is ceil(input / stride) and an odd padding pixel goes to the bottom/right
    (torch's own padding='same' refuses strides above 1)."""

    def forward(self, x):
        pads = []
        for i, n in ((1, x.shape[3]), (0, x.shape[2])):  # F.pad: left, right, top, bottom
            k, s, d = self.kernel_size[i], self.stride[i], self.dilation[i]
            out = (n + s - 1) // s
            total = max(0, (out - 1) * s + d * (k - 1) + 1 - n)
            pads += [total // 2, total - total // 2]
        return super().forward(F.pad(x, pads))


class _DeepCanvasRecurrent:
    """What a DeepCanvas recurrent node adds to torch's batch_first RNN/LSTM/GRU:
    the final hidden state of the last layer (both directions concatenated)
    unless return_sequences, and optionally learned initial states h0_l{k}
    (c0_l{k}), trained with the rest. Parameter names and gate orders are
    torch's own, which DeepCanvas uses too."""

    def __init__(self, *args, return_sequences=False, learned_initial_state=False, **kwargs):
        super().__init__(*args, batch_first=True, **kwargs)
        self.return_sequences = return_sequences
        self.learned_initial_state = learned_initial_state
        if learned_initial_state:
            for layer in range(self.num_layers):
                for d in range(2 if self.bidirectional else 1):
                    sfx = f"_l{layer}" + ("_reverse" if d else "")
                    self.register_parameter("h0" + sfx, nn.Parameter(torch.zeros(self.hidden_size)))
                    if isinstance(self, nn.LSTM):
                        self.register_parameter("c0" + sfx, nn.Parameter(torch.zeros(self.hidden_size)))

    def forward(self, x):
        n = x.shape[0]
        dirs = 2 if self.bidirectional else 1
        init = None
        if self.learned_initial_state:
            def stack(kind):
                rows = [getattr(self, f"{kind}_l{layer}" + ("_reverse" if d else ""))
                        for layer in range(self.num_layers) for d in range(dirs)]
                return torch.stack(rows).unsqueeze(1).expand(-1, n, -1).contiguous()
            init = (stack("h0"), stack("c0")) if isinstance(self, nn.LSTM) else stack("h0")
        out, hn = super().forward(x, init)
        if self.return_sequences:
            return out
        if isinstance(self, nn.LSTM):
            hn = hn[0]
        return hn[-dirs:].permute(1, 0, 2).reshape(n, dirs * self.hidden_size)


class LSTM(_DeepCanvasRecurrent, nn.LSTM):
    pass


class GRU(_DeepCanvasRecurrent, nn.GRU):
    pass


class RNN(_DeepCanvasRecurrent, nn.RNN):
    pass


class MultiheadAttention(nn.Module):
    """torch.nn.MultiheadAttention(batch_first=True)'s arithmetic and
    initialisation with DeepCanvas's parameter names (out_proj_weight for
    torch's out_proj.weight: in DeepCanvas a dot separates a layer from its
    parameter), self-attention (one input) or cross-attention (queries, then
    keys and values), with an optional causal mask. Returns the output only."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, causal=False):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.dropout, self.causal = dropout, causal
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.out_proj_weight = nn.Parameter(torch.empty(embed_dim, embed_dim))
        nn.init.xavier_uniform_(self.in_proj_weight)
        bound = embed_dim ** -0.5
        nn.init.uniform_(self.out_proj_weight, -bound, bound)
        if bias:
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
            self.out_proj_bias = nn.Parameter(torch.zeros(embed_dim))
        else:
            self.register_parameter("in_proj_bias", None)
            self.register_parameter("out_proj_bias", None)

    def forward(self, q, kv=None):
        kv = q if kv is None else kv
        mask = None
        if self.causal:
            mask = torch.triu(torch.ones(q.shape[1], kv.shape[1], dtype=torch.bool,
                                         device=q.device), diagonal=1)
        y, _ = F.multi_head_attention_forward(
            q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1), self.embed_dim,
            self.num_heads, self.in_proj_weight, self.in_proj_bias, None, None, False,
            self.dropout, self.out_proj_weight, self.out_proj_bias, training=self.training,
            need_weights=False, attn_mask=mask)
        return y.transpose(0, 1)


def sinusoids(steps, features):
    """The original Transformer's fixed positions: sin at even features, cos at odd."""
    pos = torch.arange(steps, dtype=torch.float64).unsqueeze(1)
    rate = torch.pow(10000.0, torch.arange(0, features, 2, dtype=torch.float64) / features)
    pe = torch.zeros(steps, features, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos / rate)
    pe[:, 1::2] = torch.cos(pos / rate[: features // 2])
    return pe.float()


class PositionalEmbedding(nn.Module):
    """Adds a position signal to every token: a learned `weight` [steps,
    features] (N(0, 0.02) at first, as ViT's) or the fixed sinusoids (a buffer
    `table`)."""

    def __init__(self, steps, features, learned=True):
        super().__init__()
        if learned:
            self.weight = nn.Parameter(torch.randn(steps, features) * 0.02)
        else:
            self.register_buffer("table", sinusoids(steps, features))

    def forward(self, x):
        return x + (self.weight if hasattr(self, "weight") else self.table)


class ClassToken(nn.Module):
    """Puts a learned token first in the sequence (a Vision Transformer's class token)."""

    def __init__(self, features):
        super().__init__()
        self.token = nn.Parameter(torch.empty(features).uniform_(-0.02, 0.02))

    def forward(self, x):
        return torch.cat([self.token.view(1, 1, -1).expand(x.shape[0], 1, -1), x], dim=1)


def to_deepcanvas(state):
    """A state_dict as DeepCanvas names its tensors: renamed layers get their
    DeepCanvas names back, and BatchNorm's num_batches_tracked (which
    DeepCanvas does not keep) is left out."""
    out = {}
    for key, value in state.items():
        if key.endswith("num_batches_tracked"):
            continue
        # The longest module path RENAMED knows (a layer inside a block is
        # "block.layer"); a layer under its own name keeps its key.
        parts = key.split(".")
        for i in range(len(parts) - 1, 0, -1):
            path = ".".join(parts[:i])
            if path in RENAMED:
                key = RENAMED[path] + "." + ".".join(parts[i:])
                break
        out[key] = value
    return out


def from_deepcanvas(tensors):
    """DeepCanvas tensor names (a checkpoint's model tensors) as state_dict keys."""
    back = {v: k for k, v in RENAMED.items()}
    out = {}
    for key, value in tensors.items():
        if key.startswith("optimizer."):
            continue
        layer, _, rest = key.rpartition(".")
        out[back.get(layer, layer) + "." + rest] = value
    return out


def load_weights(model, path):
    """Loads a DeepCanvas checkpoint (or a train.py one) into the model; every
    parameter and buffer must be there with its shape. Returns the metadata."""
    tensors, meta = dc_safetensors.load_file(path)
    state = from_deepcanvas(tensors)
    missing = [k for k in model.state_dict() if k not in state and not k.endswith("num_batches_tracked")]
    unexpected = [k for k in state if k not in model.state_dict()]
    if missing or unexpected:
        raise ValueError(f"{path}: does not fit this model (missing {missing[:5]}, unexpected {unexpected[:5]})")
    for k, v in model.state_dict().items():
        if k in state and tuple(state[k].shape) != tuple(v.shape):
            raise ValueError(f"{path}: {k} is {tuple(state[k].shape)}, the model's is {tuple(v.shape)}")
    model.load_state_dict(state, strict=False)
    return meta


def load_model(path, device="cpu"):
    """The network with the weights of a safetensors checkpoint, in eval mode."""
    model = Model()
    load_weights(model, path)
    return model.to(device).eval()
