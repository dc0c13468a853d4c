"""TensorRT in the kernel: engine export and capability check, per-layer TensorRT profiling,
the builder settings object and the trtexec exports' reader."""
