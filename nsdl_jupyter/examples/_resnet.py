"""ResNet-18 and ResNet-50 built in code, shaped like torchvision's TorchScript export.

With `fold_batchnorm=True` (the exporter's default constant folding) every BatchNormalization
is folded into its Conv, which gives torchvision's 122-node ResNet-50; otherwise the
BatchNormalization nodes are kept, as in a training-mode or unfolded export.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import onnx

from nsdl_jupyter.examples._errors import ExampleError
from nsdl_jupyter.examples._graph_builder import Dim, GraphBuilder, check_opset

_FLOAT = onnx.TensorProto.FLOAT
_STAGE_WIDTHS = (64, 128, 256, 512)


class _ResNetBuilder(GraphBuilder):
    def __init__(self, seed: int, fold_batchnorm: bool) -> None:
        super().__init__(seed)
        self.fold_batchnorm = fold_batchnorm

    def conv_bn(
        self,
        conv_scope: str,
        bn_scope: str,
        x: str,
        *,
        channels: tuple[int, int],
        kernel: int,
        stride: int = 1,
        gain: float = 1.0,
    ) -> str:
        """Conv (+ BatchNormalization unless folded), He-initialised; `gain` damps a branch."""
        c_in, c_out = channels
        std = gain * math.sqrt(2.0 / (c_in * kernel * kernel))
        weight = self.normal(None, (c_out, c_in, kernel, kernel), std)
        inputs = [x, weight]
        if self.fold_batchnorm:
            inputs.append(self.normal(None, (c_out,), 0.01))
        pad = kernel // 2
        y = self.op(
            "Conv",
            conv_scope,
            *inputs,
            dilations=[1, 1],
            group=1,
            kernel_shape=[kernel, kernel],
            pads=[pad, pad, pad, pad],
            strides=[stride, stride],
        )
        if self.fold_batchnorm:
            return y
        # torch parameter names: the last dotted part of each scope ("layer1.0" -> "0")
        prefix = ".".join(part.rsplit(".", 1)[-1] for part in bn_scope.strip("/").split("/"))
        ones = np.ones(c_out, dtype=np.float32)
        zeros = np.zeros(c_out, dtype=np.float32)
        return self.op(
            "BatchNormalization",
            bn_scope,
            y,
            self.initializer(f"{prefix}.weight", ones),
            self.initializer(f"{prefix}.bias", zeros),
            self.initializer(f"{prefix}.running_mean", zeros),
            self.initializer(f"{prefix}.running_var", ones),
            epsilon=1e-5,
            momentum=0.9,
        )


def _block(
    b: _ResNetBuilder,
    kind: Literal["basic", "bottleneck"],
    scope: str,
    x: str,
    *,
    c_in: int,
    width: int,
    stride: int,
) -> tuple[str, int]:
    expansion = 4 if kind == "bottleneck" else 1
    c_out = width * expansion
    if kind == "bottleneck":
        y = b.conv_bn(f"{scope}/conv1", f"{scope}/bn1", x, channels=(c_in, width), kernel=1)
        y = b.op("Relu", f"{scope}/relu", y)
        y = b.conv_bn(
            f"{scope}/conv2", f"{scope}/bn2", y, channels=(width, width), kernel=3, stride=stride
        )
        y = b.op("Relu", f"{scope}/relu_1", y)
        y = b.conv_bn(
            f"{scope}/conv3", f"{scope}/bn3", y, channels=(width, c_out), kernel=1, gain=0.5
        )
        last_relu = f"{scope}/relu_2"
    else:
        y = b.conv_bn(
            f"{scope}/conv1", f"{scope}/bn1", x, channels=(c_in, width), kernel=3, stride=stride
        )
        y = b.op("Relu", f"{scope}/relu", y)
        y = b.conv_bn(
            f"{scope}/conv2", f"{scope}/bn2", y, channels=(width, c_out), kernel=3, gain=0.5
        )
        last_relu = f"{scope}/relu_1"
    identity = x
    if stride != 1 or c_in != c_out:
        identity = b.conv_bn(
            f"{scope}/downsample/downsample.0",
            f"{scope}/downsample/downsample.1",
            x,
            channels=(c_in, c_out),
            kernel=1,
            stride=stride,
        )
    y = b.op("Add", scope, y, identity)
    return b.op("Relu", last_relu, y), c_out


def _resnet(
    name: str,
    kind: Literal["basic", "bottleneck"],
    depths: tuple[int, int, int, int],
    *,
    batch: Dim,
    opset: int,
    image_size: int,
    num_classes: int,
    fold_batchnorm: bool,
    seed: int,
) -> onnx.ModelProto:
    check_opset(name, opset, 9)
    if image_size < 32:
        raise ExampleError(f"{name}: image_size {image_size} is too small; use 32 or more")
    b = _ResNetBuilder(seed, fold_batchnorm)
    x = b.input("input", _FLOAT, (batch, 3, image_size, image_size))
    x = b.conv_bn("/conv1", "/bn1", x, channels=(3, 64), kernel=7, stride=2)
    x = b.op("Relu", "/relu", x)
    x = b.op(
        "MaxPool",
        "/maxpool",
        x,
        ceil_mode=0,
        dilations=[1, 1],
        kernel_shape=[3, 3],
        pads=[1, 1, 1, 1],
        strides=[2, 2],
    )
    channels = 64
    for stage, (depth, width) in enumerate(zip(depths, _STAGE_WIDTHS, strict=True), start=1):
        for index in range(depth):
            stride = 2 if index == 0 and stage > 1 else 1
            scope = f"/layer{stage}/layer{stage}.{index}"
            x, channels = _block(b, kind, scope, x, c_in=channels, width=width, stride=stride)
    x = b.op("GlobalAveragePool", "/avgpool", x)
    x = b.op("Flatten", "", x, axis=1)
    fc_weight = b.normal("fc.weight", (num_classes, channels), 1.0 / math.sqrt(channels))
    fc_bias = b.normal("fc.bias", (num_classes,), 0.01)
    b.op("Gemm", "/fc", x, fc_weight, fc_bias, output_name="output", alpha=1.0, beta=1.0, transB=1)
    b.output("output", _FLOAT, (batch, num_classes))
    return b.model(name, opset)


def resnet50(
    batch: Dim = 1,
    opset: int = 17,
    *,
    image_size: int = 224,
    num_classes: int = 1000,
    fold_batchnorm: bool = True,
    seed: int = 0,
) -> onnx.ModelProto:
    """ResNet-50 (bottleneck blocks 3-4-6-3, 25.6 M random weights); `batch` may be a name."""
    return _resnet(
        "resnet50",
        "bottleneck",
        (3, 4, 6, 3),
        batch=batch,
        opset=opset,
        image_size=image_size,
        num_classes=num_classes,
        fold_batchnorm=fold_batchnorm,
        seed=seed,
    )


def resnet18(
    batch: Dim = 1,
    opset: int = 17,
    *,
    image_size: int = 224,
    num_classes: int = 1000,
    fold_batchnorm: bool = True,
    seed: int = 0,
) -> onnx.ModelProto:
    """ResNet-18 (basic blocks 2-2-2-2, 11.7 M random weights); `batch` may be a name."""
    return _resnet(
        "resnet18",
        "basic",
        (2, 2, 2, 2),
        batch=batch,
        opset=opset,
        image_size=image_size,
        num_classes=num_classes,
        fold_batchnorm=fold_batchnorm,
        seed=seed,
    )
