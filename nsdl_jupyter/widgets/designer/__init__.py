"""The Designer workspace: its shell (canvas tabs, side panes, keys) and its tool windows
(parameters, initializers, tensors, layers, palette, type check, functions, TensorRT profiles)."""
