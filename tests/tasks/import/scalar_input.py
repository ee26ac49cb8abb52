"""Not importable: an input that is not a tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, k):
        return x * k


def get_inputs():
    return [torch.randn(4, 8), 3]


def get_init_inputs():
    return []
