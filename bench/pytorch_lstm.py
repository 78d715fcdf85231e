#!/usr/bin/python3
"""The PyTorch peer for bench/lstm_vs_pytorch.py: Fashion-MNIST rows as a
28-step sequence of 28 features, nn.LSTM(28, 128) -> last step -> Linear(128,
10), Adam, the same data, batch and epochs as DeepCanvas's lstm_rows template.
Prints one JSON object with the same keys as `deepcanvas-cli train --json`."""
import torch.nn as nn

from pytorch_cnn import peer_args, train_and_report


class RowLstm(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.lstm = nn.LSTM(28, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, 10)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


def main():
    a = peer_args(hidden=128)
    # [N, 1, 28, 28] images -> [N, 28 rows, 28 features]
    train_and_report(lambda: RowLstm(a.hidden), a, lambda x: x.squeeze(1).contiguous())


if __name__ == "__main__":
    main()
