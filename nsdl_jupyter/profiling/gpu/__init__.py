"""GPU truth in the kernel: CUPTI kernels placed on ONNX nodes, NVML samples and their summary
(the runner side lives in runners/_gpu_runner.py)."""
