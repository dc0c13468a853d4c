"""Why it is slow: work per ONNX node (FLOPs, bytes) from shapes, each layer against the
measured roofs of its GPU, and the ranked findings backed by those figures."""
