"""ONNX Runtime profiling in the kernel: the "Profile Model" activity, its settings and
providers, the onnxruntime trace reader and the map from fused nodes back to model nodes."""
