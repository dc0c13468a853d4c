"""Example models built in code (random weights, fixed seed): no downloads, any size.

`resnet50`, `resnet18` and `bert_base` mirror TorchScript exports of the real networks
(topology and `/layer1/layer1.0/conv1/Conv`-style names); `small_transformer` is a tiny BERT
for quick tests and notebooks; `synthetic_dag` makes network-shaped graphs of any size.
"""

from __future__ import annotations

from nsdl_jupyter.examples._bert import bert_base, small_transformer
from nsdl_jupyter.examples._errors import ExampleError
from nsdl_jupyter.examples._resnet import resnet18, resnet50
from nsdl_jupyter.examples._save import EXAMPLES, save_example
from nsdl_jupyter.examples._synthetic import synthetic_dag

__all__ = [
    "EXAMPLES",
    "ExampleError",
    "bert_base",
    "resnet18",
    "resnet50",
    "save_example",
    "small_transformer",
    "synthetic_dag",
]
